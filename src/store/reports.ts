import type { Kysely } from 'kysely';
import { asPushed } from './requests.ts';
import type { Schema } from './schema.ts';

/** One eBRC of a customer's register, with the request line and the IRM the report shows beside it. */
export type RegisterReportRow = {
  ebrc_number: string;
  /** YYYY-MM-DD */
  ebrc_date: string;
  irm_number: string;
  sb_cum_invoice_number: string;
  /** YYYY-MM-DD */
  sb_cum_invoice_date: string;
  realised_value_fcc: string;
  /** The IRM's currency: the realised value is in it. */
  currency: string;
  status: 'generated' | 'cancelled';
  source: 'this_service' | 'elsewhere';
  request_id: string | null;
  /** The request line's fields as pushed, when one of this customer's requests generated it. */
  line: Record<string, unknown> | null;
  /** The IRM's fields, when the IRM is stored. */
  irm_issue_date: string | null;
  ifsc_code: string | null;
  remittance_ad_code: string | null;
  purpose_of_remittance: string | null;
  remitter_name: string | null;
  remitter_country: string | null;
};

/** An eBRC an IRM was mapped to, for the utilisation report. */
export type MappedEbrcRow = {
  irm_number: string;
  ebrc_number: string;
  ebrc_date: string;
  realised_value_fcc: string;
  status: 'generated' | 'cancelled';
};

/** YYYY-MM-DD, inclusive, on the eBRC date. */
export type Period = { fromDate?: string | undefined; toDate?: string | undefined };

/** How many rows one statement of a report reads. */
export const REPORT_READ_BATCH = 1_000;

/**
 * The customer's eBRCs that fall in the period, in the eBRC list's order (newest eBRC date first, then eBRC number),
 * read `batchSize` at a time with a keyset on (date, number): each statement starts where the last one stopped, holds
 * one batch in memory and no transaction or connection between batches.
 */
export async function* registerInListOrder(
  db: Kysely<Schema>,
  customerId: string,
  period: Period,
  batchSize: number = REPORT_READ_BATCH,
): AsyncGenerator<RegisterReportRow> {
  let after: { date: string; number: string } | undefined;
  for (;;) {
    let query = registered(db, customerId);
    if (period.fromDate) query = query.where('ebrc.ebrc_date', '>=', period.fromDate);
    if (period.toDate) query = query.where('ebrc.ebrc_date', '<=', period.toDate);
    if (after) {
      const { date, number } = after;
      // The order mixes directions, so no row comparison: a bound on the date, then the rest of that date.
      query = query
        .where('ebrc.ebrc_date', '<=', date)
        .where((eb) => eb.or([eb('ebrc.ebrc_date', '<', date), eb('ebrc.ebrc_number', '>', number)]));
    }
    const batch = await query.orderBy('ebrc.ebrc_date', 'desc').orderBy('ebrc.ebrc_number', 'asc').limit(batchSize).execute();
    for (const row of batch) yield { ...row, line: row.line === null ? null : asPushed(row.line) };
    if (batch.length < batchSize) return;
    const last = batch[batch.length - 1]!;
    after = { date: last.ebrc_date, number: last.ebrc_number };
  }
}

/**
 * The customer's register (migration 0016) with, for an eBRC one of its requests generated, that request's line (by
 * the request's unique requestId and the line's unique eBRC number), and the IRM when it is stored.
 */
function registered(db: Kysely<Schema>, customerId: string) {
  return db
    .selectFrom('ebrcs as ebrc')
    .leftJoin('genebrc_requests as request', (join) =>
      join.onRef('request.request_id', '=', 'ebrc.request_id').onRef('request.platform_customer_id', '=', 'ebrc.platform_customer_id'),
    )
    .leftJoin('genebrc_request_lines as line', (join) =>
      join.onRef('line.request_id', '=', 'request.id').onRef('line.ebrc_number', '=', 'ebrc.ebrc_number'),
    )
    .leftJoin('irms as irm', (join) =>
      join.onRef('irm.platform_customer_id', '=', 'ebrc.platform_customer_id').onRef('irm.irm_number', '=', 'ebrc.irm_number'),
    )
    .where('ebrc.platform_customer_id', '=', customerId)
    .select([
      'ebrc.ebrc_number',
      'ebrc.ebrc_date',
      'ebrc.irm_number',
      'ebrc.sb_cum_invoice_number',
      'ebrc.sb_cum_invoice_date',
      'ebrc.realised_value_fcc',
      'ebrc.currency',
      'ebrc.status',
      'ebrc.source',
      'ebrc.request_id',
      'line.payload as line',
      'irm.irm_issue_date',
      'irm.ifsc_code',
      'irm.remittance_ad_code',
      'irm.purpose_of_remittance',
      'irm.remitter_name',
      'irm.remitter_country',
    ]);
}

/**
 * The customer's registered eBRCs of any of these IRMs, whatever their date, oldest first: one statement on the index
 * ebrcs_customer_irm (migration 0017).
 */
export async function ebrcsOfIrms(db: Kysely<Schema>, customerId: string, irmNumbers: readonly string[]): Promise<MappedEbrcRow[]> {
  if (irmNumbers.length === 0) return [];
  return db
    .selectFrom('ebrcs')
    .where('platform_customer_id', '=', customerId)
    .where('irm_number', 'in', [...irmNumbers])
    .select(['irm_number', 'ebrc_number', 'ebrc_date', 'realised_value_fcc', 'status'])
    .orderBy('ebrc_date')
    .orderBy('ebrc_number')
    .execute();
}

/** A customer of the platform as the platform-wide register names it. */
export type ReportCustomerRow = { id: string; name: string; iec_code: string | null };

/** The platform's customers by id, `batchSize` at a time. */
export async function* customersOfPlatform(
  db: Kysely<Schema>,
  platformId: string,
  batchSize: number = REPORT_READ_BATCH,
): AsyncGenerator<ReportCustomerRow> {
  let after: string | undefined;
  for (;;) {
    let query = db.selectFrom('platform_customers').select(['id', 'name', 'iec_code']).where('platform_id', '=', platformId);
    if (after !== undefined) query = query.where('id', '>', after);
    const batch = await query.orderBy('id').limit(batchSize).execute();
    yield* batch;
    if (batch.length < batchSize) return;
    after = batch[batch.length - 1]!.id;
  }
}
