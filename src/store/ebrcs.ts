import { sql, type Insertable, type Kysely, type Selectable } from 'kysely';
import { formatCents, parseMoney, type Cents } from '../domain/money.ts';
import { storableText } from '../domain/storable-text.ts';
import { anyText } from './lists.ts';
import { asPushed, type ListedLine, type ListedRequest } from './requests.ts';
import type { EbrcsTable, Schema } from './schema.ts';
import { pageRows } from './paging.ts';

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

export type EbrcRegisterFilter = {
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

/**
 * The eBRCs one request generated (its GENERATED lines), in line order, from the request read with its lines and their
 * payloads (requestsWithLines). The final move has just read them to store the request's record; reading a 999-line
 * request's eBRCs back from its lines cost the service 6-8 ms of CPU and its database about 1 ms.
 */
export function ebrcsOfReadRequest(request: ListedRequest): LocalEbrcRow[] {
  return request.lines.filter((line) => line.status === 'GENERATED').map((line) => ebrcOfLine(line, request));
}

/** One of the customer's eBRCs generated through this service, with its request and line. */
export async function findLocalEbrc(db: Kysely<Schema>, customerId: string, ebrcNumber: string): Promise<LocalEbrcDetail | undefined> {
  const found = await db
    .selectFrom('genebrc_request_lines as line')
    .innerJoin('genebrc_requests as request', 'request.id', 'line.request_id')
    .select([
      'line.serial_no',
      'line.ebrc_number',
      'line.ebrc_date',
      'line.irm_number',
      'line.sb_cum_invoice_number',
      'line.payload',
      'request.iec_number',
      'request.request_id',
      'request.status as request_status',
      'request.authority_ack_id',
      'request.upload_type',
      'request.created_at as request_created_at',
      'request.processed_at as request_processed_at',
    ])
    .where('request.platform_customer_id', '=', customerId)
    .where('line.status', '=', 'GENERATED')
    .where('line.ebrc_number', '=', ebrcNumber)
    .executeTakeFirst();
  if (found === undefined) return undefined;
  const payload = asPushed(found.payload);
  const line = { serialNo: found.serial_no, ebrcNumber: found.ebrc_number, ebrcDate: found.ebrc_date, irmNumber: found.irm_number, sbCumInvoiceNumber: found.sb_cum_invoice_number, payload };
  return {
    ...ebrcOfLine(line, found),
    request_status: found.request_status,
    authority_ack_id: found.authority_ack_id,
    upload_type: found.upload_type,
    request_created_at: found.request_created_at,
    request_processed_at: found.request_processed_at,
    serial_no: found.serial_no,
    payload,
  };
}

type GeneratedLine = Pick<ListedLine, 'serialNo' | 'ebrcNumber' | 'ebrcDate' | 'irmNumber' | 'sbCumInvoiceNumber' | 'payload'>;

/**
 * The eBRC a GENERATED line stands for, as the final move registers it and a certificate shows it (the console's chart
 * sums the same fields in SQL: realisedPerCurrency in src/store/console-charts.ts).
 */
function ebrcOfLine(line: GeneratedLine, request: { iec_number: string; request_id: string }): LocalEbrcRow {
  const { ebrcNumber, ebrcDate, payload } = line;
  // A line is GENERATED exactly when the authority gave it its eBRC number and date (applyLineResults).
  if (ebrcNumber === null || ebrcDate === null) throw new Error(`Line ${line.serialNo} of request ${request.request_id} is GENERATED without its eBRC`);
  return {
    ebrc_number: ebrcNumber,
    ebrc_date: ebrcDate,
    irm_number: line.irmNumber,
    sb_cum_invoice_number: line.sbCumInvoiceNumber,
    sb_cum_invoice_date: payloadText(payload, 'sbCumInvoiceDate'),
    // The line's mapped_amount column holds the same amount: a push writes both from the line's cents (storedLine in
    // src/services/genebrc/push.ts), and parseMoney reads centsToNumber's number back to those cents (a property test).
    mapped_amount: formatCents(pushedCents(payload, 'mappedIRMAmountFCC')),
    currency: payloadText(payload, 'irmFCC'),
    iec_number: request.iec_number,
    request_id: request.request_id,
  };
}

/** A payload field's text, which an eBRC needs present (a string, as `payload->>field` reads it; the fields read are strings). */
function payloadText(payload: Record<string, unknown>, field: string): string {
  const value = payload[field];
  if (value === null || value === undefined) throw new Error(`A GENERATED line's payload has no ${field}`);
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function pushedCents(payload: Record<string, unknown>, field: string): Cents {
  const value = payload[field];
  const cents = typeof value === 'number' ? parseMoney(value) : null;
  if (cents === null) throw new Error(`A GENERATED line's payload has no amount ${field}: ${JSON.stringify(value)}`);
  return cents;
}

export async function findEbrcIrm(db: Kysely<Schema>, customerId: string, irmNumber: string): Promise<EbrcIrmRow | undefined> {
  return db
    .selectFrom('irms')
    .select(['remitter_name', 'remitter_country', 'purpose_of_remittance', 'irm_issue_date', 'remittance_date'])
    .where('platform_customer_id', '=', customerId)
    .where('irm_number', '=', irmNumber)
    .executeTakeFirst();
}

export type RegisteredEbrcRow = Selectable<EbrcsTable>;

/** An eBRC's values in the register, all but its identity and times. */
export type RegisterValues = Omit<Insertable<EbrcsTable>, 'id' | 'platform_id' | 'platform_customer_id' | 'created_at' | 'updated_at'>;

/** How many eBRCs one register statement takes. */
export const REGISTER_BATCH = 1_000;

/** The customer's registered eBRCs of these numbers, locked until the transaction ends. */
export async function lockRegistered(db: Kysely<Schema>, customerId: string, ebrcNumbers: readonly string[]): Promise<RegisteredEbrcRow[]> {
  if (ebrcNumbers.length === 0) return [];
  return db
    .selectFrom('ebrcs')
    .selectAll()
    .where('platform_customer_id', '=', customerId)
    .where('ebrc_number', '=', anyText(ebrcNumbers))
    .orderBy('id')
    .forUpdate()
    .execute();
}

/**
 * Adds eBRCs to the customer's register; returns the rows written. An eBRC already there is left as it is (`keep`:
 * another process's sync registered it), or made this service's (`claim`: a request of this customer generated it,
 * and a sync may have found it at the authority a moment before the request was finished here).
 */
export async function insertRegistered(
  db: Kysely<Schema>,
  owner: { platformId: string; customerId: string },
  ebrcs: readonly RegisterValues[],
  existing: 'keep' | 'claim' = 'keep',
): Promise<RegisteredEbrcRow[]> {
  if (ebrcs.length === 0) return [];
  // One JSON parameter, not 14 bound parameters an eBRC: a 999-line request's register rows are one short statement.
  const onConflict = existing === 'keep'
    ? sql`do nothing`
    : sql`do update set source = excluded.source, request_id = excluded.request_id, updated_at = now()`;
  const { rows } = await sql<RegisteredEbrcRow>`
    insert into ebrcs (
      id, platform_id, platform_customer_id, ebrc_number, ebrc_date, irm_number, sb_cum_invoice_number, sb_cum_invoice_date,
      realised_value_fcc, currency, iec_code, request_id, source, status)
    select gen_random_uuid(), ${owner.platformId}::uuid, ${owner.customerId}::uuid, n.ebrc_number, n.ebrc_date, n.irm_number, n.sb_cum_invoice_number,
      n.sb_cum_invoice_date, n.realised_value_fcc, n.currency, n.iec_code, n.request_id, n.source, n.status
    from jsonb_to_recordset(${JSON.stringify(ebrcs, storableTexts)}::jsonb) as n(
      ebrc_number text, ebrc_date date, irm_number text, sb_cum_invoice_number text, sb_cum_invoice_date date,
      realised_value_fcc numeric, currency text, iec_code text, request_id text, source text, status text)
    on conflict (platform_customer_id, ebrc_number) ${onConflict}
    returning ebrcs.*`.execute(db);
  // In the order given (RETURNING promises none).
  const order = new Map(ebrcs.map((ebrc, index) => [ebrc.ebrc_number, index]));
  return rows.sort((a, b) => order.get(a.ebrc_number)! - order.get(b.ebrc_number)!);
}

/**
 * Every text of the rows as a column can hold it (domain/storable-text.ts). In JSON a NUL or half a surrogate pair
 * would be a `\u` escape that jsonb refuses: one such eBRC would fail its whole batch, where this keeps it.
 */
function storableTexts(_key: string, value: unknown): unknown {
  return typeof value === 'string' ? storableText(value) : value;
}

/** Rewrites registered eBRCs with the authority's latest values; the source and requestId stay as registered. */
export async function updateRegistered(db: Kysely<Schema>, ebrcs: readonly (RegisterValues & { id: string })[]): Promise<RegisteredEbrcRow[]> {
  if (ebrcs.length === 0) return [];
  const rows = JSON.stringify(ebrcs, storableTexts);
  const { rows: updated } = await sql<RegisteredEbrcRow>`
    update ebrcs set
      ebrc_date = n.ebrc_date, irm_number = n.irm_number, sb_cum_invoice_number = n.sb_cum_invoice_number,
      sb_cum_invoice_date = n.sb_cum_invoice_date, realised_value_fcc = n.realised_value_fcc, currency = n.currency,
      iec_code = n.iec_code, status = n.status, updated_at = now()
    from jsonb_to_recordset(${rows}::jsonb) as n(
      id uuid, ebrc_date date, irm_number text, sb_cum_invoice_number text, sb_cum_invoice_date date,
      realised_value_fcc numeric, currency text, iec_code text, status text)
    where ebrcs.id = n.id
    returning ebrcs.*`.execute(db);
  return updated;
}

/**
 * Which of these eBRC numbers a request of this service generated (any customer's), with the requestId when the
 * request is this customer's. One index probe per number (genebrc_request_lines.ebrc_number is unique).
 */
export async function madeHere(db: Kysely<Schema>, customerId: string, ebrcNumbers: readonly string[]): Promise<Map<string, string | null>> {
  if (ebrcNumbers.length === 0) return new Map();
  const rows = await db
    .selectFrom('genebrc_request_lines as line')
    .innerJoin('genebrc_requests as request', 'request.id', 'line.request_id')
    .select(['line.ebrc_number', 'request.request_id', 'request.platform_customer_id'])
    .where('line.ebrc_number', '=', anyText(ebrcNumbers))
    .execute();
  return new Map(rows.map((row) => [row.ebrc_number!, row.platform_customer_id === customerId ? row.request_id : null]));
}

/** A page of the customer's register, newest eBRC date first, then eBRC number; and how many match. */
export async function listRegistered(db: Kysely<Schema>, filter: EbrcRegisterFilter & { offset: number; limit: number }): Promise<{ rows: RegisteredEbrcRow[]; total: number }> {
  let matching = db.selectFrom('ebrcs').where('platform_customer_id', '=', filter.customerId);
  if (filter.fromDate) matching = matching.where('ebrc_date', '>=', filter.fromDate);
  if (filter.toDate) matching = matching.where('ebrc_date', '<=', filter.toDate);
  if (filter.irmNumber) matching = matching.where('irm_number', '=', filter.irmNumber);
  if (filter.sbCumInvoiceNumber) matching = matching.where('sb_cum_invoice_number', '=', filter.sbCumInvoiceNumber);
  const [rows, counted] = await Promise.all([
    pageRows(matching.selectAll().orderBy('ebrc_date', 'desc').orderBy('ebrc_number'), filter).execute(),
    matching.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(counted.total) };
}

export async function findRegistered(db: Kysely<Schema>, customerId: string, ebrcNumber: string): Promise<RegisteredEbrcRow | undefined> {
  return db.selectFrom('ebrcs').selectAll().where('platform_customer_id', '=', customerId).where('ebrc_number', '=', ebrcNumber).executeTakeFirst();
}
