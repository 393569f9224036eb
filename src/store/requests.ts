import { sql, type Kysely, type Selectable, type SelectQueryBuilder } from 'kysely';
import { NULL_WIRE_LINE } from '../domain/push-line.ts';
import type { ErrorDetail } from '../domain/push-rules.ts';
import { anyUuid } from './lists.ts';
import { pageRows, readPage, readSweep, type DayCounts, type PageWindow, type SweepPosition, type Swept } from './paging.ts';
import type { GenebrcRequestsTable, Schema } from './schema.ts';

export type RequestRow = Selectable<GenebrcRequestsTable>;

export type NewRequest = {
  id: string;
  platformId: string;
  customerId: string;
  requestId: string;
  iecNumber: string;
  recordResCount: number;
  uploadType: string;
  declarationFlag: string;
  status: string;
  errorDetails: ErrorDetail[];
  processedAt: Date | null;
};

export type NewLine = {
  lineIndex: number;
  serialNo: number;
  irmId: string | null;
  irmNumber: string;
  sbCumInvoiceNumber: string;
  mappedAmount: string;
  reserved: boolean;
  payload: Record<string, unknown>;
  status: string;
  errorDetails: ErrorDetail[];
};

export async function insertRequest(db: Kysely<Schema>, request: NewRequest, lines: readonly NewLine[]): Promise<void> {
  await db
    .insertInto('genebrc_requests')
    .values({
      id: request.id,
      platform_id: request.platformId,
      platform_customer_id: request.customerId,
      request_id: request.requestId,
      iec_number: request.iecNumber,
      record_res_count: request.recordResCount,
      upload_type: request.uploadType,
      declaration_flag: request.declarationFlag,
      status: request.status,
      authority_ack_id: null,
      error_details: JSON.stringify(request.errorDetails),
      processed_at: request.processedAt,
    })
    .execute();
  if (lines.length === 0) return;
  // One JSON parameter instead of a dozen bound parameters a line: a 999-line push is one short statement.
  const rows = JSON.stringify(
    lines.map((line) => ({
      line_index: line.lineIndex,
      serial_no: line.serialNo,
      irm_id: line.irmId,
      irm_number: line.irmNumber,
      sb_cum_invoice_number: line.sbCumInvoiceNumber,
      mapped_amount: line.mappedAmount,
      reserved: line.reserved,
      payload: withoutNulls(line.payload),
      status: line.status,
      error_details: line.errorDetails,
    })),
  );
  await sql`
    insert into genebrc_request_lines
      (request_id, line_index, serial_no, irm_id, irm_number, sb_cum_invoice_number, mapped_amount, reserved, payload, status, error_details)
    select ${request.id}::uuid, line_index, serial_no, irm_id, irm_number, sb_cum_invoice_number, mapped_amount, reserved, payload, status, error_details
    from jsonb_to_recordset(${rows}::jsonb) as line(
      line_index integer, serial_no integer, irm_id uuid, irm_number text, sb_cum_invoice_number text,
      mapped_amount numeric, reserved boolean, payload jsonb, status text, error_details jsonb)`.execute(db);
}

/**
 * A payload as stored: without the null fields of the 2.4 shape, which a read gives back (asPushed). A goods line's
 * nulls, keys included, were about 45% of its stored payload (957 bytes, now 504), and the lines' insert is the
 * largest statement of a push.
 */
function withoutNulls(payload: Record<string, unknown>): Record<string, unknown> {
  const stored: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(payload)) {
    if (value !== null || !Object.hasOwn(NULL_WIRE_LINE, field)) stored[field] = value;
  }
  return stored;
}

/**
 * A stored payload as pushed: the null fields of the 2.4 shape that it leaves out given back, in the shape's order of
 * fields (then any other field it has). Lines stored before 2026-12-03 kept their nulls and read the same. Given back
 * here rather than in SQL: a jsonb `||` a line cost the database 40 µs, 40 ms for a 999-line request's lines. A query of
 * one field reads it with `->>`, which gives NULL for a missing key as for a null.
 */
export function asPushed(stored: Record<string, unknown>): Record<string, unknown> {
  return { ...NULL_WIRE_LINE, ...stored };
}

function withPushedPayloads<Row extends { lines: ListedLine[] | null }>(rows: Row[]): Row[] {
  for (const row of rows) for (const line of row.lines ?? []) line.payload = asPushed(line.payload);
  return rows;
}

export type Reservation = { irmId: string; expectedAvailable: string; amount: string };

/**
 * Moves each reservation's amount of its IRM from available to utilised, only where the IRM's available
 * amount is still `expectedAvailable` (what the push was checked against). Returns the ids of the IRMs
 * reserved: one missing means another push got there first, and the caller must roll back.
 * The IRMs are locked in id order first, so concurrent pushes over the same IRMs cannot deadlock.
 */
export async function reserveIrmAmounts(db: Kysely<Schema>, reservations: readonly Reservation[]): Promise<Set<string>> {
  if (reservations.length === 0) return new Set();
  const ids = reservations.map((r) => r.irmId);
  await db.selectFrom('irms').select('id').where('id', '=', anyUuid(ids)).orderBy('id').forUpdate().execute();
  const wanted = JSON.stringify(reservations.map((r) => ({ id: r.irmId, expected: r.expectedAvailable, amount: r.amount })));
  const { rows } = await sql<{ id: string }>`
    update irms
    set irm_available_amt = irm_available_amt - wanted.amount,
        irm_utilized_amt = irm_utilized_amt + wanted.amount,
        updated_at = now()
    from jsonb_to_recordset(${wanted}::jsonb) as wanted(id uuid, expected numeric, amount numeric)
    where irms.id = wanted.id and irms.irm_available_amt = wanted.expected and irms.irm_available_amt >= wanted.amount
    returning irms.id`.execute(db);
  return new Set(rows.map((row) => row.id));
}

/**
 * Gives the amounts still reserved by a request's lines back to their IRMs: all of them, or only
 * those of lines in `onlyStatus`. The lines are marked unreserved in the same statement run. An IRM cancelled at the
 * authority (C) meanwhile gets nothing back to map: it stays at 0 available (contract 13). Utilised never goes below
 * 0: a pull may have set it from the authority's figures to less than this service reserved.
 */
export async function releaseReservations(db: Kysely<Schema>, requestId: string, onlyStatus?: string): Promise<void> {
  const statusFilter = onlyStatus === undefined ? sql`true` : sql`status = ${onlyStatus}`;
  await sql`
    with released as (
      update genebrc_request_lines set reserved = false
      where request_id = ${requestId} and reserved and ${statusFilter}
      returning irm_id, mapped_amount
    ), per_irm as (
      select irm_id, sum(mapped_amount) as amount from released where irm_id is not null group by irm_id
    )
    update irms
    set irm_available_amt = case when irms.authority_status = 'C' then 0 else irm_available_amt + per_irm.amount end,
        irm_utilized_amt = greatest(irm_utilized_amt - per_irm.amount, 0),
        updated_at = now()
    from per_irm
    where irms.id = per_irm.irm_id`.execute(db);
}

/** Compare-and-set on the status: the moved row for the one caller that made the move, else undefined. */
export async function moveRequest(
  db: Kysely<Schema>,
  id: string,
  from: string,
  change: { status: string; authorityAckId?: string | null; errorDetails?: ErrorDetail[]; processedAt?: Date | null },
): Promise<RequestRow | undefined> {
  return db
    .updateTable('genebrc_requests')
    .set({
      status: change.status,
      ...(change.authorityAckId !== undefined ? { authority_ack_id: change.authorityAckId } : {}),
      ...(change.errorDetails !== undefined ? { error_details: JSON.stringify(change.errorDetails) } : {}),
      ...(change.processedAt !== undefined ? { processed_at: change.processedAt } : {}),
      updated_at: new Date(),
    })
    .where('id', '=', id)
    .where('status', '=', from)
    .returningAll()
    .executeTakeFirst();
}

export type LineResultUpdate = {
  serialNo: number;
  status: string;
  ebrcNumber: string | null;
  ebrcDate: string | null;
  errorDetails: ErrorDetail[];
};

/**
 * Writes the authority's per-line results of a request in one statement. A line that became an eBRC keeps its amount
 * utilised for good: it holds no reservation any more. A failed line keeps its reservation for releaseReservations.
 */
export async function applyLineResults(db: Kysely<Schema>, requestId: string, results: readonly LineResultUpdate[]): Promise<void> {
  if (results.length === 0) return;
  const rows = JSON.stringify(
    results.map((r) => ({ serial_no: r.serialNo, status: r.status, ebrc_number: r.ebrcNumber, ebrc_date: r.ebrcDate, error_details: r.errorDetails })),
  );
  await sql`
    update genebrc_request_lines as line
    set status = r.status, ebrc_number = r.ebrc_number, ebrc_date = r.ebrc_date::date, error_details = r.error_details,
        reserved = line.reserved and r.status <> 'GENERATED'
    from jsonb_to_recordset(${rows}::jsonb) as r(serial_no integer, status text, ebrc_number text, ebrc_date text, error_details jsonb)
    where line.request_id = ${requestId} and line.serial_no = r.serial_no`.execute(db);
}

export async function setLinesStatus(db: Kysely<Schema>, requestId: string, status: string): Promise<void> {
  await db.updateTable('genebrc_request_lines').set({ status }).where('request_id', '=', requestId).execute();
}

export async function findRequestById(db: Kysely<Schema>, id: string): Promise<RequestRow | undefined> {
  return db.selectFrom('genebrc_requests').selectAll().where('id', '=', id).executeTakeFirst();
}


export type RequestFilter = {
  customerId: string;
  requestId?: string | undefined;
  status?: string | undefined;
  fromDate?: string | undefined;
  toDate?: string | undefined;
};

/** The stored statuses of a request not yet final: SUBMITTING (not yet acknowledged) and PENDING. */
const OPEN_STATUSES = ['SUBMITTING', 'PENDING'];

/**
 * The open statuses as SQL literals, for `status in (…)`: the open requests' partial index (genebrc_requests_open)
 * names them, and PostgreSQL uses it for a prepared statement's generic plan only when the statement's own text
 * implies its condition, which bound values never do.
 */
export const OPEN_STATUS_LITERALS = sql.join(OPEN_STATUSES.map((status) => sql.lit(status)));

/** The stored statuses a status filter means: PENDING covers SUBMITTING, which clients see as PENDING. */
function storedStatuses(status: string): string[] {
  return status === 'PENDING' ? OPEN_STATUSES : [status];
}

/** A request's line as the status operation and the events show it: its outcome, without the payload as pushed. */
export type LineState = {
  serialNo: number;
  irmNumber: string;
  sbCumInvoiceNumber: string;
  status: string;
  ebrcNumber: string | null;
  ebrcDate: string | null;
  errorDetails: ErrorDetail[];
};

/** A request's line as a list shows it: its state and the payload as pushed. */
export type ListedLine = LineState & { payload: Record<string, unknown> };

/** A request with its lines' states, read in one statement. */
export type RequestWithLineStates = RequestRow & { lines: LineState[] };

/** A request with its lines, read in one statement. */
export type ListedRequest = RequestRow & { lines: ListedLine[] };

/**
 * A request of a page: its row, how many lines it has, and, when the lines of the whole page fit the page's line
 * budget, either its stored record (a final request whose record was rendered: `record`, and no lines) or its lines
 * (`lines`). Both null when the page does not fit: the caller reads them with requestsForPage, a budget's worth at a
 * time.
 */
export type PageRequest = RequestRow & { line_count: number; record: string | null; lines: ListedLine[] | null };

/** A request of a page read by id: its stored record, or its lines when it has none. */
export type RecordOrLines = RequestRow & { record: string | null; lines: ListedLine[] | null };

/** A line's state as JSON fields (LineState), for json_build_object. */
const LINE_STATE_FIELDS = sql`
    'serialNo', line.serial_no, 'irmNumber', line.irm_number, 'sbCumInvoiceNumber', line.sb_cum_invoice_number,
    'status', line.status, 'ebrcNumber', line.ebrc_number, 'ebrcDate', line.ebrc_date,
    'errorDetails', line.error_details`;

/**
 * A line as LINE_STATE_FIELDS reads it back once stored by insertRequest, before anything has moved it: no eBRC yet.
 * (Keep the two together: a field added to one belongs in the other.)
 */
export function insertedLineState(line: NewLine): LineState {
  return {
    serialNo: line.serialNo,
    irmNumber: line.irmNumber,
    sbCumInvoiceNumber: line.sbCumInvoiceNumber,
    status: line.status,
    ebrcNumber: null,
    ebrcDate: null,
    errorDetails: line.errorDetails,
  };
}

/**
 * A request's lines in line order, as one JSON value: one column to decode instead of a row per line, and no
 * second round trip. Dates in JSON are always YYYY-MM-DD, as the date columns are read.
 */
const LINES = sql<ListedLine[]>`(
  select coalesce(json_agg(json_build_object(${LINE_STATE_FIELDS}, 'payload', line.payload) order by line.line_index), '[]')
  from genebrc_request_lines line where line.request_id = genebrc_requests.id)`;

/** LINES without the payloads: a 999-line request's payloads are about 1 MB that a status view does not show. */
const LINE_STATES = sql<LineState[]>`(
  select coalesce(json_agg(json_build_object(${LINE_STATE_FIELDS}) order by line.line_index), '[]')
  from genebrc_request_lines line where line.request_id = genebrc_requests.id)`;

/** A customer's request by its requestId, with its lines' states, in one statement. */
export async function findRequestOfCustomer(db: Kysely<Schema>, customerId: string, requestId: string): Promise<RequestWithLineStates | undefined> {
  return db
    .selectFrom('genebrc_requests')
    .selectAll()
    .select(LINE_STATES.as('lines'))
    .where('platform_customer_id', '=', customerId)
    .where('request_id', '=', requestId)
    .executeTakeFirst();
}

/** One request's lines in line order, in the shape a page carries them. */
export async function linesOfRequest(db: Kysely<Schema>, id: string): Promise<ListedLine[]> {
  const row = await db.selectFrom('genebrc_requests').select(LINES.as('lines')).where('id', '=', id).executeTakeFirst();
  return row === undefined ? [] : withPushedPayloads([row])[0]!.lines;
}

/**
 * The requests of these ids, each with its stored record or, without one, its lines (aggregated only then), in no
 * particular order: one statement.
 */
export async function requestsForPage(db: Kysely<Schema>, ids: readonly string[]): Promise<RecordOrLines[]> {
  if (ids.length === 0) return [];
  return withPushedPayloads(await db
    .selectFrom('genebrc_requests')
    .leftJoin('genebrc_request_records as stored', 'stored.request_id', 'genebrc_requests.id')
    .selectAll('genebrc_requests')
    .select(['stored.record', sql<ListedLine[] | null>`case when stored.record is null then ${LINES} end`.as('lines')])
    .where('genebrc_requests.id', 'in', ids)
    .execute());
}

/**
 * Stores final requests' records, rendered by the caller from the request as it is now (the lifecycle in the
 * transaction of the final move; the list for a request final before migration 0025). A request that has one keeps
 * it: a final request never changes, so the texts are the same, and concurrent writers neither wait nor fail.
 */
export async function storeRecords(db: Kysely<Schema>, records: readonly { id: string; record: string }[]): Promise<void> {
  if (records.length === 0) return;
  await db
    .insertInto('genebrc_request_records')
    .values(records.map(({ id, record }) => ({ request_id: id, record })))
    .onConflict((conflict) => conflict.column('request_id').doNothing())
    .execute();
}

/** The requests of these ids with their lines, in no particular order. */
export async function requestsWithLines(db: Kysely<Schema>, ids: readonly string[]): Promise<ListedRequest[]> {
  if (ids.length === 0) return [];
  return withPushedPayloads(await db.selectFrom('genebrc_requests').selectAll().select(LINES.as('lines')).where('id', 'in', ids).execute());
}

/** One request with its lines' states (no payloads). */
export async function requestWithLineStates(db: Kysely<Schema>, id: string): Promise<RequestWithLineStates | undefined> {
  return db.selectFrom('genebrc_requests').selectAll().select(LINE_STATES.as('lines')).where('id', '=', id).executeTakeFirst();
}

/**
 * A page of a customer's requests, newest first, each with its line count, and, when the page's lines add up to at
 * most `lineBudget`, with its stored record (a final request's, genebrc_request_records) or else its lines (aggregated
 * only then: a page of large requests is never one value in memory, and a final request's lines are not read again).
 * The total comes from the counts kept per customer and status (and per UTC day for date filters), or, for one
 * requestId, from the one row there may be. The page's ids come from the index alone and only their rows are
 * read; a later page starts at the UTC day it begins on, found from genebrc_request_day_counts (readPage).
 */
export async function listRequests(
  db: Kysely<Schema>,
  filter: RequestFilter & { offset: number; limit: number; lineBudget: number },
): Promise<{ rows: PageRequest[]; total: number }> {
  let base = db.selectFrom('genebrc_requests').where('platform_customer_id', '=', filter.customerId);
  if (filter.requestId) base = base.where('request_id', '=', filter.requestId);
  if (filter.status) base = base.where('status', 'in', storedStatuses(filter.status));
  // Whole UTC days, whatever the session's time zone.
  if (filter.fromDate) base = base.where('created_at', '>=', sql<Date>`(${filter.fromDate}::date)::timestamp at time zone 'UTC'`);
  if (filter.toDate) base = base.where('created_at', '<', sql<Date>`(${filter.toDate}::date + 1)::timestamp at time zone 'UTC'`);
  // Only when the whole page's lines (a window over the page's rows) fit: the stored record, and for a request without
  // one the lines' subquery (the CASE runs it only then).
  const fits = sql`sum(counted.line_count) over () <= ${filter.lineBudget}`;
  const record = sql<string | null>`case when ${fits} then stored.record end`;
  const lines = sql<ListedLine[] | null>`case when ${fits} and stored.record is null then ${LINES} end`;
  const withLineColumns = <Page extends SelectQueryBuilder<Schema, 'genebrc_requests', object>>(page: Page) =>
    page
      .innerJoinLateral(
        (eb) =>
          eb
            .selectFrom('genebrc_request_lines')
            .select((count) => count.fn.countAll<number>().as('line_count'))
            .whereRef('genebrc_request_lines.request_id', '=', 'genebrc_requests.id')
            .as('counted'),
        (join) => join.onTrue(),
      )
      .leftJoinLateral(
        (eb) => eb.selectFrom('genebrc_request_records').select('record').whereRef('genebrc_request_records.request_id', '=', 'genebrc_requests.id').as('stored'),
        (join) => join.onTrue(),
      )
      .selectAll('genebrc_requests')
      .select(['counted.line_count', record.as('record'), lines.as('lines')]);
  if (filter.requestId) {
    // requestId is unique: at most one row. Read it, and count it.
    const rows = withPushedPayloads(await withLineColumns(base).execute());
    return { rows: rows.slice(filter.offset, filter.offset + filter.limit), total: rows.length };
  }
  const rowsOf = (window: PageWindow) => {
    const direction = window.reverse ? 'asc' : 'desc';
    const fromDay = window.fromDay;
    const page = pageRows(
      (fromDay === undefined ? base : base.where('created_at', '<', sql<Date>`(${fromDay}::date + 1)::timestamp at time zone 'UTC'`))
        .select('id')
        .orderBy('created_at', direction)
        .orderBy('id', direction),
      window,
    );
    return withLineColumns(db.selectFrom('genebrc_requests').innerJoin(page.as('page'), 'page.id', 'genebrc_requests.id'))
      .orderBy('created_at', direction)
      .orderBy('genebrc_requests.id', direction);
  };
  const page = await readPage(db, filter, rowsOf, requestTotal(filter), {
    counts: requestDays(filter),
    months: filter.fromDate || filter.toDate ? undefined : requestMonths(filter),
    order: sql`order by page.created_at desc, page.id desc`,
  });
  return { rows: withPushedPayloads(page.rows), total: page.total };
}

/** The customer's requests per UTC day of creation, with the status and dates given. */
function requestDays(filter: RequestFilter): DayCounts {
  const status = filter.status ? sql` and status in (${sql.join(storedStatuses(filter.status))})` : sql``;
  return sql`select created_day as day, sum(requests)::int as rows from genebrc_request_day_counts
    where platform_customer_id = ${filter.customerId}${status}${
      filter.fromDate ? sql` and created_day >= ${filter.fromDate}` : sql``
    }${filter.toDate ? sql` and created_day <= ${filter.toDate}` : sql``}
    group by created_day having sum(requests) > 0`;
}

/** The customer's requests per UTC month of creation (the month's first day), with the status given. */
function requestMonths(filter: RequestFilter): DayCounts {
  const status = filter.status ? sql` and status in (${sql.join(storedStatuses(filter.status))})` : sql``;
  return sql`select created_month as day, sum(requests)::int as rows from genebrc_request_month_counts
    where platform_customer_id = ${filter.customerId}${status}
    group by created_month having sum(requests) > 0`;
}

/** How many requests match, from the kept counts: a few rows per customer, or one row a day with dates. */
function requestTotal(filter: RequestFilter) {
  const status = filter.status ? sql` and status in (${sql.join(storedStatuses(filter.status))})` : sql``;
  if (!filter.fromDate && !filter.toDate) {
    return sql<number>`(select coalesce(sum(requests), 0)::int from genebrc_request_status_counts
      where platform_customer_id = ${filter.customerId}${status})`;
  }
  return sql<number>`(select coalesce(sum(requests), 0)::int from genebrc_request_day_counts
    where platform_customer_id = ${filter.customerId}${status}${
      filter.fromDate ? sql` and created_day >= ${filter.fromDate}` : sql``
    }${filter.toDate ? sql` and created_day <= ${filter.toDate}` : sql``})`;
}

/**
 * How many requests are open (SUBMITTING or PENDING), from the counts kept per customer and status, and when the oldest
 * of them was pushed, from the open requests' index (one entry read per status): no scan of the requests.
 */
export type OpenRequestsSummary = { open: number; oldestCreatedAt: Date | null };

export async function openRequestsSummary(db: Kysely<Schema>): Promise<OpenRequestsSummary> {
  // The oldest is read per status, each from the open index's own order: one entry each.
  const { rows } = await sql<{ open: number; oldest: Date | null }>`
    select
      (select coalesce(sum(requests), 0)::int from genebrc_request_status_counts where status in (${sql.join(OPEN_STATUSES)})) as open,
      least(
        (select min(created_at) from genebrc_requests where status = 'SUBMITTING'),
        (select min(created_at) from genebrc_requests where status = 'PENDING')) as oldest`.execute(db);
  return { open: rows[0]!.open, oldestCreatedAt: rows[0]!.oldest };
}

/**
 * Requests not yet final, oldest first, after `after` (from the oldest without it): what the poller must keep moving.
 * A sweep goes on where the last one stopped, so that every open request is reached however many are open.
 */
export async function openRequestIds(db: Kysely<Schema>, limit: number, after?: SweepPosition): Promise<Swept<{ id: string }>> {
  const open = db.selectFrom('genebrc_requests').select('id').where(sql<boolean>`status in (${OPEN_STATUS_LITERALS})`);
  return readSweep(open, 'created_at', limit, after);
}
