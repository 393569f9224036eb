import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import { stringify } from 'csv-stringify';
import { guardCellText, guardStringCellText } from '../../domain/spreadsheet-cells.ts';

export type SpreadsheetFormat = 'csv' | 'xlsx';

/** The XLSX content type, for answers and for recognising uploads. */
export const XLSX_CONTENT_TYPE = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
export const CSV_CONTENT_TYPE = 'text/csv; charset=utf-8';

/** One table of text cells: a worksheet of an XLSX, a section of a CSV. A null cell is left empty. */
export type Sheet = {
  name: string;
  header: readonly string[];
  rows: AsyncIterable<readonly (string | null)[]> | Iterable<readonly (string | null)[]>;
};

const TEXT_FORMAT = '@';

/**
 * The CSV: the sheets one after the other, each with its header row, an empty line between two. Every cell goes
 * through guardCellText, so that no text from elsewhere starts a cell a spreadsheet program would evaluate
 * (docs/decisions.md, "Spreadsheet template"). pipeline() carries the backpressure from `out` back to the reading of
 * the rows, and on a failure on either side (a row that cannot be read, `out` closed early) destroys all three
 * streams and ends the iteration of the rows (their generators' finally blocks run).
 */
async function writeCsv(sheets: readonly Sheet[], out: Writable): Promise<void> {
  await pipeline(
    async function* records() {
      for (const [index, sheet] of sheets.entries()) {
        if (index > 0) yield [];
        yield sheet.header.map(guardCellText);
        for await (const row of sheet.rows) yield row.map((cell) => (cell === null ? '' : guardCellText(cell)));
      }
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
 * The XLSX, streamed: a worksheet per sheet, each row committed (written out and dropped) as it is added, with inline
 * strings and no shared string table. Every value is a string cell in a text-formatted column, which Excel shows as
 * it is and never evaluates (a formula is another kind of cell), so no guard character is added (guardStringCellText
 * quotes only text that already starts with a quote before a trigger, so that the upload reader gives it back
 * exactly). exceljs does not pass the backpressure of `out` on to its writer, so before each row this waits while
 * `out` is full: what is held in memory is then at most the rows added while the zip stream caught up, not the sheet.
 * A failure, or `out` closed before the end, stops the reading of the rows and destroys `out`.
 */
async function writeXlsx(sheets: readonly Sheet[], out: Writable): Promise<void> {
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
    for (const sheet of sheets) {
      const worksheet = workbook.addWorksheet(sheet.name);
      worksheet.columns = sheet.header.map((column) => ({ width: Math.max(12, column.length + 2), style: { numFmt: TEXT_FORMAT } }));
      const addRow = (values: readonly (string | null)[]): void => {
        const row = worksheet.addRow(values.map((value) => (value === null ? null : guardStringCellText(value))));
        // Text cells in a text-formatted column: codes keep their leading zeros, amounts stay as written.
        row.eachCell({ includeEmpty: true }, (cell) => {
          cell.numFmt = TEXT_FORMAT;
        });
        row.commit();
      };
      addRow(sheet.header);
      let sinceYield = 0;
      for await (const row of sheet.rows) {
        closedEarly.signal.throwIfAborted();
        await drained(out, closedEarly.signal);
        addRow(row);
        // Let the zip stream drain now and then, so a long sheet never piles up in memory.
        if (++sinceYield === 500) {
          sinceYield = 0;
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
      }
      closedEarly.signal.throwIfAborted();
      worksheet.commit();
    }
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
 * Writes the sheets as one CSV (sections) or one XLSX (worksheets), every cell text. Ends `out` when the file is
 * complete; when anything fails first (reading rows, writing, `out` closed early) destroys `out` with the error and
 * rejects, so that what was written can never pass for a whole file. The sheets are read in order, each to its end
 * before the next is started, so a later sheet may be made from what the earlier ones counted.
 */
export async function writeSpreadsheet(format: SpreadsheetFormat, sheets: readonly Sheet[], out: Writable): Promise<void> {
  if (format === 'csv') await writeCsv(sheets, out);
  else await writeXlsx(sheets, out);
}

/** A file to be sent: its name and content type, and `write`, which streams it into `out` and ends it. */
export type Download = {
  fileName: string;
  contentType: string;
  write(out: Writable): Promise<void>;
};

/**
 * The same iteration with its first item already read: a failure up to there (the customer's first batch of rows)
 * is thrown here, before anything is sent, and so answered as a problem rather than as a cut-off file.
 */
export async function readingAhead<T>(rows: AsyncGenerator<T>): Promise<AsyncGenerator<T>> {
  const first = await rows.next();
  return (async function* startingWithFirst() {
    if (first.done === true) return;
    yield first.value;
    yield* rows;
  })();
}

/** Text as a part of a file name (and of the quoted filename of Content-Disposition): anything but A-Z a-z 0-9 . _ - becomes "_". */
export function fileNamePart(text: string): string {
  return text.replace(/[^A-Za-z0-9._-]/g, '_');
}
