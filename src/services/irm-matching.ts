import type { Static } from 'typebox';
import { parseLineDate, toDdMMyyyy, toIsoDate } from '../domain/dates.ts';
import {
  DEFAULT_CHARGE_TOLERANCE_BASIS_POINTS,
  DEFAULT_CHARGE_TOLERANCE_CAP_CENTS,
  DEFAULT_MAX_DAYS_AFTER_INVOICE,
  matchInvoices,
  splitIntoPushes,
  type MatchAllocation,
  type MatchInvoice,
  type MatchIrm,
} from '../domain/matching.ts';
import { centsToNumber, MAX_MONEY_CENTS, parseDecimalString, parseMoney, type Cents } from '../domain/money.ts';
import { checkPushMessage, DECLARATION_FLAG } from '../domain/push-message.ts';
import { normaliseLines, type FieldProblem, type RawLine } from '../domain/push-line.ts';
import { PORT_CODES } from '../domain/purpose-codes.ts';
import type { UploadTypeCode } from '../domain/upload-type.ts';
import { AppError } from '../errors.ts';
import type { MatchAnswerSchema, MatchBodySchema } from '../schemas/irm-matching.ts';
import * as store from '../store/irms.ts';
import { requireVerified, type ServiceContext } from './context.ts';
import { requireCustomer } from './customers.ts';
import type { IrmPuller } from './irms.ts';

export type MatchBody = Static<typeof MatchBodySchema>;
export type MatchAnswer = Static<typeof MatchAnswerSchema>;
type ProposedPush = MatchAnswer['pushes'][number];
type ProposedLine = ProposedPush['ebrcBulkGenDtos'][number];

/**
 * The most IRMs one match reads. The invoices' dates and maxDaysAfterInvoice bound which IRMs can pay them; an exporter
 * with more open IRMs than this in that window is asked to match a shorter period at a time (a 400), rather than being
 * answered from part of its IRMs.
 */
export const MAX_MATCH_IRMS = 20_000;

/** Lines per push (the authority's limit, and PushBodySchema's). */
const MAX_PUSH_LINES = 999;
const DAY_MS = 86_400_000;
const BASIS_POINTS_IN_FULL = 10_000n;

/** A match request, checked: amounts in cents, dates as YYYY-MM-DD, the defaults applied. */
type CheckedMatch = {
  uploadType: UploadTypeCode;
  /** The charge tolerance in basis points of the invoice value (a percent with two decimals, as an integer). */
  basisPoints: Cents;
  /** Its cap in cents; null for none. */
  capCents: Cents | null;
  maxDays: number;
  invoices: MatchInvoice[];
};

/**
 * The invoice half of a push line, the IRM half filled with placeholders that pass every format check: so an invoice
 * is checked by the push's own normaliseLines, with its ERR codes, and its date comes back as ddMMyyyy.
 */
function asPushLine(invoice: MatchBody['invoices'][number], uploadType: UploadTypeCode): RawLine {
  return {
    serialNo: 1,
    uploadType,
    branchSlNo: 0,
    irmIfscCode: 'XXXX0000000',
    irmAdCode: '0000000',
    irmNumber: 'X',
    irmDt: '01012000',
    irmFCC: 'XXX',
    irmPurposeCode: 'P0102',
    irmRemitAmtFCC: 0,
    sbCumInvoiceNumber: invoice.sbCumInvoiceNumber,
    sbCumInvoiceDate: invoice.sbCumInvoiceDate,
    portCode: invoice.portCode,
    billNo: invoice.billNo,
    sbCumInvoiceFCC: invoice.sbCumInvoiceFCC,
    sbCumInvoiceValueinFCC: invoice.sbCumInvoiceValueinFCC,
    mappedIRMAmountFCC: 0,
  };
}

/** The index of the invoice a problem's path names (/invoices/12/portCode → 12), -1 for the other fields. */
function invoiceIndexOf(problem: FieldProblem): number {
  const match = /^\/invoices\/(\d+)\//.exec(problem.path);
  return match ? Number(match[1]) : -1;
}

/** Every malformed field of a match request (a 400 with them all), or the request checked. */
export function checkMatchRequest(body: MatchBody): CheckedMatch {
  const problems: FieldProblem[] = [];
  const { uploadType, problems: messageProblems } = checkPushMessage({ uploadType: body.uploadType, decalarationFlag: DECLARATION_FLAG });
  problems.push(...messageProblems);

  const percent = body.chargeTolerance?.percent ?? Number(DEFAULT_CHARGE_TOLERANCE_BASIS_POINTS) / 100;
  // A percent with at most two decimals, in hundredths, is basis points: parseMoney reads it exactly.
  const basisPoints = parseMoney(percent);
  if (basisPoints === null || basisPoints > BASIS_POINTS_IN_FULL) {
    problems.push({
      path: '/chargeTolerance/percent',
      code: 'invalid_percent',
      message: `percent must be a number from 0 to 100 with at most two decimals (got ${JSON.stringify(percent)}).`,
    });
  }
  const maxAmount = body.chargeTolerance?.maxAmount === undefined ? centsToNumber(DEFAULT_CHARGE_TOLERANCE_CAP_CENTS) : body.chargeTolerance.maxAmount;
  const capCents = maxAmount === null ? null : parseMoney(maxAmount);
  if (maxAmount !== null && capCents === null) {
    problems.push({
      path: '/chargeTolerance/maxAmount',
      code: 'invalid_money',
      message: `maxAmount must be null or a non-negative amount with at most two decimals, within number(16,2) (got ${JSON.stringify(maxAmount)}).`,
    });
  }

  // Without a valid uploadType the invoice number's rule is unknown: the other fields are still checked.
  const formats = normaliseLines(body.invoices.map((invoice) => asPushLine(invoice, uploadType ?? '103')), uploadType ?? '103', '/invoices').problems;
  problems.push(...(uploadType === null ? formats.filter((problem) => !problem.path.endsWith('/sbCumInvoiceNumber')) : formats));
  const firstIndex = new Map<string, number>();
  body.invoices.forEach((invoice, index) => {
    const path = `/invoices/${index}`;
    const first = firstIndex.get(invoice.sbCumInvoiceNumber);
    if (first === undefined) {
      firstIndex.set(invoice.sbCumInvoiceNumber, index);
    } else {
      problems.push({
        path: `${path}/sbCumInvoiceNumber`,
        code: 'duplicate_invoice_number',
        message: `sbCumInvoiceNumber ${JSON.stringify(invoice.sbCumInvoiceNumber)} is also invoice ${first}'s; give each invoice once.`,
      });
    }
    if (parseMoney(invoice.sbCumInvoiceValueinFCC) === 0n) {
      problems.push({ path: `${path}/sbCumInvoiceValueinFCC`, code: 'invalid_money', message: 'sbCumInvoiceValueinFCC must be an amount above 0 (got 0).' });
    }
    // A port code of the wrong length is ERR29 already (normaliseLines); one problem per field.
    if (invoice.portCode.length === 6 && !PORT_CODES.has(invoice.portCode)) {
      problems.push({
        path: `${path}/portCode`,
        code: 'ERR30',
        message: `portCode ${invoice.portCode} is not in the port master: a push with it would be refused.`,
      });
    }
  });

  if (problems.length > 0 || uploadType === null || basisPoints === null) {
    const sorted = problems.toSorted((a, b) => invoiceIndexOf(a) - invoiceIndexOf(b));
    throw new AppError(
      'validation_failed',
      sorted.length === 1 ? `The match request has an invalid field: ${sorted[0]!.message}` : `The match request has ${sorted.length} invalid fields; see errors.`,
      { errors: sorted },
    );
  }

  // Dates as YYYY-MM-DD for the engine (its reasons then read like the IRMs' dates); the pushes get ddMMyyyy.
  const invoices = body.invoices.map((invoice): MatchInvoice => {
    return {
      sbCumInvoiceNumber: invoice.sbCumInvoiceNumber,
      sbCumInvoiceDate: toIsoDate(parseLineDate(invoice.sbCumInvoiceDate)!),
      sbCumInvoiceFCC: invoice.sbCumInvoiceFCC,
      sbCumInvoiceValueinFCC: parseMoney(invoice.sbCumInvoiceValueinFCC)!,
      portCode: invoice.portCode,
      billNo: invoice.billNo,
      buyerName: invoice.buyerName ?? null,
      buyerCountry: invoice.buyerCountry ?? null,
    };
  });
  return { uploadType, basisPoints, capCents, maxDays: body.maxDaysAfterInvoice ?? DEFAULT_MAX_DAYS_AFTER_INVOICE, invoices };
}

/** The day (UTC) of a YYYY-MM-DD date, as days since 1970. */
function dayOf(date: string): number {
  const d = parseLineDate(date)!;
  return Date.UTC(d.year, d.month - 1, d.day) / DAY_MS;
}

function isoOfDay(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

/** The remittance dates any invoice's payment may have: from the earliest invoice less maxDays (an advance) to the latest plus maxDays. */
function remittanceWindow(invoices: readonly MatchInvoice[], maxDays: number): { fromDate: string; toDate: string } {
  const days = invoices.map((invoice) => dayOf(invoice.sbCumInvoiceDate));
  return { fromDate: isoOfDay(Math.min(...days) - maxDays), toDate: isoOfDay(Math.max(...days) + maxDays) };
}

function ddMMyyyy(iso: string): string {
  return `${iso.slice(8, 10)}${iso.slice(5, 7)}${iso.slice(0, 4)}`;
}

function toMatchIrm(row: store.IrmForMatch): MatchIrm {
  return {
    irmNumber: row.irm_number,
    remittanceFCC: row.remittance_fcc,
    availableCents: parseDecimalString(row.irm_available_amt),
    remittanceDate: row.remittance_date,
    purposeOfRemittance: row.purpose_of_remittance,
    remitterName: row.remitter_name,
    remitterCountry: row.remitter_country,
    ifscCode: row.ifsc_code,
  };
}

/**
 * Push bodies for the allocations: at most 999 lines each (splitIntoPushes keeps what shares an IRM or an invoice
 * together where it fits), serial numbers 1..n, the IRM side of each line from the IRM as stored and the invoice side
 * from the request. irmRemitAmtFCC is the IRM's available amount as each push will find it: its balance now, less
 * what earlier pushes of the list map from it (only an IRM with more than 999 lines spans pushes).
 */
function pushesFor(
  customerId: string,
  uploadType: UploadTypeCode,
  allocations: readonly MatchAllocation[],
  irms: ReadonlyMap<string, store.IrmForMatch>,
  invoices: ReadonlyMap<string, MatchInvoice>,
): ProposedPush[] {
  const mappedEarlier = new Map<string, Cents>();
  return splitIntoPushes(allocations, MAX_PUSH_LINES).map((group) => {
    const lines = group.map((allocation, index): ProposedLine => {
      const irm = irms.get(allocation.irmNumber)!;
      const invoice = invoices.get(allocation.sbCumInvoiceNumber)!;
      return {
        serialNo: index + 1,
        uploadType: Number(uploadType),
        branchSlNo: 0,
        irmIfscCode: irm.ifsc_code,
        irmAdCode: irm.remittance_ad_code,
        irmNumber: irm.irm_number,
        irmDt: ddMMyyyy(irm.irm_issue_date),
        irmFCC: irm.remittance_fcc,
        irmPurposeCode: irm.purpose_of_remittance,
        irmRemitAmtFCC: centsToNumber(parseDecimalString(irm.irm_available_amt) - (mappedEarlier.get(irm.irm_number) ?? 0n)),
        sbCumInvoiceNumber: invoice.sbCumInvoiceNumber,
        sbCumInvoiceDate: toDdMMyyyy(parseLineDate(invoice.sbCumInvoiceDate)!),
        portCode: invoice.portCode ?? '',
        billNo: invoice.billNo ?? '',
        sbCumInvoiceFCC: invoice.sbCumInvoiceFCC,
        sbCumInvoiceValueinFCC: centsToNumber(invoice.sbCumInvoiceValueinFCC),
        mappedIRMAmountFCC: centsToNumber(allocation.mappedIRMAmountFCC),
      };
    });
    for (const allocation of group) {
      mappedEarlier.set(allocation.irmNumber, (mappedEarlier.get(allocation.irmNumber) ?? 0n) + allocation.mappedIRMAmountFCC);
    }
    return { platformCustomerId: customerId, recordResCount: lines.length, uploadType, decalarationFlag: 'Y' as const, ebrcBulkGenDtos: lines };
  });
}

/**
 * POST /platform-customers/{id}/irm/match (contract 11): proposes which of the customer's stored IRMs pay which
 * invoices (src/domain/matching.ts), with push bodies ready to send. Reads only: nothing is stored and no balance moves.
 * A customer that has never pulled its IRMs pulls them first, as a push does.
 */
export async function matchIrms(
  context: ServiceContext,
  puller: IrmPuller,
  platformId: string,
  customerId: string,
  body: MatchBody,
): Promise<MatchAnswer> {
  const customer = requireVerified(await requireCustomer(context.db, platformId, customerId));
  const request = checkMatchRequest(body);
  if (customer.irms_pulled_at === null) await puller.pull(customer);

  const currencies = [...new Set(request.invoices.map((invoice) => invoice.sbCumInvoiceFCC))];
  const window = remittanceWindow(request.invoices, request.maxDays);
  const rows = await store.findIrmsForMatch(context.db, { customerId: customer.id, currencies, ...window, limit: MAX_MATCH_IRMS + 1 });
  if (rows.length > MAX_MATCH_IRMS) {
    const message =
      `The invoices' currencies and dates (remittances from ${window.fromDate} to ${window.toDate}) take in more than ${MAX_MATCH_IRMS} ` +
      'IRMs with a balance, more than one match reads; match the invoices of a shorter period at a time, or give a smaller maxDaysAfterInvoice.';
    throw new AppError('validation_failed', message, { errors: [{ path: '/invoices', code: 'too_many_irms', message }] });
  }

  const result = matchInvoices({
    irms: rows.map(toMatchIrm),
    invoices: request.invoices,
    uploadType: request.uploadType,
    chargeToleranceBasisPoints: Number(request.basisPoints),
    chargeToleranceCapCents: request.capCents ?? MAX_MONEY_CENTS,
    maxDaysAfterInvoice: request.maxDays,
  });

  // The invoices' order as sent; one invoice's IRMs oldest remittance first (the rows' order).
  const invoiceOrder = new Map(request.invoices.map((invoice, index) => [invoice.sbCumInvoiceNumber, index]));
  const irmOrder = new Map(rows.map((row, index) => [row.irm_number, index]));
  const allocations = result.allocations.toSorted((a, b) =>
    invoiceOrder.get(a.sbCumInvoiceNumber)! - invoiceOrder.get(b.sbCumInvoiceNumber)! || irmOrder.get(a.irmNumber)! - irmOrder.get(b.irmNumber)!);
  const irmsByNumber = new Map(rows.map((row) => [row.irm_number, row]));
  const invoicesByNumber = new Map(request.invoices.map((invoice) => [invoice.sbCumInvoiceNumber, invoice]));

  return {
    allocations: allocations.map((allocation) => ({
      sbCumInvoiceNumber: allocation.sbCumInvoiceNumber,
      irmNumber: allocation.irmNumber,
      mappedIRMAmountFCC: centsToNumber(allocation.mappedIRMAmountFCC),
      confidence: allocation.confidence,
      reasons: allocation.reasons,
    })),
    unmatchedInvoices: result.unmatchedInvoices.map((invoice) => ({ sbCumInvoiceNumber: invoice.sbCumInvoiceNumber, remaining: centsToNumber(invoice.remaining) })),
    unusedIrms: result.unusedIrms.map((irm) => ({ irmNumber: irm.irmNumber, available: centsToNumber(irm.available) })),
    pushes: pushesFor(customer.id, request.uploadType, allocations, irmsByNumber, invoicesByNumber),
    parameters: {
      uploadType: request.uploadType,
      chargeTolerance: { percent: centsToNumber(request.basisPoints), maxAmount: request.capCents === null ? null : centsToNumber(request.capCents) },
      maxDaysAfterInvoice: request.maxDays,
    },
  };
}
