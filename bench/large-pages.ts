/**
 * `npm run bench:pages` (embedded database) or `npm run bench:pages -- --postgres`: the memory a GenEBRC list page of
 * 100 requests of 999 lines takes, four at a time.
 *
 * Seeds one customer with 100 processed requests of 999 lines each (every field of a pushed line, an eBRC number per
 * line: about 1 MB of JSON per request) by SQL on a scratch database, starts the sandbox authority (sandbox/main.ts, on
 * storage of its own) for the service's AUTHORITY_URL and the service as `npm start` does (same Node flags, src/main.ts,
 * no poller: the page reads never call the authority), reads the page with limit=100 once alone and then four at a time for several rounds,
 * and prints the service process's peak RSS (VmHWM, reset before the rounds, and VmRSS sampled every 100 ms) and the
 * time per page. The scratch database is bench/tmp/large-pages (embedded; the sandbox's is bench/tmp/large-pages-sandbox)
 * or the PostgreSQL database `ebrc_large_pages` (the sandbox in its schema authority_sandbox; BENCH_POSTGRES_URL is the
 * admin connection, default postgres://postgres@127.0.0.1:5432/postgres), dropped at the end.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { SYSTEM_SOURCE } from '../src/services/audit.ts';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { CompiledQuery } from 'kysely';
import { createPlatform } from '../src/services/platforms.ts';
import { insertCustomer } from '../src/store/customers.ts';
import { openDatabase, type Database } from '../src/store/database.ts';
import { migrate } from '../src/store/migrate.ts';
import { RssSampler, freePort, rssOf, startServer } from './lib/processes.ts';
import { startSandboxProgram } from './lib/sandbox.ts';
import { admin, scratchDatabaseUrl } from './lib/scratch-postgres.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const TMP = path.join(ROOT, 'bench', 'tmp');
const MB = 1024 * 1024;

const { values: flags } = parseArgs({
  options: {
    postgres: { type: 'boolean', default: false },
    requests: { type: 'string', default: '100' },
    lines: { type: 'string', default: '999' },
    concurrency: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '5' },
  },
});
const REQUESTS = Number(flags.requests);
const LINES = Number(flags.lines);
const CONCURRENCY = Number(flags.concurrency);
const ROUNDS = Number(flags.rounds);
const DATABASE_NAME = 'ebrc_large_pages';
const postgresUrl = (): string => scratchDatabaseUrl(DATABASE_NAME);

// Every field a pushed line stores (lineToWire), and an eBRC number per line: the largest record a request makes.
const SEED_REQUESTS = `
insert into genebrc_requests (id, platform_id, platform_customer_id, request_id, iec_number, record_res_count, upload_type,
  declaration_flag, status, authority_ack_id, error_details, processed_at, created_at)
select gen_random_uuid(), $1::uuid, $2::uuid, 'EBRCGWBENCH' || lpad(g::text, 21, '0'), '0599001001', $4::int, '101', 'Y',
  'PROCESSED', 'ACK-BENCH-' || g, '[]', now() - g * interval '1 minute', now() - g * interval '1 hour'
from generate_series(1, $3::int) g`;

const SEED_LINES = `
insert into genebrc_request_lines (request_id, line_index, serial_no, irm_id, irm_number, sb_cum_invoice_number, mapped_amount,
  reserved, payload, status, ebrc_number, ebrc_date, error_details)
select r.id, k - 1, k, null, irm.number, invoice.number, 1234.50, false,
  jsonb_build_object(
    'serialNo', k, 'uploadType', 101, 'branchSlNo', 0, 'irmIfscCode', 'HDFC0000001', 'irmAdCode', '0510001',
    'irmNumber', irm.number, 'irmDt', '01112026', 'irmFCC', 'USD', 'irmPurposeCode', 'P0102', 'irmRemitAmtFCC', 25000.75,
    'sbCumInvoiceNumber', invoice.number, 'sbCumInvoiceDate', '02112026', 'portCode', 'INNSA1', 'billNo', 'BL' || invoice.number,
    'sbCumInvoiceFCC', 'USD', 'sbCumInvoiceValueinFCC', 1234.50, 'mappedIRMAmountFCC', 1234.50, 'isVostro', 'N', 'vostroType', null
  ) || jsonb_build_object(
    'mappedORMAmountFCC', null, 'isThirdPartyExport', null, 'commissionValDeduct', null, 'commissionValInfo', null,
    'discountValDeduct', null, 'discountValInfo', null, 'insuranceValDeduct', null, 'insuranceValInfo', null,
    'otherDeductionDeduct', null, 'otherdeductionsInfo', null, 'freightValDeduct', null, 'freightValInfo', null,
    'sacCode1', null, 'sacCode2', null, 'serviceTypeModesValue', null, 'isGstAvail', null, 'gstinInvoiceNumber', null,
    'gstinInvoiceDate', null),
  'GENERATED', 'EBRC20261122' || lpad((row_number() over ())::text, 10, '0'), date '2026-11-22', '[]'
from genebrc_requests r
cross join generate_series(1, r.record_res_count) k
cross join lateral (select 'IRM' || lpad((k * 7919 % 1000000)::text, 12, '0') as number) irm
cross join lateral (select lpad((1000000 + k)::text, 7, '0') as number) invoice
where r.platform_customer_id = $1::uuid`;

/** A migrated database holding the platform, its key and the customer with its large requests. */
async function seed(database: Database): Promise<{ apiKey: string; customerId: string }> {
  await migrate(database);
  const { platform, apiKey } = await createPlatform(database.db, 'Large pages benchmark', SYSTEM_SOURCE);
  const customerId = randomUUID();
  await insertCustomer(database.db, {
    id: customerId,
    platformId: platform.id,
    name: 'Bulk Exporter',
    email: 'bulk@large-pages.example',
    type: 'customer',
    companyName: 'Bulk Exports Pvt Ltd',
    address: null,
  });
  const run = (text: string, parameters: unknown[]) => database.db.executeQuery(CompiledQuery.raw(text, parameters));
  await run(SEED_REQUESTS, [platform.id, customerId, REQUESTS, LINES]);
  await run(SEED_LINES, [customerId]);
  await run('vacuum analyze', []);
  return { apiKey, customerId };
}

type PageRead = { milliseconds: number; bytes: number; chunked: boolean };

async function readPage(url: string, apiKey: string): Promise<PageRead> {
  const startedAt = performance.now();
  const response = await fetch(url, { headers: { 'x-api-key': apiKey } });
  if (response.status !== 200) throw new Error(`the page answered ${response.status}: ${(await response.text()).slice(0, 500)}`);
  let bytes = 0;
  for await (const part of response.body!) bytes += part.byteLength;
  return { milliseconds: performance.now() - startedAt, bytes, chunked: response.headers.get('content-length') === null };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function main(): Promise<void> {
  const backend = flags.postgres ? 'postgres' : 'embedded';
  const dataDir = path.join(TMP, 'large-pages');
  const sandboxDir = path.join(TMP, 'large-pages-sandbox');
  fs.rmSync(dataDir, { recursive: true, force: true });
  fs.rmSync(sandboxDir, { recursive: true, force: true });
  if (flags.postgres) {
    await admin(`drop database if exists ${DATABASE_NAME} with (force)`);
    await admin(`create database ${DATABASE_NAME}`);
  }
  const databaseEnv: Record<string, string> = flags.postgres ? { DATABASE_URL: postgresUrl(), DATA_DIR: dataDir } : { DATABASE_URL: '', DATA_DIR: dataDir };
  try {
    process.stderr.write(`seeding ${REQUESTS} requests of ${LINES} lines (${backend})…\n`);
    const seedStartedAt = performance.now();
    // Seeding takes longer than the service's statement timeout.
    const database = await openDatabase({ databaseUrl: databaseEnv.DATABASE_URL || undefined, dataDir, statementTimeoutMs: 0 });
    const { apiKey, customerId } = await seed(database).finally(() => database.close());
    process.stderr.write(`seeded in ${((performance.now() - seedStartedAt) / 1000).toFixed(1)} s; starting the sandbox authority and the service…\n`);

    const sandbox = await startSandboxProgram({
      name: 'sandbox-large-pages',
      storage: flags.postgres ? { databaseUrl: postgresUrl() } : { dataDir: sandboxDir },
      port: await freePort(),
      processingDelayMs: 3_000,
      logDir: path.join(TMP, 'logs'),
    });
    try {
      const service = await startServer({
        name: 'service-large-pages',
        script: path.join(ROOT, 'src', 'main.ts'),
        env: {
          ...databaseEnv,
          AUTHORITY_URL: sandbox.baseUrl,
          HOST: '127.0.0.1',
          RUN_POLLER: 'false',
          LOG_LEVEL: 'warn',
          ENCRYPTION_KEY: randomBytes(32).toString('base64'),
          RATE_LIMIT_PER_SECOND: '1000000',
          RATE_LIMIT_BURST: '1000000',
        },
        port: await freePort(),
        readyPath: '/ready',
        logDir: path.join(TMP, 'logs'),
        startTimeoutMs: 120_000,
      });
      try {
        const url = `${service.baseUrl}/api/v1/genebrc?platformCustomerId=${customerId}&limit=100`;
        const idleRss = rssOf(service.pid);
        const alone = await readPage(url, apiKey);
        const sampler = new RssSampler(service.pid);
        sampler.start();
        const concurrent: PageRead[] = [];
        const roundSeconds: number[] = [];
        for (let round = 0; round < ROUNDS; round += 1) {
          const startedAt = performance.now();
          concurrent.push(...(await Promise.all(Array.from({ length: CONCURRENCY }, () => readPage(url, apiKey)))));
          roundSeconds.push((performance.now() - startedAt) / 1000);
        }
        const peakRss = sampler.stop();
        const times = concurrent.map((read) => read.milliseconds);
        const lines = [
          `GenEBRC page: ${REQUESTS} requests of ${LINES} lines, ${(alone.bytes / MB).toFixed(1)} MB, ${alone.chunked ? 'streamed (chunked)' : 'one body (Content-Length)'}; ${backend} database`,
          `service RSS idle (after start): ${(idleRss / MB).toFixed(0)} MB`,
          `one page alone: ${alone.milliseconds.toFixed(0)} ms`,
          `${CONCURRENCY} pages at once, ${ROUNDS} rounds: peak RSS ${(peakRss / MB).toFixed(0)} MB; per page median ${median(times).toFixed(0)} ms, ` +
            `max ${Math.max(...times).toFixed(0)} ms; per round median ${median(roundSeconds).toFixed(2)} s`,
        ];
        process.stdout.write(`${lines.join('\n')}\n`);
      } finally {
        await service.stop();
      }
    } finally {
      await sandbox.stop();
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(sandboxDir, { recursive: true, force: true });
    if (flags.postgres) await admin(`drop database if exists ${DATABASE_NAME} with (force)`);
  }
}

await main();
