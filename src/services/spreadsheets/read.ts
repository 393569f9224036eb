import { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { spreadsheetFieldText, unguardCellText } from '../../domain/spreadsheet-cells.ts';
import { centsToNumber, parseDecimalString } from '../../domain/money.ts';
import { normaliseLines, type RawLine } from '../../domain/push-line.ts';
import { REQUIRED_COLUMNS, SPREADSHEET_COLUMNS, type SpreadsheetColumn } from '../../domain/spreadsheet-columns.ts';
import { normalizeUploadType, type UploadTypeCode } from '../../domain/upload-type.ts';
import { PushLineSchema } from '../../schemas/genebrc-requests.ts';
import { compileRequestValidator } from '../validation.ts';
import { XLSX_CONTENT_TYPE, type SpreadsheetFormat } from './template.ts';
import { XLSX_LIMITS, XlsxUnreadable, xlsxRows, type XlsxLimits } from './xlsx.ts';
import { ZipBudgetExceeded, ZipUnreadable } from './zip.ts';

/**
 * One reason an upload is refused (contract 11): `row` as the spreadsheet numbers it (the header is row 1), `column`
 * by its header. Both are null for a problem with the file as a whole (unreadable, not a spreadsheet).
 */
export type SpreadsheetProblem = { row: number | null; column: string | null; code: string; message: string };

/** Thrown by readRows when the file cannot be taken at all: a header column missing, too many rows, unreadable. */
export class SpreadsheetRejected extends Error {
  readonly problems: SpreadsheetProblem[];
  constructor(problems: SpreadsheetProblem[]) {
    super(problems.length === 1 ? problems[0]!.message : `The spreadsheet has ${problems.length} problems.`);
    this.name = 'SpreadsheetRejected';
    this.problems = problems;
  }
}

export type SheetRow = { row: number; values: Partial<Record<SpreadsheetColumn, string>> };

export type ReadLimits = { maxRows: number; xlsx?: XlsxLimits };

export const MAX_UPLOAD_ROWS = 50_000;

const XLSX_CONTENT_TYPES = new Set([XLSX_CONTENT_TYPE]);
// Browsers on Windows send CSV files as application/vnd.ms-excel.
const CSV_CONTENT_TYPES = new Set(['text/csv', 'application/csv', 'text/plain', 'application/vnd.ms-excel']);
const ZIP_MAGIC = Buffer.from([0x50, 0x4b, 0x03, 0x04]);

/**
 * The upload's format: by its first bytes when given (an XLSX file is a zip archive), else by the file name's
 * extension, else by the content type; null when none tells.
 */
export function detectFormat(hint: { fileName?: string | undefined; contentType?: string | undefined; head?: Uint8Array | undefined }): SpreadsheetFormat | null {
  if (hint.head !== undefined && hint.head.length >= ZIP_MAGIC.length) {
    return Buffer.from(hint.head.subarray(0, ZIP_MAGIC.length)).equals(ZIP_MAGIC) ? 'xlsx' : 'csv';
  }
  const extension = /\.([A-Za-z]+)$/.exec(hint.fileName ?? '')?.[1]?.toLowerCase();
  if (extension === 'xlsx') return 'xlsx';
  if (extension === 'csv') return 'csv';
  const contentType = hint.contentType?.split(';')[0]?.trim().toLowerCase();
  if (contentType !== undefined && XLSX_CONTENT_TYPES.has(contentType)) return 'xlsx';
  if (contentType !== undefined && CSV_CONTENT_TYPES.has(contentType)) return 'csv';
  return null;
}

const COLUMNS_BY_LOWER_NAME: ReadonlyMap<string, SpreadsheetColumn> = new Map(
  SPREADSHEET_COLUMNS.map((column) => [column.toLowerCase(), column]),
);

/**
 * The header's columns by position. Headers match the field names ignoring case and surrounding spaces; columns
 * with other headers (an exporter's notes) are ignored; a repeated field column, or a missing required one
 * (REQUIRED_COLUMNS), is a problem. An optional column left out reads as empty cells.
 */
function readHeader(cells: readonly string[], row: number): Map<number, SpreadsheetColumn> {
  const positions = new Map<number, SpreadsheetColumn>();
  const seen = new Set<SpreadsheetColumn>();
  const problems: SpreadsheetProblem[] = [];
  cells.forEach((cell, position) => {
    const column = COLUMNS_BY_LOWER_NAME.get(cell.trim().toLowerCase());
    if (column === undefined) return;
    if (seen.has(column)) {
      problems.push({ row, column, code: 'duplicate_column', message: `The column ${column} appears more than once in the header.` });
      return;
    }
    seen.add(column);
    positions.set(position, column);
  });
  for (const column of REQUIRED_COLUMNS) {
    if (!seen.has(column)) {
      problems.push({ row, column, code: 'missing_column', message: `The header has no ${column} column.` });
    }
  }
  if (problems.length > 0) throw new SpreadsheetRejected(problems);
  return positions;
}

function tooManyRows(row: number, maxRows: number): SpreadsheetRejected {
  return new SpreadsheetRejected([
    { row, column: null, code: 'too_many_rows', message: `The spreadsheet has more than ${maxRows} rows below its header.` },
  ]);
}

function unreadable(format: SpreadsheetFormat, error: unknown, row: number | null): SpreadsheetRejected {
  const reason = error instanceof Error ? error.message : String(error);
  return new SpreadsheetRejected([
    { row, column: null, code: 'unreadable_file', message: `The file cannot be read as ${format.toUpperCase()}: ${reason}` },
  ]);
}

/** Rows as `cells` (text by position) with the spreadsheet's own row numbers, header first. */
type NumberedCells = { row: number; cells: string[] };

async function* csvCells(input: Readable): AsyncGenerator<NumberedCells> {
  const parser = parse({ bom: true, relax_column_count: true, skip_empty_lines: false });
  input.on('error', (error) => parser.destroy(error));
  input.pipe(parser);
  let row = 0;
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      row++;
      yield { row, cells: record };
    }
  } catch (error) {
    if (error instanceof SpreadsheetRejected) throw error;
    throw unreadable('csv', error, row + 1);
  } finally {
    input.unpipe(parser);
    parser.destroy();
  }
}

/**
 * The most an XLSX upload may hold in memory (the archive itself): the upload form's own limit is 10 MiB, so a
 * stream longer than this is no upload.
 */
const MAX_XLSX_FILE_BYTES = 16 * 1024 * 1024;

async function bytesOf(input: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of input) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    length += buffer.length;
    if (length > MAX_XLSX_FILE_BYTES) throw new XlsxUnreadable(`it is larger than ${MAX_XLSX_FILE_BYTES / 2 ** 20} MiB`);
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

async function* xlsxCells(input: Readable | Uint8Array, limits: XlsxLimits): AsyncGenerator<NumberedCells> {
  let row: number | null = null;
  try {
    const file = input instanceof Uint8Array ? input : await bytesOf(input);
    for (const sheetRow of xlsxRows(file, limits)) {
      row = sheetRow.row;
      yield sheetRow;
    }
  } catch (error) {
    if (error instanceof SpreadsheetRejected) throw error;
    if (error instanceof ZipBudgetExceeded || error instanceof ZipUnreadable || error instanceof XlsxUnreadable) {
      throw new SpreadsheetRejected([{ row: null, column: null, code: 'unreadable_file', message: `The file cannot be read as XLSX: ${error.message}.` }]);
    }
    throw unreadable('xlsx', error, row === null ? null : row + 1);
  }
}

const isBlank = (cells: readonly string[]): boolean => cells.every((cell) => cell.trim() === '');

/**
 * The upload's rows below the header, each with its spreadsheet row number and its text by column (field name).
 * Blank rows are skipped (their numbers too). Throws SpreadsheetRejected for a missing header column, for more than
 * `limits.maxRows` rows (as soon as the first row over the limit is read), and for a file that cannot be read.
 */
export async function* readRows(
  format: SpreadsheetFormat,
  input: Readable | Uint8Array,
  limits: ReadLimits = { maxRows: MAX_UPLOAD_ROWS },
): AsyncGenerator<SheetRow> {
  const source = format === 'csv' ? csvCells(input instanceof Uint8Array ? Readable.from([input]) : input) : xlsxCells(input, limits.xlsx ?? XLSX_LIMITS);
  let header: Map<number, SpreadsheetColumn> | undefined;
  let count = 0;
  for await (const { row, cells } of source) {
    if (header === undefined) {
      if (isBlank(cells)) continue;
      header = readHeader(cells, row);
      continue;
    }
    if (isBlank(cells)) continue;
    if (++count > limits.maxRows) throw tooManyRows(row, limits.maxRows);
    const values: Partial<Record<SpreadsheetColumn, string>> = {};
    // A cell the template guarded against formula injection reads back as the text it stands for.
    for (const [position, column] of header) values[column] = unguardCellText(cells[position] ?? '');
    yield { row, values };
  }
  if (header === undefined) {
    throw new SpreadsheetRejected(
      REQUIRED_COLUMNS.map((column) => ({ row: 1, column, code: 'missing_column', message: `The header has no ${column} column.` })),
    );
  }
}

// --- Rows to push lines ---------------------------------------------------------------------------------------------

/** The serialNo of a line whose cell was empty: its push numbers it (splitRows gives every line of a push 1..n). */
export const SERIAL_NO_UNASSIGNED = 0;

export type SheetLine = { row: number; line: RawLine };

export type ValidatedRows = { lines: SheetLine[]; problems: SpreadsheetProblem[] };

type ColumnKind = 'integer' | 'money' | 'text' | 'integer_or_text';

type JsonSchemaNode = { type?: string | string[]; anyOf?: JsonSchemaNode[] };

function typesOf(node: JsonSchemaNode): string[] {
  const own = node.type === undefined ? [] : Array.isArray(node.type) ? node.type : [node.type];
  return [...own, ...(node.anyOf ?? []).flatMap(typesOf)];
}

const SCHEMA = PushLineSchema as unknown as { properties: Record<string, JsonSchemaNode> };

/** How each column's text becomes a JSON value, from the push line schema (its types are the push's). */
const KINDS: ReadonlyMap<SpreadsheetColumn, ColumnKind> = new Map(
  SPREADSHEET_COLUMNS.map((column): [SpreadsheetColumn, ColumnKind] => {
    const types = typesOf(SCHEMA.properties[column] ?? {});
    if (types.includes('integer') && types.includes('string')) return [column, 'integer_or_text'];
    if (types.includes('integer')) return [column, 'integer'];
    if (types.includes('number')) return [column, 'money'];
    return [column, 'text'];
  }),
);


// A number as a person writes it in a cell: digits with an optional sign, decimals and exponent.
const NUMBER_TEXT = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;
const PLAIN_NUMBER_TEXT = /^[+-]?\d+(?:\.\d+)?$/;

/**
 * A value no amount check accepts, put in place of an amount written with more than two decimals (or beyond what
 * a JSON number holds exactly), so that the push's own check reports it with its own code. The problem's message
 * then quotes the cell.
 */
const UNREADABLE_AMOUNT = -1;

const lineValidator = compileRequestValidator(PushLineSchema, 'body');

type Conversion = { value: unknown; unreadableAmount: boolean };

/** A cell's text as the JSON value a push would carry for it; text that is no number stays text (the schema says so). */
function convert(kind: ColumnKind, text: string): Conversion {
  switch (kind) {
    case 'text':
      return { value: text, unreadableAmount: false };
    case 'integer':
    case 'integer_or_text':
      // Whole numbers well inside a double's exact range; "1.5" stays 1.5, which the integer checks refuse.
      if (PLAIN_NUMBER_TEXT.test(text) && text.replace(/\D/g, '').length <= 15) return { value: Number(text), unreadableAmount: false };
      return { value: text, unreadableAmount: false };
    case 'money': {
      if (!NUMBER_TEXT.test(text)) return { value: text, unreadableAmount: false };
      try {
        // Exactly the amount written: decimal text to cents to the JSON number the push would carry.
        return { value: centsToNumber(parseDecimalString(text.startsWith('+') ? text.slice(1) : text)), unreadableAmount: false };
      } catch {
        return { value: UNREADABLE_AMOUNT, unreadableAmount: true };
      }
    }
  }
}

type Pending = { row: number; line: RawLine; serialNoGiven: boolean; unreadable: Map<string, string> };

/**
 * The most problems a rejected upload lists; a last entry (`more_problems`) says how many more there were. A file
 * wrong throughout (a shifted column, say) has a problem on every row, or several: the first thousand tell what to
 * fix, and the rest are counted, not kept (a million wrong cells would otherwise be a million objects in memory).
 */
export const MAX_UPLOAD_PROBLEMS = 1_000;

function moreProblems(count: number): SpreadsheetProblem {
  return { row: null, column: null, code: 'more_problems', message: `${count} more problems are not listed; fix those above and upload the file again.` };
}

const CHECK_BATCH = 1_000;

/**
 * Turns each row into the line a push takes and checks it as a push does: the push line schema (types, required
 * fields, lengths), then `normaliseLines` (formats, with the authority's ERR codes), so every problem has the push's
 * code, reported at the row and the column of its field. Cells are trimmed; an empty cell is an absent field (null
 * for an optional one, `required` for a required one), except that an empty serialNo is SERIAL_NO_UNASSIGNED (its
 * push numbers it) and an empty uploadType is the form's. `lines` is empty whenever `problems` is not.
 *
 * The form's own fields are not checked here (checkPushMessage, when the upload is taken): `uploadType` must already
 * be a valid upload type (a RangeError otherwise). Problems come sorted by row, then column, left to right.
 * A SpreadsheetRejected thrown while reading `rows` becomes this answer's problems.
 */
export async function validateRows(
  rows: AsyncIterable<SheetRow> | Iterable<SheetRow>,
  form: { uploadType: string | number },
): Promise<ValidatedRows> {
  const uploadType: UploadTypeCode | null = normalizeUploadType(form.uploadType);
  if (uploadType === null) throw new RangeError(`Not an upload type: ${JSON.stringify(form.uploadType)}`);
  const lines: SheetLine[] = [];
  const problems: SpreadsheetProblem[] = [];
  const fileProblems: SpreadsheetProblem[] = [];
  let unlisted = 0;
  const report = (problem: SpreadsheetProblem): void => {
    if (problems.length < MAX_UPLOAD_PROBLEMS) problems.push(problem);
    else unlisted++;
  };
  let batch: Pending[] = [];

  const checkBatch = (): void => {
    const { problems: lineProblems } = normaliseLines(batch.map((pending) => pending.line), uploadType);
    for (const problem of lineProblems) {
      const match = /^\/ebrcBulkGenDtos\/(\d+)\/(.+)$/.exec(problem.path);
      const pending = match === null ? undefined : batch[Number(match[1])];
      const column = match?.[2] ?? null;
      const cell = column === null ? undefined : pending?.unreadable.get(column);
      report({
        row: pending?.row ?? null,
        column,
        code: problem.code,
        message: cell === undefined ? problem.message : problem.message.replace(/\(got [^)]*\)\.$/, `(got ${JSON.stringify(cell)}).`),
      });
    }
    if (problems.length === 0 && unlisted === 0) {
      for (const pending of batch) {
        if (!pending.serialNoGiven) pending.line.serialNo = SERIAL_NO_UNASSIGNED;
        lines.push({ row: pending.row, line: pending.line });
      }
    }
    batch = [];
  };

  try {
    for await (const { row, values } of rows) {
      const fields: Record<string, unknown> = {};
      const unreadable = new Map<string, string>();
      let serialNoGiven = true;
      for (const column of SPREADSHEET_COLUMNS) {
        const kind = KINDS.get(column) ?? 'text';
        const text = spreadsheetFieldText(column, (values[column] ?? '').trim(), { money: kind === 'money' });
        if (text === '') {
          if (column === 'serialNo') {
            serialNoGiven = false;
            fields.serialNo = 1; // Checked as a valid placeholder; SERIAL_NO_UNASSIGNED once checked.
          } else if (column === 'uploadType') {
            fields.uploadType = Number(uploadType);
          }
          // Any other empty cell is an absent field: null for an optional one, `required` from the schema otherwise.
          continue;
        }
        const { value, unreadableAmount } = convert(kind, text);
        fields[column] = value;
        if (unreadableAmount) unreadable.set(column, text);
      }
      const accepted = lineValidator(fields);
      if (accepted !== true) {
        for (const fieldError of accepted.error.errors ?? []) {
          report({ row, column: fieldError.path.replace(/^\//, '') || null, code: fieldError.code, message: fieldError.message });
        }
        continue;
      }
      batch.push({ row, line: fields as RawLine, serialNoGiven, unreadable });
      if (batch.length === CHECK_BATCH) checkBatch();
    }
    if (batch.length > 0) checkBatch();
  } catch (error) {
    if (!(error instanceof SpreadsheetRejected)) throw error;
    fileProblems.push(...error.problems);
  }
  if (problems.length === 0 && fileProblems.length === 0) return { lines, problems };
  // The file's own problems (a missing column, too many rows) come first, whatever rows came before them.
  const all = [...fileProblems, ...problems.sort(bySheetPosition)];
  unlisted += Math.max(0, all.length - MAX_UPLOAD_PROBLEMS);
  const listed = all.slice(0, MAX_UPLOAD_PROBLEMS);
  return { lines: [], problems: unlisted > 0 ? [...listed, moreProblems(unlisted)] : listed };
}

const COLUMN_POSITIONS: ReadonlyMap<string, number> = new Map(SPREADSHEET_COLUMNS.map((column, position) => [column, position]));

/** Problems as a person reads the sheet: the file's own first, then row by row, left to right. */
function bySheetPosition(a: SpreadsheetProblem, b: SpreadsheetProblem): number {
  return (a.row ?? 0) - (b.row ?? 0) || (COLUMN_POSITIONS.get(a.column ?? '') ?? -1) - (COLUMN_POSITIONS.get(b.column ?? '') ?? -1);
}
