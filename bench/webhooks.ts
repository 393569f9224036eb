/**
 * `npm run bench:webhooks`: how fast events reach a webhook receiver, on PostgreSQL and on the embedded database
 * (about 2 minutes for both on a quiet machine, 2.5 on a busy one; docs/performance.md, "Webhooks").
 *
 * For each backend: a scratch database (the PostgreSQL database `ebrc_webhooks_bench`, created and dropped, the sandbox
 * in its schema authority_sandbox; or a temporary folder under bench/tmp for PGlite and one for the sandbox, removed
 * afterwards), the platform and its key by `createPlatform`, the sandbox authority (sandbox/main.ts) and the service
 * (src/main.ts with the Node flags of `npm start`, WEBHOOK_ALLOW_PRIVATE_URLS=true, LOG_LEVEL=warn) as child processes,
 * and a receiver in this process (node:http on 127.0.0.1) that answers 204 as soon as a delivery's body is in, checks its
 * Standard Webhooks signature (the `standardwebhooks` package) and records when each webhook-id arrived. Then:
 *
 * - setup: customers verified with the sandbox accounts bulk.exporter and demo.exporter and their IRMs pulled (6,637
 *   events, relayed before the endpoint exists, so they are no backlog); then one endpoint subscribed to `*`;
 * - latency on an idle service (arrival time minus the event's own `timestamp`): `--tests` webhook.test events, one
 *   POST /webhook-endpoints/{id}/test every `--spacing` ms; `--pushes` 1-line pushes, one every `--push-spacing` ms
 *   (their genebrc.request.acknowledged events, then the processed and ebrc.generated events of the poller settling
 *   them); on PostgreSQL, `--cross-process-tests` test events written by a second service process with
 *   RUN_WEBHOOKS=false, which the first process's relay finds by its poll instead of being woken;
 * - throughput: `--burst-tests` test events fired `--burst-concurrency` at a time, then `--burst-pushes` 999-line
 *   pushes one after the other, each settled (sandbox processing `--processing-delay` ms) into one transaction of a
 *   request event and 999 ebrc.generated events: events per second from the first to the last arrival, and the time
 *   from the change to the last of its events arriving (at most 30 s is waited for each);
 * - totals: every event written since the endpoint exists (GET /api/v1/events) arrived, once (duplicates, bad
 *   signatures counted); and, read from the database once the service has stopped, where each event's time went: the
 *   relay (written → dispatched: its first attempt's creation, in the relay's transaction), the delivery queue
 *   (dispatched → its pg-boss job started) and the attempt (job started → arrival).
 *
 * Prints a table per backend and one side by side (stdout; progress on stderr) and writes
 * bench/results/webhooks-<backend>.json. Flags: --skip-embedded, --skip-postgres and the sizes above.
 * BENCH_POSTGRES_URL: the admin connection (default postgres://postgres@127.0.0.1:5432/postgres).
 */
import { execFileSync } from 'node:child_process';
import { SYSTEM_SOURCE } from '../src/services/audit.ts';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { CompiledQuery } from 'kysely';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { createPlatform } from '../src/services/platforms.ts';
import { openDatabase } from '../src/store/database.ts';
import { migrate } from '../src/store/migrate.ts';
import { ApiClient, allIrms, type ApiIrm } from './lib/api.ts';
import { CpuMeter, freePort, startServer, type CpuShares, type Server } from './lib/processes.ts';
import { formatCount, log } from './lib/progress.ts';
import { pushBody } from './lib/pushes.ts';
import { SANDBOX_APPLICATION_NAME, SANDBOX_PASSWORD, startSandboxProgram } from './lib/sandbox.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const TMP = path.join(ROOT, 'bench', 'tmp');
const RESULTS = path.join(ROOT, 'bench', 'results');
const DATABASE_NAME = 'ebrc_webhooks_bench';
const adminUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const { values: flags } = parseArgs({
  options: {
    'skip-embedded': { type: 'boolean', default: false },
    'skip-postgres': { type: 'boolean', default: false },
    tests: { type: 'string', default: '200' },
    spacing: { type: 'string', default: '75' },
    pushes: { type: 'string', default: '30' },
    'push-spacing': { type: 'string', default: '200' },
    'cross-process-tests': { type: 'string', default: '100' },
    'burst-tests': { type: 'string', default: '300' },
    'burst-concurrency': { type: 'string', default: '16' },
    'burst-pushes': { type: 'string', default: '3' },
    'processing-delay': { type: 'string', default: '500' },
  },
});
const SETTINGS = {
  tests: Number(flags.tests),
  spacingMs: Number(flags.spacing),
  pushes: Number(flags.pushes),
  pushSpacingMs: Number(flags['push-spacing']),
  crossProcessTests: Number(flags['cross-process-tests']),
  burstTests: Number(flags['burst-tests']),
  burstConcurrency: Number(flags['burst-concurrency']),
  burstPushes: Number(flags['burst-pushes']),
  burstPushLines: 999,
  sandboxProcessingDelayMs: Number(flags['processing-delay']),
};

const SERVICE_ENV: Record<string, string> = {
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  AUTHORITY_MODE: 'sandbox',
  RATE_LIMIT_PER_SECOND: '1000000',
  RATE_LIMIT_BURST: '1000000',
  WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  // The poller's first look at a pushed request, and its backoff, start from this.
  POLL_INTERVAL_SECONDS: '1',
};

/** Purpose codes a goods push (uploadType 101) may map without further rules (as bench/lib/pushes.ts). */
const PUSHABLE_PURPOSES = new Set(['P0102', 'P0103']);
/** The sandbox accounts: the big one for 999-line pushes, the other for 1-line pushes. */
const BULK_ACCOUNT = 'bulk.exporter';
const SMALL_ACCOUNT = 'demo.exporter';
/** The events of a request's settling: its final status and its eBRCs. */
const SETTLED_TYPES = ['genebrc.request.processed', 'genebrc.request.partially_processed', 'genebrc.request.errored', 'ebrc.generated'];

// ---------------------------------------------------------------------------------------------------------------------
// The receiver

type Arrival = {
  id: string;
  type: string;
  /** The event's own timestamp (the change), epoch ms. */
  timestamp: number;
  /** When the whole delivery had arrived, epoch ms (sub-ms). */
  arrivedAt: number;
  /** How many times this webhook-id arrived. */
  times: number;
};

/** A webhook receiver on 127.0.0.1: answers 204 as soon as a delivery's body is in, then checks and records it. */
class Receiver {
  readonly arrivals = new Map<string, Arrival>();
  duplicates = 0;
  badSignatures = 0;
  malformed = 0;
  #verifier: Webhook | undefined;
  readonly #server = createServer((request, response) => this.#handle(request, response));
  url = '';

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    const address = this.#server.address();
    if (typeof address !== 'object' || address === null) throw new Error('the receiver has no address');
    this.url = `http://127.0.0.1:${address.port}/webhooks`;
  }

  setSecret(secret: string): void {
    this.#verifier = new Webhook(secret);
  }

  #handle(request: IncomingMessage, response: ServerResponse): void {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const arrivedAt = performance.timeOrigin + performance.now();
      response.writeHead(204).end();
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = {
        'webhook-id': String(request.headers['webhook-id'] ?? ''),
        'webhook-timestamp': String(request.headers['webhook-timestamp'] ?? ''),
        'webhook-signature': String(request.headers['webhook-signature'] ?? ''),
      };
      try {
        this.#verifier?.verify(body, headers);
      } catch {
        this.badSignatures++;
      }
      let event: { id?: unknown; type?: unknown; timestamp?: unknown };
      try {
        event = JSON.parse(body) as typeof event;
      } catch {
        this.malformed++;
        return;
      }
      const id = headers['webhook-id'];
      if (typeof event.type !== 'string' || typeof event.timestamp !== 'string' || event.id !== id) {
        this.malformed++;
        return;
      }
      const known = this.arrivals.get(id);
      if (known) {
        known.times++;
        this.duplicates++;
        return;
      }
      this.arrivals.set(id, { id, type: event.type, timestamp: Date.parse(event.timestamp), arrivedAt, times: 1 });
    });
  }

  /** The events whose change happened in [from, to). */
  between(from: number, to: number, types?: readonly string[]): Arrival[] {
    return [...this.arrivals.values()].filter((arrival) => arrival.timestamp >= from && arrival.timestamp < to && (!types || types.includes(arrival.type)));
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Figures

type Distribution = { count: number; p50: number; p95: number; p99: number; max: number; mean: number };

function distribution(values: readonly number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (share: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(share * sorted.length) - 1))] ?? Number.NaN;
  const round = (value: number): number => Math.round(value * 10) / 10;
  return {
    count: sorted.length,
    p50: round(rank(0.5)),
    p95: round(rank(0.95)),
    p99: round(rank(0.99)),
    max: round(sorted.at(-1) ?? Number.NaN),
    mean: round(sorted.reduce((sum, value) => sum + value, 0) / Math.max(1, sorted.length)),
  };
}

function latencies(arrivals: readonly Arrival[]): Distribution {
  return distribution(arrivals.map((arrival) => arrival.arrivedAt - arrival.timestamp));
}

type Burst = {
  events: number;
  /** From the first to the last arrival. */
  seconds: number;
  eventsPerSecond: number;
  /** From the first change to the last arrival. */
  changeToLastSeconds: number;
  /** Each transaction's events (one timestamp): how many, and from the change to the last of them arriving. */
  transactions: { events: number; changeToLastMs: number; firstToLastMs: number }[];
  latency: Distribution;
};

/** `byTransaction`: group the events by their timestamp (one per transaction: a settled request's events share it). */
function burst(arrivals: readonly Arrival[], byTransaction = false): Burst {
  const first = Math.min(...arrivals.map((arrival) => arrival.arrivedAt));
  const last = Math.max(...arrivals.map((arrival) => arrival.arrivedAt));
  const firstChange = Math.min(...arrivals.map((arrival) => arrival.timestamp));
  const groups = new Map<number, Arrival[]>();
  for (const arrival of arrivals) groups.set(arrival.timestamp, [...(groups.get(arrival.timestamp) ?? []), arrival]);
  const seconds = (last - first) / 1000;
  return {
    events: arrivals.length,
    seconds: Math.round(seconds * 1000) / 1000,
    eventsPerSecond: seconds > 0 ? Math.round(arrivals.length / seconds) : Number.NaN,
    changeToLastSeconds: Math.round(last - firstChange) / 1000,
    transactions: [...groups.entries()]
      .filter(([, group]) => byTransaction && group.length > 1)
      .sort(([a], [b]) => a - b)
      .map(([timestamp, group]) => {
        const arrived = group.map((arrival) => arrival.arrivedAt);
        return { events: group.length, changeToLastMs: Math.round(Math.max(...arrived) - timestamp), firstToLastMs: Math.round(Math.max(...arrived) - Math.min(...arrived)) };
      }),
    latency: latencies(arrivals),
  };
}

type Breakdown = { relay: Distribution; queue: Distribution; send: Distribution; total: Distribution };

type CrossProcess = { arrivals: Arrival[]; latency: Distribution };

type BackendResult = {
  backend: 'postgres' | 'embedded';
  startedAt: string;
  seconds: number;
  machine: { cores: number; memoryGiB: number; node: string; postgres: string; loadAverageBefore: number; loadAverageAfter: number };
  /** The commit, and the webhook code measured (src/ is often ahead of it): SHA-256 of each file, first 12 digits. */
  code: { commit: string; files: Record<string, string> };
  /** serviceEnv: what the benchmark sets; inheritedEnv: WEBHOOK_* settings the service inherits from the benchmark's environment. */
  settings: typeof SETTINGS & { serviceEnv: Record<string, string>; inheritedEnv: Record<string, string> };
  setup: { serviceStartSeconds: number; customersSeconds: number; pushableIrms: Record<string, number> };
  /** Change-to-delivery on an idle service, ms. */
  latency: {
    testEvents: Distribution & { apiP50: number; apiP99: number };
    acknowledged: Distribution & { apiP50: number; apiP99: number };
    processed: Distribution;
    ebrcGenerated: Distribution;
    /** Every event of the latency phases. */
    all: Distribution;
    /** Where the time of the latency phases' events went (ms), from the database. */
    breakdown?: Breakdown;
    /** PostgreSQL: test events written by a second process with RUN_WEBHOOKS=false (found by the relay's poll). */
    crossProcess?: Distribution & { breakdown: Breakdown };
    /** The slowest events of the latency phases, with their breakdown. */
    slowest: { type: string; totalMs: number; relayMs?: number; queueMs?: number; sendMs?: number }[];
  };
  throughput: {
    testBurst: Burst & { apiSeconds: number };
    /** 999-line requests settled one after the other: events over the sum of each one's first-to-last seconds. */
    requestBurst: { pushes: number; linesPerPush: number; events: number; seconds: number; eventsPerSecond: number; latency: Distribution; each: Burst[] };
    requestBurstBreakdown?: Breakdown;
  };
  /** Events written since the endpoint was created (GET /api/v1/events) against those received with a timestamp since then. */
  totals: {
    eventsBeforeEndpoint: number;
    eventsWritten: number;
    received: number;
    setupEventsReceived: number;
    duplicates: number;
    badSignatures: number;
    malformed: number;
    /** Written but not arrived when the bench stopped waiting (still queued, or lost). */
    notArrived: number;
  };
  /** Share of the machine's CPU by group during the measured phases. */
  cpu: Record<string, CpuShares>;
};

// ---------------------------------------------------------------------------------------------------------------------
// The service, its database and the API

const MEASURED_FILES = ['src/config.ts', 'src/jobs/event-relay.ts', 'src/jobs/webhook-delivery.ts', 'src/services/outbox.ts', 'src/services/webhook-sender.ts', 'src/store/webhook-attempts.ts'];

function codeMeasured(): BackendResult['code'] {
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    if (execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT, encoding: 'utf8' }).trim() !== '') commit += ' with uncommitted changes in src/';
  } catch {
    // Not a git checkout.
  }
  const files: Record<string, string> = {};
  for (const file of MEASURED_FILES) {
    try {
      files[file] = createHash('sha256').update(fs.readFileSync(path.join(ROOT, file))).digest('hex').slice(0, 12);
    } catch {
      files[file] = 'missing';
    }
  }
  return { commit, files };
}

async function admin(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

function scratchUrl(): string {
  const url = new URL(adminUrl);
  url.pathname = `/${DATABASE_NAME}`;
  return url.toString();
}

type EventPage = { items: unknown[]; meta: { totalItems: number } };

async function eventsWritten(api: ApiClient): Promise<number> {
  return (await api.expect<EventPage>(200, 'GET', '/api/v1/events?page=1&limit=1')).meta.totalItems;
}

async function openRequests(api: ApiClient, customers: readonly string[]): Promise<number> {
  let open = 0;
  for (const customerId of customers) {
    // PENDING covers SUBMITTING (a push not yet acknowledged), which clients see as PENDING.
    const answer = await api.call('GET', `/api/v1/genebrc?platformCustomerId=${customerId}&status=PENDING&page=1&limit=1`);
    open += Number(answer.headers.get('x-total-count') ?? 0);
  }
  return open;
}

/** Waits until no pushed request is open and every event written since the endpoint exists has arrived (at most `timeoutMs`). */
async function settle(api: ApiClient, receiver: Receiver, customers: readonly string[], writtenBefore: number, timeoutMs: number, what: string): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const open = await openRequests(api, customers);
    const expected = (await eventsWritten(api)) - writtenBefore;
    if (open === 0 && receiver.arrivals.size >= expected) return true;
    if (performance.now() > deadline) {
      log(`  ${what}: gave up waiting after ${timeoutMs / 1000} s: ${open} requests open, ${receiver.arrivals.size} of ${expected} events arrived`);
      return false;
    }
    await sleep(250);
  }
}

type Customer = { id: string; irms: ApiIrm[] };

async function verifiedCustomer(api: ApiClient, account: string): Promise<Customer> {
  const customer = await api.expect<{ id: string }>(201, 'POST', '/api/v1/platform-customers', {
    name: `Webhook bench ${account}`,
    email: `bench+${account}@webhooks.example`,
    companyName: `Bench ${account} Pvt Ltd`,
  });
  await api.expect(200, 'POST', `/api/v1/platform-customers/${customer.id}/check-authority-credentials`, {
    authorityUsername: account,
    authorityPassword: SANDBOX_PASSWORD,
  });
  const irms = (await allIrms(api, customer.id)).filter(
    (irm) => PUSHABLE_PURPOSES.has(irm.purposeOfRemittance) && Math.round(irm.irmAvailableAmt * 100) >= 2,
  );
  return { id: customer.id, irms };
}

/** Pushes one line per IRM (each IRM used by one push only), 0.01 each; returns the API's time in ms. */
async function push(api: ApiClient, customer: Customer, lines: number): Promise<number> {
  const irms = customer.irms.splice(0, lines);
  if (irms.length < lines) throw new Error(`not enough pushable IRMs left for a ${lines}-line push`);
  const body = pushBody(customer.id, irms.map((irm) => ({ customerId: customer.id, irm, availableCents: Math.round(irm.irmAvailableAmt * 100) })));
  const startedAt = performance.now();
  const response = await fetch(`${api.baseUrl}/api/v1/genebrc/push-irm`, { method: 'POST', headers: api.headers, body, signal: AbortSignal.timeout(120_000) });
  const ack = (await response.json()) as { ackStatus?: string; errorDetails?: unknown };
  const elapsed = performance.now() - startedAt;
  if (response.status !== 200 || ack.ackStatus !== 'Validated') {
    throw new Error(`a ${lines}-line push answered ${response.status} ${JSON.stringify(ack).slice(0, 300)}`);
  }
  return elapsed;
}

/** Where each event's time went, read from the database once the service has stopped. */
async function readBreakdown(databaseEnv: Record<string, string>, dataDir: string): Promise<Map<string, { relayMs: number; queueMs: number }>> {
  const database = await openDatabase({ databaseUrl: databaseEnv.DATABASE_URL || undefined, dataDir });
  try {
    const { rows } = await database.db.executeQuery<{ id: string; created_at: Date; dispatched_at: Date; started_on: Date | null }>(
      CompiledQuery.raw(`
        select e.id, e.created_at, a.created_at as dispatched_at, j.started_on
        from events e
        join webhook_attempts a on a.event_id = e.id and a.attempt = 1
        left join pgboss.job j on j.name = 'webhook-delivery' and j.data->>'attemptId' = a.id::text`),
    );
    const times = new Map<string, { relayMs: number; queueMs: number }>();
    for (const row of rows) {
      if (row.started_on === null) continue;
      times.set(row.id, {
        relayMs: row.dispatched_at.getTime() - row.created_at.getTime(),
        queueMs: row.started_on.getTime() - row.dispatched_at.getTime(),
      });
    }
    return times;
  } finally {
    await database.close();
  }
}

function breakdownOf(arrivals: readonly Arrival[], times: ReadonlyMap<string, { relayMs: number; queueMs: number }>): Breakdown {
  const relay: number[] = [];
  const queue: number[] = [];
  const send: number[] = [];
  const total: number[] = [];
  for (const arrival of arrivals) {
    const time = times.get(arrival.id);
    if (!time) continue;
    const totalMs = arrival.arrivedAt - arrival.timestamp;
    relay.push(time.relayMs);
    queue.push(time.queueMs);
    send.push(totalMs - time.relayMs - time.queueMs);
    total.push(totalMs);
  }
  return { relay: distribution(relay), queue: distribution(queue), send: distribution(send), total: distribution(total) };
}

// ---------------------------------------------------------------------------------------------------------------------
// One backend

async function runBackend(backend: 'postgres' | 'embedded'): Promise<BackendResult> {
  const startedAt = new Date();
  const clock = performance.now();
  const loadAverageBefore = os.loadavg()[0] ?? 0;
  const code = codeMeasured();
  log(`\n== ${backend === 'postgres' ? `PostgreSQL (database ${DATABASE_NAME})` : 'embedded database (PGlite)'}`);
  fs.mkdirSync(TMP, { recursive: true });
  const scratch = fs.mkdtempSync(path.join(TMP, `webhooks-${backend}-`));
  const dataDir = path.join(scratch, 'data');
  const sandboxDir = path.join(scratch, 'sandbox');
  const servers: Server[] = [];
  const receiver = new Receiver();
  let postgresVersion = 'PostgreSQL not used';
  let adminClient: pg.Client | undefined;
  try {
    if (backend === 'postgres') {
      await admin(`drop database if exists ${DATABASE_NAME} with (force)`);
      await admin(`create database ${DATABASE_NAME}`);
      adminClient = new pg.Client({ connectionString: adminUrl });
      await adminClient.connect();
      postgresVersion = String((await adminClient.query('select version() as v')).rows[0].v).split(',')[0] ?? '';
    }
    const databaseEnv: Record<string, string> = backend === 'postgres' ? { DATABASE_URL: scratchUrl(), DATA_DIR: dataDir } : { DATABASE_URL: '', DATA_DIR: dataDir };
    const database = await openDatabase({ databaseUrl: databaseEnv.DATABASE_URL || undefined, dataDir });
    const { apiKey } = await (async () => {
      try {
        await migrate(database);
        return await createPlatform(database.db, 'Webhooks benchmark', SYSTEM_SOURCE);
      } finally {
        await database.close();
      }
    })();

    const sandbox = await startSandboxProgram({
      name: `sandbox-webhooks-${backend}`,
      storage: backend === 'postgres' ? { databaseUrl: scratchUrl() } : { dataDir: sandboxDir },
      port: await freePort(),
      processingDelayMs: SETTINGS.sandboxProcessingDelayMs,
      logDir: path.join(TMP, 'logs'),
    });
    servers.push(sandbox);
    await receiver.start();
    const serviceStartedAt = performance.now();
    const encryptionKey = randomBytes(32).toString('base64');
    const service = await startServer({
      name: `service-webhooks-${backend}`,
      script: path.join(ROOT, 'src', 'main.ts'),
      env: { ...SERVICE_ENV, ...databaseEnv, AUTHORITY_URL: sandbox.baseUrl, ENCRYPTION_KEY: encryptionKey },
      port: await freePort(),
      readyPath: '/ready',
      logDir: path.join(TMP, 'logs'),
      startTimeoutMs: 120_000,
    });
    servers.push(service);
    const serviceStartSeconds = (performance.now() - serviceStartedAt) / 1000;
    log(`sandbox (pid ${sandbox.pid}) and service (pid ${service.pid}) up; service started in ${serviceStartSeconds.toFixed(1)} s; receiver at ${receiver.url}`);

    const sessions = async (): Promise<{ pid: number; group: string }[]> =>
      adminClient
        ? (await adminClient.query<{ pid: number; application_name: string }>('select pid, application_name from pg_stat_activity where datname = $1', [DATABASE_NAME])).rows
          .map((row) => ({ pid: row.pid, group: row.application_name === SANDBOX_APPLICATION_NAME ? 'sandbox database' : 'database' }))
        : [];
    const cpu = new CpuMeter(async () => [
      { pid: process.pid, group: 'bench and receiver' },
      { pid: service.pid, group: 'service' },
      { pid: sandbox.pid, group: 'sandbox' },
      ...(await sessions()),
    ]);
    const cpuShares: Record<string, CpuShares> = {};
    const api = new ApiClient(service.baseUrl, apiKey);
    // Setup: verified customers and their first IRM pull. The endpoint comes after it, so that the pull's thousands of
    // irm.received events (relayed to no endpoint) are not a backlog in front of the measurements.
    const customersStartedAt = performance.now();
    const bulk = await verifiedCustomer(api, BULK_ACCOUNT);
    const small = await verifiedCustomer(api, SMALL_ACCOUNT);
    const customers = [bulk.id, small.id];
    const customersSeconds = (performance.now() - customersStartedAt) / 1000;
    await sleep(2_000);
    const writtenBefore = await eventsWritten(api);
    log(`customers verified and IRMs pulled in ${customersSeconds.toFixed(1)} s (pushable IRMs: ${bulk.irms.length} and ${small.irms.length}; ${formatCount(writtenBefore)} events so far)`);
    const endpointFrom = Date.now();
    const endpoint = await api.expect<{ id: string; secret: string }>(201, 'POST', '/api/v1/webhook-endpoints', {
      url: receiver.url,
      description: 'bench/webhooks.ts receiver',
      enabledEvents: ['*'],
    });
    receiver.setSecret(endpoint.secret);
    await sleep(1_000);
    const early = receiver.arrivals.size;
    if (early > 0) log(`  ${early} events of the setup were delivered to the endpoint created after them`);

    // (a) latency on an idle service: test events spaced out.
    const testsFrom = Date.now();
    const testApiMs: number[] = [];
    await cpu.start();
    const testsStartedAt = performance.now();
    for (let index = 0; index < SETTINGS.tests; index++) {
      const wait = testsStartedAt + index * SETTINGS.spacingMs - performance.now();
      if (wait > 0) await sleep(wait);
      const sentAt = performance.now();
      await api.expect(202, 'POST', `/api/v1/webhook-endpoints/${endpoint.id}/test`, {});
      testApiMs.push(performance.now() - sentAt);
    }
    await settle(api, receiver, customers, writtenBefore, 30_000, 'test events');
    cpuShares.testEvents = await cpu.stop();
    const testsTo = Date.now();
    log(`${SETTINGS.tests} test events, one every ${SETTINGS.spacingMs} ms: ${describeLatency(latencies(receiver.between(testsFrom, testsTo, ['webhook.test'])))}`);

    // (a) latency of real changes: 1-line pushes spaced out (acknowledged), then their settling by the poller.
    if (small.irms.length < SETTINGS.pushes) throw new Error(`${SMALL_ACCOUNT} has ${small.irms.length} pushable IRMs, fewer than --pushes`);
    const pushApiMs: number[] = [];
    await cpu.start();
    const pushesStartedAt = performance.now();
    for (let index = 0; index < SETTINGS.pushes; index++) {
      const wait = pushesStartedAt + index * SETTINGS.pushSpacingMs - performance.now();
      if (wait > 0) await sleep(wait);
      pushApiMs.push(await push(api, small, 1));
    }
    await settle(api, receiver, customers, writtenBefore, 30_000, '1-line pushes');
    cpuShares.pushes = await cpu.stop();
    const pushesTo = Date.now();
    const acknowledged = receiver.between(testsTo, pushesTo, ['genebrc.request.acknowledged']);
    const processed = receiver.between(testsTo, pushesTo, ['genebrc.request.processed', 'genebrc.request.partially_processed', 'genebrc.request.errored']);
    const generated = receiver.between(testsTo, pushesTo, ['ebrc.generated']);
    log(`${SETTINGS.pushes} 1-line pushes, one every ${SETTINGS.pushSpacingMs} ms: acknowledged ${describeLatency(latencies(acknowledged))}; ` +
      `processed ${describeLatency(latencies(processed))}; ebrc.generated ${describeLatency(latencies(generated))}`);
    const latencyArrivals = receiver.between(testsFrom, pushesTo);
    await sleep(1_000);

    // (a) across processes (PostgreSQL only): test events written by a second service process that neither relays nor
    // delivers (RUN_WEBHOOKS=false), so that the first process's relay finds them by its poll, not by a wake.
    let crossProcess: CrossProcess | undefined;
    if (backend === 'postgres' && SETTINGS.crossProcessTests > 0) {
      const apiOnly = await startServer({
        name: 'service-webhooks-postgres-api-only',
        script: path.join(ROOT, 'src', 'main.ts'),
        env: { ...SERVICE_ENV, ...databaseEnv, AUTHORITY_URL: sandbox.baseUrl, ENCRYPTION_KEY: encryptionKey, RUN_WEBHOOKS: 'false', RUN_POLLER: 'false' },
        port: await freePort(),
        readyPath: '/ready',
        logDir: path.join(TMP, 'logs'),
        startTimeoutMs: 120_000,
      });
      servers.push(apiOnly);
      try {
        const other = new ApiClient(apiOnly.baseUrl, apiKey);
        const from = Date.now();
        const startedAtCross = performance.now();
        for (let index = 0; index < SETTINGS.crossProcessTests; index++) {
          const wait = startedAtCross + index * SETTINGS.spacingMs - performance.now();
          if (wait > 0) await sleep(wait);
          await other.expect(202, 'POST', `/api/v1/webhook-endpoints/${endpoint.id}/test`, {});
        }
        await settle(api, receiver, customers, writtenBefore, 30_000, 'test events of another process');
        const arrivals = receiver.between(from, Date.now(), ['webhook.test']);
        crossProcess = { arrivals, latency: latencies(arrivals) };
        log(`${SETTINGS.crossProcessTests} test events written by a process with RUN_WEBHOOKS=false, one every ${SETTINGS.spacingMs} ms: ${describeLatency(crossProcess.latency)}`);
      } finally {
        await apiOnly.stop();
        servers.splice(servers.indexOf(apiOnly), 1);
      }
      await sleep(1_000);
    }

    // (b) throughput: test events fired concurrently.
    const testBurstFrom = Date.now();
    await cpu.start();
    const burstStartedAt = performance.now();
    let fired = 0;
    await Promise.all(Array.from({ length: SETTINGS.burstConcurrency }, async () => {
      while (fired < SETTINGS.burstTests) {
        fired++;
        await api.expect(202, 'POST', `/api/v1/webhook-endpoints/${endpoint.id}/test`, {});
      }
    }));
    const testBurstApiSeconds = (performance.now() - burstStartedAt) / 1000;
    await settle(api, receiver, customers, writtenBefore, 30_000, 'test burst');
    cpuShares.testBurst = await cpu.stop();
    const testBurstTo = Date.now();
    const testBurst = { ...burst(receiver.between(testBurstFrom, testBurstTo, ['webhook.test'])), apiSeconds: Math.round(testBurstApiSeconds * 1000) / 1000 };
    log(`${SETTINGS.burstTests} test events, ${SETTINGS.burstConcurrency} at a time (API ${testBurst.apiSeconds} s): ${describeBurst(testBurst)}`);
    await sleep(1_000);

    // (b) throughput: 999-line pushes one after the other, each settled by the poller into one transaction of a request
    // event and 999 ebrc.generated events, delivered before the next push.
    const pushes = Math.min(SETTINGS.burstPushes, Math.floor(bulk.irms.length / SETTINGS.burstPushLines));
    if (pushes < SETTINGS.burstPushes) log(`  ${BULK_ACCOUNT} has IRMs for ${pushes} pushes of ${SETTINGS.burstPushLines} lines only`);
    const requestBursts: Burst[] = [];
    const settledEvents: Arrival[] = [];
    await cpu.start();
    for (let index = 0; index < pushes; index++) {
      const from = Date.now();
      await push(api, bulk, SETTINGS.burstPushLines);
      const settled = await settle(api, receiver, customers, writtenBefore, 30_000, `${SETTINGS.burstPushLines}-line push ${index + 1}`);
      const events = receiver.between(from, Date.now(), SETTLED_TYPES);
      settledEvents.push(...events);
      if (events.length > 0) requestBursts.push(burst(events, true));
      log(`${SETTINGS.burstPushLines}-line push ${index + 1} of ${pushes}, settled: ${events.length > 0 ? describeBurst(burst(events, true)) : 'no event arrived'}`);
      if (!settled) break;
    }
    cpuShares.requestBurst = await cpu.stop();
    const requestEvents = requestBursts.reduce((sum, each) => sum + each.events, 0);
    const requestSeconds = requestBursts.reduce((sum, each) => sum + each.seconds, 0);
    const requestBurst = {
      pushes: requestBursts.length,
      linesPerPush: SETTINGS.burstPushLines,
      events: requestEvents,
      seconds: Math.round(requestSeconds * 1000) / 1000,
      eventsPerSecond: requestSeconds > 0 ? Math.round(requestEvents / requestSeconds) : Number.NaN,
      latency: latencies(settledEvents),
      each: requestBursts,
    };

    // Totals: every event written arrived, once.
    const written = (await eventsWritten(api)) - writtenBefore;
    const received = receiver.between(endpointFrom, Number.POSITIVE_INFINITY).length;
    const totals = {
      eventsBeforeEndpoint: writtenBefore,
      eventsWritten: written,
      received,
      setupEventsReceived: receiver.arrivals.size - received,
      duplicates: receiver.duplicates,
      badSignatures: receiver.badSignatures,
      malformed: receiver.malformed,
      notArrived: Math.max(0, written - received),
    };
    log(`events written since the endpoint exists ${formatCount(totals.eventsWritten)}, received ${formatCount(totals.received)} ` +
      `(not arrived ${totals.notArrived}, duplicates ${totals.duplicates}, bad signatures ${totals.badSignatures}, malformed ${totals.malformed})`);

    await adminClient?.end();
    adminClient = undefined;
    await service.stop();
    servers.splice(servers.indexOf(service), 1);
    const times = await readBreakdown(databaseEnv, dataDir);
    const latencyBreakdown = breakdownOf(latencyArrivals, times);
    const slowest = [...latencyArrivals]
      .sort((a, b) => b.arrivedAt - b.timestamp - (a.arrivedAt - a.timestamp))
      .slice(0, 5)
      .map((arrival) => {
        const time = times.get(arrival.id);
        const totalMs = Math.round(arrival.arrivedAt - arrival.timestamp);
        return time
          ? { type: arrival.type, totalMs, relayMs: time.relayMs, queueMs: time.queueMs, sendMs: Math.round(totalMs - time.relayMs - time.queueMs) }
          : { type: arrival.type, totalMs };
      });

    const withApi = (figures: Distribution, apiMs: number[]) => {
      const api = distribution(apiMs);
      return { ...figures, apiP50: api.p50, apiP99: api.p99 };
    };
    return {
      backend,
      startedAt: startedAt.toISOString(),
      seconds: Math.round((performance.now() - clock) / 100) / 10,
      machine: {
        cores: os.availableParallelism(),
        memoryGiB: Math.round(os.totalmem() / 1024 ** 3),
        node: process.versions.node,
        postgres: postgresVersion,
        loadAverageBefore,
        loadAverageAfter: os.loadavg()[0] ?? 0,
      },
      code,
      settings: {
        ...SETTINGS,
        serviceEnv: SERVICE_ENV,
        inheritedEnv: Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[0].startsWith('WEBHOOK_') && entry[1] !== undefined)),
      },
      setup: { serviceStartSeconds, customersSeconds, pushableIrms: { [BULK_ACCOUNT]: bulk.irms.length + pushes * SETTINGS.burstPushLines, [SMALL_ACCOUNT]: small.irms.length + SETTINGS.pushes } },
      latency: {
        testEvents: withApi(latencies(receiver.between(testsFrom, testsTo, ['webhook.test'])), testApiMs),
        acknowledged: withApi(latencies(acknowledged), pushApiMs),
        processed: latencies(processed),
        ebrcGenerated: latencies(generated),
        all: latencies(latencyArrivals),
        breakdown: latencyBreakdown,
        ...(crossProcess ? { crossProcess: { ...crossProcess.latency, breakdown: breakdownOf(crossProcess.arrivals, times) } } : {}),
        slowest,
      },
      throughput: {
        testBurst,
        requestBurst,
        requestBurstBreakdown: breakdownOf(settledEvents, times),
      },
      totals,
      cpu: cpuShares,
    };
  } finally {
    await adminClient?.end().catch(() => undefined);
    for (const server of servers.reverse()) await server.stop();
    await receiver.stop().catch(() => undefined);
    fs.rmSync(scratch, { recursive: true, force: true });
    if (backend === 'postgres') await admin(`drop database if exists ${DATABASE_NAME} with (force)`);
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Output

function ms(value: number): string {
  return Number.isFinite(value) ? (value >= 100 ? value.toFixed(0) : value.toFixed(1)) : '–';
}

function describeLatency(figures: Distribution): string {
  return `n ${figures.count}, p50 ${ms(figures.p50)} ms, p95 ${ms(figures.p95)}, p99 ${ms(figures.p99)}, max ${ms(figures.max)}`;
}

function describeBurst(figures: Burst): string {
  const slowestTransaction = Math.max(0, ...figures.transactions.map((transaction) => transaction.changeToLastMs));
  return `${formatCount(figures.events)} events in ${figures.seconds} s first to last arrival = ${formatCount(figures.eventsPerSecond)}/s; ` +
    `first change to last arrival ${figures.changeToLastSeconds} s` +
    (figures.transactions.length > 0 ? `; per transaction (${figures.transactions.map((transaction) => transaction.events).join(', ')} events) change to last arrival up to ${formatCount(slowestTransaction)} ms` : '');
}

function table(results: readonly BackendResult[]): string {
  const header = `| | ${results.map((result) => (result.backend === 'postgres' ? 'PostgreSQL' : 'embedded (PGlite)')).join(' | ')} |`;
  const rule = `|---|${results.map(() => '--:').join('|')}|`;
  const row = (label: string, cell: (result: BackendResult) => string): string => `| ${label} | ${results.map(cell).join(' | ')} |`;
  const latencyRow = (label: string, pick: (result: BackendResult) => Distribution): string =>
    row(label, (result) => {
      const figures = pick(result);
      return `${ms(figures.p50)} / ${ms(figures.p95)} / ${ms(figures.p99)} / ${ms(figures.max)} (n ${figures.count})`;
    });
  const breakdownRow = (label: string, pick: (breakdown: Breakdown) => Distribution): string =>
    row(label, (result) => {
      const breakdown = result.latency.breakdown;
      if (!breakdown) return '–';
      const figures = pick(breakdown);
      return `${ms(figures.p50)} / ${ms(figures.p95)} / ${ms(figures.p99)} / ${ms(figures.max)}`;
    });
  const burstRow = (label: string, pick: (result: BackendResult) => Burst | undefined): string =>
    row(label, (result) => {
      const figures = pick(result);
      return figures ? `${formatCount(figures.eventsPerSecond)}/s (${formatCount(figures.events)} in ${figures.seconds.toFixed(2)} s)` : '–';
    });
  return [
    header,
    rule,
    '| **change to delivery on an idle service, ms: p50 / p95 / p99 / max** | |',
    latencyRow(`webhook.test, one every ${SETTINGS.spacingMs} ms`, (result) => result.latency.testEvents),
    latencyRow(`genebrc.request.acknowledged, a 1-line push every ${SETTINGS.pushSpacingMs} ms`, (result) => result.latency.acknowledged),
    latencyRow('genebrc.request.processed (the poller settling them)', (result) => result.latency.processed),
    latencyRow('ebrc.generated (same transactions)', (result) => result.latency.ebrcGenerated),
    latencyRow('all of the above', (result) => result.latency.all),
    breakdownRow('… of which the relay (written → dispatched)', (breakdown) => breakdown.relay),
    breakdownRow('… the delivery queue (dispatched → job started)', (breakdown) => breakdown.queue),
    breakdownRow('… the attempt (job started → arrival)', (breakdown) => breakdown.send),
    row('target: p99 under 1 s', (result) => (result.latency.all.p99 < 1000 ? 'met' : `**missed** (${ms(result.latency.all.p99)} ms)`)),
    row(`webhook.test written by another process (RUN_WEBHOOKS=false), one every ${SETTINGS.spacingMs} ms`, (result) => {
      const figures = result.latency.crossProcess;
      return figures ? `${ms(figures.p50)} / ${ms(figures.p95)} / ${ms(figures.p99)} / ${ms(figures.max)} (n ${figures.count})` : '–';
    }),
    row('… of which the relay (written → dispatched), p50 / p99', (result) => {
      const figures = result.latency.crossProcess?.breakdown.relay;
      return figures ? `${ms(figures.p50)} / ${ms(figures.p99)}` : '–';
    }),
    row('API time: POST /test, push (p50 / p99 ms)', (result) =>
      `${ms(result.latency.testEvents.apiP50)} / ${ms(result.latency.testEvents.apiP99)}, ${ms(result.latency.acknowledged.apiP50)} / ${ms(result.latency.acknowledged.apiP99)}`),
    '| **throughput: events delivered per second, first to last arrival** | |',
    burstRow(`${SETTINGS.burstTests} test events, ${SETTINGS.burstConcurrency} at a time`, (result) => result.throughput.testBurst),
    row(`${SETTINGS.burstPushLines}-line requests settled, one after the other`, (result) => {
      const figures = result.throughput.requestBurst;
      return `${formatCount(figures.eventsPerSecond)}/s (${figures.pushes} × ~1,000 events, ${figures.seconds.toFixed(2)} s in all)`;
    }),
    row('… each request: change to its last event delivered (ms)', (result) =>
      result.throughput.requestBurst.each.map((each) => formatCount(each.changeToLastSeconds * 1000)).join(', ') || '–'),
    row('… change to delivery p50 / p99 (ms)', (result) => `${ms(result.throughput.requestBurst.latency.p50)} / ${ms(result.throughput.requestBurst.latency.p99)}`),
    row('… of which relay / delivery queue / attempt, p50 and p99 (ms)', (result) => {
      const breakdown = result.throughput.requestBurstBreakdown;
      return breakdown
        ? `${ms(breakdown.relay.p50)} / ${ms(breakdown.queue.p50)} / ${ms(breakdown.send.p50)}; ${ms(breakdown.relay.p99)} / ${ms(breakdown.queue.p99)} / ${ms(breakdown.send.p99)}`
        : '–';
    }),
    '| **totals** | |',
    row('events written since the endpoint exists (GET /api/v1/events) / received', (result) => `${formatCount(result.totals.eventsWritten)} / ${formatCount(result.totals.received)}`),
    row('not arrived by the end / duplicates / bad signatures', (result) => `${result.totals.notArrived} / ${result.totals.duplicates} / ${result.totals.badSignatures}`),
    row('other work on the machine (CPU share, latency phases)', (result) =>
      `${Math.round(((result.cpu.testEvents?.other ?? 0) + (result.cpu.pushes?.other ?? 0)) * 50)}%`),
    row('run time (s)', (result) => result.seconds.toFixed(0)),
  ].join('\n');
}

async function main(): Promise<void> {
  const clock = performance.now();
  log(`ebrc-gateway webhook benchmark; load average ${os.loadavg().map((value) => value.toFixed(2)).join(' ')} on ${os.availableParallelism()} cores`);
  const results: BackendResult[] = [];
  fs.mkdirSync(RESULTS, { recursive: true });
  for (const backend of ['postgres', 'embedded'] as const) {
    if (flags[`skip-${backend}`]) continue;
    const result = await runBackend(backend);
    results.push(result);
    fs.writeFileSync(path.join(RESULTS, `webhooks-${backend}.json`), `${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(`\n${table([result])}\n`);
  }
  if (results.length > 1) process.stdout.write(`\n${table(results)}\n`);
  for (const result of results) {
    process.stdout.write(`\nslowest events of the latency phases (${result.backend}): ${result.latency.slowest
      .map((event) => `${event.type} ${event.totalMs} ms${event.relayMs !== undefined ? ` (relay ${event.relayMs}, queue ${event.queueMs}, attempt ${event.sendMs})` : ''}`)
      .join('; ')}\n`);
  }
  log(`\ndone in ${((performance.now() - clock) / 60_000).toFixed(1)} min; results in bench/results/webhooks-<backend>.json`);
}

await main();
process.exit(0);
