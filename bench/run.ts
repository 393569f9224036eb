/**
 * `npm run bench` (full) or `npm run bench -- --quick` (the same shape, smaller: a few minutes).
 *
 * For PostgreSQL, then the embedded database: recreates a database, starts the sandbox authority
 * (sandbox/main.ts, a child process on storage of its own: the schema authority_sandbox of that
 * PostgreSQL database, or its own embedded folder), seeds the service's database with customers that
 * hold the API credential sets the sandbox issued (and two customers holding the matching sets' IRMs),
 * starts the backend's limit route (bench/bare-server.ts over a pg pool; bench/bare-embedded.ts over PGlite
 * on a copy of the seeded folder) and the service (AUTHORITY_URL: the sandbox) as child processes, sets up
 * customers to push for through the API, reads the service's RSS at rest, drives every scenario with
 * autocannon while sampling the service's memory, then measures a spreadsheet upload's rows/s and the
 * matching route; once the backend's servers have stopped, runs bench/webhooks.ts for the backend as a child
 * process. At the end the matching engine runs in this process. Writes bench/results/<time>-<mode>.md (and
 * .json). A full run also refreshes the summary in docs/performance.md. Progress goes to stderr; the
 * report's path to stdout. Exits 1 when one of the measurements after the pushes failed (the report says why).
 *
 * Flags: --quick, --skip-postgres, --skip-embedded (the quickest run: --quick --skip-postgres), --upload-rows N (the
 * upload's rows instead of 5,000, quick 1,000).
 */
import type { AutocannonRequest } from 'autocannon';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { findSandboxAccount } from '../sandbox/accounts.ts';
import type { CredentialSet } from '../src/authority/protocol/credentials.ts';
import { openDatabase } from '../src/store/database.ts';
import { createVerifiedCustomer, ApiClient, allIrms, irmPagePath, type ApiIrm, type IrmPage } from './lib/api.ts';
import {
  measureMatchingEngine,
  measureMatchingRoute,
  measureUpload,
  runWebhookBench,
  seedMatchingCustomers,
  type MatchingCustomer,
} from './lib/extras.ts';
import { load, type LoadOptions, type Measured } from './lib/load.ts';
import { CpuMeter, RssSampler, freePort, heapOf, rssOf, startServer, type Server } from './lib/processes.ts';
import { git } from './lib/repo.ts';
import { BENCH_SERVICE_ENV, startScript } from './lib/start-script.ts';
import { ProgressBar, formatCount, log } from './lib/progress.ts';
import { IrmPool } from './lib/pushes.ts';
import {
  SANDBOX_APPLICATION_NAME,
  SANDBOX_PASSWORD,
  SANDBOX_PROCESSING_DELAY_MS,
  issueCredentialSet,
  sandboxSettings,
  startSandboxProgram,
  type SandboxStorage,
} from './lib/sandbox.ts';
import {
  renderReport,
  renderSummary,
  type BackendResult,
  type MachineFacts,
  type RunResult,
  type ScenarioKind,
  type ScenarioResult,
} from './lib/report.ts';
import { SANDBOX_USERNAMES, seed, type Seeded, type Volumes } from './lib/seed.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const TMP = path.join(ROOT, 'bench', 'tmp');
const RESULTS = path.join(ROOT, 'bench', 'results');
const PERFORMANCE_DOC = path.join(ROOT, 'docs', 'performance.md');
const SUMMARY_START = '<!-- bench-summary:start -->';
const SUMMARY_END = '<!-- bench-summary:end -->';

type Mode = 'full' | 'quick';

type Plan = {
  postgres: Volumes;
  embedded: Volumes;
  seconds: number;
  /** Push scenarios: long enough for a few 999-line pushes to be answered. */
  pushSeconds: number;
  warmupSeconds: number;
  readConnections: number;
  pushConnections: number;
  /** The longest wait, after a push run, for the pushes it cut off to finish at the service. */
  settleCapSeconds: number;
  /**
   * On a shared machine: the longest wait before a scenario for a second in which other work takes under
   * 10% of the CPU, and the whole run's budget for such waits and for repeating a scenario that other
   * work disturbed (at most twice; the least disturbed attempt counts).
   */
  quietWaitSeconds: number;
  quietBudgetSeconds: number;
  /** How long the service stays idle after the setup before its RSS at rest is read. */
  restSeconds: number;
  /** Rows of the spreadsheet upload after the pushes. */
  uploadRows: number;
  uploadTimeoutSeconds: number;
  /** Timed runs of the matching engine and of the matching route (each after one warm-up). */
  matchingEngineRuns: number;
  matchingRouteRuns: number;
  /** bench/webhooks.ts's shape flags (its defaults for a full run). */
  webhookArgs: string[];
};

const PLANS: Record<Mode, Plan> = {
  full: {
    // 1,000,099 IRMs; 100,000 GenEBRC requests, 95,000 of them the big customer's.
    postgres: { customers: 1_000, bigCustomerIrms: 100_000, irmsPerCustomer: 901, bigCustomerRequests: 95_000, requestCustomers: 100, requestsPerCustomer: 50 },
    // 20,048 IRMs; 5,000 requests, 4,500 of them the big customer's.
    embedded: { customers: 100, bigCustomerIrms: 5_000, irmsPerCustomer: 152, bigCustomerRequests: 4_500, requestCustomers: 10, requestsPerCustomer: 50 },
    seconds: 10,
    pushSeconds: 10,
    warmupSeconds: 2,
    readConnections: 16,
    pushConnections: 4,
    settleCapSeconds: 20,
    quietWaitSeconds: 60,
    quietBudgetSeconds: 900,
    restSeconds: 3,
    uploadRows: 5_000,
    uploadTimeoutSeconds: 600,
    matchingEngineRuns: 5,
    matchingRouteRuns: 5,
    webhookArgs: [],
  },
  quick: {
    postgres: { customers: 200, bigCustomerIrms: 20_000, irmsPerCustomer: 400, bigCustomerRequests: 9_000, requestCustomers: 20, requestsPerCustomer: 50 },
    embedded: { customers: 50, bigCustomerIrms: 2_000, irmsPerCustomer: 61, bigCustomerRequests: 200, requestCustomers: 5, requestsPerCustomer: 20 },
    // autocannon runs whole seconds; no warm-up.
    seconds: 1,
    // One second answers no 999-line push at all on a busy machine.
    pushSeconds: 2,
    warmupSeconds: 0,
    readConnections: 16,
    pushConnections: 4,
    settleCapSeconds: 2,
    quietWaitSeconds: 0,
    quietBudgetSeconds: 0,
    restSeconds: 3,
    uploadRows: 1_000,
    uploadTimeoutSeconds: 180,
    matchingEngineRuns: 3,
    matchingRouteRuns: 2,
    webhookArgs: [
      '--tests', '40', '--spacing', '50', '--pushes', '5', '--push-spacing', '200', '--cross-process-tests', '0',
      '--burst-tests', '100', '--burst-concurrency', '16', '--burst-pushes', '1',
    ],
  },
};

/** The sandbox accounts whose customers push: together about 6,000 pushable IRMs. */
const PUSH_ACCOUNTS = ['demo.exporter', 'bulk.exporter', 'vostro.exporter', 'services.exporter'];
const CUSTOMER_SEARCH = 'textiles';
/** The sandbox account of the matching customers (bench/matching.ts's). */
const MATCHING_ACCOUNT = 'demo.exporter';
const IRM_PAGE_LIMIT = 100;
const LIST_PAGE_LIMIT = 10;

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    'skip-embedded': { type: 'boolean', default: false },
    'skip-postgres': { type: 'boolean', default: false },
    /** Rows of the upload, instead of the plan's (5,000 full, 1,000 quick). */
    'upload-rows': { type: 'string' },
  },
});
const mode: Mode = flags.quick ? 'quick' : 'full';
const plan: Plan = { ...PLANS[mode], ...(flags['upload-rows'] !== undefined ? { uploadRows: Number(flags['upload-rows']) } : {}) };
if (!Number.isInteger(plan.uploadRows) || plan.uploadRows < 1) throw new Error(`--upload-rows must be a positive whole number, got ${flags['upload-rows']}`);
const adminUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const benchDatabase = process.env.BENCH_DATABASE ?? 'ebrc_bench';
const encryptionKey = randomBytes(32);

function databaseUrl(name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function machineFacts(): Promise<MachineFacts> {
  const postgres = flags['skip-postgres'] ? 'PostgreSQL not used' : await withAdmin(async (client) => String((await client.query('select version() as v')).rows[0].v));
  const pglite = JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', '@electric-sql', 'pglite', 'package.json'), 'utf8')) as { version: string };
  const dirty = git(['status', '--porcelain', '--', 'src']) !== '';
  return {
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    cores: os.availableParallelism(),
    memoryGiB: os.totalmem() / 1024 ** 3,
    kernel: os.release(),
    node: process.versions.node,
    postgres: postgres.split(',')[0] ?? postgres,
    pglite: pglite.version,
    commit: `${git(['rev-parse', '--short', 'HEAD']) || 'unknown'}${dirty ? ' with uncommitted changes in src/' : ''}`,
  };
}

type ScenarioSpec = {
  key: string;
  title: string;
  kind: ScenarioKind;
  server: Server;
  connections: number;
  request: string;
  load: Omit<LoadOptions, 'seconds' | 'url' | 'connections'>;
  lines?: number;
  /** The first push scenario warms the push path up; the others run on a warm service. */
  firstPush?: boolean;
  /** A list page of 100 rows: reported beside the targets (ScenarioResult.fullPage). */
  fullPage?: boolean;
};

/** One autocannon request definition that walks through `values` (paths or bodies), shared by all connections. */
function rotating(method: string, paths: readonly string[], bodies?: readonly string[]): AutocannonRequest[] {
  let next = 0;
  return [{
    method,
    setupRequest: (request) => {
      const index = next++;
      return { ...request, path: paths[index % paths.length]!, ...(bodies ? { body: bodies[index % bodies.length]! } : {}) };
    },
  }];
}

function isoDay(daysAgo: number): string {
  return new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);
}

/** Creates the push customers through the API, verifies them with the sandbox and reads their IRMs. */
async function setUpPushCustomers(api: ApiClient): Promise<Map<string, ApiIrm[]>> {
  const irmsByCustomer = new Map<string, ApiIrm[]>();
  const bar = new ProgressBar('push customers', PUSH_ACCOUNTS.length);
  for (const account of PUSH_ACCOUNTS) {
    const customerId = await createVerifiedCustomer(api, account, 'Bench', SANDBOX_PASSWORD);
    // The first refresh pulls the account's IRMs from the sandbox; the rest of the pages come from the store.
    irmsByCustomer.set(customerId, await allIrms(api, customerId));
    bar.advance(1);
  }
  bar.finish();
  return irmsByCustomer;
}

/** Requests of these customers still open (accepted, not yet final): what the poller has left to do. */
async function openRequests(api: ApiClient, customers: readonly string[]): Promise<number> {
  let open = 0;
  for (const customerId of customers) {
    const answer = await api.call('GET', `/api/v1/genebrc?platformCustomerId=${customerId}&status=PENDING&page=1&limit=1`);
    open += Number(answer.headers.get('x-total-count') ?? 0);
  }
  return open;
}

/** How fast the poller settles the backlog the push scenarios left (no new pushes meanwhile). */
async function measurePoller(api: ApiClient, customers: readonly string[]): Promise<NonNullable<BackendResult['poller']>> {
  const openAfterPushes = await openRequests(api, customers);
  const startedAt = performance.now();
  await sleep(plan.seconds * 1000);
  const seconds = (performance.now() - startedAt) / 1000;
  const settled = openAfterPushes - (await openRequests(api, customers));
  return { openAfterPushes, settledPerSecond: settled / seconds, seconds: Math.round(seconds) };
}

function describe(result: ScenarioResult): string {
  const { measured } = result;
  const lines = result.linesPerSecond !== undefined ? `  ${formatCount(result.linesPerSecond)} lines/s` : '';
  const bad = measured.non2xx + measured.errors + measured.timeouts;
  const other = result.cpu && result.cpu.other >= 0.05 ? `  other work ${(result.cpu.other * 100).toFixed(0)}% CPU` : '';
  return `  ${result.title.padEnd(38)} ${String(result.connections).padStart(2)} conns  ${formatCount(measured.rps).padStart(7)} req/s  ` +
    `p50 ${measured.p50.toFixed(2).padStart(7)} ms  p99 ${measured.p99.toFixed(2).padStart(7)} ms  ` +
    `RSS ${(result.peakRssBytes / 1024 ** 2).toFixed(0).padStart(4)} MB${lines}${bad > 0 ? `  (${bad} non-2xx/errors)` : ''}${other}`;
}

/** The service's push calls to the authority so far, from its /metrics: how many answered, and their time in all. */
async function authorityPushTime(baseUrl: string): Promise<{ count: number; seconds: number }> {
  const text = await (await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
  const value = (series: string): number =>
    Number(text.split('\n').find((line) => line.startsWith(`authority_call_duration_seconds_${series}{`) && line.includes('operation="push"') && line.includes('outcome="ok"'))?.split(' ').at(-1) ?? 0);
  return { count: value('count'), seconds: value('sum') };
}

/** Other work above this share of the CPU during a measurement makes it worth repeating. */
const DISTURBED = 0.1;
const MAX_ATTEMPTS = 3;
let quietBudgetMs = plan.quietBudgetSeconds * 1000;

/**
 * On a shared machine, waits (at most quietWaitSeconds, within the run's budget) for a second in which
 * other work takes under 10% of the CPU, so that a burst of someone else's work does not land in a measurement.
 */
async function waitForQuiet(cpu: CpuMeter): Promise<void> {
  const startedAt = performance.now();
  const deadline = startedAt + Math.min(plan.quietWaitSeconds * 1000, quietBudgetMs);
  let other = 0;
  while (performance.now() < deadline) {
    await cpu.start();
    await sleep(1_000);
    other = (await cpu.stop()).other;
    if (other < DISTURBED) break;
  }
  const waited = performance.now() - startedAt;
  quietBudgetMs -= waited;
  if (waited > 1_500) {
    log(`  (waited ${(waited / 1000).toFixed(0)} s for other work to calm down${other < DISTURBED ? '' : `; it still takes ${(other * 100).toFixed(0)}% of the CPU`})`);
  }
}

async function runScenario(spec: ScenarioSpec, cpu: CpuMeter, push?: { api: ApiClient; pool: IrmPool }): Promise<ScenarioResult> {
  const base = { url: spec.server.baseUrl, connections: spec.connections, ...spec.load };
  // A push cut off when a run ends still completes at the service: let it, then account for it.
  const settle = async (measured: Measured): Promise<void> => {
    if (!push) return;
    await sleep(Math.min(plan.settleCapSeconds * 1000, Math.max(300, 1.2 * (Number.isFinite(measured.max) ? measured.max : 10_000))));
    await push.pool.recover(push.api);
  };
  // Pushes after the first run on a warm service: their warm-up would only cost IRMs and time.
  if (plan.warmupSeconds > 0 && (spec.kind !== 'push' || spec.firstPush === true)) {
    await settle(await load({ ...base, seconds: plan.warmupSeconds }));
  }
  let best: ScenarioResult | undefined;
  let bestAttempt = 0;
  let attempts = 0;
  let peakRssBytes = 0;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    attempts = attempt;
    const sampler = new RssSampler(spec.server.pid);
    await waitForQuiet(cpu);
    push?.pool.resetOutcomes();
    const startedAt = performance.now();
    const authorityBefore = push ? await authorityPushTime(spec.server.baseUrl) : undefined;
    await cpu.start();
    sampler.start();
    const measured = await load({ ...base, seconds: spec.kind === 'push' ? plan.pushSeconds : plan.seconds });
    const authorityAfter = push ? await authorityPushTime(spec.server.baseUrl) : undefined;
    const attemptPeak = sampler.stop();
    peakRssBytes = Math.max(peakRssBytes, attemptPeak);
    const result: ScenarioResult = {
      key: spec.key,
      title: spec.title,
      kind: spec.kind,
      request: spec.request,
      connections: spec.connections,
      measured,
      peakRssBytes: attemptPeak,
      cpu: await cpu.stop(),
      ...(spec.fullPage ? { fullPage: true } : {}),
    };
    if (authorityBefore && authorityAfter && authorityAfter.count > authorityBefore.count) {
      result.authorityMeanMs = (1000 * (authorityAfter.seconds - authorityBefore.seconds)) / (authorityAfter.count - authorityBefore.count);
    }
    if (spec.server.name.startsWith('service')) {
      const heap = await heapOf(spec.server.baseUrl);
      if (heap) result.heapAfter = heap;
    }
    if (push && spec.lines !== undefined) {
      const outcomes = structuredClone(push.pool.outcomes);
      Object.assign(result, { lines: spec.lines, outcomes, linesPerSecond: (outcomes.validated * spec.lines) / measured.seconds });
      await settle(measured);
    }
    const other = result.cpu?.other ?? 0;
    if (!best || other < (best.cpu?.other ?? 0)) {
      best = result;
      bestAttempt = attempt;
    }
    if (other < DISTURBED || attempt === MAX_ATTEMPTS || quietBudgetMs <= 0) break;
    quietBudgetMs -= performance.now() - startedAt;
    log(`${describe(result)}  <- attempt ${attempt}: other work took ${(other * 100).toFixed(0)}% of the CPU, again`);
  }
  // The figures are the least disturbed attempt's; the peak memory is the highest any attempt reached.
  const chosen = { ...best!, peakRssBytes };
  log(`${describe(chosen)}${attempts > 1 ? `  <- kept attempt ${bestAttempt} of ${attempts}` : ''}`);
  return chosen;
}

/**
 * A new database for the service and new storage for the sandbox (the schema authority_sandbox of the same PostgreSQL
 * database, or a folder of its own beside the embedded one); starts the sandbox (into `servers`), asks it for the
 * accounts' API credential sets as an exporter would, and seeds the service's database with them.
 */
async function prepareDatabase(
  backend: 'postgres' | 'embedded',
  volumes: Volumes,
  servers: Server[],
): Promise<{ seeded: Seeded; env: Record<string, string>; sandbox: Server; dataDir: string; matchingCustomers: MatchingCustomer[] }> {
  let url: string | undefined;
  let sandboxStorage: SandboxStorage;
  const dataDir = path.join(TMP, `embedded-${mode}`);
  if (backend === 'postgres') {
    await withAdmin(async (client) => {
      await client.query(`drop database if exists "${benchDatabase}" with (force)`);
      await client.query(`create database "${benchDatabase}"`);
    });
    url = databaseUrl(benchDatabase);
    sandboxStorage = { databaseUrl: url };
  } else {
    fs.rmSync(dataDir, { recursive: true, force: true });
    const sandboxDir = path.join(TMP, `sandbox-embedded-${mode}`);
    fs.rmSync(sandboxDir, { recursive: true, force: true });
    sandboxStorage = { dataDir: sandboxDir };
  }
  const sandboxStartedAt = performance.now();
  const sandbox = await startSandboxProgram({
    name: `sandbox-${backend}`,
    storage: sandboxStorage,
    port: await freePort(),
    processingDelayMs: SANDBOX_PROCESSING_DELAY_MS,
    logDir: path.join(TMP, 'logs'),
  });
  servers.push(sandbox);
  const credentialSets = new Map<string, CredentialSet>();
  for (const username of SANDBOX_USERNAMES) credentialSets.set(username, await issueCredentialSet(sandbox.baseUrl, username));
  log(`sandbox authority started in ${((performance.now() - sandboxStartedAt) / 1000).toFixed(1)} s at ${sandbox.baseUrl} (pid ${sandbox.pid}); ` +
    `${credentialSets.size} API credential sets issued`);

  const database = await openDatabase(url === undefined ? { dataDir } : { databaseUrl: url, dataDir: TMP });
  try {
    const seeded = await seed(database, volumes, encryptionKey, credentialSets, url === undefined ? 1 : os.availableParallelism());
    // Customers for the matching route, whose stored IRMs are the matching sets' (demo.exporter's IEC, as bench/matching.ts).
    const demo = findSandboxAccount(MATCHING_ACCOUNT);
    const demoSet = credentialSets.get(MATCHING_ACCOUNT);
    if (!demo || !demoSet) throw new Error(`no sandbox account ${MATCHING_ACCOUNT} to seed the matching customers with`);
    const matchingCustomers = await seedMatchingCustomers(database, seeded.platformId, encryptionKey, { username: MATCHING_ACCOUNT, set: demoSet, panNumber: demo.panNumber });
    const env: Record<string, string> = url === undefined ? { DATABASE_URL: '', DATA_DIR: dataDir } : { DATABASE_URL: url };
    return { seeded, env: { ...env, AUTHORITY_URL: sandbox.baseUrl }, sandbox, dataDir, matchingCustomers };
  } finally {
    await database.close();
  }
}

/** A measurement after the pushes: its figures, or undefined with the error logged and kept (by name) in `errors`. */
async function attempt<T>(name: string, errors: Record<string, string>, work: () => Promise<T>): Promise<T | undefined> {
  try {
    return await work();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    log(`  ${name} failed: ${message}`);
    errors[name] = message;
    return undefined;
  }
}

/** Purpose codes a goods upload row (uploadType 101) may map without further rules (as bench/lib/pushes.ts). */
const UPLOADABLE_PURPOSES = new Set(['P0102', 'P0103']);

/**
 * One backend with the service running: seeding, the limit route (started before the service; for the embedded
 * database on a copy of the seeded folder), the service, the setup, the scenarios, the poller, the upload and the
 * matching route. Every server it started is stopped, and the copy removed, when it returns.
 */
async function measureService(backend: 'postgres' | 'embedded', errors: Record<string, string>): Promise<BackendResult> {
  const volumes = plan[backend];
  log(`\n== ${backend === 'postgres' ? `PostgreSQL (database ${benchDatabase})` : 'embedded database (PGlite)'}: seeding`);
  const servers: Server[] = [];
  const bareDir = path.join(TMP, `bare-embedded-${mode}`);
  try {
    const { seeded, env, sandbox, dataDir, matchingCustomers } = await prepareDatabase(backend, volumes, servers);
    // The limit route. PGlite holds its folder alone and the service will hold the seeded one: the embedded limit
    // route opens a copy of it, made before the service starts.
    let bareStart: { script: string; env: Record<string, string>; request: string };
    if (backend === 'postgres') {
      bareStart = { script: path.join(ROOT, 'bench', 'bare-server.ts'), env, request: 'GET /customers/{id} (bench/bare-server.ts, pg pool)' };
    } else {
      fs.rmSync(bareDir, { recursive: true, force: true });
      fs.cpSync(path.join(dataDir, 'pgdata'), path.join(bareDir, 'pgdata'), { recursive: true });
      bareStart = {
        script: path.join(ROOT, 'bench', 'bare-embedded.ts'),
        env: { BARE_PGLITE_DIR: path.join(bareDir, 'pgdata') },
        request: 'GET /customers/{id} (bench/bare-embedded.ts, PGlite on a copy of the seeded folder)',
      };
    }
    const bare = await startServer({
      name: `bare-route-${backend}`,
      script: bareStart.script,
      env: bareStart.env,
      port: await freePort(),
      readyPath: '/health',
      logDir: path.join(TMP, 'logs'),
      startTimeoutMs: 120_000,
    });
    servers.push(bare);
    const startedAt = performance.now();
    const service = await startServer({
      name: `service-${backend}`,
      script: path.join(ROOT, 'src', 'main.ts'),
      env: { ...BENCH_SERVICE_ENV, ...env, ENCRYPTION_KEY: encryptionKey.toString('base64') },
      port: await freePort(),
      readyPath: '/ready',
      logDir: path.join(TMP, 'logs'),
      startTimeoutMs: 120_000,
    });
    servers.push(service);
    const serviceStartSeconds = (performance.now() - startedAt) / 1000;
    log(`service started in ${serviceStartSeconds.toFixed(1)} s (pid ${service.pid}); limit route (pid ${bare.pid}) at ${bare.baseUrl}`);

    const api = new ApiClient(service.baseUrl, seeded.apiKey);
    const setupStartedAt = performance.now();
    const irmsByCustomer = await setUpPushCustomers(api);
    const pool = new IrmPool();
    pool.reset(irmsByCustomer);
    const pushSetup = { customers: irmsByCustomer.size, pushableIrms: pool.size(), seconds: (performance.now() - setupStartedAt) / 1000 };
    log(`push customers ready in ${pushSetup.seconds.toFixed(1)} s: ${formatCount(pushSetup.pushableIrms)} pushable IRMs`);
    // At rest: set up, then idle for a few seconds.
    await sleep(plan.restSeconds * 1000);
    const idle = { rssBytes: rssOf(service.pid), heap: await heapOf(service.baseUrl), idleSeconds: plan.restSeconds };
    log(`RSS at rest (${plan.restSeconds} s idle after the setup): ${(idle.rssBytes / 1024 ** 2).toFixed(0)} MB`);

    const big = seeded.bigCustomerId;
    const dates = { fromDate: isoDay(730), toDate: isoDay(365) };
    const allPages = await api.expect<IrmPage>(200, 'POST', irmPagePath(big, 1, IRM_PAGE_LIMIT), {});
    const datedPages = await api.expect<IrmPage>(200, 'POST', irmPagePath(big, 1, IRM_PAGE_LIMIT, dates), {});
    if (allPages.meta.total !== volumes.bigCustomerIrms) {
      throw new Error(`the service counts ${allPages.meta.total} IRMs for the big customer, the seed made ${volumes.bigCustomerIrms}`);
    }
    const requestsPage = await api.call<{ requestId: string }[]>('GET', `/api/v1/genebrc?platformCustomerId=${big}&page=1&limit=100`);
    const requestTotal = Number(requestsPage.headers.get('x-total-count') ?? 0);
    const requestIds = requestsPage.body.map((request) => request.requestId);
    if (requestIds.length === 0) throw new Error('the big customer has no GenEBRC requests to ask the status of');
    const processedPage = await api.call('GET', `/api/v1/genebrc?platformCustomerId=${big}&status=PROCESSED&page=1&limit=${LIST_PAGE_LIMIT}`);
    const processedTotal = Number(processedPage.headers.get('x-total-count') ?? 0);

    const read = { 'x-api-key': seeded.apiKey };
    const write = { ...read, 'content-type': 'application/json' };
    const listOf = (pathAndQuery: string, method = 'GET'): ScenarioSpec['load'] =>
      method === 'GET' ? { method, headers: read, requests: rotating(method, [pathAndQuery]) } : { method, headers: write, body: '{}', requests: rotating(method, [pathAndQuery], ['{}']) };
    const scenarios: ScenarioSpec[] = [];
    const connections = plan.readConnections;
    scenarios.push(
      {
        key: 'bare-route', title: 'Bare route: primary-key SELECT', kind: 'reference', server: bare, connections,
        request: bareStart.request,
        load: { requests: rotating('GET', seeded.customerIds.map((id) => `/customers/${id}`)) },
      },
      {
        key: 'customer-by-id', title: 'GET customer by id', kind: 'read', server: service, connections,
        request: 'GET /api/v1/platform-customers/{id}, every seeded id in turn',
        load: { headers: read, requests: rotating('GET', seeded.customerIds.map((id) => `/api/v1/platform-customers/${id}`)) },
      },
      {
        key: 'customer-search', title: `Customer list, search "${CUSTOMER_SEARCH}"`, kind: 'list', server: service, connections,
        request: `GET /api/v1/platform-customers?search=${CUSTOMER_SEARCH}&page=1&limit=${LIST_PAGE_LIMIT}`,
        load: listOf(`/api/v1/platform-customers?search=${CUSTOMER_SEARCH}&page=1&limit=${LIST_PAGE_LIMIT}`),
      },
    );
    // Limit 100 (the most a page holds) throughout, and page 1 once more at the API's default limit.
    // The targets are read at the API's default page size (10); 100-row pages (the most a page holds) are reported
    // beside them, page 1 and the middle page.
    const pagesOf = (total: number, limit: number) => Math.max(1, Math.ceil(total / limit));
    const irmTotal = allPages.meta.total;
    const datedTotal = datedPages.meta.total;
    const irmPages: [string, string, number, typeof dates | undefined, number][] = [
      ['irm-first', 'IRM refresh, page 1', 1, undefined, LIST_PAGE_LIMIT],
      ['irm-middle', `IRM refresh, middle page (${Math.ceil(pagesOf(irmTotal, LIST_PAGE_LIMIT) / 2)})`, Math.ceil(pagesOf(irmTotal, LIST_PAGE_LIMIT) / 2), undefined, LIST_PAGE_LIMIT],
      ['irm-last', `IRM refresh, last page (${pagesOf(irmTotal, LIST_PAGE_LIMIT)})`, pagesOf(irmTotal, LIST_PAGE_LIMIT), undefined, LIST_PAGE_LIMIT],
      ['irm-first-dates', 'IRM refresh, page 1, dates', 1, dates, LIST_PAGE_LIMIT],
      ['irm-middle-dates', `IRM refresh, middle page (${Math.ceil(pagesOf(datedTotal, LIST_PAGE_LIMIT) / 2)}), dates`, Math.ceil(pagesOf(datedTotal, LIST_PAGE_LIMIT) / 2), dates, LIST_PAGE_LIMIT],
      ['irm-last-dates', `IRM refresh, last page (${pagesOf(datedTotal, LIST_PAGE_LIMIT)}), dates`, pagesOf(datedTotal, LIST_PAGE_LIMIT), dates, LIST_PAGE_LIMIT],
      ['irm-first-100', `IRM refresh, page 1, ${IRM_PAGE_LIMIT} a page`, 1, undefined, IRM_PAGE_LIMIT],
      ['irm-middle-100', `IRM refresh, middle page (${Math.ceil(pagesOf(irmTotal, IRM_PAGE_LIMIT) / 2)}), ${IRM_PAGE_LIMIT} a page`, Math.ceil(pagesOf(irmTotal, IRM_PAGE_LIMIT) / 2), undefined, IRM_PAGE_LIMIT],
    ];
    for (const [key, title, page, filter, limit] of irmPages) {
      const target = irmPagePath(big, page, limit, filter);
      scenarios.push({
        key, title: `${title} (${formatCount(filter ? datedTotal : irmTotal)} IRMs)`, kind: 'list', server: service, connections,
        request: `POST ${target.replace(big, '{big}')}`, load: listOf(target, 'POST'), fullPage: limit === IRM_PAGE_LIMIT,
      });
    }
    const lastRequestPage = Math.max(1, Math.ceil(requestTotal / LIST_PAGE_LIMIT));
    const middleRequestPage = Math.max(1, Math.ceil(lastRequestPage / 2));
    const requestPages: [string, string, number, string, number][] = [
      ['genebrc-first', 'GenEBRC list, page 1', 1, '', requestTotal],
      ['genebrc-middle', `GenEBRC list, middle page (${middleRequestPage})`, middleRequestPage, '', requestTotal],
      ['genebrc-last', `GenEBRC list, last page (${lastRequestPage})`, lastRequestPage, '', requestTotal],
      ['genebrc-first-processed', 'GenEBRC list, page 1, status PROCESSED', 1, '&status=PROCESSED', processedTotal],
    ];
    for (const [key, title, page, filter, total] of requestPages) {
      const target = `/api/v1/genebrc?platformCustomerId=${big}${filter}&page=${page}&limit=${LIST_PAGE_LIMIT}`;
      // The seed stores its requests final without their stored records (migration 0025), which the service writes when
      // a request becomes final, or else the first time a list shows it: one read of the page first, so that it is
      // measured as every request finished by the service is listed (a quick run has no warm-up to do it).
      await api.expect(200, 'GET', target);
      scenarios.push({
        key, title: `${title} (${formatCount(total)} requests)`, kind: 'list', server: service, connections,
        request: `GET ${target.replace(big, '{big}')}`, load: listOf(target),
      });
    }
    scenarios.push({
      key: 'status', title: 'GenEBRC status', kind: 'read', server: service, connections,
      request: `POST /api/v1/genebrc/status, ${requestIds.length} processed requests in turn`,
      load: {
        method: 'POST',
        headers: write,
        requests: rotating('POST', ['/api/v1/genebrc/status'], requestIds.map((requestId) => JSON.stringify({ platformCustomerId: big, requestId }))),
      },
    });
    // The reference again at the end: the faster of its two runs is this machine's limit.
    scenarios.push({ ...scenarios[0]!, key: 'bare-route-again', title: 'Bare route again (before the pushes)' });
    // The single 999-line pusher first, on a service with no backlog: every accepted push leaves work for the
    // poller (the authority's answer, the eBRC numbers), which the later push scenarios run alongside.
    const pushes: [string, string, number, number][] = [
      ['push-999', 'Push, 999 lines', 999, 1],
      ['push-1', 'Push, 1 line', 1, plan.pushConnections],
      ['push-100', 'Push, 100 lines', 100, plan.pushConnections],
      ['push-999-concurrent', 'Push, 999 lines, concurrent', 999, plan.pushConnections],
    ];
    for (const [key, title, lines, wanted] of pushes) {
      // Each connection holds one push's IRMs at a time (and one more lease may be cut off by the run's end).
      const fits = Math.max(1, Math.min(wanted, pool.capacity(lines) - 1));
      if (fits < wanted) log(`  ${title}: ${fits} connections instead of ${wanted} (pushable IRMs: ${pool.size()})`);
      scenarios.push({
        key, title, kind: 'push', server: service, connections: fits, lines, firstPush: key === pushes[0]![0],
        request: `POST /api/v1/genebrc/push-irm, ${lines} line${lines === 1 ? '' : 's'} on distinct IRMs, 0.01 each`,
        load: { method: 'POST', headers: write, requests: [pool.request(lines)], timeoutSeconds: 120 },
      });
    }

    log(`== ${backend}: ${scenarios.length} scenarios, ${plan.seconds} s each (pushes ${plan.pushSeconds} s; load average ${loadAverage()})`);
    const loadBefore = os.loadavg()[0] ?? 0;
    const results: ScenarioResult[] = [];
    const admin = backend === 'postgres' ? new pg.Client({ connectionString: adminUrl }) : undefined;
    await admin?.connect();
    try {
      // The sandbox's sessions of the same database are its own group, apart from the service's.
      const sessions = async (): Promise<{ pid: number; group: string }[]> =>
        admin
          ? (await admin.query<{ pid: number; application_name: string }>(
            'select pid, application_name from pg_stat_activity where datname = $1', [benchDatabase])).rows
            .map((row) => ({ pid: row.pid, group: row.application_name === SANDBOX_APPLICATION_NAME ? 'sandbox database' : 'database' }))
          : [];
      const groupOf = (server: Server): string => (server === sandbox ? 'sandbox' : server.name.startsWith('bare-route') ? 'bare route' : 'service');
      const cpu = new CpuMeter(async () => [
        { pid: process.pid, group: 'load generator' },
        ...servers.map((server) => ({ pid: server.pid, group: groupOf(server) })),
        ...(await sessions()),
      ]);
      for (const spec of scenarios) {
        results.push(await runScenario(spec, cpu, spec.kind === 'push' ? { api, pool } : undefined));
      }
    } finally {
      await admin?.end();
    }
    const loadAfter = os.loadavg()[0] ?? 0;
    const poller = await measurePoller(api, [...irmsByCustomer.keys()]);
    log(`after the pushes: ${formatCount(poller.openAfterPushes)} requests still open; the poller settled ${poller.settledPerSecond.toFixed(1)} requests/s over ${poller.seconds} s`);

    // The upload: on the push customer with the most IRMs an upload row may map, as the service lists them now.
    const upload = await attempt('upload', errors, async () => {
      const uploadable = (irms: readonly ApiIrm[]) => irms.filter((irm) => UPLOADABLE_PURPOSES.has(irm.purposeOfRemittance) && irm.remittanceFCC !== 'INR').length;
      const [customerId] = [...irmsByCustomer].reduce((best, entry) => (uploadable(entry[1]) > uploadable(best[1]) ? entry : best));
      const figures = await measureUpload(api, customerId, await allIrms(api, customerId), plan.uploadRows, plan.uploadTimeoutSeconds * 1000);
      log(`upload: ${formatCount(figures.rows)} rows on ${formatCount(figures.irms)} IRMs ${figures.status} in ${figures.seconds.toFixed(2)} s after the 202: ` +
        `${formatCount(figures.rowsPerSecond)} rows/s (${figures.pushes} pushes; ${formatCount(figures.validatedRows)} rows Validated, ${formatCount(figures.failedRows)} Failed)`);
      return figures;
    });
    const matchingRoute = await attempt('matching route', errors, () => measureMatchingRoute(api, matchingCustomers, plan.matchingRouteRuns));
    return {
      backend,
      loadAverage: { before: loadBefore, after: loadAfter },
      idle,
      poller,
      volumes,
      seeded: { counts: seeded.counts, steps: seeded.steps, seconds: seeded.seconds },
      serviceStartSeconds,
      pushSetup,
      scenarios: results,
      ...(upload ? { upload } : {}),
      ...(matchingRoute ? { matchingRoute } : {}),
    };
  } finally {
    for (const server of servers.reverse()) await server.stop();
    fs.rmSync(bareDir, { recursive: true, force: true });
  }
}

/** One backend: the service's measurements, then (its servers stopped) bench/webhooks.ts for the backend. */
async function runBackend(backend: 'postgres' | 'embedded'): Promise<BackendResult> {
  const errors: Record<string, string> = {};
  const result = await measureService(backend, errors);
  log(`== ${backend}: webhooks (bench/webhooks.ts as a child process${plan.webhookArgs.length > 0 ? `, ${plan.webhookArgs.join(' ')}` : ''})`);
  const webhooks = await attempt('webhooks', errors, () => runWebhookBench(backend, plan.webhookArgs, path.join(TMP, 'logs')));
  if (webhooks) {
    log(`webhooks: ${formatCount(webhooks.requestBurstPerSecond)} deliveries/s for 999-line requests, ${formatCount(webhooks.testBurstPerSecond)}/s for test events; ` +
      `idle change to delivery p99 ${webhooks.idle.p99} ms (n ${webhooks.idle.count})`);
  }
  return { ...result, ...(webhooks ? { webhooks } : {}), ...(Object.keys(errors).length > 0 ? { errors } : {}) };
}

function loadAverage(): string {
  return os.loadavg().map((value) => value.toFixed(2)).join(' ');
}

function stampOf(date: Date): string {
  return date.toISOString().slice(0, 16).replace(':', '') + 'Z';
}

function updatePerformanceDoc(summary: string): void {
  const block = `${SUMMARY_START}\n${summary}\n${SUMMARY_END}`;
  const current = fs.existsSync(PERFORMANCE_DOC) ? fs.readFileSync(PERFORMANCE_DOC, 'utf8') : '# Performance\n\n';
  const start = current.indexOf(SUMMARY_START);
  const end = current.indexOf(SUMMARY_END);
  const next = start >= 0 && end > start
    ? `${current.slice(0, start)}${block}${current.slice(end + SUMMARY_END.length)}`
    : `${current.trimEnd()}\n\n## Latest full run\n\n${block}\n`;
  fs.writeFileSync(PERFORMANCE_DOC, next);
}

async function main(): Promise<number> {
  const startedAt = new Date();
  const clock = performance.now();
  log(`ebrc-gateway benchmark, ${mode} run; load average ${loadAverage()} on ${os.availableParallelism()} cores`);
  if ((os.loadavg()[0] ?? 0) > os.availableParallelism() / 4) {
    log('warning: the machine is busy; other work competes with the benchmark and lowers its figures (the report shows the load average)');
  }
  const machine = await machineFacts();
  const backends: BackendResult[] = [];
  if (!flags['skip-postgres']) backends.push(await runBackend('postgres'));
  if (!flags['skip-embedded']) backends.push(await runBackend('embedded'));
  // The matching engine in this process, with no server running.
  const runErrors: Record<string, string> = {};
  log(`\n== matching engine: ${plan.matchingEngineRuns} runs per set after a warm-up`);
  const matchingEngine = await attempt('matching engine', runErrors, async () => measureMatchingEngine(plan.matchingEngineRuns));
  for (const figures of matchingEngine ?? []) {
    log(`matching engine, ${formatCount(figures.invoices)} invoices (${formatCount(figures.irms)} IRMs): median ${figures.medianMs.toFixed(1)} ms; ` +
      `precision ${figures.precision.toFixed(4)}, recall ${figures.recall.toFixed(4)}`);
  }
  const run: RunResult = {
    mode,
    startedAt: startedAt.toISOString(),
    seconds: (performance.now() - clock) / 1000,
    machine,
    settings: {
      seconds: plan.seconds,
      pushSeconds: plan.pushSeconds,
      warmupSeconds: plan.warmupSeconds,
      readConnections: plan.readConnections,
      quietWaitSeconds: plan.quietWaitSeconds,
      quietBudgetSeconds: plan.quietBudgetSeconds,
      serviceEnv: { ...startScript().env, ...BENCH_SERVICE_ENV },
      sandboxEnv: sandboxSettings(SANDBOX_PROCESSING_DELAY_MS),
    },
    backends,
    ...(matchingEngine ? { matchingEngine } : {}),
    ...(Object.keys(runErrors).length > 0 ? { errors: runErrors } : {}),
  };
  fs.mkdirSync(RESULTS, { recursive: true });
  const name = `${stampOf(startedAt)}-${mode}`;
  const reportPath = path.join('bench', 'results', `${name}.md`);
  fs.writeFileSync(path.join(ROOT, reportPath), renderReport(run));
  fs.writeFileSync(path.join(RESULTS, `${name}.json`), `${JSON.stringify(run, null, 2)}\n`);
  if (mode === 'full' && !flags['skip-postgres']) updatePerformanceDoc(renderSummary(run, reportPath));
  log(`\ndone in ${(run.seconds / 60).toFixed(1)} min`);
  process.stdout.write(`${reportPath}\n`);
  const failed = [...backends.flatMap((backend) => Object.keys(backend.errors ?? {}).map((name) => `${backend.backend} ${name}`)), ...Object.keys(runErrors)];
  if (failed.length > 0) {
    log(`measurements that failed (the report says why): ${failed.join(', ')}`);
    return 1;
  }
  return 0;
}

process.exit(await main());
