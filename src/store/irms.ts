import { randomUUID } from 'node:crypto';
import { sql, type Kysely, type Selectable } from 'kysely';
import type { AuthorityIrm } from '../authority/authority.ts';
import { readPage, type PageWindow } from './paging.ts';
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
 * ids come from the index alone and only their rows are read, from whichever end is nearer (readPage).
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
    const page = matching
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
  return readPage(db, filter, rowsOf, irmTotal(filter));
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
