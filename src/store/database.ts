import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { CompiledQuery, Kysely, PGliteDialect, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Schema } from './schema.ts';
import { dumpEmbedded } from './embedded-backup.ts';
import { acquireDataDirLock, type DataDirLock } from './data-dir-lock.ts';

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

export type DatabaseOptions = { databaseUrl?: string | undefined; dataDir: string; poolSize?: number };

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  return options.databaseUrl
    ? openPostgres(options.databaseUrl, options.poolSize ?? 10)
    : openEmbedded(options.dataDir);
}

async function openEmbedded(dataDir: string): Promise<Database> {
  fs.mkdirSync(dataDir, { recursive: true });
  const lock: DataDirLock = acquireDataDirLock(dataDir);
  let pglite: PGlite;
  try {
    // Loaded only here: a service on PostgreSQL does not carry PGlite's WebAssembly in memory.
    const { PGlite } = await import('@electric-sql/pglite');
    pglite = await PGlite.create(path.join(dataDir, 'pgdata'), {
      parsers,
      startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${EMBEDDED_SHARED_BUFFERS}`],
    });
  } catch (error) {
    lock.release();
    throw error;
  }
  const db = new Kysely<Schema>({ dialect: new PGliteDialect({ pglite }) });
  let closed = false;
  return {
    kind: 'embedded',
    db,
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
        return pglite.query(text, values as unknown[]);
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

/** Statement texts prepared so far, by name; past the cap new texts run unprepared. */
const preparedNames = new Map<string, string>();
const MAX_PREPARED_STATEMENTS = 1_000;
/** Texts with more parameters than this are mostly IN lists whose length varies: each length would be its own statement. */
const MAX_PREPARED_PARAMETERS = 32;

function statementName(text: string, parameterCount: number): string | undefined {
  const known = preparedNames.get(text);
  if (known !== undefined || parameterCount > MAX_PREPARED_PARAMETERS || preparedNames.size >= MAX_PREPARED_STATEMENTS) return known;
  const name = `ebrc_${createHash('sha256').update(text).digest('base64url').slice(0, 24)}`;
  preparedNames.set(text, name);
  return name;
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
      if (name !== undefined) return super.query({ text, values, name });
    }
    return (super.query as (...a: unknown[]) => unknown)(...args);
  }
}

async function openPostgres(databaseUrl: string, poolSize: number): Promise<Database> {
  const pool = new pg.Pool({
    Client: PreparingClient,
    connectionString: databaseUrl,
    max: poolSize,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        parsers[oid] ?? pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  pool.on('error', () => {
    // An idle client lost its connection; the pool replaces it on the next query.
  });
  const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }) });
  let closed = false;
  return {
    kind: 'postgres',
    db,
    async scriptTransaction(work) {
      return db.transaction().execute((tx) =>
        // Without parameters pg sends the simple protocol, which runs every statement of a script.
        work(async (sql, parameters = []) => {
          const result = await tx.executeQuery<Record<string, unknown>>(CompiledQuery.raw(sql, parameters));
          return [...result.rows];
        }),
      );
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
