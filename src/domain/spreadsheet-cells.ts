/**
 * Spreadsheet formula injection (OWASP "CSV Injection"): a spreadsheet program evaluates a CSV cell that starts with
 * `=`, `+`, `-` or `@` as a formula (a leading tab or carriage return can hide such a start), so text that came from
 * elsewhere (the authority, an exporter) must not reach a CSV cell as it is. The template guards every CSV cell with a
 * leading single quote, which spreadsheet programs take as "this is text". In XLSX it writes string cells in
 * text-formatted columns, which Excel never evaluates, so no quote is added there.
 *
 * An upload reader calls unguardCellText on every cell's text, CSV or XLSX, as read and before trimming it: a guarded
 * cell comes back as the original text. Text that itself starts with quotes before a trigger (`'=x`) gets one more
 * quote from either guard, so that unguardCellText gives it back exactly too.
 */

/** The first characters that make a spreadsheet program read a cell as a formula (OWASP's list). */
export const FORMULA_TRIGGERS: ReadonlySet<string> = new Set(['=', '+', '-', '@', '\t', '\r']);

/** What the guard puts in front of a cell that would otherwise be read as a formula. */
export const FORMULA_GUARD = "'";

/** How many guard characters the text starts with, and whether a trigger comes right after them. */
function leadingGuards(text: string): { guards: number; triggerNext: boolean } {
  let guards = 0;
  while (text[guards] === FORMULA_GUARD) guards++;
  const next = text[guards];
  return { guards, triggerNext: next !== undefined && FORMULA_TRIGGERS.has(next) };
}

/** The text as a CSV cell may safely hold it: one single quote more in front when a trigger follows its quotes. */
export function guardCellText(text: string): string {
  return leadingGuards(text).triggerNext ? FORMULA_GUARD + text : text;
}

/**
 * The text for an XLSX string cell (never evaluated): as it is, unless unguardCellText would take a quote off it,
 * in which case it is guarded so that the reader gives it back exactly.
 */
export function guardStringCellText(text: string): string {
  const { guards, triggerNext } = leadingGuards(text);
  return guards > 0 && triggerNext ? FORMULA_GUARD + text : text;
}

/**
 * A cell's text as it was before guardCellText or guardStringCellText: a single quote comes off when quotes and then
 * a trigger start the text. Any other text (a lone quote, a quote before anything else) is returned unchanged.
 */
export function unguardCellText(text: string): string {
  const { guards, triggerNext } = leadingGuards(text);
  return guards > 0 && triggerNext ? text.slice(1) : text;
}

// --- Text XML cannot carry -----------------------------------------------------------------------------------------

/**
 * What XML 1.0 cannot hold (control characters but tab and line feed, lone surrogates, U+FFFE and U+FFFF), and the
 * carriage return, which an XML parser turns into a line feed, OOXML writes as `_xHHHH_` (ECMA-376 part 1, 22.9.2.19
 * ST_Xstring), as Excel does; a `_` that starts text of that form is itself written `_x005F_`. Excel and LibreOffice
 * read it back.
 */
const NOT_XML_CHARACTER = /[\u0000-\u0008\u000B-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]|_(?=x[0-9A-Fa-f]{4}_)/g;
const ESCAPED_CHARACTER = /_x([0-9A-Fa-f]{4})_/g;

/** The text with every character XML cannot carry escaped as `_xHHHH_` (see NOT_XML_CHARACTER). */
export function escapeXString(text: string): string {
  return text.replace(NOT_XML_CHARACTER, (character) => `_x${character.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}_`);
}

/** The text escapeXString (or Excel) wrote as it was. */
export function unescapeXString(text: string): string {
  return text.includes('_x') ? text.replace(ESCAPED_CHARACTER, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))) : text;
}

// --- Cells as spreadsheet programs save them ------------------------------------------------------------------------

const MONTHS: ReadonlyMap<string, number> = new Map(
  ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'].map((name, index) => [name, index + 1]),
);

/** Excel's serial day 61 is 1900-03-01 (its day 60 is a 29 February 1900 that never was); days count from 1899-12-30. */
const SERIAL_EPOCH_MS = Date.UTC(1899, 11, 30);
const DATE_1904_OFFSET_DAYS = 1462;
const DAY_MS = 86_400_000;

function ddMMyyyy(year: number, month: number, day: number): string | null {
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  if (year < 1900 || year > 2999) return null;
  return `${String(day).padStart(2, '0')}${String(month).padStart(2, '0')}${year}`;
}

const fullYear = (text: string): number => (text.length === 2 ? 2000 + Number(text) : Number(text));

function fromSerial(serial: number, date1904: boolean): string | null {
  const days = Math.floor(serial) + (date1904 ? DATE_1904_OFFSET_DAYS : 0);
  if (days < 61) return null; // Before March 1900, where Excel's calendar is off by its phantom leap day.
  const date = new Date(SERIAL_EPOCH_MS + days * DAY_MS);
  return ddMMyyyy(date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate());
}

const SERIAL = /^\d{1,5}(?:\.\d+)?$/;
const ISO_LIKE = /^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?Z?)?$/;
const DAY_FIRST = /^(\d{1,2})[-/. ](\d{1,2})[-/. ](\d{4}|\d{2})(?: \d{1,2}:\d{2}(?::\d{2})?)?$/;
const DAY_MONTH_NAME = /^(\d{1,2})[-/ ]([A-Za-z]{3,9})[-/ ,]+(\d{4}|\d{2})$/;
const MONTH_NAME_DAY = /^([A-Za-z]{3,9})[ -](\d{1,2}),?[ -](\d{4}|\d{2})$/;

const monthNumber = (name: string): number => MONTHS.get(name.slice(0, 3).toLowerCase()) ?? 0;

/**
 * A date cell as a spreadsheet program may have saved it, as the authority's ddMMyyyy; null when the text is no date
 * this recognises (it is then checked as it is, and refused with the push's own code). Read:
 * - ddMMyyyy, and the same with its leading zero lost (7 digits: the program took it for a number);
 * - a serial day number (1 to 5 digits, a time fraction ignored; the 1900 date system unless `date1904`);
 * - year first (YYYY-MM-DD, YYYY/MM/DD, with or without a time);
 * - day first, as India writes dates (DD-MM-YYYY, DD/MM/YY, DD.MM.YYYY): 05/03/2025 is 5 March, never May 3;
 * - a month by name (05-Mar-2025, 5 March 2025, Mar 5, 2025).
 * Two-digit years are 2000-2099. With `serialOnly`, only a serial number is read (an XLSX number cell in a date format).
 */
export function spreadsheetDateText(text: string, options: { date1904?: boolean; serialOnly?: boolean } = {}): string | null {
  const trimmed = text.trim();
  if (SERIAL.test(trimmed)) return fromSerial(Number(trimmed), options.date1904 === true);
  if (options.serialOnly === true) return null;
  if (/^\d{8}$/.test(trimmed)) return ddMMyyyy(Number(trimmed.slice(4)), Number(trimmed.slice(2, 4)), Number(trimmed.slice(0, 2)));
  if (/^\d{7}$/.test(trimmed)) return spreadsheetDateText(`0${trimmed}`);
  let match = ISO_LIKE.exec(trimmed);
  if (match !== null) return ddMMyyyy(Number(match[1]), Number(match[2]), Number(match[3]));
  match = DAY_FIRST.exec(trimmed);
  if (match !== null) return ddMMyyyy(fullYear(match[3]!), Number(match[2]), Number(match[1]));
  match = DAY_MONTH_NAME.exec(trimmed);
  if (match !== null) return ddMMyyyy(fullYear(match[3]!), monthNumber(match[2]!), Number(match[1]));
  match = MONTH_NAME_DAY.exec(trimmed);
  if (match !== null) return ddMMyyyy(fullYear(match[3]!), monthNumber(match[1]!), Number(match[2]));
  return null;
}

/** Columns that hold a date, read by spreadsheetDateText. */
const DATE_COLUMNS: ReadonlySet<string> = new Set(['irmDt', 'sbCumInvoiceDate', 'gstinInvoiceDate']);

/** Codes of a fixed number of characters that may be all digits: a spreadsheet program drops their leading zeros. */
const FIXED_LENGTH_CODES: ReadonlyMap<string, number> = new Map([['irmAdCode', 7]]);

/** Amounts written with digit grouping, as a program saves a cell formatted #,##0.00 (Indian grouping too). */
const GROUPED_AMOUNT = /^\d{1,3}(?:,\d{2,3})+(?:\.\d+)?$/;

/**
 * A trimmed cell's text as the push field takes it, undoing what a spreadsheet program does to a cell when it saves
 * the file: a date in the program's own form becomes ddMMyyyy; an all-digit fixed-length code that lost its leading
 * zeros gets them back (irmAdCode 510002 is 0510002); an amount with thousands separators loses them (`money`).
 * Anything else is returned as it is.
 */
export function spreadsheetFieldText(column: string, text: string, kind: { money: boolean }): string {
  if (text === '') return text;
  if (DATE_COLUMNS.has(column)) return spreadsheetDateText(text) ?? text;
  const length = FIXED_LENGTH_CODES.get(column);
  if (length !== undefined && /^\d+$/.test(text) && text.length < length) return text.padStart(length, '0');
  if (kind.money && GROUPED_AMOUNT.test(text)) return text.replaceAll(',', '');
  return text;
}
