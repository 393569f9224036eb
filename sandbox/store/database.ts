/**
 * The sandbox's own storage: an embedded PGlite database in its data folder (held with a lock file while open), or
 * the schema authority_sandbox of a PostgreSQL database. Every table is qualified with that schema, on both
 * backends, so nothing of another program in the same PostgreSQL database is touched.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { CompiledQuery, Kysely, PGliteDialect, PostgresDialect } from 'kysely';
import pg from 'pg';
import { makeOwnerOnlyFolder } from '../../src/owner-only-folder.ts';
import { acquireDataDirLock } from './data-dir-lock.ts';
import type { SandboxSchema } from './schema.ts';

const INT8_OID = 20;
const DATE_OID = 1082;
const POOL_SIZE = 10;
const MIGRATIONS_DIR = path.join(import.meta.dirname, '..', 'migrations');
// Any fixed number: sandboxes migrating one PostgreSQL database at the same time wait on the same lock.
const MIGRATION_LOCK = 5_310_771_902;

/** Both backends return int8 as number, numeric as exact text, date as 'YYYY-MM-DD', timestamptz as Date. */
const parsers: Record<number, (value: string) => unknown> = {
  [INT8_OID]: (value) => Number(value),
  [DATE_OID]: (value) => value,
};

type RawRunner = (sql: string, parameters?: unknown[]) => Promise<Record<string, unknown>[]>;

export type SandboxDatabase = {
  kind: 'embedded' | 'postgres';
  db: Kysely<SandboxSchema>;
  close(): Promise<void>;
};

type OpenedDatabase = SandboxDatabase & {
  /** One transaction with a runner that also takes multi-statement scripts (when given no parameters). */
  scriptTransaction<T>(work: (run: RawRunner) => Promise<T>): Promise<T>;
};

export type StorageOptions = { databaseUrl?: string | undefined; dataDir: string };

/** Opens the storage and applies every migration it has not had yet. */
export async function openSandboxDatabase(options: StorageOptions): Promise<SandboxDatabase> {
  const database = options.databaseUrl ? openPostgres(options.databaseUrl) : await openEmbedded(options.dataDir);
  try {
    await migrate(database);
  } catch (error) {
    await database.close();
    throw error;
  }
  return database;
}

async function openEmbedded(dataDir: string): Promise<OpenedDatabase> {
  // Owner-only, as the service's: the sandbox's storage holds the client secrets it issued.
  makeOwnerOnlyFolder(dataDir);
  const lock = acquireDataDirLock(dataDir);
  let pglite: PGlite;
  try {
    const { PGlite } = await import('@electric-sql/pglite');
    pglite = await PGlite.create(path.join(dataDir, 'pgdata'), { parsers });
    // PGlite unpacks a new database's first files with modes of their own (0666), whatever the umask.
    makeOwnerOnlyFolder(dataDir);
  } catch (error) {
    lock.release();
    throw error;
  }
  const db = new Kysely<SandboxSchema>({ dialect: new PGliteDialect({ pglite }) });
  let closed = false;
  return {
    kind: 'embedded',
    db,
    scriptTransaction(work) {
      // Kysely's PGlite driver sends one statement a query; a migration script has many, so it goes through exec().
      return pglite.transaction((tx) =>
        work(async (sql, parameters) => {
          if (parameters && parameters.length > 0) return (await tx.query<Record<string, unknown>>(sql, parameters)).rows;
          return ((await tx.exec(sql)).at(-1)?.rows ?? []) as Record<string, unknown>[];
        }),
      );
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

function openPostgres(databaseUrl: string): OpenedDatabase {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: POOL_SIZE,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        parsers[oid] ?? pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // A connection that breaks while checked out emits 'error' on its client, which pg-pool listens to only while idle:
  // unheard, it would end the program. The query under way fails instead, and the pool discards the client.
  pool.on('connect', (client) => client.on('error', () => undefined));
  pool.on('error', () => {
    // An idle client lost its connection; the pool replaces it on the next query.
  });
  const db = new Kysely<SandboxSchema>({ dialect: new PostgresDialect({ pool }) });
  let closed = false;
  return {
    kind: 'postgres',
    db,
    scriptTransaction(work) {
      // Without parameters pg sends the simple protocol, which runs every statement of a script.
      return db.transaction().execute((tx) =>
        work(async (sql, parameters = []) => [...(await tx.executeQuery<Record<string, unknown>>(CompiledQuery.raw(sql, parameters))).rows]),
      );
    },
    async close() {
      if (closed) return;
      closed = true;
      await db.destroy();
    },
  };
}

/** Applies the sandbox's migrations not yet applied, in order, in one transaction. */
async function migrate(database: OpenedDatabase): Promise<void> {
  const migrations = fs
    .readdirSync(MIGRATIONS_DIR)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file) => ({ name: file.replace(/\.sql$/, ''), sql: fs.readFileSync(path.join(MIGRATIONS_DIR, file), 'utf8') }));
  await database.scriptTransaction(async (run) => {
    if (database.kind === 'postgres') await run('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await run(`create schema if not exists authority_sandbox;
      create table if not exists authority_sandbox.schema_migrations (
        name text primary key,
        applied_at timestamptz not null default now()
      )`);
    const applied = new Set((await run('select name from authority_sandbox.schema_migrations')).map((row) => String(row.name)));
    for (const migration of migrations.filter((candidate) => !applied.has(candidate.name))) {
      await run(migration.sql);
      await run('insert into authority_sandbox.schema_migrations (name) values ($1)', [migration.name]);
    }
  });
}
