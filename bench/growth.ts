/**
 * `node bench/growth.ts` (10k, 100k and 1M IRMs on PostgreSQL, about 10 minutes on a quiet machine of two cores) or
 * `node bench/growth.ts --quick` (10k and 50k, 1 s per operation): which operations grow with the data and which do not.
 *
 * For each size, one after the other: a fresh database (the PostgreSQL database BENCH_GROWTH_DATABASE, default
 * `ebrc_growth`, dropped and recreated through the admin connection BENCH_POSTGRES_URL, default
 * postgres://postgres@127.0.0.1:5432/postgres, and dropped at the end; or with `--backend embedded` a folder under
 * bench/tmp/), the sandbox authority started on it (sandbox/main.ts, as bench/run.ts does) for the accounts' API
 * credential sets, set-based seeding (bench/lib/seed.ts: every constraint and trigger in force) in which ONE big
 * customer holds all but a few thousand of the IRMs (100 other customers hold up to 30 each) and the GenEBRC requests
 * are a tenth of the IRMs (all but 200 of them the big customer's), then the service as `npm start` runs it (its Node
 * flags, src/main.ts; IRM_REFRESH_INTERVAL_SECONDS=86400, so every refresh answers from the store). Then, for the big
 * customer, one operation at a time:
 *
 * - autocannon (8 connections, --seconds each, after a 1 s warm-up when --seconds is 3 or more): GET the customer; IRM
 *   refresh (POST /irm/refresh, limit 100) page 1, the middle page, the last page, and page 1 of the issue dates from
 *   two years to one year ago; GenEBRC list (limit 10) page 1 and the last page;
 * - timed one request at a time (after one warm-up): the CSV template of every mappable IRM (time to the last byte,
 *   time to the first, size, rows); a match of 350 invoices made from the big customer's 350 newest USD IRMs with a
 *   balance (exact amounts, the remitter as buyer, the invoice two days after an advance's remittance or two days
 *   before another's; maxDaysAfterInvoice 14, so that at 1M IRMs the window still holds fewer than the 20,000 IRMs a
 *   match reads at most); a 100-line push for another customer, verified with the sandbox account bulk.exporter
 *   (each push on 100 of its IRMs not pushed before, one cent each): its time should not depend on the big customer.
 *
 * Memory: the service's RSS a second after start, and its peak (VmHWM reset before each operation, VmRSS every 100 ms)
 * over the operations; the database's size (pg_database_size) or the embedded folder's. Before each measurement
 * (not in --quick) the benchmark waits up to 20 s (3 minutes in all) for a second in which other work takes under 10%
 * of the CPU, and a cell notes what other work took (10% or more) while it was measured.
 *
 * Flags: --sizes 10000,100000,1000000, --backend postgres|embedded (embedded makes sense up to about 100k), --seconds N
 * (autocannon seconds per operation, default 5), --quick (sizes 10000,50000 and 1 s). Progress goes to stderr; the
 * table to stdout, and with the method and every figure to bench/results/growth-<backend>-<UTC stamp>.md and .json.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { CredentialSet } from '../src/authority/protocol/credentials.ts';
import { openDatabase } from '../src/store/database.ts';
import { createVerifiedCustomer, ApiClient, allIrms, irmPagePath, type ApiIrm, type IrmPage } from './lib/api.ts';
import { renderReport, renderTable, type GrowthRun, type LoadFigures, type OperationResult, type SizeResult, type TimedFigures } from './lib/growth-report.ts';
import { load } from './lib/load.ts';
import { CpuMeter, RssSampler, freePort, heapOf, rssOf, startServer, type Server } from './lib/processes.ts';
import { git } from './lib/repo.ts';
import { startScript } from './lib/start-script.ts';
import { ProgressBar, formatCount, log } from './lib/progress.ts';
import { pushBody } from './lib/pushes.ts';
import { SANDBOX_APPLICATION_NAME, SANDBOX_PASSWORD, issueCredentialSet, sandboxSettings, startSandboxProgram, type SandboxStorage } from './lib/sandbox.ts';
import { SANDBOX_USERNAMES, seed, type Volumes } from './lib/seed.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const TMP = path.join(ROOT, 'bench', 'tmp');
const RESULTS = path.join(ROOT, 'bench', 'results');
const LOG_DIR = path.join(TMP, 'logs');

const { values: flags } = parseArgs({
  options: {
    sizes: { type: 'string' },
    backend: { type: 'string', default: 'postgres' },
    seconds: { type: 'string' },
    quick: { type: 'boolean', default: false },
  },
});
if (flags.backend !== 'postgres' && flags.backend !== 'embedded') throw new Error(`--backend is postgres or embedded, not ${flags.backend}`);
const backend: 'postgres' | 'embedded' = flags.backend;
const quick = flags.quick;
const sizes = (flags.sizes ?? (quick ? '10000,50000' : '10000,100000,1000000')).split(',').map((text) => Number(text.trim().replaceAll('_', '')));
for (const size of sizes) if (!Number.isInteger(size) || size < 5_000) throw new Error(`--sizes takes whole numbers of IRMs from 5000 up (got ${size})`);
const loadSeconds = Number(flags.seconds ?? (quick ? 1 : 5));
if (!Number.isInteger(loadSeconds) || loadSeconds < 1) throw new Error(`--seconds takes a whole number of seconds from 1 up (autocannon runs whole seconds; got ${flags.seconds})`);
const warmupSeconds = loadSeconds >= 3 ? 1 : 0;
const quietWaitSeconds = quick ? 0 : 20;
/** The whole run's budget for such waits, so that a busy machine does not stretch it without end. */
let quietBudgetMs = quick ? 0 : 180_000;
if (backend === 'embedded' && sizes.some((size) => size > 200_000)) {
  log('warning: the embedded database seeds on one connection and serves from one; sizes above about 100k take long and say little');
}

const adminUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const growthDatabase = process.env.BENCH_GROWTH_DATABASE ?? 'ebrc_growth';
const encryptionKey = randomBytes(32);

const CONNECTIONS = 8;
const IRM_PAGE_LIMIT = 100;
const LIST_PAGE_LIMIT = 10;
/** Customers besides the big one: they hold up to 30 IRMs each; the first REQUEST_CUSTOMERS of them requests too. */
const OTHER_CUSTOMERS = 100;
const REQUEST_CUSTOMERS = 10;
const REQUESTS_PER_CUSTOMER = 20;
const TEMPLATE_RUNS = 3;
const MATCH_RUNS = 3;
const MATCH_INVOICES = 350;
const MATCH_CURRENCY = 'USD';
const MATCH_MAX_DAYS = 14;
const PUSH_RUNS = 5;
const PUSH_LINES = 100;
const PUSH_ACCOUNT = 'bulk.exporter';
/** The pushable purpose codes of a goods push (uploadType 101), as bench/lib/pushes.ts keeps them. */
const PUSHABLE_PURPOSES = new Set(['P0102', 'P0103']);
const SANDBOX_PROCESSING_DELAY_MS = 3_000;

const serviceEnv: Record<string, string> = {
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  RATE_LIMIT_PER_SECOND: '1000000',
  RATE_LIMIT_BURST: '1000000',
  // Seeded customers count as pulled now: a refresh within a day answers from the store.
  IRM_REFRESH_INTERVAL_SECONDS: '86400',
  POLL_INTERVAL_SECONDS: '2',
  AUTHORITY_MODE: 'sandbox',
};

/** One big customer with all but a few thousand IRMs; a tenth as many requests as IRMs, nearly all the big customer's. */
function volumesFor(size: number): Volumes {
  const irmsPerCustomer = Math.max(1, Math.min(30, Math.floor(size / 500)));
  const requests = Math.max(REQUEST_CUSTOMERS * REQUESTS_PER_CUSTOMER + 100, Math.round(size / 10));
  return {
    customers: OTHER_CUSTOMERS + 1,
    bigCustomerIrms: size - OTHER_CUSTOMERS * irmsPerCustomer,
    irmsPerCustomer,
    bigCustomerRequests: requests - REQUEST_CUSTOMERS * REQUESTS_PER_CUSTOMER,
    requestCustomers: REQUEST_CUSTOMERS,
    requestsPerCustomer: REQUESTS_PER_CUSTOMER,
  };
}

function databaseUrl(name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function withClient<T>(connectionString: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function dropGrowthDatabase(): Promise<void> {
  await withClient(adminUrl, async (client) => {
    await client.query(`drop database if exists "${growthDatabase}" with (force)`);
  });
}

function folderBytes(folder: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(folder, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += fs.statSync(path.join(entry.parentPath, entry.name)).size;
  }
  return total;
}

function isoDay(daysAgo: number): string {
  return new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);
}

function shiftDays(isoDate: string, days: number): string {
  return new Date(Date.parse(`${isoDate}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
}

function median(values: readonly number[]): number {
  const sorted = values.toSorted((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** An IRM as POST /irm/refresh answers it: what a push line and a matched invoice need. */
type FullIrm = ApiIrm & { remittanceDate: string; remitterName: string; remitterCountry: string };

/** What a size's measurements share: the service, the API, the CPU meter. */
type Context = { service: Server; api: ApiClient; cpu: CpuMeter; bigId: string };

/** Waits (at most quietWaitSeconds) for a second in which other work takes under 10% of the CPU. */
async function waitForQuiet(cpu: CpuMeter): Promise<void> {
  if (quietWaitSeconds <= 0 || quietBudgetMs <= 0) return;
  const startedAt = performance.now();
  const longest = Math.min(quietWaitSeconds * 1000, quietBudgetMs);
  let other = 0;
  while (performance.now() - startedAt < longest) {
    await cpu.start();
    await sleep(1_000);
    other = (await cpu.stop()).other;
    if (other < 0.1) break;
  }
  const waited = performance.now() - startedAt;
  quietBudgetMs -= waited;
  if (waited > 1_500) log(`  (waited ${(waited / 1000).toFixed(0)} s for other work to calm down; it takes ${(other * 100).toFixed(0)}% of the CPU)`);
}

/** Runs `work` while sampling the service's memory and the machine's CPU. */
async function measured<T>(context: Context, work: () => Promise<T>): Promise<{ value: T; peakRssBytes: number; cpuOther: number; cpuGroups: Record<string, number> }> {
  const sampler = new RssSampler(context.service.pid);
  await context.cpu.start();
  sampler.start();
  try {
    const value = await work();
    return { value, peakRssBytes: sampler.stop(), ...(await context.cpu.stop().then((cpu) => ({ cpuOther: cpu.other, cpuGroups: cpu.groups }))) };
  } catch (error) {
    sampler.stop();
    await context.cpu.stop();
    throw error;
  }
}

function errorText(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, 200);
}

/** An operation driven by autocannon: `connections` connections for loadSeconds, one request repeated. */
async function loadOperation(
  context: Context,
  spec: { key: string; title: string; method: 'GET' | 'POST'; path: string },
): Promise<OperationResult> {
  const headers: Record<string, string> = spec.method === 'POST'
    ? { 'x-api-key': context.api.apiKey, 'content-type': 'application/json' }
    : { 'x-api-key': context.api.apiKey };
  const options = {
    url: context.service.baseUrl,
    connections: CONNECTIONS,
    method: spec.method,
    headers,
    requests: [{ method: spec.method, path: spec.path, ...(spec.method === 'POST' ? { body: '{}' } : {}) }],
  };
  const base: Omit<OperationResult, 'peakRssBytes' | 'cpuOther' | 'cpuGroups'> = {
    key: spec.key,
    title: spec.title,
    request: `${spec.method} ${spec.path.replaceAll(context.bigId, '{big}')}`,
    kind: 'load',
  };
  try {
    if (warmupSeconds > 0) await load({ ...options, seconds: warmupSeconds });
    await waitForQuiet(context.cpu);
    const { value: result, ...sampled } = await measured(context, () => load({ ...options, seconds: loadSeconds }));
    const figures: LoadFigures = {
      connections: CONNECTIONS,
      seconds: result.seconds,
      rps: result.rps,
      p50: result.p50,
      p99: result.p99,
      max: result.max,
      ok: result.ok,
      failed: result.non2xx + result.errors + result.timeouts,
      statusCodes: result.statusCodes,
    };
    const operation: OperationResult = { ...base, load: figures, ...sampled };
    if (figures.ok === 0) operation.error = `no 2xx answer (${JSON.stringify(figures.statusCodes)})`;
    log(`  ${spec.title.padEnd(44)} p50 ${figures.p50.toFixed(2).padStart(7)} ms  p99 ${figures.p99.toFixed(2).padStart(7)} ms  ` +
      `${formatCount(figures.rps).padStart(6)} req/s  RSS ${(sampled.peakRssBytes / 1024 ** 2).toFixed(0)} MB` +
      `${figures.failed > 0 ? `  (${figures.failed} failed)` : ''}${sampled.cpuOther >= 0.1 ? `  other work ${(sampled.cpuOther * 100).toFixed(0)}% CPU` : ''}`);
    return operation;
  } catch (error) {
    log(`  ${spec.title}: ${errorText(error)}`);
    return { ...base, peakRssBytes: rssOf(context.service.pid), cpuOther: 0, cpuGroups: {}, error: errorText(error) };
  }
}

/**
 * An operation sent `runs` times one at a time, after one warm-up: `once(run)` sends it (run 0 is the warm-up) and
 * answers its time and details.
 */
async function timedOperation(
  context: Context,
  spec: { key: string; title: string; request: string; runs: number },
  once: (run: number) => Promise<{ ms: number; details: Record<string, number | string> }>,
): Promise<OperationResult> {
  const base: Omit<OperationResult, 'peakRssBytes' | 'cpuOther' | 'cpuGroups'> = { key: spec.key, title: spec.title, request: spec.request, kind: 'timed' };
  try {
    await once(0);
    await waitForQuiet(context.cpu);
    const { value: runs, ...sampled } = await measured(context, async () => {
      const answers: { ms: number; details: Record<string, number | string> }[] = [];
      for (let run = 1; run <= spec.runs; run++) answers.push(await once(run));
      return answers;
    });
    const times = runs.map((run) => run.ms);
    const figures: TimedFigures = {
      runs: runs.length,
      medianMs: median(times),
      minMs: Math.min(...times),
      maxMs: Math.max(...times),
      details: runs[runs.length - 1]!.details,
    };
    log(`  ${spec.title.padEnd(44)} median ${figures.medianMs.toFixed(1).padStart(8)} ms  (${figures.minMs.toFixed(1)}–${figures.maxMs.toFixed(1)})  ` +
      `RSS ${(sampled.peakRssBytes / 1024 ** 2).toFixed(0)} MB  ${JSON.stringify(figures.details)}` +
      `${sampled.cpuOther >= 0.1 ? `  other work ${(sampled.cpuOther * 100).toFixed(0)}% CPU` : ''}`);
    return { ...base, timed: figures, ...sampled };
  } catch (error) {
    log(`  ${spec.title}: ${errorText(error)}`);
    return { ...base, peakRssBytes: rssOf(context.service.pid), cpuOther: 0, cpuGroups: {}, error: errorText(error) };
  }
}

/** Downloads the template, counting its bytes and lines as they come (never the whole file in memory). */
async function downloadTemplate(context: Context, pathAndQuery: string): Promise<{ ms: number; details: Record<string, number | string> }> {
  const startedAt = performance.now();
  const response = await fetch(`${context.service.baseUrl}${pathAndQuery}`, {
    headers: { 'x-api-key': context.api.apiKey },
    signal: AbortSignal.timeout(900_000),
  });
  const firstByteMs = performance.now() - startedAt;
  if (response.status !== 200 || !response.body) throw new Error(`the template answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
  let bytes = 0;
  let newlines = 0;
  for await (const chunk of response.body) {
    const buffer = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    bytes += buffer.byteLength;
    for (let at = buffer.indexOf(10); at !== -1; at = buffer.indexOf(10, at + 1)) newlines++;
  }
  // The header row, then a row per IRM; the last row may or may not end with a newline.
  return { ms: performance.now() - startedAt, details: { bytes, rows: Math.max(0, newlines - 1), firstByteMs } };
}

/**
 * 350 invoices, one per IRM of the big customer's newest USD IRMs with a balance (newest issue date first, as the
 * refresh pages them): the exact available amount, the remitter as the buyer, dated two days after an advance's
 * remittance (P0103) or two days before another IRM's.
 */
async function matchBody(api: ApiClient, bigId: string): Promise<{ body: string; span: { from: string; to: string } }> {
  const picked: FullIrm[] = [];
  for (let page = 1; picked.length < MATCH_INVOICES && page <= 200; page++) {
    const answer = await api.expect<{ data: FullIrm[]; meta: IrmPage['meta'] }>(200, 'POST', irmPagePath(bigId, page, IRM_PAGE_LIMIT), {});
    for (const irm of answer.data) {
      if (picked.length < MATCH_INVOICES && irm.remittanceFCC === MATCH_CURRENCY && irm.irmAvailableAmt > 0 && irm.purposeOfRemittance !== 'P0101' && irm.purposeOfRemittance !== 'P0108') {
        picked.push(irm);
      }
    }
    if (page >= answer.meta.totalPages) break;
  }
  if (picked.length === 0) throw new Error(`the big customer has no ${MATCH_CURRENCY} IRM with a balance to make invoices of`);
  const invoices = picked.map((irm, index) => ({
    sbCumInvoiceNumber: `GROWTH${String(index + 1).padStart(5, '0')}`,
    sbCumInvoiceDate: shiftDays(irm.remittanceDate, irm.purposeOfRemittance === 'P0103' ? 2 : -2),
    sbCumInvoiceFCC: irm.remittanceFCC,
    sbCumInvoiceValueinFCC: irm.irmAvailableAmt,
    portCode: 'INNSA1',
    billNo: `BL${index + 1}`,
    buyerName: irm.remitterName,
    buyerCountry: irm.remitterCountry,
  }));
  const dates = invoices.map((invoice) => invoice.sbCumInvoiceDate).toSorted();
  return {
    body: JSON.stringify({ uploadType: '103', maxDaysAfterInvoice: MATCH_MAX_DAYS, invoices }),
    span: { from: dates[0]!, to: dates[dates.length - 1]! },
  };
}

async function sendMatch(context: Context, body: string): Promise<{ ms: number; details: Record<string, number | string> }> {
  const startedAt = performance.now();
  const response = await fetch(`${context.service.baseUrl}/api/v1/platform-customers/${context.bigId}/irm/match`, {
    method: 'POST',
    headers: { 'x-api-key': context.api.apiKey, 'content-type': 'application/json' },
    body,
    signal: AbortSignal.timeout(300_000),
  });
  const text = await response.text();
  const elapsed = performance.now() - startedAt;
  if (response.status !== 200) throw new Error(`the match answered ${response.status}: ${text.slice(0, 300)}`);
  const answer = JSON.parse(text) as { allocations: { irmNumber: string }[]; unusedIrms: unknown[]; unmatchedInvoices: unknown[]; pushes: unknown[] };
  // Every IRM the match read is either allocated or unused.
  const irmsRead = new Set(answer.allocations.map((allocation) => allocation.irmNumber)).size + answer.unusedIrms.length;
  return {
    ms: elapsed,
    details: { irmsRead, allocations: answer.allocations.length, unmatchedInvoices: answer.unmatchedInvoices.length, answerBytes: Buffer.byteLength(text) },
  };
}

/** The push customer: created through the API, verified with the sandbox account, its IRMs pulled by the first refresh. */
async function setUpPushCustomer(api: ApiClient): Promise<{ customerId: string; irms: FullIrm[] }> {
  const customerId = await createVerifiedCustomer(api, PUSH_ACCOUNT, 'Growth', SANDBOX_PASSWORD);
  const pages = Math.ceil(((PUSH_RUNS + 1) * PUSH_LINES * 1.5) / IRM_PAGE_LIMIT);
  const irms = (await allIrms(api, customerId, pages)) as FullIrm[];
  return { customerId, irms: irms.filter((irm) => PUSHABLE_PURPOSES.has(irm.purposeOfRemittance) && Math.round(irm.irmAvailableAmt * 100) >= 2) };
}

async function sendPush(context: Context, customerId: string, irms: readonly FullIrm[]): Promise<{ ms: number; details: Record<string, number | string> }> {
  const body = pushBody(customerId, irms.map((irm) => ({ customerId, irm, availableCents: Math.round(irm.irmAvailableAmt * 100) })));
  const startedAt = performance.now();
  const response = await fetch(`${context.service.baseUrl}/api/v1/genebrc/push-irm`, {
    method: 'POST',
    headers: { 'x-api-key': context.api.apiKey, 'content-type': 'application/json' },
    body,
    signal: AbortSignal.timeout(120_000),
  });
  const text = await response.text();
  const elapsed = performance.now() - startedAt;
  if (response.status !== 200) throw new Error(`the push answered ${response.status}: ${text.slice(0, 300)}`);
  const ack = JSON.parse(text) as { ackStatus?: string; errorDetails?: { code?: string }[] };
  if (ack.ackStatus !== 'Validated') throw new Error(`the push was acknowledged ${ack.ackStatus}: ${JSON.stringify(ack.errorDetails ?? []).slice(0, 300)}`);
  return { ms: elapsed, details: { lines: irms.length } };
}

/**
 * A new database (or embedded folder) and new storage for the sandbox; the sandbox started (into `servers`), the
 * accounts' credential sets issued, the service's database seeded.
 */
async function prepare(volumes: Volumes, servers: Server[], dataDir: string, sandboxDir: string) {
  let url: string | undefined;
  let storage: SandboxStorage;
  if (backend === 'postgres') {
    await withClient(adminUrl, async (client) => {
      await client.query(`drop database if exists "${growthDatabase}" with (force)`);
      await client.query(`create database "${growthDatabase}"`);
    });
    url = databaseUrl(growthDatabase);
    storage = { databaseUrl: url };
  } else {
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(sandboxDir, { recursive: true, force: true });
    storage = { dataDir: sandboxDir };
  }
  const sandbox = await startSandboxProgram({ name: 'sandbox-growth', storage, port: await freePort(), processingDelayMs: SANDBOX_PROCESSING_DELAY_MS, logDir: LOG_DIR });
  servers.push(sandbox);
  const credentialSets = new Map<string, CredentialSet>();
  for (const username of SANDBOX_USERNAMES) credentialSets.set(username, await issueCredentialSet(sandbox.baseUrl, username));
  const database = await openDatabase(url === undefined ? { dataDir } : { databaseUrl: url, dataDir: TMP, statementTimeoutMs: 0 });
  try {
    const seeded = await seed(database, volumes, encryptionKey, credentialSets, url === undefined ? 1 : os.availableParallelism());
    const env: Record<string, string> = url === undefined ? { DATABASE_URL: '', DATA_DIR: dataDir } : { DATABASE_URL: url };
    return { seeded, sandbox, env: { ...env, AUTHORITY_URL: sandbox.baseUrl }, url };
  } finally {
    await database.close();
  }
}

async function databaseSizes(url: string | undefined, dataDir: string): Promise<Pick<SizeResult, 'databaseBytes' | 'irmsTableBytes' | 'linesTableBytes'>> {
  if (url === undefined) return { databaseBytes: folderBytes(dataDir), irmsTableBytes: null, linesTableBytes: null };
  return withClient(url, async (client) => {
    const row = (await client.query<{ database: string; irms: string; lines: string }>(
      `select pg_database_size(current_database())::text as database, pg_total_relation_size('irms')::text as irms,
        pg_total_relation_size('genebrc_request_lines')::text as lines`,
    )).rows[0]!;
    return { databaseBytes: Number(row.database), irmsTableBytes: Number(row.irms), linesTableBytes: Number(row.lines) };
  });
}

async function measureSize(size: number): Promise<SizeResult> {
  const volumes = volumesFor(size);
  log(`\n== ${formatCount(size)} IRMs (big customer ${formatCount(volumes.bigCustomerIrms)}, ${formatCount(volumes.bigCustomerRequests)} of its requests), ${backend}`);
  const loadBefore = os.loadavg()[0] ?? 0;
  const servers: Server[] = [];
  // Embedded only: the service's database and the sandbox's, removed at the end.
  const dataDir = path.join(TMP, `growth-embedded-${size}`);
  const sandboxDir = path.join(TMP, `growth-sandbox-${size}`);
  const admin = backend === 'postgres' ? new pg.Client({ connectionString: adminUrl }) : undefined;
  try {
    const prepared = await prepare(volumes, servers, dataDir, sandboxDir);
    const { seeded, sandbox } = prepared;
    const sizesOnDisk = await databaseSizes(prepared.url, dataDir);

    const startedAt = performance.now();
    const service = await startServer({
      name: 'service-growth',
      script: path.join(ROOT, 'src', 'main.ts'),
      env: { ...serviceEnv, ...prepared.env, ENCRYPTION_KEY: encryptionKey.toString('base64') },
      port: await freePort(),
      readyPath: '/ready',
      logDir: LOG_DIR,
      startTimeoutMs: 300_000,
    });
    servers.push(service);
    const serviceStartSeconds = (performance.now() - startedAt) / 1000;
    await sleep(1_000);
    const rssAtRestBytes = rssOf(service.pid);
    const heapAtRest = await heapOf(service.baseUrl);
    log(`service started in ${serviceStartSeconds.toFixed(1)} s (pid ${service.pid}); RSS at rest ${(rssAtRestBytes / 1024 ** 2).toFixed(0)} MB`);

    const api = new ApiClient(service.baseUrl, seeded.apiKey);
    const bigId = seeded.bigCustomerId;
    const setupStartedAt = performance.now();
    const pusher = await setUpPushCustomer(api);
    const pushSetupSeconds = (performance.now() - setupStartedAt) / 1000;
    if (pusher.irms.length < (PUSH_RUNS + 1) * PUSH_LINES) {
      throw new Error(`${PUSH_ACCOUNT} has ${pusher.irms.length} pushable IRMs, fewer than the ${(PUSH_RUNS + 1) * PUSH_LINES} the pushes take`);
    }
    log(`push customer verified with ${PUSH_ACCOUNT} in ${pushSetupSeconds.toFixed(1)} s: ${formatCount(pusher.irms.length)} pushable IRMs read`);

    const dates = { fromDate: isoDay(730), toDate: isoDay(365) };
    const allPages = await api.expect<IrmPage>(200, 'POST', irmPagePath(bigId, 1, IRM_PAGE_LIMIT), {});
    const datedPages = await api.expect<IrmPage>(200, 'POST', irmPagePath(bigId, 1, IRM_PAGE_LIMIT, dates), {});
    if (allPages.meta.total !== volumes.bigCustomerIrms) {
      throw new Error(`the service counts ${allPages.meta.total} IRMs for the big customer, the seed made ${volumes.bigCustomerIrms}`);
    }
    const requestsPage = await api.call<unknown[]>('GET', `/api/v1/genebrc?platformCustomerId=${bigId}&page=1&limit=${LIST_PAGE_LIMIT}`);
    const requestTotal = Number(requestsPage.headers.get('x-total-count') ?? 0);
    const requestPages = Math.max(1, Math.ceil(requestTotal / LIST_PAGE_LIMIT));
    const irmPages = Math.max(1, allPages.meta.totalPages);
    const middlePage = Math.max(1, Math.ceil(irmPages / 2));
    const match = await matchBody(api, bigId);

    await admin?.connect();
    const sessions = async (): Promise<{ pid: number; group: string }[]> =>
      admin
        ? (await admin.query<{ pid: number; application_name: string }>('select pid, application_name from pg_stat_activity where datname = $1', [growthDatabase])).rows
          .map((row) => ({ pid: row.pid, group: row.application_name === SANDBOX_APPLICATION_NAME ? 'sandbox database' : 'database' }))
        : [];
    const cpu = new CpuMeter(async () => [
      { pid: process.pid, group: 'load generator' },
      { pid: service.pid, group: 'service' },
      { pid: sandbox.pid, group: 'sandbox' },
      ...(await sessions()),
    ]);
    const context: Context = { service, api, cpu, bigId };

    log(`== ${formatCount(size)}: measuring (${loadSeconds} s per autocannon run, load average ${os.loadavg().map((value) => value.toFixed(2)).join(' ')})`);
    const operations: OperationResult[] = [];
    const loads: { key: string; title: string; method: 'GET' | 'POST'; path: string }[] = [
      { key: 'customer', title: 'GET customer by id (the big one)', method: 'GET', path: `/api/v1/platform-customers/${bigId}` },
      { key: 'irm-first', title: `IRM refresh, page 1 (limit ${IRM_PAGE_LIMIT})`, method: 'POST', path: irmPagePath(bigId, 1, IRM_PAGE_LIMIT) },
      { key: 'irm-middle', title: 'IRM refresh, middle page', method: 'POST', path: irmPagePath(bigId, middlePage, IRM_PAGE_LIMIT) },
      { key: 'irm-last', title: 'IRM refresh, last page', method: 'POST', path: irmPagePath(bigId, irmPages, IRM_PAGE_LIMIT) },
      { key: 'irm-dates', title: 'IRM refresh, page 1, issued 2 to 1 years ago', method: 'POST', path: irmPagePath(bigId, 1, IRM_PAGE_LIMIT, dates) },
      { key: 'genebrc-first', title: `GenEBRC list, page 1 (limit ${LIST_PAGE_LIMIT})`, method: 'GET', path: `/api/v1/genebrc?platformCustomerId=${bigId}&page=1&limit=${LIST_PAGE_LIMIT}` },
      { key: 'genebrc-last', title: 'GenEBRC list, last page', method: 'GET', path: `/api/v1/genebrc?platformCustomerId=${bigId}&page=${requestPages}&limit=${LIST_PAGE_LIMIT}` },
    ];
    for (const spec of loads) operations.push(await loadOperation(context, spec));

    const templatePath = `/api/v1/platform-customers/${bigId}/irm/template?format=csv`;
    operations.push(await timedOperation(
      context,
      { key: 'template', title: 'IRM template, CSV, every mappable IRM', request: `GET ${templatePath.replace(bigId, '{big}')}`, runs: TEMPLATE_RUNS },
      () => downloadTemplate(context, templatePath),
    ));
    operations.push(await timedOperation(
      context,
      {
        key: 'match',
        title: `IRM match, ${MATCH_INVOICES} invoices`,
        request: `POST /api/v1/platform-customers/{big}/irm/match, ${MATCH_INVOICES} ${MATCH_CURRENCY} invoices dated ${match.span.from} to ${match.span.to}, maxDaysAfterInvoice ${MATCH_MAX_DAYS}`,
        runs: MATCH_RUNS,
      },
      () => sendMatch(context, match.body),
    ));
    // Each push (the warm-up too) on PUSH_LINES IRMs not pushed before: its amounts are their balances as read.
    operations.push(await timedOperation(
      context,
      {
        key: 'push',
        title: `Push, ${PUSH_LINES} lines (another customer)`,
        request: `POST /api/v1/genebrc/push-irm, ${PUSH_LINES} lines on distinct IRMs of a customer verified with ${PUSH_ACCOUNT}, 0.01 each`,
        runs: PUSH_RUNS,
      },
      (run) => sendPush(context, pusher.customerId, pusher.irms.slice(run * PUSH_LINES, (run + 1) * PUSH_LINES)),
    ));

    const peak = operations.reduce((best, operation) => (operation.peakRssBytes > best.peakRssBytes ? operation : best), operations[0]!);
    return {
      size,
      volumes,
      counts: seeded.counts,
      seedSeconds: seeded.seconds,
      seedSteps: seeded.steps,
      serviceStartSeconds,
      pushSetupSeconds,
      bigCustomer: {
        irms: allPages.meta.total,
        irmPages,
        middlePage,
        datedIrms: datedPages.meta.total,
        datedPages: datedPages.meta.totalPages,
        requests: requestTotal,
        requestPages,
      },
      rssAtRestBytes,
      heapUsedAtRestBytes: heapAtRest?.heapUsed ?? null,
      peakRssBytes: peak.peakRssBytes,
      peakRssOperation: peak.title.split(',')[0]!.split(' (')[0]!,
      ...sizesOnDisk,
      loadAverage: { before: loadBefore, after: os.loadavg()[0] ?? 0 },
      operations,
    };
  } finally {
    await admin?.end().catch(() => undefined);
    for (const server of servers.reverse()) await server.stop();
    if (backend === 'postgres') await dropGrowthDatabase();
    if (backend === 'embedded') for (const folder of [dataDir, sandboxDir]) fs.rmSync(folder, { recursive: true, force: true });
  }
}

const METHOD = [
  `For each size, a fresh ${backend === 'postgres' ? `PostgreSQL database (\`${growthDatabase}\`, dropped at the end)` : 'embedded database (a folder under bench/tmp/, removed at the end)'} ` +
    'seeded by set-based SQL (bench/lib/seed.ts): one big customer holds all but a few thousand of the IRMs (100 other ' +
    'customers hold up to 30 each), and there are a tenth as many GenEBRC requests as IRMs (1-5 lines each), all but 200 ' +
    "the big customer's. The service runs as `npm start` runs it, beside the sandbox authority (bench/lib/sandbox.ts), " +
    'with IRM_REFRESH_INTERVAL_SECONDS=86400, so IRM refreshes answer from the store. Every operation is on the big ' +
    `customer except the push, which is for a customer verified with ${PUSH_ACCOUNT} (its IRMs are the sandbox's): ` +
    "it should not grow with the big customer's data. The template is downloaded whole (time to the last byte; " +
    `first byte: the answer's headers). The match sends ${MATCH_INVOICES} invoices made from the big customer's newest ` +
    `${MATCH_CURRENCY} IRMs with a balance (exact amounts, remitter as buyer), maxDaysAfterInvoice ${MATCH_MAX_DAYS}; ` +
    '"IRMs read" is how many the match took in (allocated or unused). Peak RSS is the service process only.',
].join('\n');

async function main(): Promise<void> {
  const startedAt = new Date();
  const clock = performance.now();
  log(`growth benchmark on ${backend}: sizes ${sizes.map(formatCount).join(', ')}; load average ${os.loadavg().map((value) => value.toFixed(2)).join(' ')} on ${os.availableParallelism()} cores`);
  const bar = new ProgressBar('sizes', sizes.length);
  const results: SizeResult[] = [];
  for (const size of sizes) {
    results.push(await measureSize(size));
    bar.advance(1);
  }
  bar.finish();
  const database = backend === 'postgres'
    ? await withClient(adminUrl, async (client) => String((await client.query('select version() as v')).rows[0].v).split(',')[0]!)
    : `PGlite ${(JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', '@electric-sql', 'pglite', 'package.json'), 'utf8')) as { version: string }).version}`;
  const dirty = git(['status', '--porcelain', '--', 'src']) !== '';
  const run: GrowthRun = {
    startedAt: startedAt.toISOString(),
    seconds: (performance.now() - clock) / 1000,
    backend,
    quick,
    settings: {
      sizes,
      loadSeconds,
      warmupSeconds,
      connections: CONNECTIONS,
      timedRuns: { templates: TEMPLATE_RUNS, matches: MATCH_RUNS, pushes: PUSH_RUNS },
      serviceEnv: { ...startScript().env, ...serviceEnv, ...sandboxSettings(SANDBOX_PROCESSING_DELAY_MS) },
      nodeFlags: startScript().nodeFlags,
    },
    machine: {
      cores: os.availableParallelism(),
      memoryGiB: os.totalmem() / 1024 ** 3,
      cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
      node: process.versions.node,
      database,
      commit: `${git(['rev-parse', '--short', 'HEAD']) || 'unknown'}${dirty ? ' with uncommitted changes in src/' : ''}`,
    },
    sizes: results,
  };
  fs.mkdirSync(RESULTS, { recursive: true });
  const name = `growth-${backend}-${startedAt.toISOString().slice(0, 16).replace(':', '')}Z`;
  fs.writeFileSync(path.join(RESULTS, `${name}.md`), renderReport(run, METHOD));
  fs.writeFileSync(path.join(RESULTS, `${name}.json`), `${JSON.stringify(run, null, 2)}\n`);
  log(`\ndone in ${(run.seconds / 60).toFixed(1)} min: bench/results/${name}.md`);
  process.stdout.write(`${renderTable(run)}\n\nbench/results/${name}.md\n`);
}

await main();
process.exit(0);
