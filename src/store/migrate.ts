import fs from 'node:fs';
import path from 'node:path';
import type { Database } from './database.ts';

const MIGRATIONS_DIR = path.join(import.meta.dirname, 'migrations');
// Any fixed number: every process that migrates one PostgreSQL database waits on the same lock.
const MIGRATION_LOCK = 7_305_410_221;

export type Migration = { name: string; sql: string };

export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return fs
    .readdirSync(dir)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file) => ({ name: file.replace(/\.sql$/, ''), sql: fs.readFileSync(path.join(dir, file), 'utf8') }));
}

/** Applies every migration not yet applied, in order, in one transaction; returns the names applied. */
export async function migrate(database: Database, migrations = readMigrations()): Promise<string[]> {
  return database.scriptTransaction(async (run) => {
    if (database.kind === 'postgres') await run('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await run(`create table if not exists schema_migrations (
      name text primary key,
      applied_at timestamptz not null default now()
    )`);
    const applied = new Set((await run('select name from schema_migrations')).map((row) => String(row.name)));
    const pending = migrations.filter((migration) => !applied.has(migration.name));
    for (const migration of pending) {
      await run(migration.sql);
      await run('insert into schema_migrations (name) values ($1)', [migration.name]);
    }
    return pending.map((migration) => migration.name);
  });
}
