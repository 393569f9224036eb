import { randomUUID } from 'node:crypto';
import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type { AuthorityIrm } from '../authority/authority.ts';
import { CANCELLED_AT_AUTHORITY } from '../domain/irm-status.ts';
import { isUuid } from './ids.ts';
import { anyText } from './lists.ts';
import { pageRows, readPage, type DayCounts, type PageWindow } from './paging.ts';
import { OPEN_STATUS_LITERALS } from './requests.ts';
import type { CustomerRow } from './customers.ts';
import type { IrmsTable, Schema } from './schema.ts';

export type IrmRow = Selectable<IrmsTable>;

/** How many IRMs one statement (and one transaction of a pull) takes. */
export const UPSERT_BATCH = 1_000;

/** An IRM's values to store: the authority's fields, with the balances this service keeps (irm-status.ts, balanceAfterPull). */
export type IrmValues = AuthorityIrm;

/** The columns an IRM's values write (all but its identity and issue date). */
export function irmColumns(irm: IrmValues) {
  return {
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
    authority_status: irm.irmStatus,
  };
}

/**
 * Stores IRMs seen for the first time: one row per customer and IRM number. An IRM another process stored meanwhile
 * is left as it is (that pull stored and announced it). Returns the rows this statement inserted.
 */
export async function insertIrms(db: Kysely<Schema>, owner: { platformId: string; customerId: string }, irms: readonly IrmValues[]): Promise<IrmRow[]> {
  if (irms.length > UPSERT_BATCH) throw new Error(`At most ${UPSERT_BATCH} IRMs an insert`);
  if (irms.length === 0) return [];
  return db
    .insertInto('irms')
    .values(irms.map((irm) => ({
      id: randomUUID(),
      platform_id: owner.platformId,
      platform_customer_id: owner.customerId,
      irm_number: irm.irmNumber,
      irm_issue_date: irm.irmIssueDate,
      ...irmColumns(irm),
    })))
    .onConflict((oc) => oc.columns(['platform_customer_id', 'irm_number']).doNothing())
    .returningAll()
    .execute();
}

/**
 * The customer's IRMs of these numbers, locked until the transaction ends (in id order, as a push locks them, so the
 * two cannot deadlock): a pull compares and rewrites them while no push reserves on them.
 */
export async function lockIrmsByNumber(db: Kysely<Schema>, customerId: string, irmNumbers: readonly string[]): Promise<IrmRow[]> {
  if (irmNumbers.length === 0) return [];
  return lockingIrmsByNumber(db, customerId, irmNumbers).execute();
}

/** lockIrmsByNumber's statement. */
export function lockingIrmsByNumber(db: Kysely<Schema>, customerId: string, irmNumbers: readonly string[]) {
  return db
    .selectFrom('irms')
    .selectAll()
    .where('platform_customer_id', '=', customerId)
    .where('irm_number', '=', anyText(irmNumbers))
    .orderBy('id')
    .forUpdate();
}

/**
 * Rewrites stored IRMs with new values in one statement, the issue date excepted (kept as first seen: irm_day_counts
 * counts IRMs by it). Returns the rows as written.
 */
export async function updateIrms(db: Kysely<Schema>, irms: readonly (IrmValues & { id: string })[]): Promise<IrmRow[]> {
  if (irms.length === 0) return [];
  const rows = JSON.stringify(irms.map((irm) => ({ id: irm.id, ...irmColumns(irm) })));
  const { rows: updated } = await sql<IrmRow>`
    update irms set
      ifsc_code = n.ifsc_code, remittance_ad_code = n.remittance_ad_code, remittance_date = n.remittance_date,
      remittance_fcc = n.remittance_fcc, remittance_fcc_amount = n.remittance_fcc_amount, orm_amount_fcc = n.orm_amount_fcc,
      irm_available_amt = n.irm_available_amt, irm_utilized_amt = n.irm_utilized_amt, iec_code = n.iec_code,
      pan_number = n.pan_number, remitter_name = n.remitter_name, remitter_country = n.remitter_country,
      purpose_of_remittance = n.purpose_of_remittance, authority_status = n.authority_status, updated_at = now()
    from jsonb_to_recordset(${rows}::jsonb) as n(
      id uuid, ifsc_code text, remittance_ad_code text, remittance_date date, remittance_fcc text,
      remittance_fcc_amount numeric, orm_amount_fcc numeric, irm_available_amt numeric, irm_utilized_amt numeric,
      iec_code text, pan_number text, remitter_name text, remitter_country text, purpose_of_remittance text,
      authority_status text)
    where irms.id = n.id
    returning irms.*`.execute(db);
  return updated;
}

/**
 * What this service holds on the customer's IRMs of these numbers that the authority has not acknowledged yet, per IRM
 * number (contract 13): the reserved lines of requests stored and not yet answered (or held for reconciliation), and
 * of requests acknowledged at or after `fetchedFrom` (the authority's figures, read from then on, may predate the
 * acknowledgement). Read through the open requests (genebrc_requests_open), not the lines.
 */
export async function heldAmounts(db: Kysely<Schema>, customerId: string, irmNumbers: readonly string[], fetchedFrom: Date): Promise<Map<string, string>> {
  if (irmNumbers.length === 0) return new Map();
  const { rows } = await sql<{ irm_number: string; held: string }>`
    select line.irm_number, sum(line.mapped_amount)::numeric(18, 2) as held
    from genebrc_requests request
    join genebrc_request_lines line on line.request_id = request.id
    where request.status in (${OPEN_STATUS_LITERALS}) and request.platform_customer_id = ${customerId}
      and (request.status = 'SUBMITTING' or request.updated_at >= ${fetchedFrom})
      and line.reserved and line.irm_number = ${anyText(irmNumbers)}
    group by line.irm_number`.execute(db);
  return new Map(rows.map((row) => [row.irm_number, String(row.held)]));
}

export type IrmFilter = {
  customerId: string;
  irmNumber?: string | undefined;
  fromDate?: string | undefined;
  toDate?: string | undefined;
};

/**
 * What a refresh reads of its customer before it shows a page: whether its credentials may be used, and when its IRMs
 * were last pulled. Only the customer's own platform reads it.
 */
export type PageCustomer = Pick<CustomerRow, 'authority_verified_at' | 'iec_code' | 'authority_credentials_status' | 'irms_pulled_at'> & {
  hasApiCredentials: boolean;
};

/** PageCustomer as the page's statement reads it (one JSON value: its times as text). */
type PageCustomerJson = Omit<PageCustomer, 'authority_verified_at' | 'irms_pulled_at'> & { authority_verified_at: string | null; irms_pulled_at: string | null };

function pageCustomerNote(customerId: string, platformId: string) {
  return sql<PageCustomerJson | null>`(select json_build_object(
      'authority_verified_at', owner.authority_verified_at, 'iec_code', owner.iec_code,
      'authority_credentials_status', owner.authority_credentials_status, 'irms_pulled_at', owner.irms_pulled_at,
      'hasApiCredentials', owner.authority_api_credentials is not null)
    from platform_customers owner where owner.id = ${customerId} and owner.platform_id = ${platformId})`;
}

function pageCustomerOf(json: PageCustomerJson | null | undefined): PageCustomer | undefined {
  if (!json) return undefined;
  const dateOf = (text: string | null) => (text === null ? null : new Date(text));
  return { ...json, authority_verified_at: dateOf(json.authority_verified_at), irms_pulled_at: dateOf(json.irms_pulled_at) };
}

/**
 * listIrms, with the page's customer (PageCustomer) read in the page's statement when the customer is the platform's
 * and the page has a row: a refresh served from a recent pull, as most are, is then one statement. Undefined
 * otherwise (another platform's customer, no IRM on the page, a page of one IRM number, or a page read in more than
 * one statement).
 */
export async function listIrmsWithCustomer(
  db: Kysely<Schema>,
  platformId: string,
  filter: IrmFilter & { offset: number; limit: number },
): Promise<{ rows: IrmRow[]; total: number; customer: PageCustomer | undefined }> {
  if (!isUuid(filter.customerId)) return { rows: [], total: 0, customer: undefined };
  const { rows, total, note } = await listIrms(db, filter, pageCustomerNote(filter.customerId, platformId));
  return { rows, total, customer: pageCustomerOf(note) };
}

/**
 * A page of a customer's IRMs, newest issue date first. The total comes from irm_customer_counts or irm_day_counts
 * (or, for one IRM number, from the one row there may be), so it does not grow with the customer's IRMs. The page's
 * ids come from the index alone and only their rows are read. Every page is one statement with its total (readPage):
 * a later page starts at the issue date it begins on, found from irm_day_counts.
 * `note`: as readPage's (an IRM number's page reads none).
 */
export async function listIrms<Note = never>(
  db: Kysely<Schema>,
  filter: IrmFilter & { offset: number; limit: number },
  note?: RawBuilder<Note>,
): Promise<{ rows: IrmRow[]; total: number; note?: Note | undefined }> {
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
    const from = window.fromDay === undefined ? matching : matching.where('irm_issue_date', '<=', window.fromDay);
    const page = pageRows(from.select('id').orderBy('irm_issue_date', direction).orderBy('irm_number', within), window);
    return db
      .selectFrom('irms')
      .innerJoin(page.as('page'), 'page.id', 'irms.id')
      .selectAll('irms')
      .orderBy('irm_issue_date', direction)
      .orderBy('irm_number', within);
  };
  return readPage(db, filter, rowsOf, irmTotal(filter), {
    counts: irmDays(filter),
    months: filter.fromDate || filter.toDate ? undefined : irmMonths(filter.customerId),
    order: sql`order by page.irm_issue_date desc, page.irm_number asc`,
  }, note);
}

/** The customer's IRMs per issue date, within the dates given. */
function irmDays(filter: IrmFilter): DayCounts {
  return sql`select irm_issue_date as day, irms as rows from irm_day_counts where platform_customer_id = ${filter.customerId}${
    filter.fromDate ? sql` and irm_issue_date >= ${filter.fromDate}` : sql``
  }${filter.toDate ? sql` and irm_issue_date <= ${filter.toDate}` : sql``} and irms > 0`;
}

/** The customer's IRMs per month of issue date (the month's first day). */
function irmMonths(customerId: string): DayCounts {
  return sql`select irm_month as day, irms as rows from irm_month_counts where platform_customer_id = ${customerId} and irms > 0`;
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
  'id' | 'irm_number' | 'irm_issue_date' | 'ifsc_code' | 'remittance_fcc' | 'purpose_of_remittance' | 'irm_available_amt' | 'remittance_date' | 'authority_status'
>;

export async function findIrmsByNumber(db: Kysely<Schema>, customerId: string, irmNumbers: readonly string[]): Promise<IrmForPush[]> {
  if (irmNumbers.length === 0) return [];
  return db
    .selectFrom('irms')
    .select(['id', 'irm_number', 'irm_issue_date', 'ifsc_code', 'remittance_fcc', 'purpose_of_remittance', 'irm_available_amt', 'remittance_date', 'authority_status'])
    .where('platform_customer_id', '=', customerId)
    .where('irm_number', '=', anyText(irmNumbers))
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
    .where('authority_status', '<>', CANCELLED_AT_AUTHORITY)
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
  'irm_number' | 'irm_issue_date' | 'ifsc_code' | 'remittance_ad_code' | 'remittance_fcc' | 'purpose_of_remittance' | 'irm_available_amt' | 'authority_status'
>;

/** How many IRMs one statement of irmsInListOrder reads. */
export const IRM_READ_BATCH = 1_000;

/**
 * Every IRM of the customer that the filter matches, in the list's order (newest issue date first, then IRM number),
 * read `batchSize` at a time with a keyset on (issue date, IRM number) over irms_customer_newest: each statement starts
 * where the last one stopped, so reading 100,000 IRMs costs 100 short statements, holds one batch in memory and no
 * transaction or connection between batches (whole rows: the template and the utilisation report read them). An IRM's issue date never changes (upsertIrms keeps it as first seen),
 * so an IRM is read once even while pulls and pushes change the others; balances are each batch's as it is read.
 */
export async function* irmsInListOrder(
  db: Kysely<Schema>,
  filter: IrmFilter,
  batchSize: number = IRM_READ_BATCH,
): AsyncGenerator<IrmRow> {
  let after: { date: string; number: string } | undefined;
  for (;;) {
    let query = db
      .selectFrom('irms')
      .selectAll()
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
