import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { CompiledQuery, sql } from 'kysely';
import { insertCustomer } from '../../src/store/customers.ts';
import { openDatabase } from '../../src/store/database.ts';
import { listIrms } from '../../src/store/irms.ts';
import { migrate } from '../../src/store/migrate.ts';
import { insertPlatform } from '../../src/store/platforms.ts';
import { listRequests } from '../../src/store/requests.ts';
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

test('on PostgreSQL list pages are planned once: their statements bind no LIMIT or OFFSET', { skip: !backends().includes('postgres') && 'PostgreSQL is not among the backends' }, async () => {
  const scratch = await scratchDatabase('postgres');
  const database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir, poolSize: 1 });
  try {
    await migrate(database);
    const { db } = database;
    const platformId = randomUUID();
    await insertPlatform(db, { id: platformId, name: 'Plans' });
    // One large customer among small ones, as in production: its statistics make a LIMIT parameter's generic plan look
    // dearer than a custom one, which PostgreSQL then plans anew at every call.
    const customers = Array.from({ length: 30 }, () => randomUUID());
    for (const [index, id] of customers.entries()) {
      await insertCustomer(db, { id, platformId, name: `Customer ${index}`, email: `plans-${index}@example.com`, type: 'customer', companyName: 'Co', address: null });
    }
    const big = customers[0]!;
    await sql`
      insert into irms (id, platform_id, platform_customer_id, irm_number, irm_issue_date, ifsc_code, remittance_ad_code,
        remittance_date, remittance_fcc, remittance_fcc_amount, orm_amount_fcc, irm_available_amt, irm_utilized_amt, iec_code,
        pan_number, remitter_name, remitter_country, purpose_of_remittance, authority_status)
      select gen_random_uuid(), ${platformId}::uuid, customer, 'IR' || g, date '2026-01-01' - (g % 700), 'HDFC0000001', '0510001',
        date '2026-01-01' - (g % 700), 'USD', 10, 0, 10, 0, '0599001001', 'ABCDE1234F', 'Remitter', 'US', 'P0102', 'F'
      from generate_series(1, 20000) g,
        lateral (select case when g <= 18000 then ${big}::uuid else (${customers}::uuid[])[2 + g % 29] end as customer) as owner`.execute(db);
    await sql`
      insert into genebrc_requests (id, platform_id, platform_customer_id, request_id, iec_number, record_res_count, upload_type,
        declaration_flag, status, created_at)
      select gen_random_uuid(), ${platformId}::uuid, customer, 'EBRCGWPLANS' || g, '0599001001', 1, '101', 'Y', 'PROCESSED',
        timestamptz '2026-01-01 00:00:00Z' - g * interval '1 hour'
      from generate_series(1, 6000) g,
        lateral (select case when g <= 5400 then ${big}::uuid else (${customers}::uuid[])[2 + g % 29] end as customer) as owner`.execute(db);
    // Statistics as autovacuum keeps them.
    await sql`vacuum analyze`.execute(db);
    for (let call = 0; call < 10; call += 1) {
      await listIrms(db, { customerId: big, offset: 0, limit: 10 });
      await listIrms(db, { customerId: big, offset: 9_000, limit: 10 });
      await listRequests(db, { customerId: big, offset: 0, limit: 10, lineBudget: 2_000 });
    }
    const { rows } = await sql<{ statement: string; generic_plans: number; custom_plans: number }>`
      select statement, generic_plans::int, custom_plans::int from pg_prepared_statements
      where statement like any (array['%limit 10)%', '%limit 10 offset%'])
        and (statement like '%from "irms"%' or statement like '%from "genebrc_requests"%')`.execute(db);
    assert.equal(rows.length, 3, JSON.stringify(rows));
    for (const row of rows) {
      // PostgreSQL plans the first five calls for their values, then keeps the generic plan if it costs no more.
      assert.ok(row.custom_plans <= 5 && row.generic_plans >= 5, `planned at every call: ${JSON.stringify(row)}`);
    }
  } finally {
    await database.close();
    await scratch.drop();
  }
});
