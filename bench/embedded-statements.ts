/**
 * `npm run bench:embedded-statements`: what preparing statements buys on the embedded database, read by read.
 *
 * Seeds a scratch embedded folder (bench/tmp/embedded-statements) with 30 customers, one of them large (18,000 of the
 * 20,000 IRMs and 5,400 of the 6,000 GenEBRC requests, over two years), then opens it once and reads it through two
 * Kysely instances over that one PGlite: one with the service's wrapper (`preparingPGlite`, named statements) and one
 * on PGlite's own `query` (parse, describe, plan and run at every call, as before 2026-12-02). The reads are the
 * store's own: a customer by id, IRM pages 1 and at offset 9,000, GenEBRC pages 1 and at offset 2,700. The two take
 * turns, five rounds each, and the script prints the median time per call of each read, each way, and their ratio.
 * In-process and one call at a time, so it measures the database's part alone (PGlite runs on this thread). PGlite is
 * opened with its default settings (the service sets a 16 MB page cache; the seeded folder fits either).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Kysely, PGliteDialect, sql } from 'kysely';
import type { PGlite } from '@electric-sql/pglite';
import { insertCustomer, findCustomer } from '../src/store/customers.ts';
import { openDatabase } from '../src/store/database.ts';
import { listIrms } from '../src/store/irms.ts';
import { migrate } from '../src/store/migrate.ts';
import { insertPlatform } from '../src/store/platforms.ts';
import { preparingPGlite } from '../src/store/prepared-statements.ts';
import { listRequests } from '../src/store/requests.ts';
import type { Schema } from '../src/store/schema.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const DATA_DIR = path.join(ROOT, 'bench', 'tmp', 'embedded-statements');
const ROUNDS = 5;
const CALLS = 400;

fs.rmSync(DATA_DIR, { recursive: true, force: true });
const platformId = randomUUID();
const customers = Array.from({ length: 30 }, () => randomUUID());
const big = customers[0]!;
{
  const database = await openDatabase({ dataDir: DATA_DIR });
  await migrate(database);
  const { db } = database;
  await insertPlatform(db, { id: platformId, name: 'Statements' });
  for (const [index, id] of customers.entries()) {
    await insertCustomer(db, { id, platformId, name: `Customer ${index}`, email: `statements-${index}@example.com`, type: 'customer', companyName: 'Co', address: null });
  }
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
    select gen_random_uuid(), ${platformId}::uuid, customer, 'EBRCGWSTMT' || g, '0599001001', 1, '101', 'Y', 'PROCESSED',
      timestamptz '2026-01-01 00:00:00Z' - g * interval '3 hours'
    from generate_series(1, 6000) g,
      lateral (select case when g <= 5400 then ${big}::uuid else (${customers}::uuid[])[2 + g % 29] end as customer) as owner`.execute(db);
  await sql`vacuum analyze`.execute(db);
  await database.close();
}

const { PGlite: PGliteClass, parse, protocol } = await import('@electric-sql/pglite');
const pglite: PGlite = await PGliteClass.create(path.join(DATA_DIR, 'pgdata'));
const ways = {
  prepared: new Kysely<Schema>({ dialect: new PGliteDialect({ pglite: preparingPGlite(pglite, { parse, protocol }) }) }),
  unprepared: new Kysely<Schema>({ dialect: new PGliteDialect({ pglite }) }),
};
const reads: Record<string, (db: Kysely<Schema>) => Promise<unknown>> = {
  'customer by id': (db) => findCustomer(db, platformId, big),
  'IRM page 1': (db) => listIrms(db, { customerId: big, offset: 0, limit: 10 }),
  'IRM page at 9,000': (db) => listIrms(db, { customerId: big, offset: 9_000, limit: 10 }),
  'GenEBRC page 1': (db) => listRequests(db, { customerId: big, offset: 0, limit: 10, lineBudget: 2_000 }),
  'GenEBRC page at 2,700': (db) => listRequests(db, { customerId: big, offset: 2_700, limit: 10, lineBudget: 2_000 }),
};

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
console.log(`embedded database, ${CALLS} calls a round, ${ROUNDS} rounds each way, median µs per call`);
console.log('| read | unprepared | prepared | prepared / unprepared |');
console.log('|---|---|---|---|');
for (const [label, read] of Object.entries(reads)) {
  const rounds: Record<keyof typeof ways, number[]> = { prepared: [], unprepared: [] };
  for (const db of Object.values(ways)) for (let call = 0; call < 50; call += 1) await read(db);
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const [way, db] of Object.entries(ways) as [keyof typeof ways, Kysely<Schema>][]) {
      const started = process.hrtime.bigint();
      for (let call = 0; call < CALLS; call += 1) await read(db);
      rounds[way].push(Number(process.hrtime.bigint() - started) / 1_000 / CALLS);
    }
  }
  const unprepared = median(rounds.unprepared);
  const prepared = median(rounds.prepared);
  console.log(`| ${label} | ${unprepared.toFixed(0)} | ${prepared.toFixed(0)} | ${(prepared / unprepared).toFixed(2)} |`);
}
await pglite.close();
fs.rmSync(DATA_DIR, { recursive: true, force: true });
