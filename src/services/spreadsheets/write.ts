import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { Zip, ZipDeflate } from 'fflate';
import { finished, pipeline } from 'node:stream/promises';
import { stringify } from 'csv-stringify';
import { escapeXString, guardCellText, guardStringCellText } from '../../domain/spreadsheet-cells.ts';

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

const XML_SPECIAL: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };

/** Text as XML character data (or an attribute value), every character kept (escapeXString). */
function xmlText(text: string): string {
  return escapeXString(text).replace(/[&<>"]/g, (character) => XML_SPECIAL[character]!);
}

/** A-Z, AA-ZZ, …: the spreadsheet's name of the column at `index` (from 0). */
function columnName(index: number): string {
  let name = '';
  for (let n = index + 1; n > 0; n = Math.floor((n - 1) / 26)) name = String.fromCharCode(65 + ((n - 1) % 26)) + name;
  return name;
}

const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';
const MAIN_NS = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const RELATIONSHIP_NS = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
const PACKAGE_RELATIONSHIP_NS = 'http://schemas.openxmlformats.org/package/2006/relationships';
const CONTENT_TYPE = {
  workbook: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml',
  worksheet: 'application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml',
  styles: 'application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml',
};

/** Cell styles (cellXfs): 1 is text (number format 49, "@"), 2 is bold text for the header row. */
const TEXT_STYLE = 1;
const HEADER_STYLE = 2;
const STYLES_XML =
  `${XML_DECLARATION}<styleSheet xmlns="${MAIN_NS}">` +
  '<fonts count="2"><font><sz val="11"/><name val="Calibri"/><family val="2"/></font><font><b/><sz val="11"/><name val="Calibri"/><family val="2"/></font></fonts>' +
  '<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>' +
  '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>' +
  '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>' +
  '<cellXfs count="3"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>' +
  '<xf numFmtId="49" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>' +
  '<xf numFmtId="49" fontId="1" fillId="0" borderId="0" xfId="0" applyNumberFormat="1" applyFont="1"/></cellXfs>' +
  '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles></styleSheet>';

/** How much worksheet XML is gathered before it is handed to the zip stream. */
const XML_CHUNK_CHARACTERS = 64 * 1024;

function rowXml(rowNumber: number, columns: readonly string[], cells: readonly (string | null)[], style: number): string {
  let xml = `<row r="${rowNumber}">`;
  for (const [index, cell] of cells.entries()) {
    if (cell === null || cell === '') continue;
    const column = columns[index] ?? columnName(index);
    xml += `<c r="${column}${rowNumber}" s="${style}" t="inlineStr"><is><t xml:space="preserve">${xmlText(guardStringCellText(cell))}</t></is></c>`;
  }
  return `${xml}</row>`;
}

/** How many rows are read before the worksheet's column widths are set from them (and from the header). */
const ROWS_SIZING_COLUMNS = 100;
const MIN_COLUMN_WIDTH = 12;
const MAX_COLUMN_WIDTH = 60;

/** Each column's width in characters: its longest text among the header and `rows`, plus a margin, within bounds. */
function columnWidths(header: readonly string[], rows: readonly (readonly (string | null)[])[]): number[] {
  return header.map((title, index) => {
    const longest = Math.max(title.length, ...rows.map((row) => row[index]?.length ?? 0));
    return Math.min(MAX_COLUMN_WIDTH, Math.max(MIN_COLUMN_WIDTH, longest + 2));
  });
}

/**
 * A worksheet's XML, made as its rows are read: the header row bold and frozen, every column text-formatted and as
 * wide as its text in the first ROWS_SIZING_COLUMNS rows (a 22-character eBRC number shows whole), every cell an
 * inline string. Yields chunks of about XML_CHUNK_CHARACTERS.
 */
async function* worksheetXml(sheet: Sheet): AsyncGenerator<string> {
  const columns = sheet.header.map((_, index) => columnName(index));
  // One iterator over the sheet's rows, sync or async: the first ones are read ahead, then the rest.
  const rows = (async function* allRows() {
    yield* sheet.rows;
  })();
  const first: (readonly (string | null)[])[] = [];
  let next = await rows.next();
  for (; next.done !== true && first.length < ROWS_SIZING_COLUMNS; next = await rows.next()) first.push(next.value);
  const widths = columnWidths(sheet.header, first)
    .map((width, index) => `<col min="${index + 1}" max="${index + 1}" width="${width}" style="${TEXT_STYLE}" customWidth="1"/>`)
    .join('');
  let xml =
    `${XML_DECLARATION}<worksheet xmlns="${MAIN_NS}" xmlns:r="${RELATIONSHIP_NS}">` +
    '<sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/></sheetView></sheetViews>' +
    `<sheetFormatPr defaultRowHeight="15"/>${widths === '' ? '' : `<cols>${widths}</cols>`}<sheetData>` +
    rowXml(1, columns, sheet.header, HEADER_STYLE);
  let rowNumber = 1;
  const add = function* (row: readonly (string | null)[]): Generator<string> {
    xml += rowXml(++rowNumber, columns, row, TEXT_STYLE);
    if (xml.length >= XML_CHUNK_CHARACTERS) {
      yield xml;
      xml = '';
    }
  };
  try {
    for (const row of first) yield* add(row);
    for (; next.done !== true; next = await rows.next()) yield* add(next.value);
  } finally {
    // Left early (a failure, the output closed): the rows' own finally blocks run.
    if (next.done !== true) await rows.return(undefined);
  }
  yield `${xml}</sheetData></worksheet>`;
}

/** The package's fixed parts for these sheets: content types, relationships, the workbook and its styles. */
function packageParts(sheets: readonly Sheet[]): { name: string; xml: string }[] {
  for (const sheet of sheets) {
    if (!/^[^[\]:*?/\\]{1,31}$/.test(sheet.name)) throw new Error(`"${sheet.name}" cannot name a worksheet (1 to 31 characters, none of []:*?/\\)`);
  }
  const worksheetNames = sheets.map((_, index) => `sheet${index + 1}.xml`);
  return [
    {
      name: '[Content_Types].xml',
      xml:
        `${XML_DECLARATION}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>' +
        `<Override PartName="/xl/workbook.xml" ContentType="${CONTENT_TYPE.workbook}"/><Override PartName="/xl/styles.xml" ContentType="${CONTENT_TYPE.styles}"/>` +
        worksheetNames.map((name) => `<Override PartName="/xl/worksheets/${name}" ContentType="${CONTENT_TYPE.worksheet}"/>`).join('') +
        '</Types>',
    },
    {
      name: '_rels/.rels',
      xml: `${XML_DECLARATION}<Relationships xmlns="${PACKAGE_RELATIONSHIP_NS}"><Relationship Id="rId1" Type="${RELATIONSHIP_NS}/officeDocument" Target="xl/workbook.xml"/></Relationships>`,
    },
    {
      name: 'xl/workbook.xml',
      xml:
        `${XML_DECLARATION}<workbook xmlns="${MAIN_NS}" xmlns:r="${RELATIONSHIP_NS}"><bookViews><workbookView/></bookViews><sheets>` +
        sheets.map((sheet, index) => `<sheet name="${xmlText(sheet.name)}" sheetId="${index + 1}" r:id="rId${index + 1}"/>`).join('') +
        '</sheets></workbook>',
    },
    {
      name: 'xl/_rels/workbook.xml.rels',
      xml:
        `${XML_DECLARATION}<Relationships xmlns="${PACKAGE_RELATIONSHIP_NS}">` +
        worksheetNames.map((name, index) => `<Relationship Id="rId${index + 1}" Type="${RELATIONSHIP_NS}/worksheet" Target="worksheets/${name}"/>`).join('') +
        `<Relationship Id="rId${sheets.length + 1}" Type="${RELATIONSHIP_NS}/styles" Target="styles.xml"/></Relationships>`,
    },
    { name: 'xl/styles.xml', xml: STYLES_XML },
  ];
}

/** Resolves once `out` may take more; rejects when `signal` aborts (`out` closed before the end) first. */
async function drained(out: Writable, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  if (out.writableNeedDrain) await once(out, 'drain', { signal });
}

/**
 * The XLSX, streamed: the package's parts, then a worksheet per sheet, its XML made from the rows and deflated (fflate,
 * synchronously) a chunk at a time, each chunk's output written to `out` and `out`'s drain awaited before the next rows
 * are read: what is held is a chunk of XML and the deflater's window, whatever the number of rows. The worksheets are
 * read one after the other. Every value is a string cell in a text-formatted column, which a spreadsheet program shows
 * as it is and never evaluates (a formula is another kind of cell), so no guard character is added (guardStringCellText
 * quotes only text that already starts with a quote before a trigger, so that the upload reader gives it back exactly).
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
    const parts = packageParts(sheets);
    const deflated: Uint8Array[] = [];
    let zipFailure: Error | null = null;
    const zip = new Zip((error, chunk) => {
      if (error !== null) zipFailure = error;
      else deflated.push(chunk);
    });
    const flush = async (): Promise<void> => {
      if (zipFailure !== null) throw zipFailure;
      for (const chunk of deflated.splice(0)) {
        await drained(out, closedEarly.signal);
        out.write(chunk);
      }
    };
    const encoder = new TextEncoder();
    const addPart = async (name: string, xml: AsyncIterable<string> | Iterable<string>): Promise<void> => {
      const part = new ZipDeflate(name, { level: 6 });
      zip.add(part);
      for await (const text of xml) {
        part.push(encoder.encode(text));
        await flush();
      }
      part.push(new Uint8Array(0), true);
      await flush();
    };
    for (const part of parts) await addPart(part.name, [part.xml]);
    for (const [index, sheet] of sheets.entries()) await addPart(`xl/worksheets/sheet${index + 1}.xml`, worksheetXml(sheet));
    zip.end();
    await flush();
    await drained(out, closedEarly.signal);
    out.end();
    await finished(out);
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
