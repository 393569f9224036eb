/**
 * `npm run bench:embedded-statements`: what preparing statements buys on the embedded database, read by read.
 *
 * Seeds a scratch embedded folder (bench/tmp/embedded-statements) as `seedSkewedLists` (test/support/skewed-lists.ts)
 * does: 30 customers, one of them large (18,000 of the 20,000 IRMs and 5,400 of the 6,000 GenEBRC requests, over two
 * years). Then it opens the folder once and reads it through two
 * Kysely instances over that one PGlite: one with the service's wrapper (`preparingPGlite`, named statements) and one
 * on PGlite's own `query` (parse, describe, plan and run at every call, as before 2026-12-02). The reads are the
 * store's own: a customer by id, IRM pages 1 and at offset 9,000, GenEBRC pages 1 and at offset 2,700. The two take
 * turns, five rounds each, and the script prints the median time per call of each read, each way, and their ratio.
 * In-process and one call at a time, so it measures the database's part alone (PGlite runs on this thread). PGlite is
 * opened with its default settings (the service sets a 16 MB page cache; the seeded folder fits either).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Kysely, PGliteDialect } from 'kysely';
import type { PGlite } from '@electric-sql/pglite';
import { findCustomer } from '../src/store/customers.ts';
import { openDatabase } from '../src/store/database.ts';
import { listIrms } from '../src/store/irms.ts';
import { migrate } from '../src/store/migrate.ts';
import { preparingPGlite } from '../src/store/prepared-statements.ts';
import { listRequests } from '../src/store/requests.ts';
import type { Schema } from '../src/store/schema.ts';
import { seedSkewedLists } from '../test/support/skewed-lists.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const DATA_DIR = path.join(ROOT, 'bench', 'tmp', 'embedded-statements');
const ROUNDS = 5;
const CALLS = 400;

fs.rmSync(DATA_DIR, { recursive: true, force: true });
const { platformId, big } = await (async () => {
  const database = await openDatabase({ dataDir: DATA_DIR });
  await migrate(database);
  const seeded = await seedSkewedLists(database.db, 3);
  await database.close();
  return seeded;
})();

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
