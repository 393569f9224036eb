import { sql, type Kysely } from 'kysely';
import type { Schema } from './schema.ts';

/**
 * The console's charts (contract 10): what a platform's eBRCs add up to over a window of days. Each is one query,
 * bounded twice: the requests are read through genebrc_requests_customer_newest (the platform's customers, then a
 * range on created_at from `pushedSince`), and only their GENERATED lines with an eBRC date in the window count.
 */
export type ChartWindow = {
  platformId: string;
  /** YYYY-MM-DD, inclusive: the window's first and last eBRC dates (UTC days). */
  fromDay: string;
  toDay: string;
  /**
   * The oldest push whose eBRCs are read: an eBRC is dated on or after its push, so this is at most `fromDay`; a
   * margin before it takes in pushes the authority took longer to process.
   */
  pushedSince: Date;
};

/** The lines of the window: GENERATED, dated in it, of requests of the platform's customers pushed since `pushedSince`. */
function generatedInWindow(db: Kysely<Schema>, window: ChartWindow) {
  return db
    .selectFrom('genebrc_requests as request')
    .innerJoin('genebrc_request_lines as line', 'line.request_id', 'request.id')
    .where('request.platform_customer_id', 'in', (eb) =>
      eb.selectFrom('platform_customers').select('platform_customers.id').where('platform_customers.platform_id', '=', window.platformId))
    .where('request.created_at', '>=', window.pushedSince)
    .where('line.status', '=', 'GENERATED')
    .where('line.ebrc_date', '>=', window.fromDay)
    .where('line.ebrc_date', '<=', window.toDay);
}

/** How many eBRCs were generated each day of the window (days without any are absent). */
export async function ebrcsPerDay(db: Kysely<Schema>, window: ChartWindow): Promise<{ day: string; ebrcs: number }[]> {
  return generatedInWindow(db, window)
    .select([sql<string>`to_char(line.ebrc_date, 'YYYY-MM-DD')`.as('day'), sql<number>`count(*)::int`.as('ebrcs')])
    .groupBy('line.ebrc_date')
    .orderBy('line.ebrc_date')
    .execute();
}

/**
 * The realised value of the window per currency: the sum of the mapped amounts of its GENERATED lines, in the IRM's
 * currency (the line's irmFCC), as exact decimal text ("1566.25"), with the count of lines.
 */
export async function realisedPerCurrency(db: Kysely<Schema>, window: ChartWindow): Promise<{ currency: string; amount: string; ebrcs: number }[]> {
  const currency = sql<string>`line.payload->>'irmFCC'`;
  return generatedInWindow(db, window)
    .select([currency.as('currency'), sql<string>`sum(line.mapped_amount)::text`.as('amount'), sql<number>`count(*)::int`.as('ebrcs')])
    .groupBy(currency)
    .orderBy(currency)
    .execute();
}
