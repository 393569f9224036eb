import type { Static } from 'typebox';
import type { EbrcSchema } from '../http/schemas.ts';
import type { AuthorityEbrc } from '../authority/authority.ts';
import { isoFromDdMMyyyy } from '../domain/dates.ts';
import { centsToNumber, formatCents, parseDecimalString, parseMoney } from '../domain/money.ts';
import { visibleStatus } from '../domain/request-state.ts';
import { notFound } from '../errors.ts';
import * as store from '../store/ebrcs.ts';
import { asCustomer, requireVerified, type ServiceContext, type VerifiedCustomer } from './context.ts';
import { requireCustomer } from './customers.ts';
import type { CertificateData } from './ebrc-certificate.ts';
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

/** An eBRC as merged from both sources, its amount still exact decimal text. */
type MergedEbrc = AuthorityEbrc & { requestId: string | null };

/** The status of an eBRC that only this service knows of yet: its line's status. */
const GENERATED = 'GENERATED';

/**
 * A page of the customer's eBRCs, newest first: those the authority reports for its IEC merged with those generated
 * here. The authority is asked on every call: when it fails, the call fails (502/504) rather than answer a list that
 * may lack eBRCs, with totals that would change once it is back.
 */
export async function listEbrcs(context: ServiceContext, platformId: string, customerId: string, query: EbrcPageQuery) {
  const customer = requireVerified(await requireCustomer(context.db, platformId, customerId));
  const ebrcs = await mergedEbrcs(context, customer, query);
  const offset = offsetOf(query);
  return dataPage(ebrcs.slice(offset, offset + query.limit).map(toEbrc), ebrcs.length, query);
}

/** The one-page PDF summary of one of the customer's eBRCs; 404 when neither source knows the number for it. */
export async function ebrcCertificate(context: ServiceContext, platformId: string, customerId: string, ebrcNumber: string): Promise<Buffer> {
  const customer = requireVerified(await requireCustomer(context.db, platformId, customerId));
  const local = await store.findLocalEbrc(context.db, customer.id, ebrcNumber);
  // An eBRC made here is looked for on its day and invoice; another one among all of the IEC's.
  const narrowed: EbrcFilter = local === undefined
    ? {}
    : { fromDate: local.ebrc_date, toDate: local.ebrc_date, sbCumInvoiceNumber: local.sb_cum_invoice_number };
  const reported = await reportedEbrcs(context, customer, narrowed);
  const ebrc = merge(local === undefined ? [] : [local], reported).find((candidate) => candidate.ebrcNumber === ebrcNumber);
  if (ebrc === undefined) throw notFound(`eBRC ${ebrcNumber} of platform customer ${customer.id}`);
  const irm = await store.findEbrcIrm(context.db, customer.id, ebrc.irmNumber);
  // Loaded on the first PDF only: pdfkit costs ~135 ms of start-up that most processes never need.
  const { renderCertificate } = await import('./ebrc-certificate.ts');
  return renderCertificate({
    exporter: { name: customer.name, companyName: customer.company_name, iecCode: customer.iec_code },
    ebrc,
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

async function mergedEbrcs(context: ServiceContext, customer: VerifiedCustomer, filter: EbrcFilter): Promise<MergedEbrc[]> {
  const [local, reported] = await Promise.all([
    store.listLocalEbrcs(context.db, { customerId: customer.id, ...filter }),
    reportedEbrcs(context, customer, filter),
  ]);
  return merge(local, reported).filter((ebrc) => matches(ebrc, filter)).sort(newestFirst);
}

/** What the authority reports; it has no IRM filter, so that one is applied with the others after the merge. */
function reportedEbrcs(context: ServiceContext, customer: VerifiedCustomer, filter: EbrcFilter): Promise<AuthorityEbrc[]> {
  return asCustomer(context, customer, (credentials) =>
    context.authority.fetchEbrcs(credentials, {
      iecCode: customer.iec_code,
      fromDate: filter.fromDate,
      toDate: filter.toDate,
      sbCumInvoiceNumber: filter.sbCumInvoiceNumber,
    }),
  );
}

/** One entry per eBRC number: the authority's record where it has one, with the requestId of the line made here. */
function merge(local: readonly store.LocalEbrcRow[], reported: readonly AuthorityEbrc[]): MergedEbrc[] {
  const byNumber = new Map<string, MergedEbrc>(local.map((row) => [row.ebrc_number, fromLocal(row)]));
  for (const ebrc of reported) {
    byNumber.set(ebrc.ebrcNumber, { ...ebrc, requestId: byNumber.get(ebrc.ebrcNumber)?.requestId ?? null });
  }
  return [...byNumber.values()];
}

function fromLocal(row: store.LocalEbrcRow): MergedEbrc {
  return {
    ebrcNumber: row.ebrc_number,
    ebrcDate: row.ebrc_date,
    irmNumber: row.irm_number,
    sbCumInvoiceNumber: row.sb_cum_invoice_number,
    sbCumInvoiceDate: isoDateOfLine(row.sb_cum_invoice_date),
    realisedValueFCC: row.mapped_amount,
    currency: row.currency,
    iecCode: row.iec_number,
    requestId: row.request_id,
    status: GENERATED,
  };
}

/** Every filter, whichever source an entry came from (the authority may not apply all of them, nor exactly). */
function matches(ebrc: MergedEbrc, filter: EbrcFilter): boolean {
  return (filter.fromDate === undefined || ebrc.ebrcDate >= filter.fromDate)
    && (filter.toDate === undefined || ebrc.ebrcDate <= filter.toDate)
    && (filter.irmNumber === undefined || ebrc.irmNumber === filter.irmNumber)
    && (filter.sbCumInvoiceNumber === undefined || ebrc.sbCumInvoiceNumber === filter.sbCumInvoiceNumber);
}

/** ebrcDate newest first, then ebrcNumber, as the IRMs are ordered by date and number. */
function newestFirst(a: MergedEbrc, b: MergedEbrc): number {
  if (a.ebrcDate !== b.ebrcDate) return a.ebrcDate > b.ebrcDate ? -1 : 1;
  if (a.ebrcNumber === b.ebrcNumber) return 0;
  return a.ebrcNumber < b.ebrcNumber ? -1 : 1;
}

/** An eBRC generated here, as the API shows it (the list, and the ebrc.generated event). */
export function localEbrc(row: store.LocalEbrcRow): Ebrc {
  return toEbrc(fromLocal(row));
}

function toEbrc(ebrc: MergedEbrc): Ebrc {
  return { ...ebrc, realisedValueFCC: centsToNumber(parseDecimalString(ebrc.realisedValueFCC)) };
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
