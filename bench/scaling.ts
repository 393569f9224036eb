/**
 * `node bench/scaling.ts [--seconds N] [--quick] [--second full|api-only] [--test-events N] [--keep]`: one service process
 * against two on the same PostgreSQL database (docs/scaling.md).
 *
 * Creates the databases `ebrc_scaling` (the service's; SCALING_DATABASE names another) and `ebrc_scaling_sandbox` (the
 * sandbox program's own storage, so that the service database's counters hold the service's work alone), starts the
 * sandbox program, seeds modestly (100 customers, ~100,000 IRMs) with bench/lib/seed.ts, starts the service (src/main.ts
 * with the Node flags of `npm start`) and verifies four push customers through the API. Then:
 *
 * 1. one process: the idle background work (statements, transactions, rows, WAL per second); GET
 *    /platform-customers/{id} and an IRM page (POST /irm/refresh, limit 100) at 16 connections, concurrent 999-line
 *    pushes at 4; each with the CPU split between the service, its database sessions, the sandbox and the load generator;
 * 2. a second process on the same database (`--second full`, the default: the same settings, so both poll, relay and
 *    deliver; `--second api-only`: RUN_POLLER=false RUN_WEBHOOKS=false), the same measurements with the connections
 *    split evenly (two autocannon runs in parallel: req/s summed, the worst p99);
 * 3. the cost per event of the outbox and pg-boss, with two processes and then with one: a burst of webhook test events
 *    and a 999-line push processed by the poller (999 ebrc.generated events), delivered to a receiver in this process;
 *    from pg_stat_database, pg_stat_all_tables, the WAL (pg_walinspect: this database's records, by table) and the
 *    statements the service processes sent (counted in each process by bench/lib/scaling-statements.ts, loaded with
 *    --import);
 * 4. the reads again on one process (how much the machine drifted meanwhile).
 *
 * Statistics windows start and end 11 s after any work (PostgreSQL 15 publishes an idle pooled session's counters up to
 * 10 s late), the idle rate of the same processes is taken off the outbox windows, and a temporary replication slot of
 * the statistics session keeps each window's WAL until pg_walinspect has read it (a shared server's checkpoints would
 * otherwise recycle it). The report's figures and their method: bench/lib/scaling-report.ts.
 *
 * Writes bench/results/scaling-<UTC stamp>.md and .json and prints the markdown. Progress on stderr.
 * --quick: 2 s measurements, no warm-up, 200 test events. --keep: leave the databases for inspection.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createServer, type Server as HttpServer } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { AutocannonRequest } from 'autocannon';
import type { CredentialSet } from '../src/authority/protocol/credentials.ts';
import { openDatabase } from '../src/store/database.ts';
import { createVerifiedCustomer, ApiClient, allIrms, irmPagePath, type ApiIrm, type IrmPage } from './lib/api.ts';
import { load, type LoadOptions, type Measured } from './lib/load.ts';
import { CpuMeter, RssSampler, freePort, startServer, type CpuShares, type Server } from './lib/processes.ts';
import { git } from './lib/repo.ts';
import { startScript } from './lib/start-script.ts';
import { formatCount, log } from './lib/progress.ts';
import { IrmPool } from './lib/pushes.ts';
import { SANDBOX_APPLICATION_NAME, SANDBOX_PASSWORD, issueCredentialSet, startSandboxProgram } from './lib/sandbox.ts';
import { PgStats, lessIdle, settleStats, tableStorage, type Snapshot } from './lib/scaling-pgstats.ts';
import {
  cpuGroups,
  renderScaling,
  type Config,
  type CpuPerRequest,
  type IdleRun,
  type LoadFigures,
  type OutboxRun,
  type ScalingResult,
  type ScenarioRun,
  type StatementTotals,
} from './lib/scaling-report.ts';
import type { StatementCounts, StatementKind } from './lib/scaling-statements.ts';
import { SANDBOX_USERNAMES, seed, type Volumes } from './lib/seed.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const TMP = path.join(ROOT, 'bench', 'tmp');
const LOGS = path.join(TMP, 'logs');
const RESULTS = path.join(ROOT, 'bench', 'results');
const STATEMENT_COUNTER = path.join(ROOT, 'bench', 'lib', 'scaling-statements.ts');

const { values: flags } = parseArgs({
  options: {
    seconds: { type: 'string' },
    quick: { type: 'boolean', default: false },
    second: { type: 'string', default: 'full' },
    'test-events': { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});
if (flags.second !== 'full' && flags.second !== 'api-only') throw new Error('--second must be full or api-only');
const SECONDS = flags.seconds !== undefined ? Number(flags.seconds) : flags.quick ? 2 : 10;
if (!Number.isInteger(SECONDS) || SECONDS < 1) throw new Error('--seconds must be a whole number of seconds, at least 1');
const WARMUP_SECONDS = flags.quick ? 0 : 2;
const READ_CONNECTIONS = 16;
const PUSH_CONNECTIONS = 4;
const PUSH_LINES = 999;
const TEST_EVENTS = Number(flags['test-events'] ?? (flags.quick ? 200 : 1_000));
const TEST_CONCURRENCY = 16;
const IDLE_SECONDS = Math.max(10, SECONDS);
/** Before a measurement: the longest wait for a second in which other work takes under 10% of the CPU. */
const QUIET_WAIT_SECONDS = flags.quick ? 0 : 30;
const SANDBOX_PROCESSING_DELAY_MS = 3_000;
const SECOND_PROCESS: 'full' | 'api-only' = flags.second;

const VOLUMES: Volumes = { customers: 100, bigCustomerIrms: 20_000, irmsPerCustomer: 808, bigCustomerRequests: 1_000, requestCustomers: 20, requestsPerCustomer: 20 };
/** The tables that grow with use, whose rows and indexes the report describes. */
const GROWING_TABLES = ['public.irms', 'public.genebrc_requests', 'public.genebrc_request_lines', 'public.events', 'public.webhook_attempts', 'pgboss.job_common', 'public.idempotency_keys', 'public.irm_day_counts'];
const PUSH_ACCOUNTS = ['demo.exporter', 'bulk.exporter', 'vostro.exporter', 'services.exporter'];

const adminUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DATABASE = process.env.SCALING_DATABASE ?? 'ebrc_scaling';
const SANDBOX_DATABASE = `${DATABASE}_sandbox`;
const BENCH_APPLICATION_NAME = 'ebrc-scaling-bench';
const encryptionKey = randomBytes(32);

const SERVICE_ENV: Record<string, string> = {
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  AUTHORITY_MODE: 'sandbox',
  RATE_LIMIT_PER_SECOND: '1000000',
  RATE_LIMIT_BURST: '1000000',
  // Seeded customers count as pulled now: an IRM page within a day answers from the store.
  IRM_REFRESH_INTERVAL_SECONDS: '86400',
  POLL_INTERVAL_SECONDS: '2',
  WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
};
const SECOND_ENV: Record<string, string> = SECOND_PROCESS === 'api-only' ? { RUN_POLLER: 'false', RUN_WEBHOOKS: 'false' } : {};

function databaseUrl(name: string, applicationName?: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  if (applicationName) url.searchParams.set('application_name', applicationName);
  return url.toString();
}

async function newClient(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: BENCH_APPLICATION_NAME });
  await client.connect();
  return client;
}

async function adminQuery(statement: string): Promise<void> {
  const client = await newClient(adminUrl);
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// The service processes

type ServiceProcess = { server: Server; label: string; applicationName: string; statementsFile: string };

async function startService(label: string, env: Record<string, string>): Promise<ServiceProcess> {
  const applicationName = `ebrc-scaling-service-${label.toLowerCase()}`;
  const statementsFile = path.join(TMP, `scaling-statements-${label.toLowerCase()}.json`);
  fs.rmSync(statementsFile, { force: true });
  const startedAt = performance.now();
  const server = await startServer({
    name: `scaling-service-${label.toLowerCase()}`,
    script: path.join(ROOT, 'src', 'main.ts'),
    nodeFlags: ['--import', STATEMENT_COUNTER],
    env: { ...SERVICE_ENV, ...env, DATABASE_URL: databaseUrl(DATABASE, applicationName), SCALING_STATEMENTS_FILE: statementsFile },
    port: await freePort(),
    readyPath: '/ready',
    logDir: LOGS,
    startTimeoutMs: 120_000,
  });
  log(`service ${label} started in ${((performance.now() - startedAt) / 1000).toFixed(1)} s (pid ${server.pid}, ${server.baseUrl})`);
  return { server, label, applicationName, statementsFile };
}

/** The statements a service process has sent so far (it writes them on SIGUSR2). */
async function statementsOf(service: ServiceProcess): Promise<StatementCounts> {
  const read = (): StatementCounts | undefined => {
    try {
      return JSON.parse(fs.readFileSync(service.statementsFile, 'utf8')) as StatementCounts;
    } catch {
      return undefined;
    }
  };
  const before = read()?.signals ?? 0;
  process.kill(service.server.pid, 'SIGUSR2');
  const deadline = performance.now() + 5_000;
  for (;;) {
    const now = read();
    if (now && now.signals > before) return now;
    if (performance.now() > deadline) throw new Error(`service ${service.label} did not write its statement counts`);
    await sleep(20);
  }
}

async function statementsOfAll(services: readonly ServiceProcess[]): Promise<Map<string, StatementCounts>> {
  const counts = new Map<string, StatementCounts>();
  for (const service of services) counts.set(service.label, await statementsOf(service));
  return counts;
}

const KINDS: StatementKind[] = ['transaction', 'pgBoss', 'outbox', 'other'];

function statementDelta(from: StatementCounts, to: StatementCounts): StatementTotals {
  return { total: to.total - from.total, byKind: Object.fromEntries(KINDS.map((kind) => [kind, to.byKind[kind] - from.byKind[kind]])) as Record<StatementKind, number> };
}

function mergeCounts(a: StatementCounts, b: StatementCounts): StatementCounts {
  const byText: Record<string, number> = { ...a.byText };
  for (const [text, total] of Object.entries(b.byText)) byText[text] = (byText[text] ?? 0) + total;
  return { signals: 0, total: a.total + b.total, byKind: Object.fromEntries(KINDS.map((kind) => [kind, a.byKind[kind] + b.byKind[kind]])) as Record<StatementKind, number>, byText };
}

function sumStatements(totals: readonly StatementTotals[]): StatementTotals {
  return {
    total: totals.reduce((sum, each) => sum + each.total, 0),
    byKind: Object.fromEntries(KINDS.map((kind) => [kind, totals.reduce((sum, each) => sum + each.byKind[kind], 0)])) as Record<StatementKind, number>,
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// The webhook receiver

class Receiver {
  deliveries = 0;
  readonly ids = new Set<string>();
  readonly byType = new Map<string, number>();
  url = '';
  readonly #server: HttpServer = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      response.writeHead(204).end();
      this.deliveries++;
      const id = String(request.headers['webhook-id'] ?? '');
      if (this.ids.has(id)) return;
      this.ids.add(id);
      try {
        const type = String((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type?: unknown }).type);
        this.byType.set(type, (this.byType.get(type) ?? 0) + 1);
      } catch {
        this.byType.set('unreadable', (this.byType.get('unreadable') ?? 0) + 1);
      }
    });
  });

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    const address = this.#server.address();
    if (typeof address !== 'object' || address === null) throw new Error('the receiver has no address');
    this.url = `http://127.0.0.1:${address.port}/webhooks`;
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Setup through the API (as bench/run.ts)

async function setUpPushCustomers(api: ApiClient): Promise<Map<string, ApiIrm[]>> {
  const irmsByCustomer = new Map<string, ApiIrm[]>();
  for (const account of PUSH_ACCOUNTS) {
    const customerId = await createVerifiedCustomer(api, account, 'Scaling', SANDBOX_PASSWORD);
    irmsByCustomer.set(customerId, await allIrms(api, customerId));
  }
  return irmsByCustomer;
}

async function openRequests(api: ApiClient, customers: readonly string[]): Promise<number> {
  let open = 0;
  for (const customerId of customers) {
    const answer = await api.call('GET', `/api/v1/genebrc?platformCustomerId=${customerId}&status=PENDING&page=1&limit=1`);
    open += Number(answer.headers.get('x-total-count') ?? 0);
  }
  return open;
}

/** Waits for the poller to settle every pushed request (at most `capSeconds`), then accounts for pushes a run's end cut off. */
async function settlePushes(api: ApiClient, pool: IrmPool, customers: readonly string[], capSeconds: number): Promise<void> {
  const startedAt = performance.now();
  let open = await openRequests(api, customers);
  const before = open;
  while (open > 0 && performance.now() - startedAt < capSeconds * 1000) {
    await sleep(500);
    open = await openRequests(api, customers);
  }
  const recovered = await pool.recover(api);
  log(`  backlog: ${before} requests open after the pushes, ${open} after ${((performance.now() - startedAt) / 1000).toFixed(1)} s; ` +
    `cut-off pushes found ${recovered.found}, never received ${recovered.missing}`);
}

/** One push of `lines` lines through `server`, on IRMs leased from the pool (as autocannon would send it). */
async function pushOnce(server: Server, apiKey: string, pool: IrmPool, lines: number): Promise<{ status: number; ackStatus?: string; requestId?: string }> {
  const request = pool.request(lines);
  const context: Record<string, unknown> = {};
  const prepared = request.setupRequest!({ method: 'POST', path: request.path ?? '/api/v1/genebrc/push-irm' }, context);
  const response = await fetch(`${server.baseUrl}/api/v1/genebrc/push-irm`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    body: prepared?.body as string,
    signal: AbortSignal.timeout(120_000),
  });
  const text = await response.text();
  request.onResponse!(response.status, text, context, {});
  try {
    const ack = JSON.parse(text) as { ackStatus?: string; requestId?: string };
    return { status: response.status, ...(ack.ackStatus ? { ackStatus: ack.ackStatus } : {}), ...(ack.requestId ? { requestId: ack.requestId } : {}) };
  } catch {
    return { status: response.status };
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Measuring

type Context = {
  api: ApiClient;
  apiKey: string;
  pool: IrmPool;
  pushCustomers: string[];
  bigCustomerId: string;
  customerIds: string[];
  cpu: CpuMeter;
  admin: pg.Client;
  stats: PgStats;
  probe: { client: pg.Client; queries: number };
  sandbox: Server;
  receiver: Receiver;
};

/** Waits (at most QUIET_WAIT_SECONDS) for a second in which other work takes under 10% of the CPU. */
async function waitForQuiet(cpu: CpuMeter): Promise<void> {
  const startedAt = performance.now();
  while (performance.now() - startedAt < QUIET_WAIT_SECONDS * 1000) {
    await cpu.start();
    await sleep(1_000);
    if ((await cpu.stop()).other < 0.1) break;
  }
  const waited = (performance.now() - startedAt) / 1000;
  if (waited > 1.5) log(`  (waited ${waited.toFixed(0)} s for other work to calm down)`);
}

function rotating(method: string, paths: readonly string[], body?: string): AutocannonRequest[] {
  let next = 0;
  return [{ method, setupRequest: (request) => ({ ...request, path: paths[next++ % paths.length]!, ...(body !== undefined ? { body } : {}) }) }];
}

type Scenario = {
  key: ScenarioRun['key'];
  title: string;
  request: string;
  connections: number;
  lines?: number;
  /** The load for one process (a fresh request list per autocannon run). */
  load: () => Omit<LoadOptions, 'url' | 'connections' | 'seconds'>;
};

function scenarios(context: Context): Scenario[] {
  const read = { 'x-api-key': context.apiKey };
  const write = { ...read, 'content-type': 'application/json' };
  const irmPage = irmPagePath(context.bigCustomerId, 1, 100);
  return [
    {
      key: 'customer-by-id',
      title: 'GET customer by id',
      request: 'GET /api/v1/platform-customers/{id}, every seeded id in turn',
      connections: READ_CONNECTIONS,
      load: () => ({ headers: read, requests: rotating('GET', context.customerIds.map((id) => `/api/v1/platform-customers/${id}`)) }),
    },
    {
      key: 'irm-page',
      title: `IRM page (${formatCount(VOLUMES.bigCustomerIrms)} IRMs, limit 100)`,
      request: `POST ${irmPage.replace(context.bigCustomerId, '{big}')}`,
      connections: READ_CONNECTIONS,
      load: () => ({ method: 'POST', headers: write, body: '{}', requests: rotating('POST', [irmPage], '{}') }),
    },
    {
      key: 'push-999',
      title: 'Push, 999 lines, concurrent',
      request: 'POST /api/v1/genebrc/push-irm, 999 lines on distinct IRMs, 0.01 each',
      connections: PUSH_CONNECTIONS,
      lines: PUSH_LINES,
      load: () => ({ method: 'POST', headers: write, requests: [context.pool.request(PUSH_LINES)], timeoutSeconds: 120 }),
    },
  ];
}

async function sessionsByApplication(admin: pg.Client): Promise<Record<string, number>> {
  const { rows } = await admin.query<{ name: string; sessions: number }>(
    `select coalesce(nullif(application_name, ''), '(none)') as name, count(*)::int as sessions from pg_stat_activity where datname = any($1) group by 1 order by 1`,
    [[DATABASE, SANDBOX_DATABASE]],
  );
  return Object.fromEntries(rows.map((row) => [row.name, row.sessions]));
}

function cpuPerRequest(cpu: CpuShares, seconds: number, requests: number): CpuPerRequest {
  const groups = cpuGroups(cpu);
  const msOf = (share: number): number => (share * os.availableParallelism() * seconds * 1000) / Math.max(1, requests);
  return { service: msOf(groups.services), database: msOf(groups.database), sandbox: msOf(groups.sandbox), total: msOf(groups.services + groups.database + groups.sandbox) };
}

async function runScenario(context: Context, scenario: Scenario, config: Config, services: readonly ServiceProcess[]): Promise<ScenarioRun> {
  const per = Math.max(1, Math.floor(scenario.connections / services.length));
  const loadAll = (seconds: number): Promise<Measured[]> =>
    Promise.all(services.map((service) => load({ ...scenario.load(), url: service.server.baseUrl, connections: per, seconds })));
  if (WARMUP_SECONDS > 0 && scenario.key !== 'push-999') await loadAll(WARMUP_SECONDS);
  await waitForQuiet(context.cpu);
  context.pool.resetOutcomes();
  const samplers = services.map((service) => {
    const sampler = new RssSampler(service.server.pid);
    sampler.start();
    return sampler;
  });
  await context.cpu.start();
  const measured = await loadAll(SECONDS);
  const cpu = await context.cpu.stop();
  const peakRssMb = Object.fromEntries(services.map((service, index) => [service.label, Math.round(samplers[index]!.stop() / 1024 ** 2)]));
  const sessions = await sessionsByApplication(context.admin);
  const seconds = Math.max(...measured.map((each) => each.seconds));
  const figures: LoadFigures = {
    rps: measured.reduce((sum, each) => sum + each.rps, 0),
    p50: Math.max(...measured.map((each) => each.p50)),
    p99: Math.max(...measured.map((each) => each.p99)),
    ok: measured.reduce((sum, each) => sum + each.ok, 0),
    bad: measured.reduce((sum, each) => sum + each.non2xx + each.errors + each.timeouts, 0),
    seconds,
    perProcess: measured.map((each, index) => ({ server: services[index]!.label, connections: per, rps: each.rps, p50: each.p50, p99: each.p99 })),
  };
  const run: ScenarioRun = {
    key: scenario.key,
    title: scenario.title,
    config,
    processes: services.length,
    connections: per * services.length,
    request: scenario.request,
    figures,
    cpu,
    cpuPerRequestMs: cpuPerRequest(cpu, seconds, figures.ok),
    peakRssMb,
    sessions,
  };
  if (scenario.lines !== undefined) {
    const outcomes = structuredClone(context.pool.outcomes);
    Object.assign(run, { lines: scenario.lines, outcomes, linesPerSecond: (outcomes.validated * scenario.lines) / seconds });
  }
  const groups = cpuGroups(cpu);
  log(`  ${scenario.title.padEnd(34)} ${config.padEnd(8)} ${String(run.connections).padStart(2)} conns ${formatCount(figures.rps).padStart(6)} req/s ` +
    `p50 ${figures.p50.toFixed(1)} p99 ${figures.p99.toFixed(1)} ms${run.linesPerSecond !== undefined ? ` ${formatCount(run.linesPerSecond)} lines/s (${run.outcomes?.validated} Validated, ${run.outcomes?.failed} Failed, ${run.outcomes?.other} other)` : ''}` +
    `  CPU services ${(groups.services * 100).toFixed(0)}% db ${(groups.database * 100).toFixed(0)}% sandbox ${(groups.sandbox * 100).toFixed(0)}% load ${(groups.load * 100).toFixed(0)}% other ${(groups.other * 100).toFixed(0)}%` +
    `${figures.bad > 0 ? `  (${figures.bad} non-2xx/errors)` : ''}`);
  return run;
}

function topStatements(from: StatementCounts, to: StatementCounts, seconds: number, count: number): { text: string; perSecond: number }[] {
  return Object.entries(to.byText)
    .map(([text, total]) => ({ text, perSecond: (total - (from.byText[text] ?? 0)) / seconds }))
    .filter((entry) => entry.perSecond > 0)
    .sort((a, b) => b.perSecond - a.perSecond)
    .slice(0, count);
}

async function measureIdle(context: Context, config: Config, services: readonly ServiceProcess[]): Promise<IdleRun> {
  // What the work before left to publish must not land in the window.
  await settleStats();
  await context.stats.reserve();
  const statementsBefore = await statementsOfAll(services);
  const before = await context.stats.snapshot();
  const ownBefore = context.stats.queries();
  await context.cpu.start();
  await sleep(IDLE_SECONDS * 1000);
  const cpu = await context.cpu.stop();
  const after = await context.stats.snapshot();
  const own = context.stats.queries() - ownBefore;
  const statementsAfter = await statementsOfAll(services);
  const delta = await context.stats.delta(before, after);
  delta.database.xactCommit = Math.max(0, delta.database.xactCommit - own);
  const statements = Object.fromEntries(services.map((service) => [service.label, statementDelta(statementsBefore.get(service.label)!, statementsAfter.get(service.label)!)]));
  const topByProcess = Object.fromEntries(services.map((service) => [service.label, topStatements(statementsBefore.get(service.label)!, statementsAfter.get(service.label)!, delta.seconds, 12)]));
  const run: IdleRun = { config, processes: services.length, seconds: delta.seconds, delta, statements, topStatements: topByProcess, cpu };
  log(`  idle, ${config}: ${Object.entries(statements).map(([label, counts]) => `${label} ${(counts.total / delta.seconds).toFixed(1)} statements/s`).join(', ')}; ` +
    `${(delta.database.xactCommit / delta.seconds).toFixed(1)} transactions/s; WAL ${delta.wal ? formatCount(delta.wal.bytes / delta.seconds) : 'n/a'} B/s`);
  return run;
}

async function probe(context: Context, text: string): Promise<number> {
  context.probe.queries++;
  const { rows } = await context.probe.client.query<{ n: number }>(text);
  return Number(rows[0]?.n ?? 0);
}

/** Until every event is dispatched, every attempt recorded and every delivery job finished (at most `capMs`). */
async function deliveriesDone(context: Context, expectedDistinct: number, capMs: number): Promise<boolean> {
  const deadline = performance.now() + capMs;
  while (context.receiver.ids.size < expectedDistinct) {
    if (performance.now() > deadline) return false;
    await sleep(50);
  }
  for (;;) {
    const busy = await probe(
      context,
      `select (select count(*) from event_queue)
            + (select count(*) from webhook_attempts where status = 'pending')
            + (select count(*) from pgboss.job where name = 'webhook-delivery' and state in ('created', 'retry', 'active'))
            + (select count(*) from genebrc_requests where status in ('SUBMITTING', 'PENDING'))::bigint as n`,
    );
    if (busy === 0) return true;
    if (performance.now() > deadline) return false;
    await sleep(100);
  }
}

async function outboxWindow(
  context: Context,
  key: OutboxRun['key'],
  title: string,
  config: Config,
  services: readonly ServiceProcess[],
  idle: IdleRun,
  work: () => Promise<number>,
): Promise<OutboxRun> {
  await settleStats();
  const receivedBefore = context.receiver.deliveries;
  const idsBefore = context.receiver.ids.size;
  await context.stats.reserve();
  const statementsBefore = await statementsOfAll(services);
  const before: Snapshot = await context.stats.snapshot();
  const ownBefore = context.stats.queries();
  const probesBefore = context.probe.queries;
  const seqBefore = await probe(context, 'select coalesce(max(seq), 0)::bigint as n from events');
  await context.cpu.start();
  const startedAt = performance.now();
  const expected = await work();
  const done = await deliveriesDone(context, idsBefore + expected, 120_000);
  const workSeconds = (performance.now() - startedAt) / 1000;
  const cpu = await context.cpu.stop();
  if (!done) log(`  ${title}: gave up waiting after 120 s (${context.receiver.ids.size - idsBefore} of ${expected} delivered)`);
  await settleStats();
  const events = await probe(context, `select count(*)::bigint as n from events where seq > ${seqBefore}`);
  const after = await context.stats.snapshot();
  const own = context.stats.queries() - ownBefore + (context.probe.queries - probesBefore);
  const statementsAfter = await statementsOfAll(services);
  const rawDelta = await context.stats.delta(before, after);
  rawDelta.database.xactCommit = Math.max(0, rawDelta.database.xactCommit - own);
  const delta = lessIdle(rawDelta, idle.delta);
  const rawStatements = sumStatements(services.map((service) => statementDelta(statementsBefore.get(service.label)!, statementsAfter.get(service.label)!)));
  const idleStatements = sumStatements(Object.values(idle.statements));
  const share = rawDelta.seconds / idle.seconds;
  const statements: StatementTotals = {
    total: Math.max(0, rawStatements.total - idleStatements.total * share),
    byKind: Object.fromEntries(KINDS.map((kind) => [kind, Math.max(0, rawStatements.byKind[kind] - idleStatements.byKind[kind] * share)])) as Record<StatementKind, number>,
  };
  const run: OutboxRun = {
    key,
    title,
    config,
    processes: services.length,
    events,
    deliveries: context.receiver.deliveries - receivedBefore,
    distinctDeliveries: context.receiver.ids.size - idsBefore,
    workSeconds,
    windowSeconds: rawDelta.seconds,
    delta,
    rawDelta,
    statements,
    rawStatements,
    topStatements: topStatements(
      [...statementsBefore.values()].reduce(mergeCounts),
      [...statementsAfter.values()].reduce(mergeCounts),
      Math.max(1, events),
      15,
    ).map(({ text, perSecond }) => ({ text, perEvent: perSecond })),
    ownStatements: own,
    cpu,
  };
  const per = (value: number): string => (value / Math.max(1, events)).toFixed(2);
  log(`  ${title}, ${config}: ${events} events, ${run.distinctDeliveries} delivered in ${workSeconds.toFixed(2)} s; per event ${per(delta.database.xactCommit)} transactions, ` +
    `${per(statements.total)} statements (pg-boss ${per(statements.byKind.pgBoss)}, outbox ${per(statements.byKind.outbox)}), ` +
    `rows +${per(delta.database.tupInserted)} ~${per(delta.database.tupUpdated)} -${per(delta.database.tupDeleted)}, WAL ${delta.wal ? formatCount(delta.wal.bytes / Math.max(1, events)) : 'n/a'} B`);
  return run;
}

async function testBurst(context: Context, config: Config, services: readonly ServiceProcess[], idle: IdleRun, endpointId: string): Promise<OutboxRun> {
  return outboxWindow(context, 'test-burst', 'test events', config, services, idle, async () => {
    let fired = 0;
    await Promise.all(Array.from({ length: TEST_CONCURRENCY }, async (_, worker) => {
      const service = services[worker % services.length]!;
      const api = new ApiClient(service.server.baseUrl, context.apiKey);
      while (fired < TEST_EVENTS) {
        fired++;
        await api.expect(202, 'POST', `/api/v1/webhook-endpoints/${endpointId}/test`, {});
      }
    }));
    return TEST_EVENTS;
  });
}

async function pushProcessed(context: Context, config: Config, services: readonly ServiceProcess[], idle: IdleRun): Promise<OutboxRun> {
  return outboxWindow(context, 'push-999', '999-line push, processed', config, services, idle, async () => {
    // Through the last process: with two, the push lands on the second and either poller may settle it.
    const answer = await pushOnce(services.at(-1)!.server, context.apiKey, context.pool, PUSH_LINES);
    if (answer.status !== 200 || answer.ackStatus !== 'Validated') throw new Error(`the 999-line push answered ${answer.status} ${answer.ackStatus ?? ''}`);
    // Acknowledged, processed, and one ebrc.generated per line.
    return PUSH_LINES + 2;
  });
}

/** The largest tables at the end: their size (heap, indexes, TOAST) and their rows, counted. */
async function tableSizes(client: pg.Client): Promise<ScalingResult['tableSizes']> {
  const { rows } = await client.query<{ table: string; bytes: string; indexes: string }>(
    `select format('%I.%I', n.nspname, c.relname) as table, pg_total_relation_size(c.oid) as bytes, pg_indexes_size(c.oid) as indexes
     from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where c.relkind = 'r' and n.nspname in ('public', 'pgboss')
     order by pg_total_relation_size(c.oid) desc limit 14`,
  );
  const sizes: ScalingResult['tableSizes'] = [];
  for (const row of rows) {
    const count = Number((await client.query<{ n: string }>(`select count(*) as n from ${row.table}`)).rows[0]?.n ?? 0);
    sizes.push({ table: row.table, bytes: Number(row.bytes), indexBytes: Number(row.indexes), rows: count });
  }
  return sizes;
}

// ---------------------------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const startedAt = new Date();
  const clock = performance.now();
  const loadAverageBefore = os.loadavg();
  log(`ebrc-gateway scaling benchmark${flags.quick ? ' (quick)' : ''}: ${SECONDS} s per measurement; load average ${loadAverageBefore.map((value) => value.toFixed(2)).join(' ')} on ${os.availableParallelism()} cores`);
  fs.mkdirSync(TMP, { recursive: true });
  fs.mkdirSync(RESULTS, { recursive: true });
  const servers: Server[] = [];
  const services: ServiceProcess[] = [];
  const clients: pg.Client[] = [];
  const receiver = new Receiver();
  const notes: string[] = [];
  try {
    for (const name of [DATABASE, SANDBOX_DATABASE]) {
      await adminQuery(`drop database if exists "${name}" with (force)`);
      await adminQuery(`create database "${name}"`);
    }
    const admin = await newClient(adminUrl);
    clients.push(admin);
    const postgres = String((await admin.query('select version() as v')).rows[0].v).split(',')[0] ?? '';
    const postgresSettings = Object.fromEntries(
      (await admin.query<{ name: string; setting: string; unit: string | null }>(
        `select name, setting, unit from pg_settings where name in ('max_connections', 'shared_buffers', 'autovacuum', 'checkpoint_timeout', 'max_wal_size', 'synchronous_commit', 'full_page_writes', 'wal_level')`,
      )).rows.map((row) => [row.name, `${row.setting}${row.unit ? ` (${row.unit})` : ''}`]),
    );
    if (postgresSettings.autovacuum?.startsWith('off')) notes.push('autovacuum is off on this PostgreSQL server: dead rows of the windows stay until the next manual VACUUM (production keeps it on).');

    const sandbox = await startSandboxProgram({
      name: 'scaling-sandbox',
      storage: { databaseUrl: databaseUrl(SANDBOX_DATABASE) },
      port: await freePort(),
      processingDelayMs: SANDBOX_PROCESSING_DELAY_MS,
      logDir: LOGS,
    });
    servers.push(sandbox);
    const credentialSets = new Map<string, CredentialSet>();
    for (const username of SANDBOX_USERNAMES) credentialSets.set(username, await issueCredentialSet(sandbox.baseUrl, username));
    log(`sandbox started (pid ${sandbox.pid}) on the database ${SANDBOX_DATABASE}`);

    const database = await openDatabase({ databaseUrl: databaseUrl(DATABASE), dataDir: TMP });
    const seeded = await (async () => {
      try {
        return await seed(database, VOLUMES, encryptionKey, credentialSets, os.availableParallelism());
      } finally {
        await database.close();
      }
    })();

    const statsClient = await newClient(databaseUrl(DATABASE));
    clients.push(statsClient);
    const stats = new PgStats(statsClient, DATABASE);
    const walinspect = await stats.prepare();
    if (!walinspect) notes.push('pg_walinspect could not be created: WAL is the whole server\'s LSN delta only.');
    const probeClient = await newClient(databaseUrl(DATABASE));
    clients.push(probeClient);
    await receiver.start();

    const baseEnv = { ENCRYPTION_KEY: encryptionKey.toString('base64'), AUTHORITY_URL: sandbox.baseUrl };
    const first = await startService('A', baseEnv);
    servers.push(first.server);
    services.push(first);
    const api = new ApiClient(first.server.baseUrl, seeded.apiKey);
    const setupStartedAt = performance.now();
    const irmsByCustomer = await setUpPushCustomers(api);
    const pool = new IrmPool();
    pool.reset(irmsByCustomer);
    const setup = { pushCustomers: irmsByCustomer.size, pushableIrms: pool.size(), seconds: (performance.now() - setupStartedAt) / 1000 };
    log(`push customers verified in ${setup.seconds.toFixed(1)} s: ${formatCount(setup.pushableIrms)} pushable IRMs (room for ${pool.capacity(PUSH_LINES)} 999-line pushes at once)`);
    const page = await api.expect<IrmPage>(200, 'POST', irmPagePath(seeded.bigCustomerId, 1, 100), {});
    if (page.meta.total !== VOLUMES.bigCustomerIrms) throw new Error(`the service counts ${page.meta.total} IRMs for the big customer, the seed made ${VOLUMES.bigCustomerIrms}`);

    const sessions = async (): Promise<{ pid: number; group: string }[]> =>
      (await admin.query<{ pid: number; application_name: string }>('select pid, application_name from pg_stat_activity where datname = any($1)', [[DATABASE, SANDBOX_DATABASE]])).rows.map((row) => {
        const service = services.find((each) => each.applicationName === row.application_name);
        const group = service ? `database (${service.label})` : row.application_name === SANDBOX_APPLICATION_NAME ? 'sandbox database' : row.application_name === BENCH_APPLICATION_NAME ? 'load generator (its statistics sessions)' : 'database (other)';
        return { pid: row.pid, group };
      });
    const cpu = new CpuMeter(async () => [
      { pid: process.pid, group: 'load generator' },
      ...services.map((service) => ({ pid: service.server.pid, group: `service ${service.label}` })),
      { pid: sandbox.pid, group: 'sandbox' },
      ...(await sessions()),
    ]);
    const context: Context = {
      api,
      apiKey: seeded.apiKey,
      pool,
      pushCustomers: [...irmsByCustomer.keys()],
      bigCustomerId: seeded.bigCustomerId,
      customerIds: seeded.customerIds,
      cpu,
      admin,
      stats,
      probe: { client: probeClient, queries: 0 },
      sandbox,
      receiver,
    };
    const all = scenarios(context);
    const scenarioRuns: ScenarioRun[] = [];
    const idleRuns: IdleRun[] = [];
    const outboxRuns: OutboxRun[] = [];
    const settleCap = flags.quick ? 60 : 180;

    // 1. One process.
    log('\n== one process');
    if (WARMUP_SECONDS > 0) await pushOnce(first.server, seeded.apiKey, pool, PUSH_LINES);
    await settlePushes(api, pool, context.pushCustomers, settleCap);
    const idleOne = await measureIdle(context, '1', services);
    idleRuns.push(idleOne);
    for (const scenario of all) scenarioRuns.push(await runScenario(context, scenario, '1', services));
    await settlePushes(api, pool, context.pushCustomers, settleCap);

    // 2. Two processes on the same database.
    log(`\n== two processes (the second: ${SECOND_PROCESS === 'full' ? 'the same settings' : 'RUN_POLLER=false RUN_WEBHOOKS=false'})`);
    const second = await startService('B', { ...baseEnv, ...SECOND_ENV });
    servers.push(second.server);
    services.push(second);
    // Warm the second process up (a fresh process compiles as it goes), then let the work it made settle.
    if (WARMUP_SECONDS > 0) {
      const warm = new ApiClient(second.server.baseUrl, seeded.apiKey);
      for (let index = 0; index < 200; index++) await warm.expect(200, 'GET', `/api/v1/platform-customers/${seeded.customerIds[index % seeded.customerIds.length]}`);
      for (let index = 0; index < 50; index++) await warm.expect(200, 'POST', irmPagePath(seeded.bigCustomerId, 1, 100), {});
    }
    await pushOnce(second.server, seeded.apiKey, pool, PUSH_LINES);
    await settlePushes(api, pool, context.pushCustomers, settleCap);
    const idleTwo = await measureIdle(context, '2', services);
    idleRuns.push(idleTwo);
    for (const scenario of all) scenarioRuns.push(await runScenario(context, scenario, '2', services));
    await settlePushes(api, pool, context.pushCustomers, settleCap);

    // 3. The outbox and pg-boss, per event: two processes, then one.
    log('\n== the cost per event of the outbox and pg-boss');
    const endpoint = await api.expect<{ id: string }>(201, 'POST', '/api/v1/webhook-endpoints', { url: receiver.url, description: 'bench/scaling.ts receiver', enabledEvents: ['*'] });
    // A first test event and push on the endpoint, so that the windows start warm (a first delivery opens the connection).
    await api.expect(202, 'POST', `/api/v1/webhook-endpoints/${endpoint.id}/test`, {});
    if (!(await deliveriesDone(context, 1, 30_000))) throw new Error('the first test event was not delivered within 30 s');
    outboxRuns.push(await testBurst(context, '2', services, idleTwo, endpoint.id));
    outboxRuns.push(await pushProcessed(context, '2', services, idleTwo));
    await second.server.stop();
    servers.splice(servers.indexOf(second.server), 1);
    services.splice(services.indexOf(second), 1);
    log('  (second process stopped)');
    await sleep(2_000);
    outboxRuns.push(await testBurst(context, '1', services, idleOne, endpoint.id));
    outboxRuns.push(await pushProcessed(context, '1', services, idleOne));

    // 4. The reads again on one process: how far the machine drifted.
    log('\n== one process again (reads)');
    for (const scenario of all.filter((each) => each.key !== 'push-999')) scenarioRuns.push(await runScenario(context, scenario, '1 again', services));

    const sizes = await tableSizes(statsClient);
    // After the measurements: VACUUM (ANALYZE) for exact index entry counts, then each growing table's row and index figures.
    const storage = await tableStorage(statsClient, GROWING_TABLES);
    if (storage === null) notes.push('pgstattuple could not be created: no row and index figures.');
    const loadAverageAfter = os.loadavg();
    const dirty = git(['status', '--porcelain', '--', 'src']) !== '';
    const result: ScalingResult = {
      startedAt: startedAt.toISOString(),
      seconds: (performance.now() - clock) / 1000,
      command: `node bench/scaling.ts ${process.argv.slice(2).join(' ')}`.trim(),
      quick: flags.quick,
      machine: {
        cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
        cores: os.availableParallelism(),
        memoryGiB: os.totalmem() / 1024 ** 3,
        node: process.versions.node,
        postgres,
        commit: `${git(['rev-parse', '--short', 'HEAD']) || 'unknown'}${dirty ? ' with uncommitted changes in src/' : ''}`,
        loadAverageBefore,
        loadAverageAfter,
      },
      postgresSettings,
      settings: {
        seconds: SECONDS,
        warmupSeconds: WARMUP_SECONDS,
        readConnections: READ_CONNECTIONS,
        pushConnections: PUSH_CONNECTIONS,
        testEvents: TEST_EVENTS,
        testConcurrency: TEST_CONCURRENCY,
        secondProcess: SECOND_PROCESS,
        serviceEnv: { ...startScript().env, ...SERVICE_ENV },
        secondEnv: SECOND_ENV,
        nodeFlags: [...startScript().nodeFlags, '--import', path.relative(ROOT, STATEMENT_COUNTER)],
        sandboxProcessingDelayMs: SANDBOX_PROCESSING_DELAY_MS,
        database: DATABASE,
        sandboxDatabase: SANDBOX_DATABASE,
      },
      seeded: { ...seeded.counts, seconds: seeded.seconds, bigCustomerIrms: VOLUMES.bigCustomerIrms },
      setup,
      idle: idleRuns,
      scenarios: scenarioRuns,
      outbox: outboxRuns,
      tableSizes: sizes,
      storage,
      walinspect,
      notes,
    };
    const stamp = startedAt.toISOString().slice(0, 16).replace(':', '') + 'Z';
    const name = `scaling-${stamp}${flags.quick ? '-quick' : ''}`;
    const markdown = renderScaling(result);
    fs.writeFileSync(path.join(RESULTS, `${name}.md`), `${markdown}\n`);
    fs.writeFileSync(path.join(RESULTS, `${name}.json`), `${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(`${markdown}\n`);
    log(`\ndone in ${(result.seconds / 60).toFixed(1)} min: bench/results/${name}.md and .json`);
  } finally {
    for (const server of servers.reverse()) await server.stop().catch(() => undefined);
    for (const client of clients) await client.end().catch(() => undefined);
    await receiver.stop().catch(() => undefined);
    if (!flags.keep) {
      for (const name of [DATABASE, SANDBOX_DATABASE]) await adminQuery(`drop database if exists "${name}" with (force)`).catch(() => undefined);
    }
    for (const label of ['a', 'b']) fs.rmSync(path.join(TMP, `scaling-statements-${label}.json`), { force: true });
  }
}

await main();
process.exit(0);
