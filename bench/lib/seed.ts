import { randomUUID } from 'node:crypto';
import { CompiledQuery } from 'kysely';
import { CredentialsVault } from '../../src/services/credentials-vault.ts';
import { createPlatform } from '../../src/services/platforms.ts';
import type { Database } from '../../src/store/database.ts';
import { migrate } from '../../src/store/migrate.ts';
import { ProgressBar, formatCount, log } from './progress.ts';

/** How much data a run seeds. Customer 1 is the big one; customers 2… hold the requests. */
export type Volumes = {
  customers: number;
  bigCustomerIrms: number;
  irmsPerCustomer: number;
  bigCustomerRequests: number;
  requestCustomers: number;
  requestsPerCustomer: number;
};

export type Seeded = {
  platformId: string;
  apiKey: string;
  /** Customer ids in ordinal order: index 0 is the big customer. */
  customerIds: string[];
  bigCustomerId: string;
  counts: { customers: number; irms: number; requests: number; lines: number };
  steps: { name: string; seconds: number }[];
  seconds: number;
};

/** Issue dates of the seeded IRMs span this many days up to today. */
export const IRM_SPAN_DAYS = 1_095;
const IRM_CHUNK_ROWS = 60_000;
// Sealed into every seeded customer: the accounts that behave normally at the sandbox.
const SANDBOX_USERNAMES = ['demo.exporter', 'services.exporter', 'vostro.exporter', 'bulk.exporter'];

const PLACES = ['Kaveri', 'Sahyadri', 'Narmada', 'Malabar', 'Coromandel', 'Deccan', 'Ganga', 'Konkan', 'Thar', 'Nilgiri', 'Vindhya', 'Aravalli'];
const TRADES = ['Textiles', 'Spices', 'Engineering', 'Leather', 'Handicrafts', 'Pharma', 'Software', 'Gems', 'Agro', 'Chemicals', 'Auto Parts', 'Tea'];
const FORMS = ['Pvt Ltd', 'LLP', 'Exports', 'Industries'];

export function totalIrms(volumes: Volumes): number {
  return volumes.bigCustomerIrms + (volumes.customers - 1) * volumes.irmsPerCustomer;
}

export function totalRequests(volumes: Volumes): number {
  return volumes.bigCustomerRequests + volumes.requestCustomers * volumes.requestsPerCustomer;
}

type Run = (text: string, parameters?: unknown[]) => Promise<Record<string, unknown>[]>;

function runnerOf(database: Database): Run {
  return async (text, parameters = []) => [...(await database.db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(text, parameters))).rows];
}

/**
 * Runs one bulk insert in its own transaction, with the session settings given. Every constraint and
 * trigger of the schema applies, as to the service's own writes (derived data such as per-day counts
 * stays right).
 */
async function bulkInsert(database: Database, text: string, parameters: unknown[], settings: string[] = []): Promise<void> {
  await database.db.transaction().execute(async (tx) => {
    // JIT compilation costs about a second per statement here and saves nothing on these plans.
    for (const setting of ['jit = off', ...settings]) {
      await tx.executeQuery(CompiledQuery.raw(`set local ${setting}`));
    }
    await tx.executeQuery(CompiledQuery.raw(text, parameters));
  });
}

/** Runs `work` over `items` with at most `parallelism` at a time. */
async function inParallel<T>(items: readonly T[], parallelism: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++]!;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(parallelism, items.length)) }, worker));
}

/**
 * Migrates a fresh database and fills it with set-based SQL: a platform and its API key (through
 * the service's own code), customers with sealed credentials, IRMs (in chunks, `parallelism` at a
 * time), GenEBRC requests and their lines, then VACUUM ANALYZE. Every value honours the schema's constraints; the data is deterministic apart
 * from ids.
 */
export async function seed(database: Database, volumes: Volumes, encryptionKey: Buffer, parallelism = 1): Promise<Seeded> {
  const run = runnerOf(database);
  const startedAt = performance.now();
  const steps: Seeded['steps'] = [];
  const step = async (name: string, total: number, work: (bar: ProgressBar) => Promise<void>): Promise<void> => {
    const bar = new ProgressBar(name, total);
    await work(bar);
    steps.push({ name, seconds: bar.finish() });
  };

  await step('migrations', 1, async () => {
    await migrate(database);
  });
  const { platform, apiKey } = await createPlatform(database.db, 'Benchmark platform');

  const customerIds = Array.from({ length: volumes.customers }, () => randomUUID());
  await step('customers', volumes.customers, async (bar) => {
    const vault = new CredentialsVault(encryptionKey);
    const rows = customerIds.map((id, index) => {
      const ordinal = index + 1;
      const place = PLACES[index % PLACES.length]!;
      const trade = TRADES[Math.floor(index / PLACES.length) % TRADES.length]!;
      const form = FORMS[index % FORMS.length]!;
      const username = SANDBOX_USERNAMES[index % SANDBOX_USERNAMES.length]!;
      const slug = `${place}-${trade}`.toLowerCase().replaceAll(' ', '-');
      return {
        id,
        name: `${place} ${trade} ${String(ordinal).padStart(4, '0')}`,
        email: `accounts+${ordinal}@${slug}.example`,
        company_name: `${place} ${trade} ${form}`,
        address: `${(ordinal % 90) + 1} Industrial Estate, ${place} Road`,
        iec_code: `07${String(ordinal).padStart(8, '0')}`,
        authority_username: username,
        authority_credentials: vault.seal(id, { username, password: 'Sandbox@123' }),
        // The oldest customer first: ordinal 1 (the big one) is on the customer list's last page.
        age_hours: (volumes.customers - index) * 13,
      };
    });
    await run(
      `insert into platform_customers (id, platform_id, name, email, type, company_name, address, is_active, iec_code,
         authority_verified_at, authority_credentials_status, authority_username, authority_credentials, irms_pulled_at, created_at, updated_at)
       select r.id, $1::uuid, r.name, r.email, 'customer', r.company_name, r.address, true, r.iec_code,
         now() - (r.age_hours - 1) * interval '1 hour', 'valid', r.authority_username, r.authority_credentials, now(),
         now() - r.age_hours * interval '1 hour', now() - (r.age_hours - 1) * interval '1 hour'
       from jsonb_to_recordset($2::jsonb) as r(id uuid, name text, email text, company_name text, address text,
         iec_code text, authority_username text, authority_credentials text, age_hours integer)`,
      [platform.id, JSON.stringify(rows)],
    );
    bar.advance(rows.length);
  });

  await step('irms', totalIrms(volumes), async (bar) => {
    // The big customer alone, then groups of customers of about IRM_CHUNK_ROWS rows each.
    const chunks: [number, number][] = [[1, 1]];
    const perChunk = Math.max(1, Math.floor(IRM_CHUNK_ROWS / Math.max(1, volumes.irmsPerCustomer)));
    for (let from = 2; from <= volumes.customers; from += perChunk) chunks.push([from, Math.min(volumes.customers, from + perChunk - 1)]);
    await inParallel(chunks, parallelism, async ([from, to]) => {
      await bulkInsert(database, IRM_INSERT, [platform.id, from, to, IRM_SPAN_DAYS, volumes.bigCustomerIrms, volumes.irmsPerCustomer]);
      bar.advance(from === 1 ? volumes.bigCustomerIrms : (to - from + 1) * volumes.irmsPerCustomer);
    });
  });

  await step('genebrc requests', totalRequests(volumes), async (bar) => {
    await bulkInsert(database, REQUEST_INSERT, [platform.id, volumes.bigCustomerRequests, volumes.requestCustomers, volumes.requestsPerCustomer]);
    bar.advance(totalRequests(volumes));
  });

  let lines = 0;
  await step('genebrc lines', totalRequests(volumes), async (bar) => {
    // generate_series over a column is estimated at 1,000 rows, which makes a hash join over every IRM look cheaper
    // than the ~3 unique-index lookups per request it really is.
    await bulkInsert(database, LINE_INSERT, [platform.id, volumes.bigCustomerIrms, volumes.irmsPerCustomer], ['enable_hashjoin = off', 'enable_mergejoin = off']);
    lines = Number((await run('select count(*)::int as n from genebrc_request_lines'))[0]?.n ?? 0);
    bar.advance(totalRequests(volumes));
  });

  // The whole database: tables the schema derives from these (counts kept by triggers) as well.
  await step('vacuum analyze', 1, async (bar) => {
    await run('vacuum analyze');
    bar.advance(1);
  });

  const counts = {
    customers: volumes.customers,
    irms: Number((await run('select count(*)::int as n from irms'))[0]?.n ?? 0),
    requests: Number((await run('select count(*)::int as n from genebrc_requests'))[0]?.n ?? 0),
    lines,
  };
  const seconds = (performance.now() - startedAt) / 1000;
  log(
    `seeded ${formatCount(counts.customers)} customers, ${formatCount(counts.irms)} IRMs, ${formatCount(counts.requests)} requests, ` +
      `${formatCount(counts.lines)} lines in ${seconds.toFixed(1)}s`,
  );
  return { platformId: platform.id, apiKey, customerIds, bigCustomerId: customerIds[0]!, counts, steps, seconds };
}

// $1 platform, $2-$3 customer ordinals, $4 span of issue dates in days, $5 IRMs of the big customer, $6 of the others.
// Pseudo-random but deterministic: two hashes of (customer, sequence) drive every choice.
const IRM_INSERT = `
insert into irms (id, platform_id, platform_customer_id, irm_number, irm_issue_date, ifsc_code, remittance_ad_code,
  remittance_date, remittance_fcc, remittance_fcc_amount, orm_amount_fcc, irm_available_amt, irm_utilized_amt,
  iec_code, pan_number, remitter_name, remitter_country, purpose_of_remittance, created_at, updated_at)
select gen_random_uuid(), platform_id, customer_id,
  'IR' || iec || lpad(seq::text, 7, '0'),
  issued,
  (array['HDFC0000240', 'ICIC0000104', 'SBIN0004266', 'UTIB0000004'])[bank + 1],
  (array['0510002', '6390004', '0002331', '6910003'])[bank + 1],
  issued - (a % 4)::int,
  (array['USD', 'EUR', 'GBP', 'INR'])[kind + 1],
  (amount * 0.01)::numeric(16, 2),
  0,
  ((amount - used) * 0.01)::numeric(16, 2),
  (used * 0.01)::numeric(16, 2),
  iec,
  pan,
  (array['Northwind Traders Inc', 'Blue Harbor Imports LLC', 'Maple Leaf Distributors Ltd',
         'Rheinland Handels GmbH', 'Maison Lumiere SARL', 'Van der Berg Groothandel BV',
         'Thames Valley Textiles Ltd', 'Pennine Software Services Ltd', 'Clyde Marine Supplies Ltd',
         'Volga Trading House LLC', 'Gulf Crescent General Trading LLC', 'Colombo Spice Exports PVT Ltd'])[kind * 3 + who + 1],
  (array['US', 'US', 'CA', 'DE', 'FR', 'NL', 'GB', 'GB', 'GB', 'RU', 'AE', 'LK'])[kind * 3 + who + 1],
  case when kind = 3 then (array['P0102', 'P0103'])[(a / 200 % 2)::int + 1]
       else (array['P0102', 'P0103', 'P0102', 'P0103', 'P0802', 'P0806'])[(a / 200 % 6)::int + 1] end,
  issued + interval '10 hours',
  issued + interval '10 hours'
from (
  select *, case when usage < 6 then 0::bigint when usage < 9 then amount * (5 + b / 7 % 90) / 100 else amount end as used
  from (
    select *, (case when kind = 3 then 5000000 + b % 395000000 else 10000 + b % 5990000 end)::bigint as amount
    from (
      select *,
        (case when a % 20 < 10 then 0 when a % 20 < 14 then 1 when a % 20 < 16 then 2 else 3 end)::int as kind,
        a / 20 % 10 as usage,
        (b / 3 % 4)::int as bank,
        (a / 1000 % 3)::int as who,
        current_date - ((n - seq)::bigint * $4::int / n)::int as issued
      from (
        select c.id as customer_id, c.platform_id, c.iec_code as iec, 'AABCB' || substr(c.iec_code, 7, 4) || 'B' as pan, c.n, g as seq,
          (hashint8(c.ordinal * 10000019 + g) & 2147483647)::bigint as a,
          (hashint8(c.ordinal * 10000019 + g + 500000000000) & 2147483647)::bigint as b
        from (
          select id, platform_id, iec_code, substr(iec_code, 3)::bigint as ordinal,
            case when substr(iec_code, 3)::bigint = 1 then $5::int else $6::int end as n
          from platform_customers
          where platform_id = $1::uuid and iec_code like '07%' and substr(iec_code, 3)::bigint between $2::int and $3::int
        ) c, generate_series(1, c.n) g
      ) hashed
    ) shaped
  ) priced
) used`;

// $1 platform, $2 requests of the big customer, $3 how many other customers hold requests, $4 requests each.
// Every request is final (nothing for the poller to pick up), created over the last year.
const REQUEST_INSERT = `
insert into genebrc_requests (id, platform_id, platform_customer_id, request_id, iec_number, record_res_count, upload_type,
  declaration_flag, status, authority_ack_id, error_details, processed_at, created_at, updated_at)
select gen_random_uuid(), platform_id, customer_id,
  'EBRCGW' || to_char(created at time zone 'UTC', 'YYYYMMDD') || upper(substr(md5(customer_id::text || ':' || seq), 1, 18)),
  iec, lines, '101', 'Y', status,
  case when status = 'FAILED' then null else 'ACK-' || gen_random_uuid() end,
  case when status = 'FAILED'
       then jsonb_build_array(jsonb_build_object('serialNo', 1, 'field', 'irmRemitAmtFCC', 'code', 'ERR23',
              'message', 'irmRemitAmtFCC does not match the available amount of the IRM.'))
       else '[]'::jsonb end,
  created + interval '4 minutes', created, created + interval '4 minutes'
from (
  select *,
    case when h % 10 < 7 then 'PROCESSED'
         when h % 10 = 7 and lines > 1 then 'PARTIALLY_PROCESSED'
         when h % 10 = 7 then 'PROCESSED'
         when h % 10 = 8 then 'ERRORED'
         else 'FAILED' end as status,
    now() - interval '1 day' - ((n - seq)::float8 * 364 / n) * interval '1 day' as created
  from (
    select c.id as customer_id, c.platform_id, c.iec_code as iec, c.n, g as seq,
      hashint8(c.ordinal * 7000003 + g) & 2147483647 as h,
      (hashint8(c.ordinal * 7000003 + g + 900000000000) & 2147483647) % 5 + 1 as lines
    from (
      select id, platform_id, iec_code, substr(iec_code, 3)::bigint as ordinal,
        case when substr(iec_code, 3)::bigint = 1 then $2::int
             when substr(iec_code, 3)::bigint <= $3::int + 1 then $4::int
             else 0 end as n
      from platform_customers
      where platform_id = $1::uuid and iec_code like '07%'
    ) c, generate_series(1, c.n) g
  ) hashed
) shaped`;

// $1 platform, $2 IRMs of the big customer, $3 of the others: each line maps one of its customer's seeded IRMs.
// eBRC numbers use 8… sequence numbers and past dates, so they never meet the sandbox's (today, 0…).
const LINE_INSERT = `
insert into genebrc_request_lines (request_id, line_index, serial_no, irm_id, irm_number, sb_cum_invoice_number,
  mapped_amount, reserved, payload, status, ebrc_number, ebrc_date, error_details)
select r.id, k - 1, k, i.id, i.irm_number, x.invoice, x.mapped, false,
  jsonb_build_object(
    'serialNo', k, 'uploadType', 101, 'branchSlNo', 0, 'irmIfscCode', i.ifsc_code, 'irmAdCode', i.remittance_ad_code,
    'irmNumber', i.irm_number, 'irmDt', to_char(i.irm_issue_date, 'DDMMYYYY'), 'irmFCC', i.remittance_fcc,
    'irmPurposeCode', i.purpose_of_remittance, 'irmRemitAmtFCC', i.remittance_fcc_amount, 'sbCumInvoiceNumber', x.invoice,
    'sbCumInvoiceDate', to_char(i.irm_issue_date, 'DDMMYYYY'), 'portCode', 'INNSA1', 'billNo', 'BL' || x.invoice,
    'sbCumInvoiceFCC', i.remittance_fcc, 'sbCumInvoiceValueinFCC', x.mapped, 'mappedIRMAmountFCC', x.mapped,
    'isVostro', case when i.remittance_fcc = 'INR' then 'Y' else 'N' end,
    'vostroType', case when i.remittance_fcc = 'INR' then 'SVRA' end
  ) || jsonb_build_object(
    'mappedORMAmountFCC', null, 'isThirdPartyExport', null, 'commissionValDeduct', null, 'commissionValInfo', null,
    'discountValDeduct', null, 'discountValInfo', null, 'insuranceValDeduct', null, 'insuranceValInfo', null,
    'otherDeductionDeduct', null, 'otherdeductionsInfo', null, 'freightValDeduct', null, 'freightValInfo', null,
    'sacCode1', null, 'sacCode2', null, 'serviceTypeModesValue', null, 'isGstAvail', null, 'gstinInvoiceNumber', null,
    'gstinInvoiceDate', null
  ),
  x.line_status,
  case when x.line_status = 'GENERATED'
       then 'EBRC' || to_char(r.processed_at at time zone 'UTC', 'YYYYMMDD') || lpad((8000000000 + row_number() over ())::text, 10, '0') end,
  case when x.line_status = 'GENERATED' then (r.processed_at at time zone 'UTC')::date end,
  case when x.line_status = 'FAILED'
       then jsonb_build_array(jsonb_build_object('serialNo', k, 'field', 'billNo', 'code', 'ERR40', 'message', 'Shipping bill not found at customs.'))
       else '[]'::jsonb end
from genebrc_requests r
cross join generate_series(1, r.record_res_count) k
cross join lateral (
  select
    case when r.status = 'PROCESSED' or (r.status = 'PARTIALLY_PROCESSED' and k > 1) then 'GENERATED' else 'FAILED' end as line_status,
    lpad(((hashint8(hashtext(r.request_id)::bigint * 31 + k) & 2147483647) % 9000000 + 1000000)::text, 7, '0') as invoice,
    1 + (hashint8(hashtext(r.request_id)::bigint * 37 + k) & 2147483647)
      % (case when substr(r.iec_number, 3)::bigint = 1 then $2::int else $3::int end) as irm_seq,
    (((hashint8(hashtext(r.request_id)::bigint * 41 + k) & 2147483647) % 500000 + 100) / 100.0)::numeric(16, 2) as mapped
) x
join irms i on i.platform_customer_id = r.platform_customer_id and i.irm_number = 'IR' || r.iec_number || lpad(x.irm_seq::text, 7, '0')
where r.platform_id = $1::uuid`;
