import assert from 'node:assert/strict';
import path from 'node:path';
import pg from 'pg';
import { after, before, describe, test } from 'node:test';
import { openDatabase } from '../../src/store/database.ts';
import { migrate, readMigrations } from '../../src/store/migrate.ts';
import { gatewayEnv, NO_AUTHORITY, ROOT, startGateway, stopGateway, waitUntilReady } from '../support/gateway.ts';
import { backends, scratchDatabase } from '../support/harness.ts';
import { runProgram, type Run } from '../support/run.ts';

/** Migrations as their own step (`npm run migrate`, MIGRATE_ON_START=false) and a database newer than the code. */

function cli(env: Record<string, string>, ...args: string[]): Promise<Run> {
  return runProgram(process.execPath, [path.join(ROOT, 'src/cli/main.ts'), ...args], env);
}

/** The service started to its end: its exit code and what it wrote to stderr. */
async function startToExit(env: Record<string, string>): Promise<{ code: unknown; output: string }> {
  const gateway = startGateway(env);
  const timer = setTimeout(() => gateway.child.kill('SIGKILL'), 90_000);
  const [code] = (await gateway.exited) as [number | null];
  clearTimeout(timer);
  return { code, output: gateway.output() };
}

async function appliedMigrations(scratch: { dataDir: string; databaseUrl?: string }): Promise<string[]> {
  const database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir });
  try {
    return await database.scriptTransaction(async (run) => (await run('select name from schema_migrations order by name')).map((row) => String(row.name)));
  } finally {
    await database.close();
  }
}

for (const backend of backends()) {
  describe(`migrations as their own step [${backend}]`, () => {
    let scratch: Awaited<ReturnType<typeof scratchDatabase>>;
    let env: Record<string, string>;
    before(async () => {
      scratch = await scratchDatabase(backend, { empty: true });
      env = gatewayEnv(scratch, NO_AUTHORITY, { RUN_POLLER: 'false', RUN_WEBHOOKS: 'false' });
    });
    after(async () => scratch.drop());

    test('MIGRATE_ON_START=false refuses an unmigrated database in one line naming the command; changes nothing', async () => {
      const { code, output } = await startToExit({ ...env, MIGRATE_ON_START: 'false' });
      assert.equal(code, 1, output);
      const line = output.split('\n').find((text) => text.startsWith('ebrc-gateway: '));
      assert.ok(line, output);
      assert.match(line, /lacks migrations 0001_core, 0002_sandbox, 0003_irm_counts and \d+ more and MIGRATE_ON_START=false: run `npm run migrate` first/);
      assert.ok(!output.includes('    at '), `no stack trace: ${output}`);
      const database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir });
      try {
        const [table] = await database.scriptTransaction((run) => run(`select to_regclass('schema_migrations') is not null as present`));
        assert.equal(table!.present, false, 'nothing was created');
      } finally {
        await database.close();
      }
    });

    test('npm run migrate applies every migration and the job queue\'s tables; then processes start without migrating', async () => {
      const run = await cli(env, 'migrate', '--json');
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual(JSON.parse(run.stdout), { applied: readMigrations().map((m) => m.name) });
      const database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir });
      try {
        const [queue] = await database.scriptTransaction((run) => run(`select to_regclass('pgboss.version') is not null as present`));
        assert.equal(queue!.present, true, 'pg-boss is installed by the migrate step');
      } finally {
        await database.close();
      }
      const again = await cli(env, 'migrate');
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /Nothing to apply; the database is up to date\./);

      const gateway = startGateway({ ...env, MIGRATE_ON_START: 'false' });
      try {
        const base = await waitUntilReady(gateway);
        assert.equal((await fetch(`${base}/ready`)).status, 200);
      } finally {
        await stopGateway(gateway);
      }
    });

    test('a database migrated by a newer version is refused by a start (either setting) and by migrate, in one line', async () => {
      const database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir });
      try {
        await database.scriptTransaction((run) => run(`insert into schema_migrations (name) values ('9001_from_a_newer_version')`));
      } finally {
        await database.close();
      }
      for (const migrateOnStart of ['true', 'false']) {
        const { code, output } = await startToExit({ ...env, MIGRATE_ON_START: migrateOnStart });
        assert.equal(code, 1, output);
        const lines = output.split('\n').filter((text) => text.startsWith('ebrc-gateway'));
        assert.deepEqual(lines, [
          'ebrc-gateway: the database has migration 9001_from_a_newer_version that this version of ebrc-gateway does not know: a newer version migrated it; run that version (or a newer one), or restore a backup taken before that upgrade',
        ], output);
      }
      const run = await cli(env, 'migrate');
      assert.equal(run.code, 1);
      assert.match(run.stderr, /^the database has migration 9001_from_a_newer_version that this version of ebrc-gateway does not know/);
      assert.deepEqual(await appliedMigrations(scratch), [...readMigrations().map((m) => m.name), '9001_from_a_newer_version'].sort(), 'nothing was applied or removed');
    });
  });

  test(`[${backend}] migration 0027 puts the events not yet dispatched on the relay's queue, oldest first, and no other`, async () => {
    const scratch = await scratchDatabase(backend, { empty: true });
    const database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir });
    try {
      const migrations = readMigrations();
      await migrate(database, migrations.filter((migration) => migration.name < '0027'));
      await database.scriptTransaction(async (run) => {
        const [platform] = await run(`insert into platforms (id, name) values (gen_random_uuid(), 'Queue') returning id`);
        await run(
          `insert into events (id, platform_id, type, data, created_at, dispatched_at) values
             ('evt_sent', $1, 'webhook.test', '{}', now() - interval '2 minutes', now()),
             ('evt_older', $1, 'ebrc.generated', '{"n":1}', now() - interval '1 minute', null),
             ('evt_newer', $1, 'ebrc.generated', '{"n":2}', now(), null)`,
          [platform!.id],
        );
      });
      await migrate(database, migrations);
      const queued = await database.scriptTransaction((run) => run('select event_id, type from event_queue order by seq'));
      assert.deepEqual(queued.map((row) => [row.event_id, row.type]), [['evt_older', 'ebrc.generated'], ['evt_newer', 'ebrc.generated']]);
    } finally {
      await database.close();
      await scratch.drop();
    }
  });

  test(`[${backend}] a status event's data is stored compressed with lz4 where the server has it (PostgreSQL), else pglz (PGlite), and reads back as written; the records' column is set so too`, async () => {
    const scratch = await scratchDatabase(backend, { empty: true });
    const database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir });
    try {
      await migrate(database);
      // A status view's lines repeat their fields line after line: about 50 KB here, which compresses well.
      const data = JSON.stringify({ ebrcBulkGenStatusList: Array.from({ length: 999 }, (_, index) => ({ serialNo: index + 1, status: 'PENDING', errorDetails: [] })) });
      const read = await database.scriptTransaction(async (run) => {
        const [platform] = await run(`insert into platforms (id, name) values (gen_random_uuid(), 'Compression') returning id`);
        await run(`insert into events (id, platform_id, type, data) values ('evt_large', $1, 'genebrc.request.acknowledged', $2)`, [platform!.id, data]);
        return run(`
          select data::text as data, pg_column_compression(data) as method,
            (select attcompression from pg_attribute where attrelid = 'genebrc_request_records'::regclass and attname = 'record') as record_method
          from events where id = 'evt_large'`);
      });
      const expected = backend === 'postgres' ? { method: 'lz4', record_method: 'l' } : { method: 'pglz', record_method: '' };
      assert.deepEqual({ method: read[0]!.method, record_method: read[0]!.record_method }, expected);
      assert.equal(read[0]!.data, data);
    } finally {
      await database.close();
      await scratch.drop();
    }
  });

  if (backend === 'postgres') {
    test('[postgres] a migration that cannot take its lock in time is rolled back and tried again, and holds nobody behind it for longer', { timeout: 60_000 }, async () => {
      const scratch = await scratchDatabase(backend, { empty: true });
      const database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir });
      const holder = new pg.Client({ connectionString: scratch.databaseUrl });
      const reader = new pg.Client({ connectionString: scratch.databaseUrl });
      try {
        const migrations = readMigrations();
        await migrate(database, migrations);
        await holder.connect();
        await reader.connect();
        await reader.query('set statement_timeout = 5000');
        // An old process's transaction that keeps reading platforms, as a foreign key check does.
        await holder.query('begin');
        await holder.query('lock table platforms in access share mode');
        const retries: string[] = [];
        const migrating = migrate(database, [...migrations, { name: '9001_lock_probe', sql: 'alter table platforms add column lock_probe integer' }], {
          lockTimeoutMs: 200,
          attempts: 50,
          onRetry: (_attempt, reason) => retries.push(reason),
        });
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        // Between the attempts another transaction reads the table: it waits for the migration at most its timeout.
        const started = Date.now();
        await reader.query('select count(*) from platforms');
        assert.ok(Date.now() - started < 1_000, `a read waited ${Date.now() - started} ms`);
        await holder.query('commit');
        assert.deepEqual(await migrating, ['9001_lock_probe']);
        assert.ok(retries.length >= 2, `tried again ${retries.length} times`);
        assert.match(retries[0]!, /a lock held over 200 ms/);
        const [column] = (await reader.query(`select 1 from information_schema.columns where table_name = 'platforms' and column_name = 'lock_probe'`)).rows;
        assert.ok(column, 'the migration was applied once the lock was free');
      } finally {
        await holder.end().catch(() => {});
        await reader.end().catch(() => {});
        await database.close();
        await scratch.drop();
      }
    });

    test('[postgres] a migration gives up after its attempts, with the lock error, and applies nothing', { timeout: 60_000 }, async () => {
      const scratch = await scratchDatabase(backend, { empty: true });
      const database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir });
      const holder = new pg.Client({ connectionString: scratch.databaseUrl });
      try {
        const migrations = readMigrations();
        await migrate(database, migrations);
        await holder.connect();
        await holder.query('begin');
        await holder.query('lock table platforms in access share mode');
        // A migration that waited for ever would get the lock after 10 s, and be applied: the test then fails, not hangs.
        const letGo = setTimeout(() => void holder.query('commit'), 10_000);
        await assert.rejects(
          migrate(database, [...migrations, { name: '9001_lock_probe', sql: 'alter table platforms add column lock_probe integer' }], { lockTimeoutMs: 100, attempts: 2 }),
          (error: { code?: string }) => error.code === '55P03',
        );
        clearTimeout(letGo);
        await holder.query('commit');
        assert.deepEqual(await appliedMigrations(scratch), migrations.map((m) => m.name).sort());
      } finally {
        await holder.end().catch(() => {});
        await database.close();
        await scratch.drop();
      }
    });
  }
}
