import type { Cents } from './money.ts';
import { formatCents, sumCents } from './money.ts';
import type { CalendarDate } from './dates.ts';
import { compareDates, parseLineDate } from './dates.ts';
import type { Line } from './push-line.ts';
import type { UploadTypeCode } from './upload-type.ts';
import {
  ADVANCE_PURPOSE_CODE,
  BANNED_PURPOSE_CODES,
  IT_SERVICE_PURPOSE_CODES,
  PORT_CODES,
  VALID_PURPOSE_CODES,
} from './purpose-codes.ts';

/** One violation of the authority's rules, as the acknowledgement's errorDetails carry it. */
export type ErrorDetail = { serialNo: number | null; field: string | null; code: string; message: string };

/** What the rules need to know of an IRM; dates are ddMMyyyy. */
export type IrmSnapshot = {
  irmNumber: string;
  irmIssueDate: string;
  ifscCode: string;
  remittanceFCC: string;
  purposeOfRemittance: string;
  availableCents: Cents;
  remittanceDate: string;
};

export type PushRuleInput = {
  recordResCount: number;
  uploadType: UploadTypeCode;
  lines: readonly Line[];
  /** The customer's IRMs by IRM number; at least those the lines name. */
  irms: ReadonlyMap<string, IrmSnapshot>;
};

export type PushRule = (input: PushRuleInput) => ErrorDetail[];

const YES_NO: ReadonlySet<string> = new Set(['Y', 'N']);
const VOSTRO_TYPES: ReadonlySet<string> = new Set(['SVRA', 'NVRA']);
const DEDUCTION_FIELDS = [
  'commissionValDeduct',
  'discountValDeduct',
  'insuranceValDeduct',
  'otherDeductionDeduct',
  'freightValDeduct',
] as const;

function lineError(line: Line, field: string, code: string, message: string): ErrorDetail {
  return { serialNo: line.serialNo, field, code, message };
}

function eachLine(lines: readonly Line[], check: (line: Line) => ErrorDetail | null): ErrorDetail[] {
  const errors: ErrorDetail[] = [];
  for (const line of lines) {
    const error = check(line);
    if (error !== null) errors.push(error);
  }
  return errors;
}

function eachLineWithKnownIrm(input: PushRuleInput, check: (line: Line, irm: IrmSnapshot) => ErrorDetail | null): ErrorDetail[] {
  return eachLine(input.lines, (line) => {
    const irm = input.irms.get(line.irmNumber);
    return irm === undefined ? null : check(line, irm);
  });
}

function parseDate(ddMMyyyy: string): CalendarDate {
  const date = parseLineDate(ddMMyyyy);
  if (date === null) throw new Error(`Expected a normalised ddMMyyyy date, got ${JSON.stringify(ddMMyyyy)}`);
  return date;
}

/** ERR08 */
export const checkRecordCount: PushRule = ({ recordResCount, lines }) =>
  recordResCount === lines.length
    ? []
    : [{
      serialNo: null,
      field: 'recordResCount',
      code: 'ERR08',
      message: `recordResCount is ${recordResCount} but the message has ${lines.length} lines.`,
    }];

/** ERR11, reported on every line that repeats a serial number already used by an earlier line. */
export const checkDuplicateSerialNumbers: PushRule = ({ lines }) => {
  const seen = new Set<number>();
  return eachLine(lines, (line) => {
    if (!seen.has(line.serialNo)) {
      seen.add(line.serialNo);
      return null;
    }
    return lineError(line, 'serialNo', 'ERR11', `serialNo ${line.serialNo} is used by more than one line.`);
  });
};

/** ERR18 */
export const checkIrmsExist: PushRule = ({ lines, irms }) =>
  eachLine(lines, (line) =>
    irms.has(line.irmNumber) ? null : lineError(line, 'irmNumber', 'ERR18', `IRM ${line.irmNumber} does not exist.`));

/** ERR19 */
export const checkIrmIssueDates: PushRule = (input) =>
  eachLineWithKnownIrm(input, (line, irm) =>
    line.irmDt === irm.irmIssueDate
      ? null
      : lineError(line, 'irmDt', 'ERR19',
        `irmDt ${line.irmDt} does not match the issue date ${irm.irmIssueDate} of IRM ${irm.irmNumber}.`));

/** ERR15 */
export const checkIrmIfscCodes: PushRule = (input) =>
  eachLineWithKnownIrm(input, (line, irm) =>
    line.irmIfscCode === irm.ifscCode
      ? null
      : lineError(line, 'irmIfscCode', 'ERR15',
        `irmIfscCode ${line.irmIfscCode} does not match the IFSC ${irm.ifscCode} of IRM ${irm.irmNumber}.`));

/** ERR20 */
export const checkIrmCurrencies: PushRule = (input) =>
  eachLineWithKnownIrm(input, (line, irm) =>
    line.irmFCC === irm.remittanceFCC
      ? null
      : lineError(line, 'irmFCC', 'ERR20',
        `irmFCC ${line.irmFCC} does not match the currency ${irm.remittanceFCC} of IRM ${irm.irmNumber}.`));

/** ERR21: not in the annexure, or one of the codes that cannot generate an eBRC. */
export const checkPurposeCodes: PushRule = ({ lines }) =>
  eachLine(lines, (line) => {
    const code = line.irmPurposeCode;
    if (!VALID_PURPOSE_CODES.has(code)) {
      return lineError(line, 'irmPurposeCode', 'ERR21', `irmPurposeCode ${code} is not a valid inward purpose code.`);
    }
    if (BANNED_PURPOSE_CODES.has(code)) {
      return lineError(line, 'irmPurposeCode', 'ERR21', `Purpose code ${code} cannot be used to generate an eBRC.`);
    }
    return null;
  });

/** ERR22 */
export const checkIrmPurposeCodes: PushRule = (input) =>
  eachLineWithKnownIrm(input, (line, irm) =>
    line.irmPurposeCode === irm.purposeOfRemittance
      ? null
      : lineError(line, 'irmPurposeCode', 'ERR22',
        `irmPurposeCode ${line.irmPurposeCode} does not match the purpose ${irm.purposeOfRemittance} of IRM ${irm.irmNumber}.`));

/** ERR23 */
export const checkIrmAvailableAmounts: PushRule = (input) =>
  eachLineWithKnownIrm(input, (line, irm) =>
    line.irmRemitAmtFCC === irm.availableCents
      ? null
      : lineError(line, 'irmRemitAmtFCC', 'ERR23',
        `irmRemitAmtFCC ${formatCents(line.irmRemitAmtFCC)} does not match the available amount ` +
          `${formatCents(irm.availableCents)} of IRM ${irm.irmNumber}.`));

/** invalid_mapped_amount for zero; ERR38 when one line maps more than the IRM amount it declares. */
export const checkMappedAmounts: PushRule = ({ lines }) =>
  eachLine(lines, (line) => {
    if (line.mappedIRMAmountFCC === 0n) {
      return lineError(line, 'mappedIRMAmountFCC', 'invalid_mapped_amount', 'mappedIRMAmountFCC must be greater than 0.');
    }
    if (line.mappedIRMAmountFCC > line.irmRemitAmtFCC) {
      return lineError(line, 'mappedIRMAmountFCC', 'ERR38',
        `mappedIRMAmountFCC ${formatCents(line.mappedIRMAmountFCC)} exceeds irmRemitAmtFCC ${formatCents(line.irmRemitAmtFCC)}.`);
    }
    return null;
  });

/**
 * ERR38 when the lines mapping one IRM together exceed its available amount. Reported on every line of that IRM,
 * not only the one that crosses the limit: line order carries no priority, so each of them is part of the excess.
 */
export const checkIrmBalances: PushRule = ({ lines, irms }) =>
  [...Map.groupBy(lines, (line) => line.irmNumber)].flatMap(([irmNumber, irmLines]) => {
    const irm = irms.get(irmNumber);
    if (irm === undefined) return [];
    const mapped = sumCents(irmLines.map((line) => line.mappedIRMAmountFCC));
    if (mapped <= irm.availableCents) return [];
    return irmLines.map((line) => lineError(line, 'mappedIRMAmountFCC', 'ERR38',
      `The lines mapping IRM ${irmNumber} map ${formatCents(mapped)} in total, more than its available amount ` +
        `${formatCents(irm.availableCents)}.`));
  });

/** ERR30 */
export const checkPortCodes: PushRule = ({ lines }) =>
  eachLine(lines, (line) =>
    PORT_CODES.has(line.portCode) ? null : lineError(line, 'portCode', 'ERR30', `portCode ${line.portCode} is not in the port master.`));

/** ERR32 */
export const checkVostroFlags: PushRule = ({ lines }) =>
  eachLine(lines, (line) =>
    line.isVostro === null || YES_NO.has(line.isVostro)
      ? null
      : lineError(line, 'isVostro', 'ERR32', `isVostro must be Y or N (got ${line.isVostro}).`));

/** ERR33: vostroType is SVRA or NVRA, given exactly when isVostro is Y. */
export const checkVostroTypes: PushRule = ({ lines }) =>
  eachLine(lines, (line) => {
    const { isVostro, vostroType } = line;
    if (vostroType !== null && !VOSTRO_TYPES.has(vostroType)) {
      return lineError(line, 'vostroType', 'ERR33', `vostroType must be SVRA or NVRA (got ${vostroType}).`);
    }
    if (isVostro === 'Y' && vostroType === null) {
      return lineError(line, 'vostroType', 'ERR33', 'vostroType (SVRA or NVRA) is required when isVostro is Y.');
    }
    if ((isVostro === 'N' || isVostro === null) && vostroType !== null) {
      return lineError(line, 'vostroType', 'ERR33', 'vostroType must be null unless isVostro is Y.');
    }
    return null;
  });

/** ERR34 */
export const checkThirdPartyExportFlags: PushRule = ({ lines }) =>
  eachLine(lines, (line) =>
    line.isThirdPartyExport === null || YES_NO.has(line.isThirdPartyExport)
      ? null
      : lineError(line, 'isThirdPartyExport', 'ERR34', `isThirdPartyExport must be Y or N (got ${line.isThirdPartyExport}).`));

/** ERR39: IT services (SOFTEX) accept only the IT service purpose codes. */
export const checkItServicePurposeCodes: PushRule = ({ uploadType, lines }) =>
  uploadType !== '102'
    ? []
    : eachLine(lines, (line) =>
      IT_SERVICE_PURPOSE_CODES.has(line.irmPurposeCode)
        ? null
        : lineError(line, 'irmPurposeCode', 'ERR39',
          `Purpose code ${line.irmPurposeCode} cannot be used for IT services; allowed: ${[...IT_SERVICE_PURPOSE_CODES].join(', ')}.`));

/** ERR39: an advance (P0103) is invoiced on or after the day the money came in. */
export const checkAdvanceInvoiceDates: PushRule = (input) =>
  eachLineWithKnownIrm(input, (line, irm) =>
    line.irmPurposeCode !== ADVANCE_PURPOSE_CODE ||
      compareDates(parseDate(line.sbCumInvoiceDate), parseDate(irm.remittanceDate)) >= 0
      ? null
      : lineError(line, 'sbCumInvoiceDate', 'ERR39',
        `For an advance (${ADVANCE_PURPOSE_CODE}) sbCumInvoiceDate ${line.sbCumInvoiceDate} must be on or after ` +
          `the remittance date ${irm.remittanceDate} of IRM ${irm.irmNumber}.`));

/** Groups of two or more lines sharing one sbCumInvoiceNumber: their IRMs are clubbed into one eBRC. */
function clubbedGroups(lines: readonly Line[]): Line[][] {
  return [...Map.groupBy(lines, (line) => line.sbCumInvoiceNumber).values()].filter((group) => group.length > 1);
}

/**
 * Reports every line of a clubbed group whose value differs from the first line's. The values compared are those the
 * lines declare: whether each equals its IRM's is checked line by line (ERR15, ERR20, ERR22).
 */
function checkClubbedLinesAgree(
  lines: readonly Line[],
  field: 'irmFCC' | 'irmIfscCode',
  code: string,
  what: string,
): ErrorDetail[] {
  return clubbedGroups(lines).flatMap(([first, ...rest]) => {
    if (first === undefined) return [];
    return rest.filter((line) => line[field] !== first[field]).map((line) =>
      lineError(line, field, code,
        `IRMs clubbed into one eBRC for sbCumInvoiceNumber ${line.sbCumInvoiceNumber} must share one ${what}: ` +
          `${line[field]} differs from ${first[field]}.`));
  });
}

/** ERR20 */
export const checkClubbedCurrencies: PushRule = ({ lines }) => checkClubbedLinesAgree(lines, 'irmFCC', 'ERR20', 'currency');

/** ERR15 */
export const checkClubbedBanks: PushRule = ({ lines }) => checkClubbedLinesAgree(lines, 'irmIfscCode', 'ERR15', 'bank (IFSC)');

/** ERR39: apart from the advance code, one purpose code per eBRC. */
export const checkClubbedPurposeCodes: PushRule = ({ lines }) =>
  clubbedGroups(lines).flatMap((group) => {
    const [first, ...rest] = group.filter((line) => line.irmPurposeCode !== ADVANCE_PURPOSE_CODE);
    if (first === undefined) return [];
    return rest.filter((line) => line.irmPurposeCode !== first.irmPurposeCode).map((line) =>
      lineError(line, 'irmPurposeCode', 'ERR39',
        `Purpose codes ${first.irmPurposeCode} and ${line.irmPurposeCode} cannot be clubbed into one eBRC for ` +
          `sbCumInvoiceNumber ${line.sbCumInvoiceNumber}; only ${ADVANCE_PURPOSE_CODE} may be clubbed with another code.`));
  });

/** deductions_exceed_mapped */
export const checkDeductions: PushRule = ({ lines }) =>
  eachLine(lines, (line) => {
    const deductions = sumCents(DEDUCTION_FIELDS.map((field) => line[field] ?? 0n));
    return deductions <= line.mappedIRMAmountFCC
      ? null
      : lineError(line, 'mappedIRMAmountFCC', 'deductions_exceed_mapped',
        `The deductions total ${formatCents(deductions)}, more than mappedIRMAmountFCC ${formatCents(line.mappedIRMAmountFCC)}.`);
  });

const PUSH_RULES: readonly PushRule[] = [
  checkRecordCount,
  checkDuplicateSerialNumbers,
  checkIrmsExist,
  checkIrmIssueDates,
  checkIrmIfscCodes,
  checkIrmCurrencies,
  checkPurposeCodes,
  checkIrmPurposeCodes,
  checkIrmAvailableAmounts,
  checkMappedAmounts,
  checkIrmBalances,
  checkPortCodes,
  checkVostroFlags,
  checkVostroTypes,
  checkThirdPartyExportFlags,
  checkItServicePurposeCodes,
  checkAdvanceInvoiceDates,
  checkClubbedCurrencies,
  checkClubbedBanks,
  checkClubbedPurposeCodes,
  checkDeductions,
];

/** Every violation of the authority's rules by a well-formed push; empty when it may be sent. */
export function checkPushRules(input: PushRuleInput): ErrorDetail[] {
  return PUSH_RULES.flatMap((rule) => rule(input));
}
