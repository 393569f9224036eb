import type { Kysely, RawBuilder, SelectQueryBuilder } from 'kysely';
import type { Schema } from './schema.ts';

/** Which rows of an ordered list a page reads: `limit` rows from `offset`, in the list's order or the reverse. */
export type PageWindow = { offset: number; limit: number; reverse: boolean };

/**
 * Which rows of an ordered list of `total` rows a page covers, and how to read them cheaply: a page past the middle
 * is read from the other end (the reverse order, then reversed), so that no page walks more than half the list.
 * Null when the page is past the end.
 */
export function pageWindow(total: number, offset: number, limit: number): PageWindow | null {
  if (offset >= total) return null;
  const count = Math.min(limit, total - offset);
  if (offset * 2 <= total - count) return { offset, limit: count, reverse: false };
  return { offset: total - offset - count, limit: count, reverse: true };
}

/**
 * A page of an ordered list and the list's length. `rowsOf(window)` selects the window's rows (in the reverse order
 * when the window says so); `total` is the list's length as one SQL expression (kept counts, never a count of the
 * rows). The first page carries its total in the same statement; a later page needs the total first, to read from
 * whichever end is nearer.
 */
export async function readPage<DB, TB extends keyof DB, Row>(
  db: Kysely<Schema>,
  page: { offset: number; limit: number },
  rowsOf: (window: PageWindow) => SelectQueryBuilder<DB, TB, Row>,
  total: RawBuilder<number>,
): Promise<{ rows: Row[]; total: number }> {
  if (page.offset === 0) {
    // No row on the first page means nothing matches.
    const first = rowsOf({ offset: 0, limit: page.limit, reverse: false }).select(total.as('total_matching'));
    const rows = (await first.execute()) as (Row & { total_matching: number })[];
    return { rows: rows.map(({ total_matching: _total, ...row }) => row as Row), total: rows[0]?.total_matching ?? 0 };
  }
  const counted = await db.selectNoFrom(total.as('total')).executeTakeFirstOrThrow();
  const window = pageWindow(counted.total, page.offset, page.limit);
  if (!window) return { rows: [], total: counted.total };
  const rows = await rowsOf(window).execute();
  return { rows: (window.reverse ? rows.reverse() : rows) as Row[], total: counted.total };
}
