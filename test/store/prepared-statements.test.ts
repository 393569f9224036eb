import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CompiledQuery } from 'kysely';
import { openDatabase } from '../../src/store/database.ts';
import { backends, scratchDatabase } from '../support/harness.ts';

test('on PostgreSQL a statement with parameters is prepared once per connection and then only executed', { skip: !backends().includes('postgres') && 'PostgreSQL is not among the backends' }, async () => {
  const scratch = await scratchDatabase('postgres');
  const database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir, poolSize: 1 });
  try {
    const text = 'select $1::int + 1 as next';
    for (const value of [1, 2, 3]) {
      const { rows } = await database.db.executeQuery<{ next: number }>(CompiledQuery.raw(text, [value]));
      assert.deepEqual(rows, [{ next: value + 1 }]);
    }
    // The pool's one connection holds the statement once, under its name; a text without parameters is not prepared.
    await database.db.executeQuery(CompiledQuery.raw('select 1 as one'));
    const { rows } = await database.db.executeQuery<{ name: string; statement: string }>(
      CompiledQuery.raw('select name, statement from pg_prepared_statements where statement like $1 order by name', ['select $1::int%']),
    );
    assert.equal(rows.length, 1, JSON.stringify(rows));
    assert.match(rows[0]!.name, /^ebrc_/);
    assert.equal(rows[0]!.statement, text);
    const { rows: unprepared } = await database.db.executeQuery(
      CompiledQuery.raw("select name from pg_prepared_statements where statement = 'select 1 as one' and $1::int = 1", [1]),
    );
    assert.deepEqual(unprepared, []);
  } finally {
    await database.close();
    await scratch.drop();
  }
});
