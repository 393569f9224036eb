import fs from 'node:fs';
import path from 'node:path';
import type { Database } from './database.ts';

const MIGRATIONS_DIR = path.join(import.meta.dirname, 'migrations');
// Any fixed number: every process that migrates one PostgreSQL database waits on the same lock.
const MIGRATION_LOCK = 7_305_410_221;

export type Migration = { name: string; sql: string };

/**
 * The database's schema does not match this version of the code: it has migrations this version does not know (a
 * newer version migrated it), or, with MIGRATE_ON_START=false, it lacks some. The message is the whole story, on one line.
 */
export class SchemaMismatchError extends Error {}

export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return fs
    .readdirSync(dir)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file) => ({ name: file.replace(/\.sql$/, ''), sql: fs.readFileSync(path.join(dir, file), 'utf8') }));
}

function listed(names: string[]): string {
  return names.length <= 3 ? names.join(', ') : `${names.slice(0, 3).join(', ')} and ${names.length - 3} more`;
}

/** Refuses a database migrated by a newer version: this code would misread (or damage) what it does not know. */
function refuseUnknown(applied: Iterable<string>, migrations: Migration[]): void {
  const known = new Set(migrations.map((migration) => migration.name));
  const unknown = [...applied].filter((name) => !known.has(name)).sort();
  if (unknown.length === 0) return;
  throw new SchemaMismatchError(
    `the database has migration${unknown.length === 1 ? '' : 's'} ${listed(unknown)} that this version of ebrc-gateway does not know: ` +
      'a newer version migrated it; run that version (or a newer one), or restore a backup taken before that upgrade',
  );
}

export type LockWaits = {
  /** How long a migration's statement waits for a table's lock before the whole migration gives up and tries again. */
  lockTimeoutMs: number;
  attempts: number;
  /** Called before each new attempt. */
  onRetry?: (attempt: number, reason: string) => void;
};

export const MIGRATION_LOCK_WAITS: LockWaits = { lockTimeoutMs: 3_000, attempts: 20 };

/** deadlock_detected, lock_not_available (lock_timeout). */
const LOCK_CONFLICTS = new Set(['40P01', '55P03']);

/**
 * Applies every migration not yet applied, in order, in one transaction; returns the names applied. Refuses
 * (SchemaMismatchError) a database that has a migration this version does not know.
 *
 * On PostgreSQL, processes of the version before go on serving while it runs. A migration that changes a table takes
 * its strongest lock, and their transactions take locks in orders of their own: waiting long, it would hold their
 * statements behind it, or deadlock with one (dropping a foreign key locks both tables). So a statement of the
 * migration waits for a lock at most `lockTimeoutMs`; a migration that times out or is chosen as a deadlock's victim
 * is rolled back whole and tried again after a pause, up to `attempts` times.
 */
export async function migrate(database: Database, migrations = readMigrations(), lockWaits: LockWaits = MIGRATION_LOCK_WAITS): Promise<string[]> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await migrateOnce(database, migrations, lockWaits.lockTimeoutMs);
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (database.kind !== 'postgres' || typeof code !== 'string' || !LOCK_CONFLICTS.has(code) || attempt >= lockWaits.attempts) throw error;
      const reason = code === '40P01' ? 'a deadlock with another transaction' : `a lock held over ${lockWaits.lockTimeoutMs} ms`;
      lockWaits.onRetry?.(attempt + 1, reason);
      await new Promise((resolve) => setTimeout(resolve, Math.min(attempt, 10) * 200));
    }
  }
}

async function migrateOnce(database: Database, migrations: Migration[], lockTimeoutMs: number): Promise<string[]> {
  return database.scriptTransaction(async (run) => {
    if (database.kind === 'postgres') {
      await run('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      // After the advisory lock: another process's migration may rightly take longer than this.
      await run(`set local lock_timeout = ${Math.round(lockTimeoutMs)}`);
    }
    await run(`create table if not exists schema_migrations (
      name text primary key,
      applied_at timestamptz not null default now()
    )`);
    const applied = new Set((await run('select name from schema_migrations')).map((row) => String(row.name)));
    refuseUnknown(applied, migrations);
    const pending = migrations.filter((migration) => !applied.has(migration.name));
    for (const migration of pending) {
      await run(migration.sql);
      await run('insert into schema_migrations (name) values ($1)', [migration.name]);
    }
    return pending.map((migration) => migration.name);
  });
}

/**
 * For a process that does not migrate (MIGRATE_ON_START=false): refuses a database that lacks a migration of this
 * version (run `npm run migrate` first) or has one it does not know. Changes nothing.
 */
export async function assertMigrated(database: Database, migrations = readMigrations()): Promise<void> {
  const applied = await database.scriptTransaction(async (run) => {
    const [table] = await run(`select to_regclass('schema_migrations') is not null as present`);
    if (!table?.present) return [];
    return (await run('select name from schema_migrations')).map((row) => String(row.name));
  });
  refuseUnknown(applied, migrations);
  const done = new Set(applied);
  const pending = migrations.filter((migration) => !done.has(migration.name)).map((migration) => migration.name);
  if (pending.length > 0) {
    throw new SchemaMismatchError(
      `the database lacks migration${pending.length === 1 ? '' : 's'} ${listed(pending)} and MIGRATE_ON_START=false: run \`npm run migrate\` first (or start with MIGRATE_ON_START=true)`,
    );
  }
}
