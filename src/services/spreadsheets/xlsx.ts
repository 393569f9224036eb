import { SaxesParser, type SaxesTagPlain } from 'saxes';
import { spreadsheetDateText, unescapeXString } from '../../domain/spreadsheet-cells.ts';
import { ZipArchive } from './zip.ts';

/**
 * A bounded reader of the first worksheet of an XLSX workbook (docs/decisions.md, "Reading XLSX uploads"): the
 * archive is held in memory (an upload is at most 10 MiB), its parts are unpacked with a byte count (ZipArchive) and
 * parsed as they unpack by a streaming XML parser, so the sheet's XML is never held whole. Shared strings, styles and
 * the workbook's own parts are read first whatever their order in the archive. What the file may make this hold is
 * capped: bytes unpacked, shared strings (count and characters), characters per cell, columns per row.
 */

export type XlsxLimits = {
  /** The most the archive's parts may unpack to, together, counted while unpacking. */
  maxUnpackedBytes: number;
  maxSharedStrings: number;
  /** Characters of every shared string together. */
  maxSharedStringChars: number;
};

/**
 * A full 50,000-row sheet of every column, written by Excel with a style on every cell, unpacks to about 120 MiB; the
 * parser reads some 25-30 MiB a second, so a file that unpacks to the budget keeps its worker busy for about 10 s.
 */
export const XLSX_LIMITS: XlsxLimits = {
  maxUnpackedBytes: 256 * 1024 * 1024,
  maxSharedStrings: 2_000_000,
  maxSharedStringChars: 64 * 1024 * 1024,
};

/** Excel's own limits: characters in a cell, columns in a row, rows in a sheet. */
const MAX_CELL_CHARS = 32_767;
const MAX_COLUMNS = 16_384;
const MAX_ROW_NUMBER = 1_048_576;
/**
 * Cells beyond this column (AMJ, LibreOffice's last column for years) are not read: the template's columns are the
 * first 37, and a row's cells are kept by position, so a far-right cell on every row would cost every row that much.
 */
const MAX_READ_COLUMNS = 1_024;

/** The workbook is not one this reader takes; the message says why, for a person. */
export class XlsxUnreadable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'XlsxUnreadable';
  }
}

export type XlsxRow = { row: number; cells: string[] };

const localName = (name: string): string => name.slice(name.indexOf(':') + 1);

/** Parses a part of the archive as it unpacks, calling the handlers by element local name. */
function parsePart(
  archive: ZipArchive,
  name: string,
  handlers: { open?: (tag: SaxesTagPlain, local: string) => void; close?: (local: string) => void; text?: (text: string) => void },
): void {
  const parser = new SaxesParser({ position: false });
  if (handlers.open !== undefined) {
    const open = handlers.open;
    parser.on('opentag', (tag) => open(tag as SaxesTagPlain, localName(tag.name)));
  }
  if (handlers.close !== undefined) {
    const close = handlers.close;
    parser.on('closetag', (tag) => close(localName(tag.name)));
  }
  if (handlers.text !== undefined) {
    parser.on('text', handlers.text);
    parser.on('cdata', handlers.text);
  }
  parser.on('error', (error) => {
    throw new XlsxUnreadable(`its part ${name} is not well-formed XML (${error.message})`);
  });
  const decoder = new TextDecoder();
  for (const chunk of archive.unpack(name)) parser.write(decoder.decode(chunk, { stream: true }));
  parser.write(decoder.decode());
  parser.close();
}

/** A relationships part: target by id, and the first target of each type (by the type's last segment). */
function readRelationships(archive: ZipArchive, part: string): { byId: Map<string, string>; byType: Map<string, string> } {
  const byId = new Map<string, string>();
  const byType = new Map<string, string>();
  if (!archive.has(part)) return { byId, byType };
  const base = part.replace(/_rels\/[^/]*$/, '');
  parsePart(archive, part, {
    open: (tag, local) => {
      if (local !== 'Relationship') return;
      const target = String(tag.attributes.Target ?? '');
      const resolved = resolvePath(base, target);
      byId.set(String(tag.attributes.Id ?? ''), resolved);
      const type = String(tag.attributes.Type ?? '').split('/').at(-1) ?? '';
      if (!byType.has(type)) byType.set(type, resolved);
    },
  });
  return { byId, byType };
}

function resolvePath(base: string, target: string): string {
  const parts = (target.startsWith('/') ? target.slice(1) : base + target).split('/');
  const resolved: string[] = [];
  for (const part of parts) {
    if (part === '..') resolved.pop();
    else if (part !== '.' && part !== '') resolved.push(part);
  }
  return resolved.join('/');
}

/** Text elements of a string item (`<si>` or an inline `<is>`), leaving out phonetic runs (`<rPh>`). */
function stringItemReader(onItem: (text: string) => void) {
  let text: string | null = null;
  let inText = false;
  let phoneticDepth = 0;
  return {
    open(local: string): void {
      if (local === 'rPh') phoneticDepth++;
      else if (local === 't' && phoneticDepth === 0) inText = true;
    },
    close(local: string): void {
      if (local === 'rPh') phoneticDepth--;
      else if (local === 't') inText = false;
    },
    start(): void {
      text = '';
    },
    end(): void {
      onItem(unescapeXString(text ?? ''));
      text = null;
    },
    text(chunk: string): void {
      if (!inText || text === null) return;
      text += chunk;
      if (text.length > MAX_CELL_CHARS) throw new XlsxUnreadable(`a cell holds more than ${MAX_CELL_CHARS} characters, more than Excel allows`);
    },
  };
}

function readSharedStrings(archive: ZipArchive, part: string | undefined, limits: XlsxLimits): string[] {
  const strings: string[] = [];
  if (part === undefined || !archive.has(part)) return strings;
  let chars = 0;
  const item = stringItemReader((text) => {
    if (strings.length === limits.maxSharedStrings) {
      throw new XlsxUnreadable(`it holds more than ${limits.maxSharedStrings} shared strings`);
    }
    chars += text.length;
    if (chars > limits.maxSharedStringChars) {
      throw new XlsxUnreadable(`its shared strings hold more than ${limits.maxSharedStringChars} characters`);
    }
    strings.push(text);
  });
  parsePart(archive, part, {
    open: (_tag, local) => (local === 'si' ? item.start() : item.open(local)),
    close: (local) => (local === 'si' ? item.end() : item.close(local)),
    text: item.text,
  });
  return strings;
}

/** Excel's built-in number formats that show a date or a time. */
const BUILT_IN_DATE_FORMATS = new Set([14, 15, 16, 17, 18, 19, 20, 21, 22, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 45, 46, 47, 50, 51, 52, 53, 54, 55, 56, 57, 58]);

/** Whether a number format code shows a date: a d, m, y (or h, s) outside quoted text, escapes and [colour] tags. */
export function isDateFormatCode(code: string): boolean {
  const bare = code.replace(/"[^"]*"/g, '').replace(/\\./g, '').replace(/\[[^\]]*\]/g, '').replace(/_.|\*./g, '');
  return /[dmyhs]/i.test(bare) && !/^general$/i.test(bare.trim());
}

/** For each cell style (`s`), whether its number format shows a date. */
function readDateStyles(archive: ZipArchive, part: string | undefined): boolean[] {
  const dateStyles: boolean[] = [];
  if (part === undefined || !archive.has(part)) return dateStyles;
  const customDateFormats = new Set<number>();
  let inCellXfs = false;
  parsePart(archive, part, {
    open: (tag, local) => {
      if (local === 'numFmt') {
        if (isDateFormatCode(String(tag.attributes.formatCode ?? ''))) customDateFormats.add(Number(tag.attributes.numFmtId));
      } else if (local === 'cellXfs') {
        inCellXfs = true;
      } else if (local === 'xf' && inCellXfs) {
        const id = Number(tag.attributes.numFmtId ?? 0);
        dateStyles.push(BUILT_IN_DATE_FORMATS.has(id) || customDateFormats.has(id));
      }
    },
    close: (local) => {
      if (local === 'cellXfs') inCellXfs = false;
    },
  });
  return dateStyles;
}

/** "AB12" → 27 (0-based column); null without letters. */
function columnOf(reference: string): number | null {
  let column = 0;
  let index = 0;
  for (; index < reference.length; index++) {
    const code = reference.charCodeAt(index);
    const letter = code >= 97 ? code - 32 : code;
    if (letter < 65 || letter > 90) break;
    column = column * 26 + (letter - 64);
  }
  return index === 0 ? null : column - 1;
}

/** A number cell as the text a person sees: at most 15 significant digits, as Excel shows it. */
function numberText(value: string): string {
  const number = Number(value);
  if (value.trim() === '' || !Number.isFinite(number)) return value;
  return String(Number(number.toPrecision(15)));
}

type Workbook = { sheet: string; sharedStrings: string | undefined; styles: string | undefined; date1904: boolean };

function readWorkbook(archive: ZipArchive): Workbook {
  const root = readRelationships(archive, '_rels/.rels');
  const workbookPart = root.byType.get('officeDocument') ?? 'xl/workbook.xml';
  if (!archive.has(workbookPart)) throw new XlsxUnreadable('it has no workbook part: it is not an XLSX workbook');
  const relationships = readRelationships(archive, workbookPart.replace(/([^/]*)$/, '_rels/$1.rels'));
  let firstSheetId: string | undefined;
  let date1904 = false;
  parsePart(archive, workbookPart, {
    open: (tag, local) => {
      if (local === 'workbookPr') date1904 = ['1', 'true'].includes(String(tag.attributes.date1904 ?? ''));
      if (local === 'sheet' && firstSheetId === undefined) {
        const idAttribute = Object.keys(tag.attributes).find((attribute) => attribute === 'id' || attribute.endsWith(':id'));
        firstSheetId = idAttribute === undefined ? undefined : String(tag.attributes[idAttribute]);
      }
    },
  });
  const sheet = firstSheetId === undefined ? undefined : relationships.byId.get(firstSheetId);
  if (sheet === undefined || !archive.has(sheet)) throw new XlsxUnreadable('its first worksheet is missing');
  return { sheet, sharedStrings: relationships.byType.get('sharedStrings'), styles: relationships.byType.get('styles'), date1904 };
}

/**
 * The first worksheet's rows that hold anything, in order, each with its row number and its cells' text by 0-based
 * column (cells without text left as holes). A number cell in a date format reads as its ddMMyyyy day; other numbers
 * as Excel shows them (15 significant digits); booleans as TRUE/FALSE; a formula as its cached value. Rows are read
 * as the sheet unpacks: a batch at a time, not the whole sheet.
 */
export function* xlsxRows(file: Uint8Array, limits: XlsxLimits = XLSX_LIMITS): Generator<XlsxRow> {
  const archive = new ZipArchive(file, limits.maxUnpackedBytes);
  const workbook = readWorkbook(archive);
  const sharedStrings = readSharedStrings(archive, workbook.sharedStrings, limits);
  const dateStyles = readDateStyles(archive, workbook.styles);

  const ready: XlsxRow[] = [];
  let rowNumber = 0;
  let cells: string[] = [];
  let cellColumn = -1;
  let cellType = 'n';
  let cellStyle = 0;
  let value: string | null = null;
  let inValue = false;
  let inlineText: string | null = null;
  const inline = stringItemReader((text) => {
    inlineText = text;
  });
  let hasText = false;

  const cellValue = (): string => {
    switch (cellType) {
      case 's': {
        const index = Number(value);
        const text = Number.isInteger(index) ? sharedStrings[index] : undefined;
        if (text === undefined) throw new XlsxUnreadable(`cell ${columnName(cellColumn)}${rowNumber} names a shared string that is not there`);
        return text;
      }
      case 'inlineStr':
        return inlineText ?? value ?? '';
      case 'b':
        return value === '1' ? 'TRUE' : value === '0' ? 'FALSE' : (value ?? '');
      case 'str':
      case 'e':
        return value ?? '';
      case 'd':
        return value === null ? '' : spreadsheetDateText(value.slice(0, 10)) ?? value;
      default: {
        if (value === null) return '';
        if (dateStyles[cellStyle] === true) {
          const day = spreadsheetDateText(value, { date1904: workbook.date1904, serialOnly: true });
          if (day !== null) return day;
        }
        return numberText(value);
      }
    }
  };

  const parser = {
    open: (tag: SaxesTagPlain, local: string): void => {
      switch (local) {
        case 'row': {
          const number = tag.attributes.r === undefined ? rowNumber + 1 : Number(tag.attributes.r);
          if (!Number.isInteger(number) || number <= rowNumber || number > MAX_ROW_NUMBER) {
            throw new XlsxUnreadable(`its row numbers are out of order or beyond ${MAX_ROW_NUMBER} (row ${number} after row ${rowNumber})`);
          }
          rowNumber = number;
          cells = [];
          cellColumn = -1;
          hasText = false;
          return;
        }
        case 'c': {
          const reference = tag.attributes.r;
          const column = reference === undefined ? cellColumn + 1 : columnOf(String(reference));
          if (column === null || column >= MAX_COLUMNS) throw new XlsxUnreadable(`its cell ${String(reference)} is beyond column ${MAX_COLUMNS}`);
          cellColumn = column;
          cellType = String(tag.attributes.t ?? 'n');
          cellStyle = Number(tag.attributes.s ?? 0);
          value = null;
          inlineText = null;
          return;
        }
        case 'v':
          inValue = true;
          value = '';
          return;
        case 'is':
          inline.start();
          return;
        default:
          inline.open(local);
      }
    },
    close: (local: string): void => {
      switch (local) {
        case 'v':
          inValue = false;
          return;
        case 'is':
          inline.end();
          return;
        case 'c': {
          const text = cellValue();
          if (text !== '' && cellColumn < MAX_READ_COLUMNS) {
            cells[cellColumn] = text;
            hasText = true;
          }
          return;
        }
        case 'row':
          if (hasText) ready.push({ row: rowNumber, cells });
          return;
        default:
          inline.close(local);
      }
    },
    text: (chunk: string): void => {
      if (inValue) {
        value += chunk;
        if (value!.length > MAX_CELL_CHARS) throw new XlsxUnreadable(`a cell holds more than ${MAX_CELL_CHARS} characters, more than Excel allows`);
      } else {
        inline.text(chunk);
      }
    },
  };

  // The sheet is parsed as it unpacks; rows parsed from each unpacked slice are handed out before the next slice.
  const sheetParser = new SaxesParser({ position: false });
  sheetParser.on('opentag', (tag) => parser.open(tag as SaxesTagPlain, localName(tag.name)));
  sheetParser.on('closetag', (tag) => parser.close(localName(tag.name)));
  sheetParser.on('text', parser.text);
  sheetParser.on('cdata', parser.text);
  sheetParser.on('error', (error) => {
    throw new XlsxUnreadable(`its worksheet is not well-formed XML (${error.message})`);
  });
  const decoder = new TextDecoder();
  for (const slice of archive.unpack(workbook.sheet)) {
    sheetParser.write(decoder.decode(slice, { stream: true }));
    yield* ready.splice(0);
  }
  sheetParser.write(decoder.decode());
  sheetParser.close();
  yield* ready.splice(0);
}

function columnName(column: number): string {
  let name = '';
  for (let rest = column + 1; rest > 0; rest = Math.floor((rest - 1) / 26)) name = String.fromCharCode(65 + ((rest - 1) % 26)) + name;
  return name;
}

