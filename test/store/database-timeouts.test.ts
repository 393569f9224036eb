import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { isDatabaseUnavailable } from '../../src/store/availability.ts';
import { openDatabase } from '../../src/store/database.ts';
import { postgresUrl, scratchDatabase } from '../support/harness.ts';

test('PostgreSQL statements are cut off after DATABASE_STATEMENT_TIMEOUT_MS, migrations are not', { skip: postgresUrl() ? false : 'no PostgreSQL for the tests' }, async () => {
  const scratch = await scratchDatabase('postgres');
  const database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir, statementTimeoutMs: 300 });
  try {
    const { rows } = await sql<{ statement_timeout: string }>`show statement_timeout`.execute(database.db);
    assert.equal(rows[0]!.statement_timeout, '300ms');
    const started = Date.now();
    const cutOff = await sql`select pg_sleep(5)`.execute(database.db).then(() => undefined, (error: unknown) => error);
    assert.ok(cutOff, 'the slow statement failed');
    assert.equal((cutOff as { code?: string }).code, '57014');
    assert.ok(isDatabaseUnavailable(cutOff), 'answered as database_unavailable');
    assert.ok(Date.now() - started < 3_000);
    // The connection is usable again at once.
    assert.equal((await sql<{ one: number }>`select 1 as one`.execute(database.db)).rows[0]!.one, 1);
    // A migration's transaction has no statement timeout.
    const slow = await database.scriptTransaction(async (run) => run('select pg_sleep(0.5) is null as slept'));
    assert.deepEqual(slow, [{ slept: false }]);
  } finally {
    await database.close();
    await scratch.drop();
  }
});

test('an unreachable PostgreSQL fails the open at once when no wait is asked for (the CLI, tests)', async () => {
  const started = Date.now();
  await assert.rejects(openDatabase({ databaseUrl: 'postgres://postgres@127.0.0.1:9/none', dataDir: '/nonexistent' }).then((database) => database.db.selectFrom('platforms').selectAll().execute()), (error: unknown) => isDatabaseUnavailable(error));
  assert.ok(Date.now() - started < 5_000);
});
