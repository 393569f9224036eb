import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import { stringify } from 'csv-stringify';
import { parseLineDate, toDdMMyyyy } from '../../domain/dates.ts';
import { formatCents, type Cents } from '../../domain/money.ts';
import { guardCellText, guardStringCellText } from '../../domain/spreadsheet-cells.ts';
import { SPREADSHEET_COLUMNS, type IrmSideColumn } from '../../domain/spreadsheet-columns.ts';

export type SpreadsheetFormat = 'csv' | 'xlsx';

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

/** The XLSX content type, for the template's answer and for recognising uploads. */
export const XLSX_CONTENT_TYPE = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
export const CSV_CONTENT_TYPE = 'text/csv; charset=utf-8';

const TEXT_FORMAT = '@';

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
 * The CSV: every cell through guardCellText, so that no text from the authority starts a cell a spreadsheet program
 * would evaluate (docs/decisions.md, "Spreadsheet template"). pipeline() carries the backpressure from `out` back to
 * the reading of `rows`, and on a failure on either side (a row that cannot be read, `out` closed early) destroys
 * all three streams and ends the iteration of `rows` (its generator's finally blocks run).
 */
async function writeCsv(rows: AsyncIterable<TemplateIrm> | Iterable<TemplateIrm>, out: Writable): Promise<void> {
  await pipeline(
    async function* records() {
      yield SPREADSHEET_COLUMNS.map(guardCellText);
      for await (const irm of rows) yield rowOf(irm).map(guardCellText);
    },
    stringify({ eof: true }),
    out,
  );
  // As the XLSX writer does: done when what `out` was given has been read from it too (at once for a plain Writable).
  await finished(out);
}

/** Resolves once `out` may take more; rejects when `signal` aborts (`out` closed before the end) first. */
async function drained(out: Writable, signal: AbortSignal): Promise<void> {
  if (!out.writableNeedDrain) return;
  await once(out, 'drain', { signal });
}

/**
 * The XLSX, streamed: each row is committed (written out and dropped) as it is added, with inline strings and no
 * shared string table. Every value is a string cell in a text-formatted column, which Excel shows as it is and never
 * evaluates (a formula is another kind of cell), so no guard character is added (guardStringCellText quotes only
 * text that already starts with a quote before a trigger, so that the upload reader gives it back exactly).
 * exceljs does not pass the backpressure of `out` on to its writer, so before each row this waits while `out` is
 * full: what is held in memory is then at most the rows added while the zip stream caught up, not the sheet. A
 * failure, or `out` closed before the end, stops the reading of `rows` and destroys `out`.
 */
async function writeXlsx(rows: AsyncIterable<TemplateIrm> | Iterable<TemplateIrm>, out: Writable): Promise<void> {
  const closedEarly = new AbortController();
  const onClose = (): void => {
    if (!out.writableFinished) {
      closedEarly.abort(Object.assign(new Error('The output closed before the spreadsheet was complete.'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    }
  };
  out.once('close', onClose);
  try {
    // Loaded on first use, like the reader: exceljs holds about 17 MB.
    const { default: ExcelJS } = await import('exceljs');
    const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({ stream: out, useStyles: true, useSharedStrings: false });
    const sheet = workbook.addWorksheet('eBRC lines');
    sheet.columns = SPREADSHEET_COLUMNS.map((column) => ({
      key: column,
      width: Math.max(12, column.length + 2),
      style: { numFmt: TEXT_FORMAT },
    }));
    const addRow = (values: string[]): void => {
      const row = sheet.addRow(values);
      // Text cells in a text-formatted column: codes keep their leading zeros, amounts stay as written.
      row.eachCell({ includeEmpty: true }, (cell) => {
        cell.numFmt = TEXT_FORMAT;
      });
      row.commit();
    };
    addRow([...SPREADSHEET_COLUMNS]);
    let sinceYield = 0;
    for await (const irm of rows) {
      closedEarly.signal.throwIfAborted();
      await drained(out, closedEarly.signal);
      addRow(rowOf(irm).map(guardStringCellText));
      // Let the zip stream drain now and then, so a long template never piles up in memory.
      if (++sinceYield === 500) {
        sinceYield = 0;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
    closedEarly.signal.throwIfAborted();
    sheet.commit();
    await workbook.commit();
    if (!out.writableFinished) await finished(out);
  } catch (error) {
    out.destroy(error instanceof Error ? error : new Error(String(error)));
    throw error;
  } finally {
    out.off('close', onClose);
  }
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
  if (format === 'csv') await writeCsv(rows, out);
  else await writeXlsx(rows, out);
}
