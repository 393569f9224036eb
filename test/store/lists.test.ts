import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { CompiledQuery, sql } from 'kysely';
import { insertCustomer } from '../../src/store/customers.ts';
import { openDatabase } from '../../src/store/database.ts';
import { lockIrmsByNumber, lockingIrmsByNumber } from '../../src/store/irms.ts';
import { migrate } from '../../src/store/migrate.ts';
import { backends, scratchDatabase } from '../support/harness.ts';
import { seedSkewedLists } from '../support/skewed-lists.ts';

type PlanNode = { 'Node Type': string; 'Actual Rows': number; 'Actual Loops': number; Plans?: PlanNode[] };

/** Every row every node of the plan produced, over all its loops: the statement's work, whatever its plan. */
function rowsProduced(node: PlanNode): number {
  return node['Actual Rows'] * node['Actual Loops'] + (node.Plans ?? []).reduce((sum, child) => sum + rowsProduced(child), 0);
}

for (const backend of backends()) {
  describe(`Lists of numbers as one parameter [${backend}]`, () => {
    test('a batch of IRM numbers against a customer the statistics do not count yet: the list is read once, not once a row', async () => {
      const scratch = await scratchDatabase(backend);
      const database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir });
      try {
        await migrate(database);
        const { db } = database;
        const { platformId } = await seedSkewedLists(db);
        // A new customer's first pull: its IRMs are stored after the last analyze, which no autovacuum may redo here.
        await sql`alter table irms set (autovacuum_enabled = false)`.execute(db);
        const customerId = randomUUID();
        await insertCustomer(db, { id: customerId, platformId, name: 'New', email: 'new@example.com', type: 'customer', companyName: 'Co', address: null });
        await sql`
          insert into irms (id, platform_id, platform_customer_id, irm_number, irm_issue_date, ifsc_code, remittance_ad_code,
            remittance_date, remittance_fcc, remittance_fcc_amount, orm_amount_fcc, irm_available_amt, irm_utilized_amt, iec_code,
            pan_number, remitter_name, remitter_country, purpose_of_remittance, authority_status)
          select gen_random_uuid(), ${platformId}::uuid, ${customerId}::uuid, 'NEW' || g, date '2026-01-01' - (g % 300), 'HDFC0000001',
            '0510001', date '2026-01-01' - (g % 300), 'USD', 10, 0, 10, 0, '0599001001', 'ABCDE1234F', 'Remitter', 'US', 'P0102', 'F'
          from generate_series(1, 5000) g`.execute(db);
        const numbers = Array.from({ length: 1_000 }, (_, index) => `NEW${1 + index * 5}`);

        const locked = await db.transaction().execute((tx) => lockIrmsByNumber(tx, customerId, numbers));
        assert.deepEqual(new Set(locked.map((irm) => irm.irm_number)), new Set(numbers));

        const statement = lockingIrmsByNumber(db, customerId, numbers).compile();
        const { rows } = await db.transaction().execute((tx) =>
          tx.executeQuery<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(CompiledQuery.raw(`explain (analyze, format json) ${statement.sql}`, [...statement.parameters])),
        );
        const work = rowsProduced(rows[0]!['QUERY PLAN'][0].Plan);
        // Reading the customer's 5,000 IRMs and keeping 1,000 is under 10,000 rows; expanding the list once per IRM read,
        // as the JSON list did, is millions.
        assert.ok(work < 20_000, `${work} rows produced: ${JSON.stringify(rows[0]!['QUERY PLAN'][0].Plan)}`);
      } finally {
        await database.close();
        await scratch.drop();
      }
    });
  });
}
