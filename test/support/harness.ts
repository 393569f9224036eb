import { createHash } from 'node:crypto';
import { SYSTEM_SOURCE } from '../../src/services/audit.ts';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import pg from 'pg';
import { pino, type Logger } from 'pino';
import type { Authority } from '../../src/authority/authority.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { createService, type Service } from '../../src/service.ts';
import { createPlatform } from '../../src/services/platforms.ts';
import type { Database } from '../../src/store/database.ts';
import { readMigrations } from '../../src/store/migrate.ts';
import type { SandboxConfig } from '../../sandbox/config.ts';
import { readSandboxConfig } from '../../sandbox/config.ts';
import type { SandboxProgram } from '../../sandbox/program.ts';
import { startSandbox } from '../../sandbox/program.ts';

const pgBossVersion: string = createRequire(import.meta.url)('pg-boss/package.json').version;

export type Backend = 'embedded' | 'postgres';

const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';

/** The PostgreSQL server the tests use: TEST_DATABASE_URL, else the machine's own. `skip` runs embedded only. */
export function postgresUrl(): string | undefined {
  const url = process.env.TEST_DATABASE_URL ?? DEFAULT_POSTGRES_URL;
  return url === 'skip' ? undefined : url;
}

export function backends(): Backend[] {
  return postgresUrl() ? ['embedded', 'postgres'] : ['embedded'];
}

/**
 * An embedded database with every migration and the job queue installed, made once per version of the schema
 * and copied for each test: creating a PGlite folder from nothing takes seconds, copying one a fraction of that.
 * Shared by the test processes of a run; whoever finishes building it first puts it in place.
 */
async function embeddedTemplate(): Promise<string> {
  const migrations = readMigrations().map((migration) => `${migration.name}\n${migration.sql}`).join('\n');
  const version = createHash('sha256').update(migrations).update(pgBossVersion).digest('hex').slice(0, 16);
  const template = path.join(os.tmpdir(), `ebrc-test-template-${version}`);
  if (fs.existsSync(path.join(template, 'pgdata'))) return template;
  const building = fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-test-template-building-'));
  const service = await createService({
    // The template never calls the authority.
    config: loadConfig({ DATA_DIR: building, RUN_POLLER: 'false', LOG_LEVEL: 'silent', AUTHORITY_URL: 'http://127.0.0.1:9' }),
    logger: false,
  });
  // Each copy makes its own key: the template must not hold the check of the key it was built with.
  await service.database.db.deleteFrom('installation_settings').execute();
  await service.close();
  fs.rmSync(path.join(building, 'encryption.key'), { force: true });
  try {
    fs.renameSync(building, template);
  } catch {
    fs.rmSync(building, { recursive: true, force: true });
  }
  return template;
}

/**
 * A database of its own for one test file: a temporary folder, or a new PostgreSQL database dropped afterwards.
 * The embedded one starts migrated (from the template) unless `empty` is asked for; the PostgreSQL one is empty.
 */
export async function scratchDatabase(
  backend: Backend,
  options: { empty?: boolean } = {},
): Promise<{ dataDir: string; databaseUrl?: string; drop(): Promise<void> }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-test-'));
  if (backend === 'embedded') {
    if (!options.empty) fs.cpSync(path.join(await embeddedTemplate(), 'pgdata'), path.join(dataDir, 'pgdata'), { recursive: true });
    return { dataDir, drop: async () => fs.rmSync(dataDir, { recursive: true, force: true }) };
  }
  const serverUrl = postgresUrl()!;
  const name = `ebrc_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  try {
    await admin.connect();
  } catch (error) {
    throw new Error(
      `PostgreSQL is not reachable at ${serverUrl} (${(error as Error).message}). Start it, point TEST_DATABASE_URL at another server, or set TEST_DATABASE_URL=skip to test on the embedded database only.`,
    );
  }
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    dataDir,
    databaseUrl: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: serverUrl });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export type TestPlatform = { id: string; apiKey: string; keyId: string };

export type InjectOptions = {
  key?: string | null;
  body?: unknown;
  query?: Record<string, string | number>;
  headers?: Record<string, string>;
};

export type Harness = {
  backend: Backend;
  service: Service;
  database: Database;
  config: Config;
  /** Two platforms, so that every test can show one never sees the other's data. */
  platformA: TestPlatform;
  platformB: TestPlatform;
  /** The sandbox authority program the service talks to, over the wire protocol. */
  sandbox: SandboxProgram;
  request(method: string, url: string, options?: InjectOptions): Promise<TestResponse>;
};

export type TestResponse = { status: number; headers: Record<string, string | string[] | number | undefined>; body: any; text: string };

export type HarnessOptions = {
  env?: Record<string, string>;
  /** Wraps the service's authority adapter (faults, counting). */
  authority?: (adapter: Authority) => Authority;
  /** Changes to the sandbox program's settings (by default: processing at once, no rate limit). */
  sandbox?: Partial<SandboxConfig>;
  /**
   * The sandbox program's clock (its tokens' expiry, the IRMs issued by then, processing), for tests that move time
   * on at the authority only; the real time by default. The service keeps the real clock.
   */
  sandboxNow?: () => Date;
  /** Where the sandbox program logs (to see what it did on purpose); nowhere by default. */
  sandboxLogger?: Logger;
  /** Where the service logs; none by default. */
  logger?: FastifyBaseLogger;
};

/**
 * The sandbox program's embedded storage, migrated and with its key pair and credential sets made, once per version
 * of its migrations and accounts, copied for each test (as embeddedTemplate does for the service's): creating a PGlite
 * folder takes seconds. Every test's sandbox then hands out the same test credential sets.
 */
async function embeddedSandboxTemplate(): Promise<string> {
  const root = path.resolve(import.meta.dirname, '../../sandbox');
  const sources = [...fs.readdirSync(path.join(root, 'migrations')).sort().map((name) => path.join(root, 'migrations', name)), path.join(root, 'accounts.ts')];
  const hash = createHash('sha256');
  for (const source of sources) hash.update(fs.readFileSync(source));
  const template = path.join(os.tmpdir(), `ebrc-test-sandbox-template-${hash.digest('hex').slice(0, 16)}`);
  if (fs.existsSync(path.join(template, 'pgdata'))) return template;
  const building = fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-test-sandbox-template-building-'));
  const program = await startSandbox(
    { ...readSandboxConfig({ SANDBOX_PORT: '0', SANDBOX_LOG_LEVEL: 'silent' }), dataDir: building },
    { logger: pino({ level: 'silent' }) },
  );
  await program.close();
  try {
    fs.renameSync(building, template);
  } catch {
    fs.rmSync(building, { recursive: true, force: true });
  }
  return template;
}

/**
 * The sandbox authority as its own program, for one test file: its own PGlite folder beside the embedded backend, or
 * its own schema in the scratch PostgreSQL database. Processing is immediate and flooding allowed unless changed.
 */
export async function startTestSandbox(
  storage: { dataDir: string; databaseUrl?: string | undefined },
  changes: Partial<SandboxConfig> = {},
  options: { now?: (() => Date) | undefined; logger?: Logger | undefined } = {},
): Promise<SandboxProgram> {
  const dataDir = path.join(storage.dataDir, 'sandbox');
  if (storage.databaseUrl === undefined && !fs.existsSync(dataDir)) {
    fs.cpSync(path.join(await embeddedSandboxTemplate(), 'pgdata'), path.join(dataDir, 'pgdata'), { recursive: true });
  }
  const config: SandboxConfig = {
    ...readSandboxConfig({ SANDBOX_PORT: '0', SANDBOX_LOG_LEVEL: 'silent' }),
    dataDir,
    databaseUrl: storage.databaseUrl,
    processingDelayMs: 0,
    rateLimitPerSecond: 1_000_000,
    rateLimitBurst: 1_000_000,
    ...changes,
  };
  return startSandbox(config, { logger: options.logger ?? pino({ level: 'silent' }), ...(options.now === undefined ? {} : { now: options.now }) });
}

export async function startHarness(backend: Backend, options: HarnessOptions = {}): Promise<Harness & { stop(): Promise<void> }> {
  const scratch = await scratchDatabase(backend);
  let sandbox: SandboxProgram | undefined;
  let config: Config;
  let service: Service;
  try {
    sandbox = await startTestSandbox(scratch, options.sandbox, { now: options.sandboxNow, logger: options.sandboxLogger });
    config = loadConfig({
      DATA_DIR: scratch.dataDir,
      ...(scratch.databaseUrl ? { DATABASE_URL: scratch.databaseUrl } : {}),
      AUTHORITY_URL: sandbox.url,
      RATE_LIMIT_PER_SECOND: '100000',
      RATE_LIMIT_BURST: '100000',
      RUN_POLLER: 'false',
      // Scheduled reconciliations would pull at a point of the day no test controls; the tests that want them ask.
      RECONCILE_INTERVAL_SECONDS: '0',
      LOG_LEVEL: 'silent',
      // A test that ends with a request still held (at a stalled authority, say) waits this long at close, not 25 s.
      SHUTDOWN_TIMEOUT_SECONDS: '5',
      ...options.env,
    });
    service = await createService({ config, logger: options.logger ?? false, ...(options.authority ? { authority: options.authority } : {}) });
  } catch (error) {
    // A harness that cannot start leaves no sandbox listening and no scratch database behind.
    await sandbox?.close().catch(() => undefined);
    await scratch.drop().catch(() => undefined);
    throw error;
  }
  const started: SandboxProgram = sandbox;
  const seed = async (name: string): Promise<TestPlatform> => {
    const created = await createPlatform(service.database.db, name, SYSTEM_SOURCE);
    return { id: created.platform.id, apiKey: created.apiKey, keyId: created.key.id };
  };
  const platformA = await seed('Platform A');
  const platformB = await seed('Platform B');
  return {
    backend,
    service,
    database: service.database,
    config,
    platformA,
    platformB,
    sandbox: started,
    request: (method, url, requestOptions = {}) =>
      injectRequest(service, method, url, { ...requestOptions, key: requestOptions.key === undefined ? platformA.apiKey : requestOptions.key }),
    async stop() {
      try {
        try {
          await service.close();
        } finally {
          await started.close();
        }
      } finally {
        await scratch.drop();
      }
    },
  };
}

/** One request through the service's app (no network), with `key` as x-api-key unless it is null or absent. */
export async function injectRequest(service: Service, method: string, url: string, options: InjectOptions = {}): Promise<TestResponse> {
  const headers: Record<string, string> = { ...(options.key ? { 'x-api-key': options.key } : {}), ...options.headers };
  const response = await service.app.inject({
    method: method as 'GET',
    url,
    headers,
    ...(options.query ? { query: Object.fromEntries(Object.entries(options.query).map(([k, v]) => [k, String(v)])) } : {}),
    ...(options.body !== undefined ? { payload: options.body as object } : {}),
  });
  return testResponse(response);
}

/** One request whose body is sent exactly as given, bytes or text: for what no JSON client would send. */
export async function injectRaw(
  service: Service,
  method: string,
  url: string,
  options: { key: string; payload?: string | Buffer; contentType?: string },
): Promise<TestResponse> {
  const response = await service.app.inject({
    method: method as 'GET',
    url,
    headers: { 'x-api-key': options.key, 'content-type': options.contentType ?? 'application/json' },
    ...(options.payload !== undefined ? { payload: options.payload } : {}),
  });
  return testResponse(response);
}

function testResponse(response: { statusCode: number; headers: TestResponse['headers']; body: string }): TestResponse {
  let body: unknown = undefined;
  try {
    body = response.body ? JSON.parse(response.body) : undefined;
  } catch {
    body = undefined;
  }
  return { status: response.statusCode, headers: response.headers, body, text: response.body };
}

/** Runs `suite` once for each backend, against a fresh service with two seeded platforms. */
export function describeEachBackend(name: string, suite: (h: Harness) => void, options: HarnessOptions = {}): void {
  for (const backend of backends()) {
    describe(`${name} [${backend}]`, () => {
      let started: (Harness & { stop(): Promise<void> }) | undefined;
      const proxy = new Proxy({} as Harness, {
        get(_target, property) {
          if (!started) throw new Error('the harness is not started yet');
          return started[property as keyof Harness];
        },
      });
      before(async () => {
        started = await startHarness(backend, options);
      });
      after(async () => {
        await started?.stop();
      });
      suite(proxy);
    });
  }
}

/** A logger that keeps every line in memory (at trace level, redacted as the service redacts), to search for leaks. */
export function memoryLog(redact: string[]): { logger: FastifyBaseLogger; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return { logger: pino({ level: 'trace', redact }, stream) as unknown as FastifyBaseLogger, lines };
}

/** Asserts that a response is a problem document with the given status and code, and returns its body. */
export function expectProblem(response: TestResponse, status: number, code: string): any {
  const contentType = String(response.headers['content-type']);
  if (response.status !== status || response.body?.code !== code || !contentType.startsWith('application/problem+json')) {
    throw new Error(`expected ${status} ${code} as problem+json, got ${response.status} ${contentType} ${response.text.slice(0, 500)}`);
  }
  for (const field of ['type', 'title', 'status', 'detail', 'code', 'requestId']) {
    if (response.body[field] === undefined) throw new Error(`problem without ${field}: ${response.text}`);
  }
  if (response.body.requestId !== response.headers['x-request-id']) throw new Error('requestId differs from x-request-id');
  return response.body;
}
