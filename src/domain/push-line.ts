import type { Cents } from './money.ts';
import { centsToNumber, parseMoney } from './money.ts';
import { parseLineDate, toDdMMyyyy } from './dates.ts';
import type { UploadTypeCode } from './upload-type.ts';
import { normalizeUploadType } from './upload-type.ts';

/** A push line (interface 2.4) as parsed JSON, after the schema has checked types, required fields and lengths. */
export type RawLine = {
  serialNo: number;
  uploadType: number | string;
  branchSlNo: number;
  irmIfscCode: string;
  irmAdCode: string;
  irmNumber: string;
  irmDt: string;
  irmFCC: string;
  irmPurposeCode: string;
  irmRemitAmtFCC: number;
  sbCumInvoiceNumber: string;
  sbCumInvoiceDate: string;
  portCode: string;
  billNo: string;
  sbCumInvoiceFCC: string;
  sbCumInvoiceValueinFCC: number;
  mappedIRMAmountFCC: number;
  isVostro?: string | null;
  vostroType?: string | null;
  mappedORMAmountFCC?: number | null;
  isThirdPartyExport?: string | null;
  commissionValDeduct?: number | null;
  commissionValInfo?: number | null;
  discountValDeduct?: number | null;
  discountValInfo?: number | null;
  insuranceValDeduct?: number | null;
  insuranceValInfo?: number | null;
  otherDeductionDeduct?: number | null;
  otherdeductionsInfo?: number | null;
  freightValDeduct?: number | null;
  freightValInfo?: number | null;
  sacCode1?: string | null;
  sacCode2?: string | null;
  serviceTypeModesValue?: number | null;
  isGstAvail?: string | null;
  gstinInvoiceNumber?: string | null;
  gstinInvoiceDate?: string | null;
};

/** A well-formed line: amounts in cents, dates as ddMMyyyy, absent optional fields as null. */
export type Line = {
  serialNo: number;
  uploadType: UploadTypeCode;
  branchSlNo: number;
  irmIfscCode: string;
  irmAdCode: string;
  irmNumber: string;
  irmDt: string;
  irmFCC: string;
  irmPurposeCode: string;
  irmRemitAmtFCC: Cents;
  sbCumInvoiceNumber: string;
  sbCumInvoiceDate: string;
  portCode: string;
  billNo: string;
  sbCumInvoiceFCC: string;
  sbCumInvoiceValueinFCC: Cents;
  mappedIRMAmountFCC: Cents;
  isVostro: string | null;
  vostroType: string | null;
  mappedORMAmountFCC: Cents | null;
  isThirdPartyExport: string | null;
  commissionValDeduct: Cents | null;
  commissionValInfo: Cents | null;
  discountValDeduct: Cents | null;
  discountValInfo: Cents | null;
  insuranceValDeduct: Cents | null;
  insuranceValInfo: Cents | null;
  otherDeductionDeduct: Cents | null;
  otherdeductionsInfo: Cents | null;
  freightValDeduct: Cents | null;
  freightValInfo: Cents | null;
  sacCode1: string | null;
  sacCode2: string | null;
  serviceTypeModesValue: number | null;
  isGstAvail: 'Y' | 'N' | null;
  gstinInvoiceNumber: string | null;
  gstinInvoiceDate: string | null;
};

/** One reason a push is malformed; path is a JSON pointer into the request body. */
export type FieldProblem = { path: string; code: string; message: string };

type LineField = keyof RawLine & keyof Line;

const CURRENCY = /^[A-Z]{3}$/;
const PURPOSE_CODE = /^P\d{4}$/;
const SHIPPING_BILL_NUMBER = /^\d{1,7}$/;
const MAX_REFERENCE_LENGTH = 20;
const MAX_BRANCH_SERIAL = 999;
const MAX_SERIAL_NO = 999;

type InvoiceNumberRule = { code: string; expected: string; isValid: (s: string) => boolean };

const isShortReference = (s: string): boolean => s.length >= 1 && s.length <= MAX_REFERENCE_LENGTH;

const INVOICE_NUMBER_RULES: Readonly<Record<UploadTypeCode, InvoiceNumberRule>> = {
  '101': { code: 'ERR25', expected: 'a shipping bill number of 1 to 7 digits', isValid: (s) => SHIPPING_BILL_NUMBER.test(s) },
  '102': { code: 'ERR26', expected: 'a SOFTEX number of 1 to 20 characters', isValid: isShortReference },
  '103': { code: 'ERR27', expected: 'an invoice number of 1 to 20 characters', isValid: isShortReference },
  '104': { code: 'ERR27', expected: 'an invoice number of 1 to 20 characters', isValid: isShortReference },
};

function describe(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}

function normaliseLine(raw: RawLine, messageUploadType: UploadTypeCode, linePath: string): { line: Line; problems: FieldProblem[] } {
  const problems: FieldProblem[] = [];
  const report = (field: LineField, code: string, expected: string, value: unknown): void => {
    problems.push({ path: `${linePath}/${field}`, code, message: `${field} must be ${expected} (got ${describe(value)}).` });
  };
  const check = (ok: boolean, field: LineField, code: string, expected: string, value: unknown): void => {
    if (!ok) report(field, code, expected, value);
  };

  // A line with problems is never returned, so the placeholders for invalid required values are never seen.
  const requiredMoney = (field: LineField, value: number): Cents => {
    const cents = parseMoney(value);
    if (cents === null) report(field, 'invalid_money', 'a non-negative amount with at most two decimals, within number(16,2)', value);
    return cents ?? 0n;
  };
  const optionalMoney = (field: LineField, value: number | null | undefined, code = 'invalid_money'): Cents | null => {
    if (value === null || value === undefined) return null;
    const cents = parseMoney(value);
    if (cents === null) report(field, code, 'null or a non-negative amount with at most two decimals, within number(16,2)', value);
    return cents;
  };
  const requiredDate = (field: LineField, value: string, code: string): string => {
    const date = parseLineDate(value);
    if (date === null) report(field, code, 'a real date as ddMMyyyy or YYYY-MM-DD', value);
    return date === null ? '' : toDdMMyyyy(date);
  };
  const optionalDate = (field: LineField, value: string | null | undefined): string | null => {
    if (value === null || value === undefined) return null;
    return requiredDate(field, value, 'invalid_date');
  };

  check(Number.isInteger(raw.serialNo) && raw.serialNo >= 1 && raw.serialNo <= MAX_SERIAL_NO, 'serialNo', 'ERR10',
    `an integer from 1 to ${MAX_SERIAL_NO}`, raw.serialNo);
  check(normalizeUploadType(raw.uploadType) === messageUploadType, 'uploadType', 'upload_type_mismatch',
    `the message's uploadType ${messageUploadType}`, raw.uploadType);
  check(Number.isInteger(raw.branchSlNo) && raw.branchSlNo >= 0 && raw.branchSlNo <= MAX_BRANCH_SERIAL, 'branchSlNo',
    'invalid_branch_serial', `an integer from 0 to ${MAX_BRANCH_SERIAL}`, raw.branchSlNo);
  check(raw.irmIfscCode.length === 11, 'irmIfscCode', 'ERR14', 'an IFSC of exactly 11 characters', raw.irmIfscCode);
  check(raw.irmAdCode.length === 7, 'irmAdCode', 'ERR16', 'an AD code of exactly 7 characters', raw.irmAdCode);
  check(CURRENCY.test(raw.irmFCC), 'irmFCC', 'invalid_currency', 'a currency code of 3 uppercase letters', raw.irmFCC);
  check(PURPOSE_CODE.test(raw.irmPurposeCode), 'irmPurposeCode', 'invalid_purpose_code_format',
    'a purpose code of P and 4 digits', raw.irmPurposeCode);
  const invoiceNumberRule = INVOICE_NUMBER_RULES[messageUploadType];
  check(invoiceNumberRule.isValid(raw.sbCumInvoiceNumber), 'sbCumInvoiceNumber', invoiceNumberRule.code,
    `${invoiceNumberRule.expected} for uploadType ${messageUploadType}`, raw.sbCumInvoiceNumber);
  check(raw.portCode.length === 6, 'portCode', 'ERR29', 'a port code of exactly 6 characters', raw.portCode);
  check(raw.billNo.length <= MAX_REFERENCE_LENGTH, 'billNo', 'ERR31', `at most ${MAX_REFERENCE_LENGTH} characters`, raw.billNo);
  check(CURRENCY.test(raw.sbCumInvoiceFCC), 'sbCumInvoiceFCC', 'invalid_currency', 'a currency code of 3 uppercase letters',
    raw.sbCumInvoiceFCC);
  const isGstAvail = raw.isGstAvail ?? null;
  check(isGstAvail === null || isGstAvail === 'Y' || isGstAvail === 'N', 'isGstAvail', 'invalid_flag', 'Y, N or null', isGstAvail);

  const line: Line = {
    serialNo: raw.serialNo,
    uploadType: messageUploadType,
    branchSlNo: raw.branchSlNo,
    irmIfscCode: raw.irmIfscCode,
    irmAdCode: raw.irmAdCode,
    irmNumber: raw.irmNumber,
    irmDt: requiredDate('irmDt', raw.irmDt, 'ERR17'),
    irmFCC: raw.irmFCC,
    irmPurposeCode: raw.irmPurposeCode,
    irmRemitAmtFCC: requiredMoney('irmRemitAmtFCC', raw.irmRemitAmtFCC),
    sbCumInvoiceNumber: raw.sbCumInvoiceNumber,
    sbCumInvoiceDate: requiredDate('sbCumInvoiceDate', raw.sbCumInvoiceDate, 'ERR28'),
    portCode: raw.portCode,
    billNo: raw.billNo,
    sbCumInvoiceFCC: raw.sbCumInvoiceFCC,
    sbCumInvoiceValueinFCC: requiredMoney('sbCumInvoiceValueinFCC', raw.sbCumInvoiceValueinFCC),
    mappedIRMAmountFCC: requiredMoney('mappedIRMAmountFCC', raw.mappedIRMAmountFCC),
    isVostro: raw.isVostro ?? null,
    vostroType: raw.vostroType ?? null,
    mappedORMAmountFCC: optionalMoney('mappedORMAmountFCC', raw.mappedORMAmountFCC, 'ERR35'),
    isThirdPartyExport: raw.isThirdPartyExport ?? null,
    commissionValDeduct: optionalMoney('commissionValDeduct', raw.commissionValDeduct),
    commissionValInfo: optionalMoney('commissionValInfo', raw.commissionValInfo),
    discountValDeduct: optionalMoney('discountValDeduct', raw.discountValDeduct),
    discountValInfo: optionalMoney('discountValInfo', raw.discountValInfo),
    insuranceValDeduct: optionalMoney('insuranceValDeduct', raw.insuranceValDeduct),
    insuranceValInfo: optionalMoney('insuranceValInfo', raw.insuranceValInfo),
    otherDeductionDeduct: optionalMoney('otherDeductionDeduct', raw.otherDeductionDeduct),
    otherdeductionsInfo: optionalMoney('otherdeductionsInfo', raw.otherdeductionsInfo),
    freightValDeduct: optionalMoney('freightValDeduct', raw.freightValDeduct),
    freightValInfo: optionalMoney('freightValInfo', raw.freightValInfo),
    sacCode1: raw.sacCode1 ?? null,
    sacCode2: raw.sacCode2 ?? null,
    serviceTypeModesValue: raw.serviceTypeModesValue ?? null,
    isGstAvail: isGstAvail === 'Y' || isGstAvail === 'N' ? isGstAvail : null,
    gstinInvoiceNumber: raw.gstinInvoiceNumber ?? null,
    gstinInvoiceDate: optionalDate('gstinInvoiceDate', raw.gstinInvoiceDate),
  };
  return { line, problems };
}

/**
 * Checks the formats a JSON schema cannot express and normalises every line. Collects every problem of every line;
 * `lines` is empty whenever `problems` is not, since a malformed push is rejected as a whole.
 * A serial number outside 1-999 is malformed (ERR10, contract 1); duplicates, and the vostro and third-party flags,
 * are left to the push rules, which the contract answers with a Failed acknowledgement (ERR11, ERR32-34).
 */
export function normaliseLines(
  lines: RawLine[],
  messageUploadType: UploadTypeCode,
  basePath = '/ebrcBulkGenDtos',
): { lines: Line[]; problems: FieldProblem[] } {
  const results = lines.map((raw, index) => normaliseLine(raw, messageUploadType, `${basePath}/${index}`));
  const problems = results.flatMap((result) => result.problems);
  return { lines: problems.length === 0 ? results.map((result) => result.line) : [], problems };
}

function moneyToWire(c: Cents | null): number | null {
  return c === null ? null : centsToNumber(c);
}

/** The interface's 2.4 JSON shape: every field present, amounts as numbers, dates as ddMMyyyy, null where absent. */
export function lineToWire(line: Line): Record<keyof Line, unknown> {
  return {
    serialNo: line.serialNo,
    uploadType: Number(line.uploadType),
    branchSlNo: line.branchSlNo,
    irmIfscCode: line.irmIfscCode,
    irmAdCode: line.irmAdCode,
    irmNumber: line.irmNumber,
    irmDt: line.irmDt,
    irmFCC: line.irmFCC,
    irmPurposeCode: line.irmPurposeCode,
    irmRemitAmtFCC: centsToNumber(line.irmRemitAmtFCC),
    sbCumInvoiceNumber: line.sbCumInvoiceNumber,
    sbCumInvoiceDate: line.sbCumInvoiceDate,
    portCode: line.portCode,
    billNo: line.billNo,
    sbCumInvoiceFCC: line.sbCumInvoiceFCC,
    sbCumInvoiceValueinFCC: centsToNumber(line.sbCumInvoiceValueinFCC),
    mappedIRMAmountFCC: centsToNumber(line.mappedIRMAmountFCC),
    isVostro: line.isVostro,
    vostroType: line.vostroType,
    mappedORMAmountFCC: moneyToWire(line.mappedORMAmountFCC),
    isThirdPartyExport: line.isThirdPartyExport,
    commissionValDeduct: moneyToWire(line.commissionValDeduct),
    commissionValInfo: moneyToWire(line.commissionValInfo),
    discountValDeduct: moneyToWire(line.discountValDeduct),
    discountValInfo: moneyToWire(line.discountValInfo),
    insuranceValDeduct: moneyToWire(line.insuranceValDeduct),
    insuranceValInfo: moneyToWire(line.insuranceValInfo),
    otherDeductionDeduct: moneyToWire(line.otherDeductionDeduct),
    otherdeductionsInfo: moneyToWire(line.otherdeductionsInfo),
    freightValDeduct: moneyToWire(line.freightValDeduct),
    freightValInfo: moneyToWire(line.freightValInfo),
    sacCode1: line.sacCode1,
    sacCode2: line.sacCode2,
    serviceTypeModesValue: line.serviceTypeModesValue,
    isGstAvail: line.isGstAvail,
    gstinInvoiceNumber: line.gstinInvoiceNumber,
    gstinInvoiceDate: line.gstinInvoiceDate,
  };
}

/**
 * A line of the 2.4 shape with every field null. A stored line leaves out its null fields (about 45% of a goods line's
 * payload, keys included), and a read lays what is stored over this to give every field back.
 */
export const NULL_WIRE_LINE: Readonly<Record<keyof Line, null>> = {
  serialNo: null,
  uploadType: null,
  branchSlNo: null,
  irmIfscCode: null,
  irmAdCode: null,
  irmNumber: null,
  irmDt: null,
  irmFCC: null,
  irmPurposeCode: null,
  irmRemitAmtFCC: null,
  sbCumInvoiceNumber: null,
  sbCumInvoiceDate: null,
  portCode: null,
  billNo: null,
  sbCumInvoiceFCC: null,
  sbCumInvoiceValueinFCC: null,
  mappedIRMAmountFCC: null,
  isVostro: null,
  vostroType: null,
  mappedORMAmountFCC: null,
  isThirdPartyExport: null,
  commissionValDeduct: null,
  commissionValInfo: null,
  discountValDeduct: null,
  discountValInfo: null,
  insuranceValDeduct: null,
  insuranceValInfo: null,
  otherDeductionDeduct: null,
  otherdeductionsInfo: null,
  freightValDeduct: null,
  freightValInfo: null,
  sacCode1: null,
  sacCode2: null,
  serviceTypeModesValue: null,
  isGstAvail: null,
  gstinInvoiceNumber: null,
  gstinInvoiceDate: null,
};
