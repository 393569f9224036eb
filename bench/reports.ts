/**
 * `npm run bench:reports` (embedded database) or `npm run bench:reports -- --postgres`: the memory and time an eBRC
 * register of a million rows takes to stream (contract 16: peak memory under 100 MB more than at rest).
 *
 * Seeds one customer's register with `--rows` eBRCs (default 1,000,000) by SQL on a scratch database: half made
 * through this service (each with its request line, every field a push stores), half made elsewhere, over a year of
 * days, with the IRMs they name. Then, in this process (which for the embedded database also holds PGlite, as the
 * service's process does; started with `npm start`'s Node flags and malloc settings), writes the register in each `--formats` (default csv,json; xlsx takes minutes at this size)
 * into a sink that takes its bytes as a slow client would (a short pause every 64 KiB) and prints the rows, bytes, time and
 * the process's resident memory: at rest (after seeding, a GC and a settle) and its peak while writing (VmHWM, reset
 * before each run, and VmRSS sampled every 50 ms). Exits 1 when a peak is 100 MB or more above rest. The scratch
 * database is bench/tmp/reports (embedded) or the PostgreSQL database `ebrc_reports` (BENCH_POSTGRES_URL is the admin
 * connection, default postgres://postgres@127.0.0.1:5432/postgres), dropped at the end.
 */
import { spawn } from 'node:child_process';
import { SYSTEM_SOURCE } from '../src/services/audit.ts';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { CompiledQuery } from 'kysely';
import { customerEbrcRegister } from '../src/services/reports/ebrc-register.ts';
import type { ReportFormat } from '../src/services/reports/output.ts';
import { createPlatform } from '../src/services/platforms.ts';
import { insertCustomer } from '../src/store/customers.ts';
import { openDatabase, type Database } from '../src/store/database.ts';
import { migrate } from '../src/store/migrate.ts';
import { admin, scratchDatabaseUrl } from './lib/scratch-postgres.ts';
import { startScript } from './lib/start-script.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const MB = 1024 * 1024;
const LIMIT_MB = 100;

const { values: flags } = parseArgs({
  options: {
    postgres: { type: 'boolean', default: false },
    rows: { type: 'string', default: '1000000' },
    formats: { type: 'string', default: 'csv,json' },
  },
});
const ROWS = Number(flags.rows);
const FORMATS = flags.formats.split(',') as ReportFormat[];
const DATABASE_NAME = 'ebrc_reports';
const LINES_A_REQUEST = 500;

const postgresUrl = (): string => scratchDatabaseUrl(DATABASE_NAME);

// $1 platform, $2 customer, $3 eBRCs made here (a multiple of LINES_A_REQUEST), $4 lines a request.
const SEED_REQUESTS = `
insert into genebrc_requests (id, platform_id, platform_customer_id, request_id, iec_number, record_res_count, upload_type,
  declaration_flag, status, authority_ack_id, error_details, processed_at, created_at)
select gen_random_uuid(), $1::uuid, $2::uuid, 'EBRCGWBENCH' || lpad(g::text, 21, '0'), '0599001001', $4::int, '101', 'Y',
  'PROCESSED', 'ACK-BENCH-' || g, '[]', now(), now()
from generate_series(1, $3::int / $4::int) g`;

const SEED_LINES = `
insert into genebrc_request_lines (request_id, line_index, serial_no, irm_id, irm_number, sb_cum_invoice_number, mapped_amount,
  reserved, payload, status, ebrc_number, ebrc_date, error_details)
select r.id, k - 1, k, null, 'IRMBENCH' || lpad((n % 100000)::text, 12, '0'), 'INV' || n, 1234.50, false,
  jsonb_build_object(
    'serialNo', k, 'uploadType', 101, 'branchSlNo', 0, 'irmIfscCode', 'HDFC0000001', 'irmAdCode', '0510001',
    'irmNumber', 'IRMBENCH' || lpad((n % 100000)::text, 12, '0'), 'irmDt', '01112025', 'irmFCC', 'USD', 'irmPurposeCode', 'P0102',
    'irmRemitAmtFCC', 25000.75, 'sbCumInvoiceNumber', 'INV' || n, 'sbCumInvoiceDate', '02112025', 'portCode', 'INNSA1',
    'billNo', 'BL' || n, 'sbCumInvoiceFCC', 'USD', 'sbCumInvoiceValueinFCC', 1300.00, 'mappedIRMAmountFCC', 1234.50, 'isVostro', 'N',
    'commissionValDeduct', 65.50, 'commissionValInfo', 1
  ),
  'GENERATED', 'EBRCBENCH' || lpad(n::text, 13, '0'), date '2025-12-31' - (n % 365)::int, '[]'
from (select id, row_number() over (order by request_id) as ordinal from genebrc_requests where platform_customer_id = $1::uuid) r,
  generate_series(1, $2::int) k,
  lateral (select (r.ordinal - 1) * $2::int + k as n) numbered`;

// Every line made here, then as many made elsewhere.
const SEED_REGISTER = `
insert into ebrcs (id, platform_id, platform_customer_id, ebrc_number, ebrc_date, irm_number, sb_cum_invoice_number,
  sb_cum_invoice_date, realised_value_fcc, currency, iec_code, request_id, source, status)
select gen_random_uuid(), request.platform_id, request.platform_customer_id, line.ebrc_number, line.ebrc_date, line.irm_number,
  line.sb_cum_invoice_number, date '2025-11-02', line.mapped_amount, 'USD', '0599001001', request.request_id, 'this_service',
  case when line.serial_no % 50 = 0 then 'cancelled' else 'generated' end
from genebrc_request_lines line join genebrc_requests request on request.id = line.request_id
where request.platform_customer_id = $1::uuid
union all
select gen_random_uuid(), $2::uuid, $1::uuid, 'EBRCELSE' || lpad(g::text, 14, '0'), date '2025-12-31' - (g % 365)::int,
  'IRMBENCH' || lpad((g % 100000)::text, 12, '0'), 'EXT' || g, date '2025-11-03', 99.99, 'EUR', '0599001001', null, 'elsewhere', 'generated'
from generate_series(1, $3::int) g`;

const SEED_IRMS = `
insert into irms (id, platform_id, platform_customer_id, irm_number, irm_issue_date, ifsc_code, remittance_ad_code, remittance_date,
  remittance_fcc, remittance_fcc_amount, orm_amount_fcc, irm_available_amt, irm_utilized_amt, iec_code, pan_number, remitter_name,
  remitter_country, purpose_of_remittance)
select gen_random_uuid(), $1::uuid, $2::uuid, 'IRMBENCH' || lpad(g::text, 12, '0'), date '2025-11-01', 'HDFC0000001', '0510001',
  date '2025-10-30', 'USD', 1000000.00, 0, 500000.00, 500000.00, '0599001001', 'ABCDE1234F', 'Globex Trading LLC', 'US', 'P0102'
from generate_series(0, 99999) g`;

async function inTransaction(database: Database, statement: string, parameters: unknown[]): Promise<void> {
  await database.db.transaction().execute(async (tx) => {
    await tx.executeQuery(CompiledQuery.raw('set local jit = off'));
    // Seeding a million rows takes longer than the service's statement timeout (DATABASE_STATEMENT_TIMEOUT_MS).
    await tx.executeQuery(CompiledQuery.raw('set local statement_timeout = 0'));
    await tx.executeQuery(CompiledQuery.raw(statement, parameters));
  });
}

async function seed(database: Database): Promise<{ platformId: string; customerId: string }> {
  await migrate(database);
  const { platform } = await createPlatform(database.db, 'Bench reports', SYSTEM_SOURCE);
  const customerId = randomUUID();
  await insertCustomer(database.db, {
    id: customerId, platformId: platform.id, name: 'Bench', email: 'bench@example.com', type: 'customer', companyName: 'Bench Exports', address: null,
  });
  await database.db.updateTable('platform_customers').set({ iec_code: '0599001001' }).where('id', '=', customerId).execute();
  const madeHere = Math.floor(ROWS / 2 / LINES_A_REQUEST) * LINES_A_REQUEST;
  const started = performance.now();
  await inTransaction(database, SEED_IRMS, [platform.id, customerId]);
  await inTransaction(database, SEED_REQUESTS, [platform.id, customerId, madeHere, LINES_A_REQUEST]);
  await inTransaction(database, SEED_LINES, [customerId, LINES_A_REQUEST]);
  await inTransaction(database, SEED_REGISTER, [customerId, platform.id, ROWS - madeHere]);
  await database.db.executeQuery(CompiledQuery.raw('vacuum analyze'));
  console.log(`seeded ${ROWS.toLocaleString('en')} eBRCs (${madeHere.toLocaleString('en')} with their request lines) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return { platformId: platform.id, customerId };
}

function statusMb(field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

/** Resets VmHWM to the current RSS (Linux: writing 5 to clear_refs). */
function resetPeak(): void {
  try {
    fs.writeFileSync('/proc/self/clear_refs', '5');
  } catch {
    // Not allowed here: the sampled peak still counts.
  }
}

/** A client that reads at its own pace: every 64 KiB it takes a short pause, so backpressure reaches the writer. */
function slowSink(): { sink: Writable; bytes: () => number } {
  let bytes = 0;
  let sincePause = 0;
  const sink = new Writable({
    highWaterMark: 64 * 1024,
    write(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      sincePause += chunk.length;
      if (sincePause < 64 * 1024) return done();
      sincePause = 0;
      setTimeout(done, 1);
    },
  });
  return { sink, bytes: () => bytes };
}

async function atRest(): Promise<number> {
  globalThis.gc?.();
  await sleep(2_000);
  globalThis.gc?.();
  return statusMb('VmRSS');
}

async function main(): Promise<void> {
  const dataDir = path.join(ROOT, 'bench', 'tmp', 'reports');
  fs.rmSync(dataDir, { recursive: true, force: true });
  if (flags.postgres) {
    await admin(`drop database if exists ${DATABASE_NAME}`);
    await admin(`create database ${DATABASE_NAME}`);
  }
  const database = await openDatabase({ databaseUrl: flags.postgres ? postgresUrl() : undefined, dataDir });
  let failed = false;
  try {
    const { platformId, customerId } = await seed(database);
    console.log(`database: ${flags.postgres ? 'PostgreSQL' : 'embedded (PGlite, in this process)'}; node ${process.version} ${process.execArgv.join(' ')}`);
    console.log('format  rows       MB out  seconds  rows/s   rest MB  peak MB  peak-rest MB');
    for (const format of FORMATS) {
      const rest = await atRest();
      resetPeak();
      let sampled = 0;
      const sampler = setInterval(() => {
        sampled = Math.max(sampled, statusMb('VmRSS'));
      }, 50);
      const started = performance.now();
      const { sink, bytes } = slowSink();
      const report = await customerEbrcRegister({ db: database.db }, platformId, customerId, { format });
      await report.write(sink);
      const seconds = (performance.now() - started) / 1000;
      clearInterval(sampler);
      const peak = Math.max(sampled, statusMb('VmHWM'));
      const over = peak - rest;
      if (over >= LIMIT_MB) failed = true;
      console.log(
        [
          format.padEnd(6),
          ROWS.toLocaleString('en').padStart(9),
          (bytes() / MB).toFixed(1).padStart(8),
          seconds.toFixed(1).padStart(8),
          Math.round(ROWS / seconds).toLocaleString('en').padStart(8),
          rest.toFixed(0).padStart(8),
          peak.toFixed(0).padStart(8),
          `${over.toFixed(0).padStart(8)}${over >= LIMIT_MB ? `  over the ${LIMIT_MB} MB limit` : ''}`,
        ].join(' '),
      );
    }
  } finally {
    await database.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
    if (flags.postgres) await admin(`drop database if exists ${DATABASE_NAME}`);
  }
  process.exitCode = failed ? 1 : 0;
}

// The measurement runs in a process started as `npm start` starts the service (its Node flags and malloc settings).
if (process.env.BENCH_REPORTS_AS_SERVICE === '1') {
  await main();
} else {
  const { env, nodeFlags } = startScript();
  const child = spawn(process.execPath, ['--expose-gc', ...nodeFlags, import.meta.filename, ...process.argv.slice(2)], {
    env: { ...process.env, ...env, BENCH_REPORTS_AS_SERVICE: '1' },
    stdio: 'inherit',
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  process.exitCode = code ?? 1;
}
