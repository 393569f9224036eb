/**
 * The one place where the authority's plain messages meet the service's types (authority.ts): dates between
 * ddMMyyyy and YYYY-MM-DD, money from JSON numbers or strings to exact decimal text, the per-record shapes that the
 * authority does not publish (authority-wire.md decides them). An answer that does not read as the protocol says
 * throws UnreadableAnswer naming the field, and nothing of it is used.
 */
import type {
  AuthorityEbrc,
  EbrcFetch,
  AuthorityErrorDetail,
  AuthorityIrm,
  IrmFetch,
  EbrcQuery,
  IrmQuery,
  LineResult,
  PushAcknowledgement,
  PushMessage,
  RequestStatusAnswer,
} from '../authority.ts';
import { isoFromDdMMyyyy, parseIsoDate, toDdMMyyyy } from '../../domain/dates.ts';
import type { Cents } from '../../domain/money.ts';
import { MAX_MONEY_CENTS, formatCents, parseMoney } from '../../domain/money.ts';
import { isStorableText, storableText } from '../../domain/storable-text.ts';
import { normalizeUploadType } from '../../domain/upload-type.ts';
import type {
  FetchEbrcDetailsRequest,
  FetchIrmDetailsRequest,
  GetRequestStatusRequest,
  PushIrmToGenEbrcRequest,
  WireDate,
} from '../protocol/messages.ts';
import { REQUEST_NOT_RECEIVED_CODE } from '../protocol/messages.ts';

export class UnreadableAnswer extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnreadableAnswer';
  }
}

/** A push's outcome: its acknowledgement, or ERR09 (the requestId was received before: ask getRequestStatus). */
export type PushOutcome =
  | { kind: 'acknowledged'; acknowledgement: PushAcknowledgement }
  | { kind: 'already_received'; requestId: string };

const ALREADY_RECEIVED_CODE = 'ERR09';
const ACK_STATUSES: readonly PushAcknowledgement['ackStatus'][] = ['Validated', 'Failed'];
const PROCESSING_STATUSES: readonly RequestStatusAnswer['processingStatus'][] = ['Pending', 'Processed', 'Errored'];
const RECORD_STATUSES: readonly LineResult['status'][] = ['PENDING', 'GENERATED', 'FAILED'];
const DECIMAL_TEXT = /^(\d+)(?:\.(\d+))?$/;
const DIGITS = /^\d+$/;

export function irmQueryToWire(query: IrmQuery): FetchIrmDetailsRequest {
  return {
    iecCode: query.iecCode,
    irmFromDate: query.fromDate === undefined ? '' : wireDate(query.fromDate),
    irmToDate: query.toDate === undefined ? '' : wireDate(query.toDate),
    irmNumber: query.irmNumber ?? '',
  };
}

/**
 * Every IRM of the answer, cancelled (C) and amended (A) ones included: the store follows the authority (contract 13).
 * The authority's data is taken as it comes wherever it can be read without guessing: amounts as numbers or strings
 *, any relation between them, a status in any case or spelled out, optional fields absent
 * (text as "", an ORM or utilised amount as 0, a remittance date as the issue date). An IRM that cannot be read (no
 * number, no issue date or currency, an amount that is not one) is left out and reported in `unreadable`, and the
 * others are kept: one odd IRM never fails a customer's pull. Only an answer without the list itself is unreadable.
 */
export function irmsFromWire(answer: Record<string, unknown>): IrmFetch {
  const { read, unreadable } = readEach(answer, 'irmResplst', 'irmNumber', irmFromWire);
  return { irms: read, unreadable: unreadable.map(({ index, number, reason }) => ({ index, irmNumber: number, reason })) };
}

/**
 * Reads each item of the answer's list on its own: one that does not read is reported (its place, the number it
 * carries if any, why) and the others are read. Only an answer without the list is unreadable.
 */
function readEach<T>(
  answer: Record<string, unknown>,
  key: string,
  numberKey: string,
  readItem: (item: Record<string, unknown>, path: string) => T,
): { read: T[]; unreadable: { index: number; number: string | null; reason: string }[] } {
  const read: T[] = [];
  const unreadable: { index: number; number: string | null; reason: string }[] = [];
  listAt(answer, key, '').forEach((item, index) => {
    const path = `${key}[${index}]`;
    try {
      read.push(readItem(objectAt(item, path), path));
    } catch (error) {
      if (!(error instanceof UnreadableAnswer)) throw error;
      const number = typeof item === 'object' && item !== null ? (item as Record<string, unknown>)[numberKey] : undefined;
      unreadable.push({ index, number: typeof number === 'string' && number !== '' ? number : null, reason: error.message });
    }
  });
  return { read, unreadable };
}

function irmFromWire(irm: Record<string, unknown>, path: string): AuthorityIrm {
  const irmIssueDate = dateAt(irm, 'irmIssueDate', path);
  const optionalText = (key: string) => (isAbsent(irm[key]) ? '' : textAt(irm, key, path));
  const optionalAmount = (key: string) => (isAbsent(irm[key]) ? formatCents(0n) : amountAt(irm, key, path));
  const irmNumber = textAt(irm, 'irmNumber', path).trim();
  if (irmNumber === '') throw new UnreadableAnswer(`${fieldPath(path, 'irmNumber')} is blank.`);
  const read: AuthorityIrm = {
    irmNumber,
    irmStatus: irmStatusFromWire(irm.irmStatus, fieldPath(path, 'irmStatus')),
    irmIssueDate,
    ifscCode: optionalText('ifscCode'),
    remittanceAdCode: optionalText('remittanceAdCode'),
    remittanceDate: isAbsent(irm.remittanceDate) ? irmIssueDate : dateAt(irm, 'remittanceDate', path),
    remittanceFCC: textAt(irm, 'remittanceFCC', path),
    remittanceFCCAmount: amountAt(irm, 'remittanceFCCAmount', path),
    // An IRM without outward remittances may carry no ORM amount at all.
    ormAmountFCC: optionalAmount('ormAmountFCC'),
    irmAvailableAmt: amountAt(irm, 'irmAvailableAmt', path),
    irmUtilizedAmt: optionalAmount('irmUtilizedAmt'),
    iecCode: optionalText('iecCode'),
    panNumber: optionalText('panNumber'),
    remitterName: optionalText('remitterName'),
    remitterCountry: optionalText('remitterCountry'),
    purposeOfRemittance: optionalText('purposeOfRemittance'),
  };
  // Text no database column can hold (a NUL, half a surrogate pair) is not stored: the IRM is reported instead.
  const unstorable = Object.entries(read).find(([, value]) => !isStorableText(value));
  if (unstorable) throw new UnreadableAnswer(`${fieldPath(path, unstorable[0])} holds text that cannot be stored.`);
  return read;
}

const SPELLED_IRM_STATUSES: Readonly<Record<string, string>> = { FRESH: 'F', AMENDED: 'A', CANCELLED: 'C', CANCELED: 'C' };

/** F, A or C from the letter in any case or the word spelled out; any other text as it came, upper-cased; absent: F. */
function irmStatusFromWire(value: unknown, path: string): string {
  if (isAbsent(value)) return 'F';
  if (typeof value !== 'string') throw new UnreadableAnswer(`${path} is ${JSON.stringify(value)}, not a status letter.`);
  const status = value.trim().toUpperCase();
  return SPELLED_IRM_STATUSES[status] ?? status;
}

export function pushMessageToWire(message: PushMessage): PushIrmToGenEbrcRequest {
  const uploadType = normalizeUploadType(message.uploadType);
  if (uploadType === null) throw new RangeError(`uploadType ${JSON.stringify(message.uploadType)} is not one of 101-104`);
  return {
    iecNumber: message.iecNumber,
    requestId: message.requestId,
    recordResCount: message.recordResCount,
    uploadType: Number(uploadType),
    decalarationFlag: message.decalarationFlag,
    ebrcBulkGenDtos: message.ebrcBulkGenDtos,
  };
}

export function pushOutcomeFromWire(answer: Record<string, unknown>, requestId: string): PushOutcome {
  expectRequestId(answer, requestId);
  const ackStatus = oneOfAt(answer, 'ackStatus', '', ACK_STATUSES);
  const errorDetails = errorDetailsAt(answer, 'errorDetails', '');
  if (ackStatus === 'Failed' && errorDetails.some((detail) => detail.code === ALREADY_RECEIVED_CODE)) {
    return { kind: 'already_received', requestId };
  }
  const ackId = optionalTextAt(answer, 'dgftAckId', '');
  if (ackStatus === 'Validated' && ackId === null) throw new UnreadableAnswer('dgftAckId is missing from a Validated acknowledgement.');
  return {
    kind: 'acknowledged',
    acknowledgement: {
      ackId,
      requestId,
      ackStatus,
      recordResCount: integerAt(answer, 'recordResCount', ''),
      errorDetails,
    },
  };
}

export function requestStatusQueryToWire(requestId: string): GetRequestStatusRequest {
  return { requestId };
}

/** Null when the authority says it never received the requestId. */
export function requestStatusFromWire(answer: Record<string, unknown>, requestId: string): RequestStatusAnswer | null {
  const errorDetails = errorDetailsAt(answer, 'errorDetails', '');
  if (errorDetails.some((detail) => detail.code === REQUEST_NOT_RECEIVED_CODE)) return null;
  expectRequestId(answer, requestId);
  const ackId = optionalTextAt(answer, 'dgftAckId', '');
  const records = listAt(answer, 'ebrcBulkGenStatusLst', '').map((item, index): LineResult => {
    const path = `ebrcBulkGenStatusLst[${index}]`;
    const record = objectAt(item, path);
    return {
      serialNo: integerAt(record, 'serialNo', path),
      status: oneOfAt(record, 'status', path, RECORD_STATUSES),
      ebrcNumber: storableOrNull(optionalTextAt(record, 'ebrcNumber', path)),
      ebrcDate: isAbsent(record.ebrcDate) ? null : dateAt(record, 'ebrcDate', path),
      errorDetails: errorDetailsAt(record, 'errorDetails', path),
    };
  });
  return {
    ackId,
    requestId,
    // A push is Validated exactly when the authority gave it an ack id.
    ackStatus: ackId === null ? 'Failed' : 'Validated',
    errorDetails,
    recordResCount: integerAt(answer, 'recordResCount', ''),
    recordProCount: integerAt(answer, 'recordProCount', ''),
    recordFailCount: integerAt(answer, 'recordFailCount', ''),
    processingStatus: oneOfAt(answer, 'processingStatus', '', PROCESSING_STATUSES),
    records,
  };
}

export function ebrcQueryToWire(query: EbrcQuery): FetchEbrcDetailsRequest {
  return {
    iecCode: query.iecCode,
    eBRCIssueFromDt: query.fromDate === undefined ? null : wireDate(query.fromDate),
    eBRCIssueToDt: query.toDate === undefined ? null : wireDate(query.toDate),
    sbCumInvoiceNumber: query.sbCumInvoiceNumber ?? null,
    sbCumInvoiceDate: query.sbCumInvoiceDate === undefined ? null : wireDate(query.sbCumInvoiceDate),
  };
}

/**
 * Every eBRC of the answer. As with IRMs, one that cannot be read (no number, a date or amount that is not one, a field
 * the register needs missing) is left out and reported in `unreadable`, and the others are kept: one odd eBRC never
 * fails a customer's sync. A status left out reads as issued (the authority lists it). Text no column holds (a NUL,
 * half a surrogate pair) is kept with U+FFFD in its place, so that the eBRC and its amount stay in the register and
 * its number can be looked up. Only an answer without the list is unreadable.
 */
export function ebrcsFromWire(answer: Record<string, unknown>): EbrcFetch {
  const { read, unreadable } = readEach(answer, 'eBRCRespList', 'ebrcNumber', ebrcFromWire);
  return { ebrcs: read, unreadable: unreadable.map(({ index, number, reason }) => ({ index, ebrcNumber: number, reason })) };
}

function ebrcFromWire(ebrc: Record<string, unknown>, path: string): AuthorityEbrc {
  const text = (key: string) => storableText(textAt(ebrc, key, path));
  // Kept as sent, spaces included: the status answer's eBRC numbers, which the request's lines keep, are too.
  const ebrcNumber = text('ebrcNumber');
  if (ebrcNumber.trim() === '') throw new UnreadableAnswer(`${fieldPath(path, 'ebrcNumber')} is blank.`);
  return {
    ebrcNumber,
    ebrcDate: dateAt(ebrc, 'ebrcDate', path),
    irmNumber: text('irmNumber'),
    sbCumInvoiceNumber: text('sbCumInvoiceNumber'),
    sbCumInvoiceDate: dateAt(ebrc, 'sbCumInvoiceDate', path),
    realisedValueFCC: amountAt(ebrc, 'realisedValueFCC', path),
    currency: text('currency'),
    iecCode: text('iecCode'),
    status: isAbsent(ebrc.status) ? 'GENERATED' : text('status'),
  };
}

/**
 * An amount as exact decimal text with two decimals. A JSON number is read through the shortest decimal that
 * round-trips to it (domain/money.ts), a string digit by digit; either way more than two non-zero decimals, a sign or
 * an exponent is refused rather than rounded.
 */
export function amountFromWire(value: unknown, path: string): string {
  let cents: Cents | null = null;
  if (typeof value === 'number') {
    cents = parseMoney(value);
  } else if (typeof value === 'string') {
    const match = DECIMAL_TEXT.exec(value.trim());
    if (match !== null) {
      const [, whole = '', fraction = ''] = match;
      if (/^0*$/.test(fraction.slice(2))) cents = BigInt(whole + fraction.slice(0, 2).padEnd(2, '0'));
    }
  }
  if (cents === null || cents > MAX_MONEY_CENTS) {
    throw new UnreadableAnswer(`${path} is ${JSON.stringify(value)}, not an amount with at most two decimals.`);
  }
  return formatCents(cents);
}

function wireDate(isoDate: string): WireDate {
  const date = parseIsoDate(isoDate);
  if (date === null) throw new RangeError(`${JSON.stringify(isoDate)} is not a YYYY-MM-DD date`);
  return toDdMMyyyy(date);
}

function expectRequestId(answer: Record<string, unknown>, requestId: string): void {
  const answered = textAt(answer, 'requestId', '');
  if (answered !== requestId) throw new UnreadableAnswer(`requestId is ${JSON.stringify(answered)}, the call asked about ${JSON.stringify(requestId)}.`);
}

function fieldPath(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

function isAbsent(value: unknown): boolean {
  return value === undefined || value === null || value === '';
}

function objectAt(value: unknown, path: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new UnreadableAnswer(`${path} is not an object.`);
  return value as Record<string, unknown>;
}

function listAt(record: Record<string, unknown>, key: string, path: string): unknown[] {
  const value = record[key];
  if (!Array.isArray(value)) throw new UnreadableAnswer(`${fieldPath(path, key)} is not a list.`);
  return value;
}

function textAt(record: Record<string, unknown>, key: string, path: string): string {
  const value = record[key];
  if (typeof value !== 'string' || value.length === 0) throw new UnreadableAnswer(`${fieldPath(path, key)} is not a non-empty string.`);
  return value;
}

function storableOrNull(text: string | null): string | null {
  return text === null ? null : storableText(text);
}

function optionalTextAt(record: Record<string, unknown>, key: string, path: string): string | null {
  return isAbsent(record[key]) ? null : textAt(record, key, path);
}

function integerAt(record: Record<string, unknown>, key: string, path: string): number {
  const value = record[key];
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  if (typeof value === 'string' && DIGITS.test(value) && Number.isSafeInteger(Number(value))) return Number(value);
  throw new UnreadableAnswer(`${fieldPath(path, key)} is ${JSON.stringify(value)}, not a whole number.`);
}

function amountAt(record: Record<string, unknown>, key: string, path: string): string {
  return amountFromWire(record[key], fieldPath(path, key));
}

function dateAt(record: Record<string, unknown>, key: string, path: string): string {
  const value = record[key];
  const iso = typeof value === 'string' ? isoFromDdMMyyyy(value) : null;
  if (iso === null) throw new UnreadableAnswer(`${fieldPath(path, key)} is ${JSON.stringify(value)}, not a ddMMyyyy date.`);
  return iso;
}

function oneOfAt<T extends string>(record: Record<string, unknown>, key: string, path: string, allowed: readonly T[]): T {
  const value = record[key];
  const found = allowed.find((candidate) => candidate === value);
  if (found === undefined) throw new UnreadableAnswer(`${fieldPath(path, key)} is ${JSON.stringify(value)}, not one of ${allowed.join(', ')}.`);
  return found;
}

function errorDetailsAt(record: Record<string, unknown>, key: string, path: string): AuthorityErrorDetail[] {
  if (isAbsent(record[key])) return [];
  return listAt(record, key, path).map((item, index) => {
    const detailPath = `${fieldPath(path, key)}[${index}]`;
    const detail = objectAt(item, detailPath);
    // Stored in jsonb with the request or its line, which refuses a NUL: repaired rather than refused (storableText).
    return {
      serialNo: isAbsent(detail.serialNo) ? null : integerAt(detail, 'serialNo', detailPath),
      field: storableOrNull(optionalTextAt(detail, 'field', detailPath)),
      code: storableText(textAt(detail, 'code', detailPath)),
      message: typeof detail.message === 'string' ? storableText(detail.message) : '',
    };
  });
}
