import type { RawLine } from './push-line.ts';

/**
 * The columns of the spreadsheet template and upload (contract 11): the request line's fields in the order of
 * interface 2.4, one column each, headed by the field's name. test/services/spreadsheets.test.ts checks that this is
 * exactly the push line schema's field list, in order.
 */
export const SPREADSHEET_COLUMNS = [
  'serialNo',
  'uploadType',
  'branchSlNo',
  'irmIfscCode',
  'irmAdCode',
  'irmNumber',
  'irmDt',
  'irmFCC',
  'irmPurposeCode',
  'irmRemitAmtFCC',
  'sbCumInvoiceNumber',
  'sbCumInvoiceDate',
  'portCode',
  'billNo',
  'sbCumInvoiceFCC',
  'sbCumInvoiceValueinFCC',
  'mappedIRMAmountFCC',
  'isVostro',
  'vostroType',
  'mappedORMAmountFCC',
  'isThirdPartyExport',
  'commissionValDeduct',
  'commissionValInfo',
  'discountValDeduct',
  'discountValInfo',
  'insuranceValDeduct',
  'insuranceValInfo',
  'otherDeductionDeduct',
  'otherdeductionsInfo',
  'freightValDeduct',
  'freightValInfo',
  'sacCode1',
  'sacCode2',
  'serviceTypeModesValue',
  'isGstAvail',
  'gstinInvoiceNumber',
  'gstinInvoiceDate',
] as const satisfies readonly (keyof RawLine)[];

export type SpreadsheetColumn = (typeof SPREADSHEET_COLUMNS)[number];

/** The IRM side, which the template fills in for each IRM with a balance (irmRemitAmtFCC being the available amount). */
export const IRM_SIDE_COLUMNS = [
  'irmNumber',
  'irmDt',
  'irmIfscCode',
  'irmAdCode',
  'irmFCC',
  'irmPurposeCode',
  'irmRemitAmtFCC',
] as const satisfies readonly SpreadsheetColumn[];

export type IrmSideColumn = (typeof IRM_SIDE_COLUMNS)[number];

/**
 * Columns a row may leave empty although the push requires the field: an empty serialNo is numbered 1..n in its push,
 * an empty uploadType is the upload form's.
 */
export const MAY_BE_EMPTY_COLUMNS = ['serialNo', 'uploadType'] as const satisfies readonly SpreadsheetColumn[];

/**
 * The columns a sheet's header must have: the fields every push line requires (the first seventeen, serialNo to
 * mappedIRMAmountFCC), but those a row may leave empty. Any other column may be left out (an exporter who deleted the
 * optional columns at the end): its cells read as empty. test/services/spreadsheets.test.ts checks that these are the
 * push line schema's required fields.
 */
export const REQUIRED_COLUMNS: readonly SpreadsheetColumn[] = SPREADSHEET_COLUMNS.slice(
  SPREADSHEET_COLUMNS.indexOf('branchSlNo'),
  SPREADSHEET_COLUMNS.indexOf('mappedIRMAmountFCC') + 1,
);

const COLUMN_SET: ReadonlySet<string> = new Set(SPREADSHEET_COLUMNS);

export function isSpreadsheetColumn(name: string): name is SpreadsheetColumn {
  return COLUMN_SET.has(name);
}
