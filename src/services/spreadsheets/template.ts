import type { Writable } from 'node:stream';
import { parseLineDate, toDdMMyyyy } from '../../domain/dates.ts';
import { formatCents, type Cents } from '../../domain/money.ts';
import { SPREADSHEET_COLUMNS, type IrmSideColumn } from '../../domain/spreadsheet-columns.ts';
import { writeSpreadsheet, type SpreadsheetFormat } from './write.ts';

export { CSV_CONTENT_TYPE, XLSX_CONTENT_TYPE, type SpreadsheetFormat } from './write.ts';

/** One mappable IRM as the template shows it. */
export type TemplateIrm = {
  irmNumber: string;
  /** The IRM's issue date (what a push's irmDt must equal), as YYYY-MM-DD or ddMMyyyy. */
  irmDt: string;
  irmIfscCode: string;
  irmAdCode: string;
  irmFCC: string;
  irmPurposeCode: string;
  /** The available amount, which the template shows as irmRemitAmtFCC. */
  available: Cents;
};

/** The IRM side of a row as text, in the form a push takes (irmDt as ddMMyyyy, the amount with two decimals). */
function irmSide(irm: TemplateIrm): Record<IrmSideColumn, string> {
  const date = parseLineDate(irm.irmDt);
  return {
    irmNumber: irm.irmNumber,
    irmDt: date === null ? irm.irmDt : toDdMMyyyy(date),
    irmIfscCode: irm.irmIfscCode,
    irmAdCode: irm.irmAdCode,
    irmFCC: irm.irmFCC,
    irmPurposeCode: irm.irmPurposeCode,
    irmRemitAmtFCC: formatCents(irm.available),
  };
}

function rowOf(irm: TemplateIrm): string[] {
  const side: Record<string, string> = irmSide(irm);
  return SPREADSHEET_COLUMNS.map((column) => side[column] ?? '');
}

/**
 * Writes the template (contract 11): a header row of the request line's fields in interface order, then one row per
 * IRM with the IRM side filled in as text and the exporter's columns empty. Ends `out` when the file is complete;
 * when anything fails first (reading `rows`, writing, `out` closed early) destroys `out` with the error and rejects,
 * so that what was written can never pass for a whole file.
 */
export async function writeTemplate(
  format: SpreadsheetFormat,
  rows: AsyncIterable<TemplateIrm> | Iterable<TemplateIrm>,
  out: Writable,
): Promise<void> {
  await writeSpreadsheet(format, [{ name: 'eBRC lines', header: SPREADSHEET_COLUMNS, rows: templateRows(rows) }], out);
}

async function* templateRows(rows: AsyncIterable<TemplateIrm> | Iterable<TemplateIrm>): AsyncGenerator<string[]> {
  for await (const irm of rows) yield rowOf(irm);
}
