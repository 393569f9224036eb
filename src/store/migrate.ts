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

/**
 * Applies every migration not yet applied, in order, in one transaction; returns the names applied. Refuses
 * (SchemaMismatchError) a database that has a migration this version does not know.
 */
export async function migrate(database: Database, migrations = readMigrations()): Promise<string[]> {
  return database.scriptTransaction(async (run) => {
    if (database.kind === 'postgres') await run('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
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
