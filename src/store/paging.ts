import { sql, type Kysely, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import type { Schema } from './schema.ts';

/**
 * Which rows of an ordered list a page reads: `limit` rows from `offset`, in the list's order or the reverse. With
 * `fromDay` (lists ordered newest day first), the offset counts from the first row of that day, and rows of later
 * days are left out; both are then SQL expressions of the statement's day anchor.
 */
export type PageWindow = { offset: number | RawBuilder<number>; limit: number; reverse: boolean; fromDay?: RawBuilder<string> };

/**
 * A page's rows of `query`: `limit` rows from `offset`, the limit written into the statement's text and no offset on a
 * first page. PostgreSQL plans a prepared statement once (its generic plan) unless the values bound to it change the
 * plan's estimated cost, and a LIMIT or OFFSET parameter does (the generic plan assumes a tenth of the rows): with them,
 * every call was planned anew, which took as long as running it (docs/performance.md, "List pages: planned once").
 * A statement has one text per page size asked (at most 100), with an offset or without. A later page's offset is a
 * parameter still, unless it is an expression of the statement (the day anchor of readPage).
 */
export function pageRows<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  window: { offset: number | RawBuilder<number>; limit: number },
): SelectQueryBuilder<DB, TB, O> {
  if (!Number.isSafeInteger(window.limit) || window.limit < 0) throw new Error(`A page's limit must be a whole number, not ${window.limit}`);
  const limited = query.limit(sql.lit(window.limit));
  return window.offset === 0 ? limited : limited.offset(window.offset);
}

/** A list's rows per day, as kept counts: one row per day that has rows. */
export type DayCounts = RawBuilder<{ day: string; rows: number }>;

/**
 * A list kept per day and ordered newest day first: its counts per day; the same per month (`day` the month's first
 * day), when they count the same rows (a list filtered by dates counts part of its first and last months); and the
 * order of a page's rows (an ORDER BY of the page's columns by their names alone: the rows are the statement's `page`).
 */
export type DayKeptList = { counts: DayCounts; months?: DayCounts | undefined; order: RawBuilder<unknown> };

/**
 * Which rows of an ordered list of `total` rows a page covers, and how to read them cheaply: a page past the middle
 * is read from the other end (the reverse order, then reversed), so that no page walks more than half the list.
 * Null when the page is past the end.
 */
export function pageWindow(total: number, offset: number, limit: number): PageWindow | null {
  if (offset >= total) return null;
  const count = Math.min(limit, total - offset);
  if (offset * 2 <= total - count) return { offset, limit, reverse: false };
  // The limit as asked, so that a statement has one text per page size: a last page shorter than that reads rows of
  // the page before it too, which readPage drops.
  return { offset: Math.max(0, total - offset - limit), limit, reverse: true };
}

/**
 * A page of an ordered list and the list's length. `rowsOf(window)` selects the window's rows (in the reverse order
 * when the window says so); `total` is the list's length as one SQL expression (kept counts, never a count of the
 * rows). The first page carries its total in the same statement; a later page needs the total first, to read from
 * whichever end is nearer.
 *
 * A list ordered newest day first that keeps its rows per day (`byDay`) reads a later page in one statement too, from
 * the day it begins on: the anchor is the newest-first running sum of the days' counts, up to the first day whose sum
 * passes the offset (that day, and how many of its rows come before the page). The index walk is then at most that
 * day's rows, however deep the page, where reading from the nearer end walks up to half the list (500,000 entries in
 * the middle of a million IRMs). A page past the end has no anchor and no row to carry the total: only then is the
 * total read on its own.
 *
 * `note`: a value the page's statement reads beside its rows (one SQL expression, the same on every row), returned when
 * the page has a row, so that what a caller would read before the page costs no statement of its own. Undefined when
 * the page has no row, or was read in more than one statement: the caller then reads it itself.
 */
export async function readPage<DB, TB extends keyof DB, Row, Note = never>(
  db: Kysely<Schema>,
  page: { offset: number; limit: number },
  rowsOf: (window: PageWindow) => SelectQueryBuilder<DB, TB, Row>,
  total: RawBuilder<number>,
  byDay?: DayKeptList,
  note?: RawBuilder<Note>,
): Promise<{ rows: Row[]; total: number; note?: Note | undefined }> {
  const noted: RawBuilder<Note | null> = note ?? sql<null>`null`;
  if (page.offset === 0) {
    // No row on the first page means nothing matches.
    const first = rowsOf({ offset: 0, limit: page.limit, reverse: false }).select([total.as('total_matching'), noted.as('page_note')]);
    return withTotal((await first.execute()) as (Row & Totalled<Note>)[]);
  }
  if (byDay) {
    const rows = rowsOf({ offset: sql<number>`anchor.within`, limit: page.limit, reverse: false, fromDay: sql<string>`anchor.day` });
    const { rows: read } = await sql<Row & Totalled<Note>>`
      with ${dayAnchor(byDay, page.offset)}
      select page.*, ${total}::int as total_matching, ${noted} as page_note
      from anchor cross join lateral (${rows}) as page
      ${byDay.order}`.execute(db);
    if (read.length > 0) return withTotal(read);
  }
  // A list without day counts, or a page past the end of one (or, should its kept counts ever disagree with its rows,
  // a page its counts could not place: read from the nearer end, as a list without them is).
  const counted = await db.selectNoFrom(total.as('total')).executeTakeFirstOrThrow();
  const window = pageWindow(counted.total, page.offset, page.limit);
  if (!window) return { rows: [], total: counted.total };
  const rows = await rowsOf(window).execute();
  return { rows: (window.reverse ? rows.slice(0, counted.total - page.offset).reverse() : rows) as Row[], total: counted.total };
}

/**
 * The CTE `anchor`: the day (newest first) that holds the row at `offset`, and how many rows of that day come before
 * it (`within`); no row when the offset is past the end. With month counts, the month that holds the row is found
 * first, and then the day among that month's days only.
 */
function dayAnchor(byDay: DayKeptList, offset: number): RawBuilder<unknown> {
  if (!byDay.months) {
    return sql`anchor as (
      select day, (${offset} - (through - rows))::int as within
      from (select day, rows, sum(rows) over (order by day desc) as through from (${byDay.counts}) as counts) as running
      where through > ${offset}
      order by day desc
      limit 1
    )`;
  }
  return sql`month_anchor as (
      select day as month, through - rows as before
      from (select day, rows, sum(rows) over (order by day desc) as through from (${byDay.months}) as counts) as running
      where through > ${offset}
      order by day desc
      limit 1
    ),
    anchor as (
      select running.day, (${offset} - month_anchor.before - (running.through - running.rows))::int as within
      from month_anchor cross join lateral (
        select day, rows, sum(rows) over (order by day desc) as through
        from (${byDay.counts}) as counts
        where day >= month_anchor.month and day < (month_anchor.month + interval '1 month')::date
      ) as running
      where month_anchor.before + running.through > ${offset}
      order by running.day desc
      limit 1
    )`;
}

type Totalled<Note> = { total_matching: number; page_note: Note | null };

/** A page's rows without the total and note each carries, the total (none when there is no row) and the note. */
function withTotal<Row, Note>(rows: readonly (Row & Totalled<Note>)[]): { rows: Row[]; total: number; note?: Note | undefined } {
  const first = rows[0];
  return {
    rows: rows.map(({ total_matching: _total, page_note: _note, ...row }) => row as Row),
    total: first?.total_matching ?? 0,
    note: first?.page_note ?? undefined,
  };
}

/**
 * A page of a list ordered newest first (created_at, then id, both columns of the list's one table) and how many it
 * holds, counted up to `atMost`: the count stops there so that it never walks a table that a platform could make
 * large. `matching` is the list (its table and filters); `shown` selects what a page shows of it.
 */
export async function readNewestFirst<TB extends keyof Schema, Row>(
  db: Kysely<Schema>,
  page: { offset: number; limit: number },
  matching: SelectQueryBuilder<Schema, TB, object>,
  shown: (rows: SelectQueryBuilder<Schema, TB, object>) => SelectQueryBuilder<Schema, TB, Row>,
  atMost: number,
): Promise<{ rows: Row[]; total: number }> {
  const rowsOf = (window: PageWindow) => {
    const direction = window.reverse ? 'asc' : 'desc';
    return pageRows(shown(matching).orderBy(sql.ref('created_at'), direction).orderBy(sql.ref('id'), direction), window);
  };
  const total = sql<number>`(select count(*)::int from (${matching.select(sql`1`.as('one')).limit(atMost)}) as counted)`;
  return readPage(db, page, rowsOf, total);
}

/**
 * Where a sweep over rows in the order of a time column (then `id`) goes on from: the last row it read, its time as
 * PostgreSQL's own text (a Date would drop the microseconds, and a sweep could stand still within one millisecond).
 * Undefined: from the first row.
 */
export type SweepPosition = { at: string; id: string };

/** The rows after `after`, and where the next sweep goes on from: the start again once this one read to the end. */
export type Swept<Row> = { rows: Row[]; next: SweepPosition | undefined };

/**
 * A sweep's next rows of `query` (one table, with an `id` column): at most `limit` of them after `after`, in the order of
 * `column` and then `id`, and where the next sweep goes on from.
 */
export async function readSweep<TB extends keyof Schema, Row extends { id: string }>(
  query: SelectQueryBuilder<Schema, TB, Row>,
  column: 'created_at' | 'next_attempt_at',
  limit: number,
  after: SweepPosition | undefined,
): Promise<Swept<Row>> {
  const positioned = query.select(sql<string>`${sql.ref(column)}::text`.as('position'));
  const read = await (after === undefined
    ? positioned
    : positioned.where(sql<boolean>`(${sql.ref(column)}, id) > (${after.at}::timestamptz, ${after.id}::uuid)`))
    .orderBy(sql.ref(column))
    .orderBy(sql.ref('id'))
    .limit(limit)
    .execute();
  const rows = read.map(({ position: _position, ...row }) => row as unknown as Row);
  const last = read.at(-1);
  return { rows, next: read.length < limit || last === undefined ? undefined : { at: last.position, id: last.id } };
}
