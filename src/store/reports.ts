import { sql, type Kysely } from 'kysely';
import type { Schema } from './schema.ts';

/** One eBRC of a customer's register, with the request line and the IRM the report shows beside it. */
export type RegisterReportRow = {
  ebrc_number: string;
  /** YYYY-MM-DD */
  ebrc_date: string;
  irm_number: string;
  sb_cum_invoice_number: string;
  /** YYYY-MM-DD, or ddMMyyyy as a request line stores it. */
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
    if (period.fromDate) query = query.where('line.ebrc_date', '>=', period.fromDate);
    if (period.toDate) query = query.where('line.ebrc_date', '<=', period.toDate);
    if (after) {
      const { date, number } = after;
      // The order mixes directions, so no row comparison: a bound on the date, then the rest of that date.
      query = query
        .where('line.ebrc_date', '<=', date)
        .where((eb) => eb.or([eb('line.ebrc_date', '<', date), eb('line.ebrc_number', '>', number)]));
    }
    const batch = await query.orderBy('line.ebrc_date', 'desc').orderBy('line.ebrc_number', 'asc').limit(batchSize).execute();
    yield* batch;
    if (batch.length < batchSize) return;
    const last = batch[batch.length - 1]!;
    after = { date: last.ebrc_date, number: last.ebrc_number };
  }
}

/** The register as the store holds it: the eBRCs this customer's requests generated. */
function registered(db: Kysely<Schema>, customerId: string) {
  return db
    .selectFrom('genebrc_request_lines as line')
    .innerJoin('genebrc_requests as request', 'request.id', 'line.request_id')
    .leftJoin('irms as irm', (join) =>
      join.onRef('irm.platform_customer_id', '=', 'request.platform_customer_id').onRef('irm.irm_number', '=', 'line.irm_number'),
    )
    .where('request.platform_customer_id', '=', customerId)
    .where('line.status', '=', 'GENERATED')
    .select([
      'line.ebrc_number',
      'line.ebrc_date',
      'line.irm_number',
      'line.sb_cum_invoice_number',
      sql<string>`line.payload->>'sbCumInvoiceDate'`.as('sb_cum_invoice_date'),
      'line.mapped_amount as realised_value_fcc',
      sql<string>`line.payload->>'irmFCC'`.as('currency'),
      sql<'generated'>`'generated'`.as('status'),
      sql<'this_service'>`'this_service'`.as('source'),
      'request.request_id',
      'line.payload as line',
      'irm.irm_issue_date',
      'irm.ifsc_code',
      'irm.remittance_ad_code',
      'irm.purpose_of_remittance',
      'irm.remitter_name',
      'irm.remitter_country',
    ])
    // A line is GENERATED exactly when the authority gave it its eBRC number and date (applyLineResults).
    .$narrowType<{ ebrc_number: string; ebrc_date: string }>();
}

/** The customer's eBRCs mapped to any of these IRMs, whatever their date. */
export async function ebrcsOfIrms(db: Kysely<Schema>, customerId: string, irmNumbers: readonly string[]): Promise<MappedEbrcRow[]> {
  if (irmNumbers.length === 0) return [];
  return db
    .selectFrom('genebrc_request_lines as line')
    .innerJoin('genebrc_requests as request', 'request.id', 'line.request_id')
    .where('request.platform_customer_id', '=', customerId)
    .where('line.status', '=', 'GENERATED')
    .where('line.irm_number', 'in', [...irmNumbers])
    .select(['line.irm_number', 'line.ebrc_number', 'line.ebrc_date', 'line.mapped_amount as realised_value_fcc', sql<'generated'>`'generated'`.as('status')])
    .$narrowType<{ ebrc_number: string; ebrc_date: string }>()
    .orderBy('line.ebrc_date')
    .orderBy('line.ebrc_number')
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
