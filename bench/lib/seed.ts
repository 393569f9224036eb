import { randomUUID } from 'node:crypto';
import { SYSTEM_SOURCE } from '../../src/services/audit.ts';
import { CompiledQuery } from 'kysely';
import { findSandboxAccount } from '../../sandbox/accounts.ts';
import { credentialSetToText, type CredentialSet, type CredentialSetText } from '../../src/authority/protocol/credentials.ts';
import { CredentialsVault } from '../../src/services/credentials-vault.ts';
import { KeyRing } from '../../src/services/server-key.ts';
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
/** Requests (sequence numbers per customer) per transaction. */
const REQUEST_CHUNK = 10_000;
/** The tables of counts kept by triggers on the seeded tables (migrations 0003, 0004, 0011 and 0026). */
const COUNT_TABLES = [
  'irm_day_counts', 'irm_month_counts', 'irm_customer_counts', 'genebrc_request_status_counts', 'genebrc_request_day_counts', 'genebrc_request_month_counts',
  'event_day_counts',
];
// The accounts that behave normally at the sandbox: each seeded customer holds one's login and API credential set.
export const SANDBOX_USERNAMES = ['demo.exporter', 'services.exporter', 'vostro.exporter', 'bulk.exporter'];
const SANDBOX_PASSWORD = 'Sandbox@123';

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

type CustomerNaming = { name: string; email: string; companyName: string; address: string; ageHours: number };

/**
 * A customer row as a credential check leaves it (services/authority-credentials.ts): the IEC of the issued set, the
 * login and the set, each sealed for this customer, and what is shown of the set.
 */
function verifiedCustomerRow(vault: CredentialsVault, id: string, username: string, set: CredentialSet, text: CredentialSetText, naming: CustomerNaming) {
  return {
    id,
    name: naming.name,
    email: naming.email,
    company_name: naming.companyName,
    address: naming.address,
    iec_code: set.iecCode,
    authority_username: username,
    authority_credentials: vault.seal(id, { username, password: SANDBOX_PASSWORD }),
    authority_api_credentials: vault.sealApiCredentials(id, text),
    authority_api_client_id: set.clientId,
    authority_api_envelope_profile: set.envelopeProfile,
    age_hours: naming.ageHours,
  };
}

// $1 platform, $2 the rows of verifiedCustomerRow (JSON). The IRMs count as pulled now.
const CUSTOMER_INSERT = `
insert into platform_customers (id, platform_id, name, email, type, company_name, address, is_active, iec_code,
  authority_verified_at, authority_credentials_status, authority_username, authority_credentials,
  authority_api_credentials, authority_api_iec_code, authority_api_client_id, authority_api_envelope_profile,
  authority_api_credentials_updated_at, irms_pulled_at, created_at, updated_at)
select r.id, $1::uuid, r.name, r.email, 'customer', r.company_name, r.address, true, r.iec_code,
  now() - (r.age_hours - 1) * interval '1 hour', 'valid', r.authority_username, r.authority_credentials,
  r.authority_api_credentials, r.iec_code, r.authority_api_client_id, r.authority_api_envelope_profile,
  now() - (r.age_hours - 1) * interval '1 hour', now(),
  now() - r.age_hours * interval '1 hour', now() - (r.age_hours - 1) * interval '1 hour'
from jsonb_to_recordset($2::jsonb) as r(id uuid, name text, email text, company_name text, address text,
  iec_code text, authority_username text, authority_credentials text, authority_api_credentials text,
  authority_api_client_id text, authority_api_envelope_profile text, age_hours integer)`;

/**
 * One more customer of the platform, verified with a sandbox account as a credential check leaves it, with no IRMs
 * (its IRMs count as pulled now: the caller stores them). For the benchmark's extra measurements (matching).
 */
export async function insertVerifiedCustomer(
  database: Database,
  platformId: string,
  encryptionKey: Buffer,
  username: string,
  set: CredentialSet,
  naming: Pick<CustomerNaming, 'name' | 'email' | 'companyName'>,
): Promise<string> {
  const id = randomUUID();
  const row = verifiedCustomerRow(new CredentialsVault(KeyRing.of(encryptionKey)), id, username, set, credentialSetToText(set), {
    ...naming,
    address: '1 Bench Road',
    ageHours: 1,
  });
  await runnerOf(database)(CUSTOMER_INSERT, [platformId, JSON.stringify([row])]);
  return id;
}

/**
 * Runs one bulk insert in its own transaction, with the session settings given. Every constraint and
 * trigger of the schema applies, as to the service's own writes (derived data such as per-day counts
 * stays right).
 */
async function bulkInsert(database: Database, text: string, parameters: unknown[], settings: string[] = []): Promise<void> {
  await database.db.transaction().execute(async (tx) => {
    // JIT compilation costs about a second per statement here and saves nothing on these plans.
    // A million rows take longer than the service's statement timeout (DATABASE_STATEMENT_TIMEOUT_MS).
    for (const setting of ['jit = off', 'statement_timeout = 0', ...settings]) {
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

/** A seeded customer as the SQL below reads it: its ordinal drives every pseudo-random choice. */
type SeededCustomer = { id: string; ordinal: number; iec: string; pan: string };

/**
 * Migrates a fresh database and fills it with set-based SQL: a platform and its API key (through
 * the service's own code), customers as a credential check leaves them (the sandbox account's IEC, the login and the
 * API credential set the sandbox issued, both sealed), IRMs (in chunks, `parallelism` at a time), GenEBRC requests
 * and their lines, then VACUUM ANALYZE. Every value honours the schema's constraints; the data is deterministic apart
 * from ids. `credentialSets` holds the set of each of SANDBOX_USERNAMES, from the sandbox's issueApiCredentials; nothing
 * of the sandbox's own storage is written here.
 */
export async function seed(
  database: Database,
  volumes: Volumes,
  encryptionKey: Buffer,
  credentialSets: ReadonlyMap<string, CredentialSet>,
  parallelism = 1,
): Promise<Seeded> {
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
  const { platform, apiKey } = await createPlatform(database.db, 'Benchmark platform', SYSTEM_SOURCE);

  const accounts = SANDBOX_USERNAMES.map((username) => {
    const set = credentialSets.get(username);
    const account = findSandboxAccount(username);
    if (set === undefined || account === undefined) throw new Error(`no credential set of the sandbox account ${username} to seed with`);
    if (set.iecCode !== account.iecCode) throw new Error(`the sandbox issued ${username} a set for IEC ${set.iecCode}, its account says ${account.iecCode}`);
    return { username, set, text: credentialSetToText(set), pan: account.panNumber };
  });
  const customers: SeededCustomer[] = Array.from({ length: volumes.customers }, (_, index) => {
    const account = accounts[index % accounts.length]!;
    return { id: randomUUID(), ordinal: index + 1, iec: account.set.iecCode, pan: account.pan };
  });
  const customerIds = customers.map((customer) => customer.id);
  await step('customers', volumes.customers, async (bar) => {
    const vault = new CredentialsVault(KeyRing.of(encryptionKey));
    const rows = customers.map(({ id, ordinal }, index) => {
      const place = PLACES[index % PLACES.length]!;
      const trade = TRADES[Math.floor(index / PLACES.length) % TRADES.length]!;
      const form = FORMS[index % FORMS.length]!;
      const { username, set, text } = accounts[index % accounts.length]!;
      const slug = `${place}-${trade}`.toLowerCase().replaceAll(' ', '-');
      return verifiedCustomerRow(vault, id, username, set, text, {
        name: `${place} ${trade} ${String(ordinal).padStart(4, '0')}`,
        email: `accounts+${ordinal}@${slug}.example`,
        companyName: `${place} ${trade} ${form}`,
        address: `${(ordinal % 90) + 1} Industrial Estate, ${place} Road`,
        // The oldest customer first: ordinal 1 (the big one) is on the customer list's last page.
        ageHours: (volumes.customers - index) * 13,
      });
    });
    await run(CUSTOMER_INSERT, [platform.id, JSON.stringify(rows)]);
    bar.advance(rows.length);
  });

  await step('irms', totalIrms(volumes), async (bar) => {
    // The big customer alone, then groups of customers of about IRM_CHUNK_ROWS rows each.
    const chunks: SeededCustomer[][] = [customers.slice(0, 1)];
    const perChunk = Math.max(1, Math.floor(IRM_CHUNK_ROWS / Math.max(1, volumes.irmsPerCustomer)));
    for (let from = 1; from < customers.length; from += perChunk) chunks.push(customers.slice(from, from + perChunk));
    await inParallel(chunks, parallelism, async (chunk) => {
      await bulkInsert(database, IRM_INSERT, [platform.id, JSON.stringify(chunk), IRM_SPAN_DAYS, volumes.bigCustomerIrms, volumes.irmsPerCustomer]);
      bar.advance(chunk[0]!.ordinal === 1 ? volumes.bigCustomerIrms : chunk.length * volumes.irmsPerCustomer);
    });
  });

  // The big customer and the customers after it that hold requests.
  const requestCustomers = JSON.stringify(customers.slice(0, volumes.requestCustomers + 1));
  await step('genebrc requests', totalRequests(volumes), async (bar) => {
    // A transaction per range of sequence numbers: every request's deferred count trigger updates its customer's
    // count rows, and updates of one row within one transaction make a chain of versions that each later update walks
    // (95,000 requests of one customer in one transaction took 46 s, in chunks of 10,000 a tenth of that).
    const most = Math.max(volumes.bigCustomerRequests, volumes.requestsPerCustomer);
    for (let from = 1; from <= most; from += REQUEST_CHUNK) {
      const to = Math.min(most, from + REQUEST_CHUNK - 1);
      await bulkInsert(database, REQUEST_INSERT, [platform.id, requestCustomers, volumes.bigCustomerRequests, volumes.requestsPerCustomer, from, to]);
      bar.advance(Math.min(volumes.bigCustomerRequests, to) - Math.min(volumes.bigCustomerRequests, from - 1) +
        volumes.requestCustomers * (Math.min(volumes.requestsPerCustomer, to) - Math.min(volumes.requestsPerCustomer, from - 1)));
    }
  });

  let lines = 0;
  await step('genebrc lines', totalRequests(volumes), async (bar) => {
    // generate_series over a column is estimated at 1,000 rows, which makes a hash join over every IRM look cheaper
    // than the ~3 unique-index lookups per request it really is.
    await bulkInsert(database, LINE_INSERT, [platform.id, requestCustomers, volumes.bigCustomerIrms, volumes.irmsPerCustomer], ['enable_hashjoin = off', 'enable_mergejoin = off']);
    lines = Number((await run('select count(*)::int as n from genebrc_request_lines'))[0]?.n ?? 0);
    bar.advance(totalRequests(volumes));
  });

  // The count rows were updated once per seeded row, thousands of times each within a few transactions, which no
  // vacuum can prune as it goes: the request counts ended at about 800 pages for 6,500 rows (status counts 740 pages
  // for 400), and a later GenEBRC page's day anchor read them all (2.3 ms instead of 1.0). A service writes its rows a
  // request at a time and autovacuum keeps these tables near their live size: they are rewritten to it here.
  await step('compact count tables', 1, async (bar) => {
    for (const table of COUNT_TABLES) await run(`vacuum full ${table}`);
    bar.advance(1);
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

// $1 platform, $2 the customers (JSON: id, ordinal, iec, pan), $3 span of issue dates in days, $4 IRMs of the big
// customer (ordinal 1), $5 of the others. Pseudo-random but deterministic: two hashes of (customer ordinal, sequence)
// drive every choice. IRM numbers carry the ordinal, so they are unique across customers that share a sandbox IEC.
const IRM_INSERT = `
insert into irms (id, platform_id, platform_customer_id, irm_number, irm_issue_date, ifsc_code, remittance_ad_code,
  remittance_date, remittance_fcc, remittance_fcc_amount, orm_amount_fcc, irm_available_amt, irm_utilized_amt,
  iec_code, pan_number, remitter_name, remitter_country, purpose_of_remittance, created_at, updated_at)
select gen_random_uuid(), platform_id, customer_id,
  'IR07' || lpad(ordinal::text, 8, '0') || lpad(seq::text, 7, '0'),
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
        current_date - ((n - seq)::bigint * $3::int / n)::int as issued
      from (
        select c.id as customer_id, $1::uuid as platform_id, c.ordinal, c.iec, c.pan, c.n, g as seq,
          (hashint8(c.ordinal * 10000019 + g) & 2147483647)::bigint as a,
          (hashint8(c.ordinal * 10000019 + g + 500000000000) & 2147483647)::bigint as b
        from (
          select id, ordinal, iec, pan, case when ordinal = 1 then $4::int else $5::int end as n
          from jsonb_to_recordset($2::jsonb) as customer(id uuid, ordinal bigint, iec text, pan text)
        ) c, generate_series(1, c.n) g
      ) hashed
    ) shaped
  ) priced
) used`;

// $1 platform, $2 the customers that hold requests (JSON: id, ordinal, iec), $3 requests of the big customer (ordinal 1),
// $4 requests of each other one; $5 and $6 the range of sequence numbers to insert (each customer's 1..n, cut to it).
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
    select c.id as customer_id, $1::uuid as platform_id, c.iec, c.n, g as seq,
      hashint8(c.ordinal * 7000003 + g) & 2147483647 as h,
      (hashint8(c.ordinal * 7000003 + g + 900000000000) & 2147483647) % 5 + 1 as lines
    from (
      select id, ordinal, iec, case when ordinal = 1 then $3::int else $4::int end as n
      from jsonb_to_recordset($2::jsonb) as customer(id uuid, ordinal bigint, iec text)
    ) c, generate_series(greatest(1, $5::int), least(c.n, $6::int)) g
  ) hashed
) shaped`;

// $1 platform, $2 the customers that hold requests (JSON: id, ordinal), $3 IRMs of the big customer, $4 of the others:
// each line maps one of its customer's seeded IRMs.
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
join jsonb_to_recordset($2::jsonb) as c(id uuid, ordinal bigint) on c.id = r.platform_customer_id
cross join generate_series(1, r.record_res_count) k
cross join lateral (
  select
    case when r.status = 'PROCESSED' or (r.status = 'PARTIALLY_PROCESSED' and k > 1) then 'GENERATED' else 'FAILED' end as line_status,
    lpad(((hashint8(hashtext(r.request_id)::bigint * 31 + k) & 2147483647) % 9000000 + 1000000)::text, 7, '0') as invoice,
    1 + (hashint8(hashtext(r.request_id)::bigint * 37 + k) & 2147483647)
      % (case when c.ordinal = 1 then $3::int else $4::int end) as irm_seq,
    (((hashint8(hashtext(r.request_id)::bigint * 41 + k) & 2147483647) % 500000 + 100) / 100.0)::numeric(16, 2) as mapped
) x
join irms i on i.platform_customer_id = r.platform_customer_id
  and i.irm_number = 'IR07' || lpad(c.ordinal::text, 8, '0') || lpad(x.irm_seq::text, 7, '0')
where r.platform_id = $1::uuid`;
