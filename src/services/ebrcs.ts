import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import type { EbrcSchema } from '../schemas/ebrcs.ts';
import { isoFromDdMMyyyy } from '../domain/dates.ts';
import { centsToNumber, formatCents, parseDecimalString, parseMoney } from '../domain/money.ts';
import { visibleStatus } from '../domain/request-state.ts';
import { notFound } from '../errors.ts';
import * as store from '../store/ebrcs.ts';
import type { Schema } from '../store/schema.ts';
import { asCustomer, requireVerified, type ServiceContext, type VerifiedCustomer } from './context.ts';
import { requireCustomer } from './customers.ts';
import type { CertificateData } from './ebrc-certificate.ts';
import type { NewEvent } from './outbox.ts';
import { dataPage, offsetOf } from './pages.ts';

export type Ebrc = Static<typeof EbrcSchema>;

export type EbrcFilter = {
  /** YYYY-MM-DD, inclusive, on ebrcDate. */
  fromDate?: string | undefined;
  toDate?: string | undefined;
  irmNumber?: string | undefined;
  sbCumInvoiceNumber?: string | undefined;
};

export type EbrcPageQuery = EbrcFilter & { page: number; limit: number };

/**
 * A page of the customer's eBRCs from the register (contract 13), newest first, after bringing the register up to date
 * with what the authority reports for the page's filters (syncEbrcs): new eBRCs, cancellations. The authority is asked
 * on every call: when it fails, the call fails (502/504) rather than answer a list that may lack eBRCs.
 */
export async function listEbrcs(context: ServiceContext, platformId: string, customerId: string, query: EbrcPageQuery) {
  const customer = requireVerified(await requireCustomer(context.db, platformId, customerId));
  await syncEbrcs(context, customer, query);
  const { rows, total } = await store.listRegistered(context.db, { customerId: customer.id, ...query, offset: offsetOf(query), limit: query.limit });
  return dataPage(rows.map(toEbrc), total, query);
}

/**
 * The one-page PDF summary of one of the customer's eBRCs; 404 when the register has no such number for it after
 * asking the authority. It says "generated through this service" exactly when the register's source is this_service,
 * whichever customer's request made it; the request's details are shown for this customer's own requests.
 */
export async function ebrcCertificate(context: ServiceContext, platformId: string, customerId: string, ebrcNumber: string): Promise<Buffer> {
  const customer = requireVerified(await requireCustomer(context.db, platformId, customerId));
  const known = await store.findRegistered(context.db, customer.id, ebrcNumber);
  // A registered eBRC is looked for on its day and invoice; another one among all of the IEC's.
  await syncEbrcs(context, customer, known === undefined ? {} : { fromDate: known.ebrc_date, toDate: known.ebrc_date, sbCumInvoiceNumber: known.sb_cum_invoice_number });
  const ebrc = await store.findRegistered(context.db, customer.id, ebrcNumber);
  if (ebrc === undefined) throw notFound(`eBRC ${ebrcNumber} of platform customer ${customer.id}`);
  const local = ebrc.request_id === null ? undefined : await store.findLocalEbrc(context.db, customer.id, ebrcNumber);
  const irm = await store.findEbrcIrm(context.db, customer.id, ebrc.irm_number);
  // Loaded on the first PDF only: pdfkit costs ~135 ms of start-up that most processes never need.
  const { renderCertificate } = await import('./ebrc-certificate.ts');
  return renderCertificate({
    exporter: { name: customer.name, companyName: customer.company_name, iecCode: customer.iec_code },
    ebrc: {
      ebrcNumber: ebrc.ebrc_number,
      ebrcDate: ebrc.ebrc_date,
      status: ebrc.status,
      irmNumber: ebrc.irm_number,
      sbCumInvoiceNumber: ebrc.sb_cum_invoice_number,
      sbCumInvoiceDate: ebrc.sb_cum_invoice_date,
      realisedValueFCC: ebrc.realised_value_fcc,
      currency: ebrc.currency,
    },
    source: ebrc.source,
    irm: irm === undefined ? null : {
      remitterName: irm.remitter_name,
      remitterCountry: irm.remitter_country,
      purposeOfRemittance: irm.purpose_of_remittance,
      irmIssueDate: irm.irm_issue_date,
      remittanceDate: irm.remittance_date,
    },
    request: local === undefined ? null : requestOf(local),
    generatedAt: new Date(),
  });
}

/** What bringing the register up to date found: eBRCs it did not hold, and eBRCs that became cancelled. */
export type EbrcSyncOutcome = { discovered: number; cancelled: number; unreadable: number };

/** The register's status for the authority's word: cancelled for CANCELLED (any case or spelling), else generated. */
function registerStatus(word: string): RegisteredEbrc['status'] {
  return /^cancel/i.test(word.trim()) ? 'cancelled' : 'generated';
}

type RegisteredEbrc = store.RegisteredEbrcRow;

const COMPARED_FIELDS = ['ebrcDate', 'irmNumber', 'sbCumInvoiceNumber', 'sbCumInvoiceDate', 'realisedValueFCC', 'currency', 'iecCode', 'status'] as const satisfies readonly (keyof Ebrc)[];

function ebrcChanges(before: Ebrc | null, after: Ebrc): { field: string; from: unknown; to: unknown }[] {
  if (before === null) return [{ field: 'status', from: null, to: after.status }];
  return COMPARED_FIELDS.filter((field) => before[field] !== after[field]).map((field) => ({ field, from: before[field], to: after[field] }));
}

/**
 * Brings the customer's register up to date with the authority's fetchEBRCDetails for these filters (contract 13), a
 * batch at a time, each in one transaction with its events: an eBRC it did not hold is added (source this_service when
 * a request of this service generated it, else elsewhere) and one whose values changed (a cancellation at the portal
 * or by the bank) is updated; each raises ebrc.updated with its changes, except this customer's own eBRCs, which
 * ebrc.generated announced. eBRCs the authority no longer lists are kept as they are. One the register cannot hold as
 * the authority sent it is logged as a warning and left out; the others are stored.
 */
export async function syncEbrcs(context: ServiceContext, customer: VerifiedCustomer, filter: EbrcFilter): Promise<EbrcSyncOutcome> {
  const reported = await asCustomer(context, customer, (credentials) =>
    context.authority.fetchEbrcs(credentials, {
      iecCode: customer.iec_code,
      fromDate: filter.fromDate,
      toDate: filter.toDate,
      sbCumInvoiceNumber: filter.sbCumInvoiceNumber,
    }),
  );
  for (const odd of reported.unreadable) {
    context.log?.warn({ platformCustomerId: customer.id, ebrcNumber: odd.ebrcNumber, reason: odd.reason }, 'the authority sent an eBRC that cannot be stored; kept the others');
  }
  const unique = [...new Map(reported.ebrcs.map((ebrc) => [ebrc.ebrcNumber, ebrc])).values()];
  const outcome: EbrcSyncOutcome = { discovered: 0, cancelled: 0, unreadable: reported.unreadable.length };
  let events = 0;
  for (let start = 0; start < unique.length; start += store.REGISTER_BATCH) {
    const batch = unique.slice(start, start + store.REGISTER_BATCH);
    events += await context.db.transaction().execute(async (tx) => {
      const numbers = batch.map((ebrc) => ebrc.ebrcNumber);
      const held = new Map((await store.lockRegistered(tx, customer.id, numbers)).map((row) => [row.ebrc_number, row]));
      const made = await store.madeHere(tx, customer.id, numbers.filter((number) => !held.has(number)));
      const fresh: store.RegisterValues[] = [];
      const changed: (store.RegisterValues & { id: string })[] = [];
      for (const ebrc of batch) {
        const row = held.get(ebrc.ebrcNumber);
        const values: store.RegisterValues = {
          ebrc_number: ebrc.ebrcNumber,
          ebrc_date: ebrc.ebrcDate,
          irm_number: ebrc.irmNumber,
          sb_cum_invoice_number: ebrc.sbCumInvoiceNumber,
          sb_cum_invoice_date: ebrc.sbCumInvoiceDate,
          realised_value_fcc: ebrc.realisedValueFCC,
          currency: ebrc.currency,
          iec_code: ebrc.iecCode,
          status: registerStatus(ebrc.status),
          source: row?.source ?? (made.has(ebrc.ebrcNumber) ? 'this_service' : 'elsewhere'),
          request_id: row === undefined ? (made.get(ebrc.ebrcNumber) ?? null) : row.request_id,
        };
        if (row === undefined) fresh.push(values);
        else if (ebrcChanges(toEbrc(row), toEbrc({ ...row, ...values })).length > 0) changed.push({ ...values, id: row.id });
      }
      const owner = { platformId: customer.platform_id, platformCustomerId: customer.id };
      const inserted = await store.insertRegistered(tx, { platformId: customer.platform_id, customerId: customer.id }, fresh);
      const updated = await store.updateRegistered(tx, changed);
      const news: NewEvent[] = [
        // This customer's own eBRCs were announced by ebrc.generated (normally registered by then, see registerOwnEbrcs).
        ...inserted.filter((row) => row.request_id === null).map((row) => ({ ...owner, type: 'ebrc.updated' as const, data: { ...toEbrc(row), changes: ebrcChanges(null, toEbrc(row)) } })),
        ...updated.map((row) => ({ ...owner, type: 'ebrc.updated' as const, data: { ...toEbrc(row), changes: ebrcChanges(toEbrc(held.get(row.ebrc_number)!), toEbrc(row)) } })),
      ];
      await context.outbox.record(tx, news);
      outcome.discovered += inserted.filter((row) => row.request_id === null).length;
      outcome.cancelled += updated.filter((row) => row.status === 'cancelled' && held.get(row.ebrc_number)?.status !== 'cancelled').length;
      return news.length;
    });
  }
  if (events > 0) context.outbox.committed();
  return outcome;
}

/**
 * Registers the eBRCs a request of this customer generated, in the transaction that records them (the lifecycle's
 * finish): source this_service with the requestId, also over an entry a sync made a moment before as elsewhere.
 */
export async function registerOwnEbrcs(tx: Kysely<Schema>, owner: { platformId: string; customerId: string }, rows: readonly store.LocalEbrcRow[]): Promise<Ebrc[]> {
  const registered = await store.insertRegistered(tx, owner, rows.map((row) => ({
    ebrc_number: row.ebrc_number,
    ebrc_date: row.ebrc_date,
    irm_number: row.irm_number,
    sb_cum_invoice_number: row.sb_cum_invoice_number,
    sb_cum_invoice_date: isoDateOfLine(row.sb_cum_invoice_date),
    realised_value_fcc: row.mapped_amount,
    currency: row.currency,
    iec_code: row.iec_number,
    request_id: row.request_id,
    source: 'this_service',
    status: 'generated',
  })), 'claim');
  const byNumber = new Map(registered.map((row) => [row.ebrc_number, toEbrc(row)]));
  return rows.map((row) => byNumber.get(row.ebrc_number)!);
}

/** An eBRC of the register as the API shows it (the list, and the ebrc.* events). */
export function toEbrc(row: store.RegisteredEbrcRow): Ebrc {
  return {
    ebrcNumber: row.ebrc_number,
    ebrcDate: row.ebrc_date,
    irmNumber: row.irm_number,
    sbCumInvoiceNumber: row.sb_cum_invoice_number,
    sbCumInvoiceDate: row.sb_cum_invoice_date,
    realisedValueFCC: centsToNumber(parseDecimalString(row.realised_value_fcc)),
    currency: row.currency,
    iecCode: row.iec_code,
    requestId: row.request_id,
    source: row.source,
    status: row.status,
  };
}

function requestOf(local: store.LocalEbrcDetail): NonNullable<CertificateData['request']> {
  const invoiceValue = typeof local.payload.sbCumInvoiceValueinFCC === 'number' ? parseMoney(local.payload.sbCumInvoiceValueinFCC) : null;
  const invoiceCurrency = textOf(local.payload.sbCumInvoiceFCC);
  return {
    requestId: local.request_id,
    authorityAckId: local.authority_ack_id,
    status: visibleStatus(local.request_status),
    uploadType: local.upload_type,
    pushedAt: local.request_created_at,
    processedAt: local.request_processed_at,
    serialNo: local.serial_no,
    portCode: textOf(local.payload.portCode),
    billNo: textOf(local.payload.billNo),
    invoiceValue: invoiceValue === null || invoiceCurrency === null ? null : { amount: formatCents(invoiceValue), currency: invoiceCurrency },
    mappedAmount: local.mapped_amount,
  };
}

function textOf(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** A stored line's date (ddMMyyyy) as YYYY-MM-DD. */
function isoDateOfLine(ddMMyyyy: string): string {
  const iso = isoFromDdMMyyyy(ddMMyyyy);
  if (iso === null) throw new Error(`A stored line date is not ddMMyyyy: ${JSON.stringify(ddMMyyyy)}`);
  return iso;
}
