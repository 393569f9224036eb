import fs from 'node:fs';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { CompiledQuery, Kysely, PGliteDialect, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Schema } from './schema.ts';
import { dumpEmbedded } from './embedded-backup.ts';
import { isStalePlan, preparingPGlite, renameStale, statementName } from './prepared-statements.ts';
import { acquireDataDirLock, type DataDirLock } from './data-dir-lock.ts';
import { DatabaseAvailability, isDatabaseUnavailable, unavailableReason } from './availability.ts';

const INT8_OID = 20;
const DATE_OID = 1082;
/**
 * The embedded database's page cache, in the service's own memory (PGlite's default is PostgreSQL's 128MB, all of it
 * resident once touched). Pages it does not hold are read from the data folder through the OS's file cache.
 */
const EMBEDDED_SHARED_BUFFERS = '16MB';

/**
 * The one place that makes both backends return the same JavaScript types:
 * int8 as number (counts and sequences stay far below 2^53), numeric as string (money is parsed
 * exactly by the domain), date as the plain 'YYYY-MM-DD' text, timestamptz as Date.
 */
const parsers: Record<number, (value: string) => unknown> = {
  [INT8_OID]: (value) => Number(value),
  [DATE_OID]: (value) => value,
};

/** What pg-boss needs to run on either backend. */
export type SqlExecutor = {
  executeSql(text: string, values?: unknown[]): Promise<{ rows: any[] } | { rows: any[] }[]>;
};

export type Database = {
  kind: 'embedded' | 'postgres';
  db: Kysely<Schema>;
  /** Whether the database can be reached, and the one logger of its outages (contract 17). */
  availability: DatabaseAvailability;
  /**
   * Runs `work` in one transaction with a raw runner that also takes multi-statement scripts
   * (when given no parameters). Used by migrations; everything else goes through `db`.
   */
  scriptTransaction<T>(work: (run: RawRunner) => Promise<T>): Promise<T>;
  executor: SqlExecutor;
  /** The embedded database only: a consistent copy while it serves (src/store/embedded-backup.ts). */
  backup?(): Promise<Blob>;
  close(): Promise<void>;
};

export type RawRunner = (sql: string, parameters?: unknown[]) => Promise<Record<string, unknown>[]>;

export type DatabaseOptions = {
  databaseUrl?: string | undefined;
  dataDir: string;
  poolSize?: number;
  /** PostgreSQL's statement_timeout for every connection (DATABASE_STATEMENT_TIMEOUT_MS). */
  statementTimeoutMs?: number;
  /**
   * Wait for a PostgreSQL that does not answer at open, for `seconds` (DATABASE_WAIT_SECONDS; 0: for ever), with a line
   * per attempt. Without it (the CLI, tests, benchmarks) an unreachable database fails the open at its first query.
   */
  wait?: { seconds: number; onWaiting: (line: string, attempt: number) => void };
  availability?: DatabaseAvailability;
};

/** A connection that takes longer than this to open has failed: a request is answered 503 rather than left hanging. */
export const CONNECT_TIMEOUT_MS = 2_000;
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;
/** The wait for the database at start backs off up to one attempt in this long. */
const MAX_WAIT_INTERVAL_MS = 5_000;

/** The database did not answer within DATABASE_WAIT_SECONDS at start; its message is the one line the process ends with. */
export class DatabaseUnreachableError extends Error {}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const availability = options.availability ?? new DatabaseAvailability();
  return options.databaseUrl
    ? openPostgres(options.databaseUrl, options, availability)
    : openEmbedded(options.dataDir, availability);
}

async function openEmbedded(dataDir: string, availability: DatabaseAvailability): Promise<Database> {
  fs.mkdirSync(dataDir, { recursive: true });
  const lock: DataDirLock = acquireDataDirLock(dataDir);
  let pglite: PGlite;
  let preparing: PGlite;
  try {
    // Loaded only here: a service on PostgreSQL does not carry PGlite's WebAssembly in memory.
    const pgliteModule = await import('@electric-sql/pglite');
    pglite = await pgliteModule.PGlite.create(path.join(dataDir, 'pgdata'), {
      parsers,
      startParams: [...pgliteModule.PGlite.defaultStartParams, '-c', `shared_buffers=${EMBEDDED_SHARED_BUFFERS}`],
    });
    preparing = preparingPGlite(pglite, pgliteModule);
  } catch (error) {
    lock.release();
    throw error;
  }
  const db = new Kysely<Schema>({ dialect: new PGliteDialect({ pglite: preparing }) });
  let closed = false;
  return {
    kind: 'embedded',
    db,
    availability,
    async scriptTransaction(work) {
      // Kysely's PGlite driver speaks the extended protocol (one statement a query); a migration
      // script has many, so it goes through PGlite's own exclusive transaction and exec().
      return pglite.transaction((tx) =>
        work(async (sql, parameters) => {
          if (parameters && parameters.length > 0) return (await tx.query<Record<string, unknown>>(sql, parameters)).rows;
          const results = await tx.exec(sql);
          return (results.at(-1)?.rows ?? []) as Record<string, unknown>[];
        }),
      );
    },
    backup: () => dumpEmbedded(pglite),
    executor: {
      async executeSql(text, values) {
        if (values === undefined || values.length === 0) {
          // Like pg: one result for one statement, a list of results for a script.
          const results = await pglite.exec(text);
          return results.length === 1 ? results[0]! : results;
        }
        return preparing.query(text, values as unknown[]);
      },
    },
    async close() {
      if (closed) return;
      closed = true;
      try {
        await db.destroy();
        if (!pglite.closed) await pglite.close();
      } finally {
        lock.release();
      }
    },
  };
}

/**
 * A pg client that prepares each statement text once per connection (a named statement) and then only binds and
 * executes it: PostgreSQL parses and plans it once instead of at every call, which was a third of the database's work
 * for a customer read. Parameterless texts (scripts, BEGIN/COMMIT) go as they are.
 */
class PreparingClient extends pg.Client {
  override query(...args: unknown[]): any {
    const [text, values] = args;
    if (args.length === 2 && typeof text === 'string' && Array.isArray(values) && values.length > 0) {
      const name = statementName(text, values.length);
      if (name !== undefined) {
        return super.query({ text, values, name }).catch((error: unknown) => {
          if (!isStalePlan(error)) throw error;
          renameStale(text, name);
          // Outside a transaction nothing was done: the call is made again under the new name.
          if (this.getTransactionStatus() !== 'I') throw error;
          return super.query({ text, values, name: statementName(text, values.length) ?? name });
        });
      }
    }
    return (super.query as (...a: unknown[]) => unknown)(...args);
  }
}

/**
 * Where a database URL points, for log lines: host and port, never the user or password. A `host` parameter (a Unix
 * socket's directory) wins over the URL's host name, as it does for pg.
 */
export function databaseTarget(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  const host = url.searchParams.get('host') || url.hostname || 'localhost';
  return `${host}:${url.port || '5432'}`;
}

async function openPostgres(databaseUrl: string, options: DatabaseOptions, availability: DatabaseAvailability): Promise<Database> {
  const pool = new pg.Pool({
    Client: PreparingClient,
    connectionString: databaseUrl,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    statement_timeout: options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS,
    keepAlive: true,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        parsers[oid] ?? pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // A connection that breaks (a restart, a failover, an administrator's terminate) emits 'error' on its client: pg-pool
  // listens only while the client is idle, and an 'error' nobody listens to ends the process. This listener stays for
  // the client's life; the query under way fails with the error, and the pool discards the client when it is released.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
    availability.succeeded();
  });
  pool.on('error', () => {
    // An idle client lost its connection; the pool replaces it on the next query.
  });
  try {
    if (options.wait) await waitForPostgres(pool, databaseTarget(databaseUrl), options.wait);
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
  const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }) });
  let closed = false;
  return {
    kind: 'postgres',
    db,
    availability,
    async scriptTransaction(work) {
      return db.transaction().execute(async (tx) => {
        // A migration (an index on a large table, say) may rightly take longer than DATABASE_STATEMENT_TIMEOUT_MS.
        await tx.executeQuery(CompiledQuery.raw('set local statement_timeout = 0'));
        // Without parameters pg sends the simple protocol, which runs every statement of a script.
        return work(async (sql, parameters = []) => {
          const result = await tx.executeQuery<Record<string, unknown>>(CompiledQuery.raw(sql, parameters));
          return [...result.rows];
        });
      });
    },
    executor: {
      async executeSql(text, values) {
        return pool.query(text, values) as never;
      },
    },
    async close() {
      if (closed) return;
      closed = true;
      await db.destroy();
    },
  };
}

/**
 * Waits for a PostgreSQL that does not answer (down, starting, unreachable): one line per attempt, backing off to one
 * attempt every MAX_WAIT_INTERVAL_MS, for `waitSeconds` (0: for ever). A database that answers with a refusal (a wrong
 * password, no such database) is not waited for: that error is thrown at once.
 */
async function waitForPostgres(pool: pg.Pool, target: string, options: NonNullable<DatabaseOptions['wait']>): Promise<void> {
  const started = Date.now();
  const waitMs = options.seconds * 1000;
  let interval = 250;
  for (let attempt = 1; ; attempt++) {
    try {
      await pool.query('select 1');
      return;
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      const reason = unavailableReason(error);
      const waited = Date.now() - started;
      if (waitMs > 0 && waited >= waitMs) {
        throw new DatabaseUnreachableError(`the database at ${target} did not answer within DATABASE_WAIT_SECONDS=${options.seconds} (${attempt} attempts): ${reason}`);
      }
      options.onWaiting(`waiting for the database at ${target}: ${reason}`, attempt);
      await new Promise((resolve) => setTimeout(resolve, waitMs > 0 ? Math.min(interval, waitMs - waited) : interval));
      interval = Math.min(interval * 2, MAX_WAIT_INTERVAL_MS);
    }
  }
}
