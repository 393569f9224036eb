import { sql, type Kysely } from 'kysely';
import type { Schema } from './schema.ts';

/** An eBRC generated through this service: a GENERATED line of one of the customer's requests. */
export type LocalEbrcRow = {
  ebrc_number: string;
  /** YYYY-MM-DD */
  ebrc_date: string;
  irm_number: string;
  sb_cum_invoice_number: string;
  /** ddMMyyyy, as the line is stored. */
  sb_cum_invoice_date: string;
  mapped_amount: string;
  /** The IRM's currency, the line's irmFCC: the mapped (realised) amount is in it. */
  currency: string;
  iec_number: string;
  request_id: string;
};

/** A local eBRC with the request and the line that made it, for its certificate. */
export type LocalEbrcDetail = LocalEbrcRow & {
  request_status: string;
  authority_ack_id: string | null;
  upload_type: string;
  request_created_at: Date;
  request_processed_at: Date | null;
  serial_no: number;
  payload: Record<string, unknown>;
};

export type LocalEbrcFilter = {
  customerId: string;
  /** YYYY-MM-DD, inclusive, on the eBRC date. */
  fromDate?: string | undefined;
  toDate?: string | undefined;
  irmNumber?: string | undefined;
  sbCumInvoiceNumber?: string | undefined;
};

/** The IRM fields an eBRC's certificate shows, when the IRM is stored. */
export type EbrcIrmRow = {
  remitter_name: string;
  remitter_country: string;
  purpose_of_remittance: string;
  irm_issue_date: string;
  remittance_date: string;
};

function generatedLines(db: Kysely<Schema>, of: { customerId: string } | { requestId: string }) {
  return db
    .selectFrom('genebrc_request_lines as line')
    .innerJoin('genebrc_requests as request', 'request.id', 'line.request_id')
    .where('customerId' in of ? 'request.platform_customer_id' : 'request.id', '=', 'customerId' in of ? of.customerId : of.requestId)
    .where('line.status', '=', 'GENERATED')
    .select([
      'line.ebrc_number',
      'line.ebrc_date',
      'line.irm_number',
      'line.sb_cum_invoice_number',
      sql<string>`line.payload->>'sbCumInvoiceDate'`.as('sb_cum_invoice_date'),
      'line.mapped_amount',
      sql<string>`line.payload->>'irmFCC'`.as('currency'),
      'request.iec_number',
      'request.request_id',
    ])
    // A line is GENERATED exactly when the authority gave it its eBRC number and date (applyLineResults).
    .$narrowType<{ ebrc_number: string; ebrc_date: string }>();
}

/** The customer's eBRCs generated through this service, in no particular order. */
export async function listLocalEbrcs(db: Kysely<Schema>, filter: LocalEbrcFilter): Promise<LocalEbrcRow[]> {
  let select = generatedLines(db, { customerId: filter.customerId });
  if (filter.fromDate) select = select.where('line.ebrc_date', '>=', filter.fromDate);
  if (filter.toDate) select = select.where('line.ebrc_date', '<=', filter.toDate);
  if (filter.irmNumber) select = select.where('line.irm_number', '=', filter.irmNumber);
  if (filter.sbCumInvoiceNumber) select = select.where('line.sb_cum_invoice_number', '=', filter.sbCumInvoiceNumber);
  return select.execute();
}

/** The eBRCs one request generated (its GENERATED lines), in line order. */
export async function ebrcsOfRequest(db: Kysely<Schema>, requestId: string): Promise<LocalEbrcRow[]> {
  return generatedLines(db, { requestId }).orderBy('line.line_index').execute();
}

/** One of the customer's eBRCs generated through this service, with its request and line. */
export async function findLocalEbrc(db: Kysely<Schema>, customerId: string, ebrcNumber: string): Promise<LocalEbrcDetail | undefined> {
  return generatedLines(db, { customerId })
    .select([
      'request.status as request_status',
      'request.authority_ack_id',
      'request.upload_type',
      'request.created_at as request_created_at',
      'request.processed_at as request_processed_at',
      'line.serial_no',
      'line.payload',
    ])
    .where('line.ebrc_number', '=', ebrcNumber)
    .executeTakeFirst();
}

export async function findEbrcIrm(db: Kysely<Schema>, customerId: string, irmNumber: string): Promise<EbrcIrmRow | undefined> {
  return db
    .selectFrom('irms')
    .select(['remitter_name', 'remitter_country', 'purpose_of_remittance', 'irm_issue_date', 'remittance_date'])
    .where('platform_customer_id', '=', customerId)
    .where('irm_number', '=', irmNumber)
    .executeTakeFirst();
}
