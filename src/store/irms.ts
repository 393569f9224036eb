import { randomUUID } from 'node:crypto';
import { sql, type Kysely, type Selectable } from 'kysely';
import type { AuthorityIrm } from '../authority/authority.ts';
import { readPage, type DayCounts, type PageWindow } from './paging.ts';
import type { IrmsTable, Schema } from './schema.ts';

export type IrmRow = Selectable<IrmsTable>;

/** How many IRMs one upsert statement (and one transaction of a pull) takes. */
export const UPSERT_BATCH = 500;

/**
 * Stores IRMs pulled from the authority: one row per customer and IRM number, updated in place.
 * Balances are set when an IRM is first seen and from then on follow this service's pushes, so a
 * pull never undoes a reservation the authority has not heard of yet. The issue date is kept as first
 * seen too (a bank's IRM does not change date), which keeps irm_day_counts exact. Returns the IRMs stored for the first
 * time.
 */
export async function upsertIrms(
  db: Kysely<Schema>,
  owner: { platformId: string; customerId: string },
  irms: readonly AuthorityIrm[],
): Promise<IrmRow[]> {
  if (irms.length > UPSERT_BATCH) throw new Error(`At most ${UPSERT_BATCH} IRMs an upsert`);
  if (irms.length === 0) return [];
  {
    const batch = irms.map((irm) => ({
      id: randomUUID(),
      platform_id: owner.platformId,
      platform_customer_id: owner.customerId,
      irm_number: irm.irmNumber,
      irm_issue_date: irm.irmIssueDate,
      ifsc_code: irm.ifscCode,
      remittance_ad_code: irm.remittanceAdCode,
      remittance_date: irm.remittanceDate,
      remittance_fcc: irm.remittanceFCC,
      remittance_fcc_amount: irm.remittanceFCCAmount,
      orm_amount_fcc: irm.ormAmountFCC,
      irm_available_amt: irm.irmAvailableAmt,
      irm_utilized_amt: irm.irmUtilizedAmt,
      iec_code: irm.iecCode,
      pan_number: irm.panNumber,
      remitter_name: irm.remitterName,
      remitter_country: irm.remitterCountry,
      purpose_of_remittance: irm.purposeOfRemittance,
    }));
    const rows = await db
      .insertInto('irms')
      .values(batch)
      .onConflict((oc) =>
        oc.columns(['platform_customer_id', 'irm_number']).doUpdateSet((eb) => ({
          ifsc_code: eb.ref('excluded.ifsc_code'),
          remittance_ad_code: eb.ref('excluded.remittance_ad_code'),
          remittance_date: eb.ref('excluded.remittance_date'),
          remittance_fcc: eb.ref('excluded.remittance_fcc'),
          orm_amount_fcc: eb.ref('excluded.orm_amount_fcc'),
          iec_code: eb.ref('excluded.iec_code'),
          pan_number: eb.ref('excluded.pan_number'),
          remitter_name: eb.ref('excluded.remitter_name'),
          remitter_country: eb.ref('excluded.remitter_country'),
          purpose_of_remittance: eb.ref('excluded.purpose_of_remittance'),
          updated_at: sql<Date>`now()`,
        })),
      )
      // xmax is 0 on a row version this statement inserted, and set on one it updated: the IRMs seen for the first time.
      .returningAll()
      .returning(sql<boolean>`xmax = 0`.as('inserted'))
      .execute();
    return rows.filter((row) => row.inserted).map(({ inserted: _inserted, ...row }) => row);
  }
}

export type IrmFilter = {
  customerId: string;
  irmNumber?: string | undefined;
  fromDate?: string | undefined;
  toDate?: string | undefined;
};

/**
 * A page of a customer's IRMs, newest issue date first. The total comes from irm_customer_counts or irm_day_counts
 * (or, for one IRM number, from the one row there may be), so it does not grow with the customer's IRMs. The page's
 * ids come from the index alone and only their rows are read; a later page starts at the issue date it begins on,
 * found from irm_day_counts (readPage).
 */
export async function listIrms(
  db: Kysely<Schema>,
  filter: IrmFilter & { offset: number; limit: number },
): Promise<{ rows: IrmRow[]; total: number }> {
  let matching = db.selectFrom('irms').where('platform_customer_id', '=', filter.customerId);
  if (filter.irmNumber) matching = matching.where('irm_number', '=', filter.irmNumber);
  if (filter.fromDate) matching = matching.where('irm_issue_date', '>=', filter.fromDate);
  if (filter.toDate) matching = matching.where('irm_issue_date', '<=', filter.toDate);
  if (filter.irmNumber) {
    // At most one row: read it, and count it.
    const rows = await matching.selectAll().execute();
    return { rows: rows.slice(filter.offset, filter.offset + filter.limit), total: rows.length };
  }
  const rowsOf = (window: PageWindow) => {
    const direction = window.reverse ? 'asc' : 'desc';
    const within = window.reverse ? 'desc' : 'asc';
    const page = (window.fromDay === undefined ? matching : matching.where('irm_issue_date', '<=', window.fromDay))
      .select('id')
      .orderBy('irm_issue_date', direction)
      .orderBy('irm_number', within)
      .offset(window.offset)
      .limit(window.limit);
    return db
      .selectFrom('irms')
      .innerJoin(page.as('page'), 'page.id', 'irms.id')
      .selectAll('irms')
      .orderBy('irm_issue_date', direction)
      .orderBy('irm_number', within);
  };
  return readPage(db, filter, rowsOf, irmTotal(filter), irmDays(filter));
}

/** The customer's IRMs per issue date, within the dates given. */
function irmDays(filter: IrmFilter): DayCounts {
  return sql`select irm_issue_date as day, irms as rows from irm_day_counts where platform_customer_id = ${filter.customerId}${
    filter.fromDate ? sql` and irm_issue_date >= ${filter.fromDate}` : sql``
  }${filter.toDate ? sql` and irm_issue_date <= ${filter.toDate}` : sql``} and irms > 0`;
}

/** How many IRMs a customer has, with the issue dates given: one row without dates, one row a day with them. */
function irmTotal(filter: IrmFilter) {
  if (!filter.fromDate && !filter.toDate) {
    return sql<number>`coalesce((select irms from irm_customer_counts where platform_customer_id = ${filter.customerId}), 0)`;
  }
  return sql<number>`(${countByDay(filter)})`;
}

function countByDay(filter: IrmFilter) {
  return sql`select coalesce(sum(irms), 0)::int from irm_day_counts where platform_customer_id = ${filter.customerId}${
    filter.fromDate ? sql` and irm_issue_date >= ${filter.fromDate}` : sql``
  }${filter.toDate ? sql` and irm_issue_date <= ${filter.toDate}` : sql``}`;
}

/** What a push checks its lines against and reserves. */
export type IrmForPush = Pick<
  IrmRow,
  'id' | 'irm_number' | 'irm_issue_date' | 'ifsc_code' | 'remittance_fcc' | 'purpose_of_remittance' | 'irm_available_amt' | 'remittance_date'
>;

export async function findIrmsByNumber(db: Kysely<Schema>, customerId: string, irmNumbers: readonly string[]): Promise<IrmForPush[]> {
  if (irmNumbers.length === 0) return [];
  return db
    .selectFrom('irms')
    .select(['id', 'irm_number', 'irm_issue_date', 'ifsc_code', 'remittance_fcc', 'purpose_of_remittance', 'irm_available_amt', 'remittance_date'])
    .where('platform_customer_id', '=', customerId)
    .where('irm_number', 'in', [...irmNumbers])
    .execute();
}

export async function markIrmsPulled(db: Kysely<Schema>, customerId: string, at: Date): Promise<void> {
  await db.updateTable('platform_customers').set({ irms_pulled_at: at }).where('id', '=', customerId).execute();
}

/** What a match (src/services/irm-matching.ts) reads of an IRM: its evidence and the push line's IRM side. */
export type IrmForMatch = Pick<
  IrmRow,
  | 'irm_number'
  | 'irm_issue_date'
  | 'ifsc_code'
  | 'remittance_ad_code'
  | 'remittance_date'
  | 'remittance_fcc'
  | 'purpose_of_remittance'
  | 'irm_available_amt'
  | 'remitter_name'
  | 'remitter_country'
>;

/**
 * The customer's IRMs with an available balance, in the given currencies, received (remittance_date) within the given
 * dates, inclusive: oldest remittance first, then IRM number, at most `limit` of them. One statement, on the index
 * irms_customer_received (migration 0014): its walk is the customer's IRMs received within the dates, not all of them.
 */
export async function findIrmsForMatch(
  db: Kysely<Schema>,
  filter: { customerId: string; currencies: readonly string[]; fromDate: string; toDate: string; limit: number },
): Promise<IrmForMatch[]> {
  if (filter.currencies.length === 0 || filter.limit <= 0) return [];
  return db
    .selectFrom('irms')
    .select([
      'irm_number',
      'irm_issue_date',
      'ifsc_code',
      'remittance_ad_code',
      'remittance_date',
      'remittance_fcc',
      'purpose_of_remittance',
      'irm_available_amt',
      'remitter_name',
      'remitter_country',
    ])
    .where('platform_customer_id', '=', filter.customerId)
    .where(sql<boolean>`irm_available_amt > 0`)
    .where('remittance_fcc', 'in', [...filter.currencies])
    .where('remittance_date', '>=', filter.fromDate)
    .where('remittance_date', '<=', filter.toDate)
    .orderBy('remittance_date')
    .orderBy('irm_number')
    .limit(filter.limit)
    .execute();
}

/** What the spreadsheet template shows of an IRM, and decides by. */
export type IrmForTemplate = Pick<
  IrmRow,
  'irm_number' | 'irm_issue_date' | 'ifsc_code' | 'remittance_ad_code' | 'remittance_fcc' | 'purpose_of_remittance' | 'irm_available_amt'
>;

/** How many IRMs one statement of irmsInListOrder reads. */
export const IRM_READ_BATCH = 1_000;

/**
 * Every IRM of the customer that the filter matches, in the list's order (newest issue date first, then IRM number),
 * read `batchSize` at a time with a keyset on (issue date, IRM number) over irms_customer_newest: each statement starts
 * where the last one stopped, so reading 100,000 IRMs costs 100 short statements, holds one batch in memory and no
 * transaction or connection between batches. An IRM's issue date never changes (upsertIrms keeps it as first seen),
 * so an IRM is read once even while pulls and pushes change the others; balances are each batch's as it is read.
 */
export async function* irmsInListOrder(
  db: Kysely<Schema>,
  filter: IrmFilter,
  batchSize: number = IRM_READ_BATCH,
): AsyncGenerator<IrmForTemplate> {
  let after: { date: string; number: string } | undefined;
  for (;;) {
    let query = db
      .selectFrom('irms')
      .select(['irm_number', 'irm_issue_date', 'ifsc_code', 'remittance_ad_code', 'remittance_fcc', 'purpose_of_remittance', 'irm_available_amt'])
      .where('platform_customer_id', '=', filter.customerId);
    if (filter.irmNumber) query = query.where('irm_number', '=', filter.irmNumber);
    if (filter.fromDate) query = query.where('irm_issue_date', '>=', filter.fromDate);
    if (filter.toDate) query = query.where('irm_issue_date', '<=', filter.toDate);
    if (after) {
      const { date, number } = after;
      // The order mixes directions, so no row comparison: an index bound on the date, then the rest of that date.
      query = query
        .where('irm_issue_date', '<=', date)
        .where((eb) => eb.or([eb('irm_issue_date', '<', date), eb('irm_number', '>', number)]));
    }
    const batch = await query.orderBy('irm_issue_date', 'desc').orderBy('irm_number', 'asc').limit(batchSize).execute();
    yield* batch;
    if (batch.length < batchSize) return;
    const last = batch[batch.length - 1]!;
    after = { date: last.irm_issue_date, number: last.irm_number };
  }
}
