import { crc32, deflateRawSync } from 'node:zlib';
import { Deflate, zipSync, type Zippable } from 'fflate';

/** Hand-made XLSX archives for the reader's tests: parts in any order, as producers write them or as an attacker does. */

const NS = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const REL_NS = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
const TYPE = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

export const escapeXml = (text: string): string => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

/** A cell: a shared string (by index), an inline string, rich inline text, a number (optionally date-styled), a boolean. */
export type Cell =
  | { shared: number }
  | { inline: string }
  | { rich: string[] }
  | { number: string; dateStyle?: boolean }
  | { bool: boolean };

function columnName(index: number): string {
  let name = '';
  for (let rest = index + 1; rest > 0; rest = Math.floor((rest - 1) / 26)) name = String.fromCharCode(65 + ((rest - 1) % 26)) + name;
  return name;
}

function cellXml(cell: Cell | null, reference: string): string {
  if (cell === null) return '';
  if ('shared' in cell) return `<c r="${reference}" t="s"><v>${cell.shared}</v></c>`;
  if ('inline' in cell) return `<c r="${reference}" t="inlineStr"><is><t>${escapeXml(cell.inline)}</t></is></c>`;
  if ('rich' in cell) return `<c r="${reference}" t="inlineStr"><is>${cell.rich.map((run) => `<r><rPr><b/></rPr><t xml:space="preserve">${escapeXml(run)}</t></r>`).join('')}</is></c>`;
  if ('bool' in cell) return `<c r="${reference}" t="b"><v>${cell.bool ? 1 : 0}</v></c>`;
  return `<c r="${reference}"${cell.dateStyle === true ? ' s="1"' : ''}><v>${cell.number}</v></c>`;
}

export function sheetXml(rows: readonly (readonly (Cell | null)[])[]): string {
  const body = rows
    .map((cells, index) => `<row r="${index + 1}">${cells.map((cell, column) => cellXml(cell, `${columnName(column)}${index + 1}`)).join('')}</row>`)
    .join('');
  return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="${NS}" xmlns:r="${REL_NS}"><sheetData>${body}</sheetData></worksheet>`;
}

/** Shared strings; an entry that is an array is a rich-text string of those runs (with a phonetic run that is not text). */
export function sharedStringsXml(strings: readonly (string | readonly string[])[]): string {
  const items = strings.map((item) =>
    typeof item === 'string'
      ? `<si><t xml:space="preserve">${escapeXml(item)}</t></si>`
      : `<si>${item.map((run) => `<r><rPr><i/></rPr><t>${escapeXml(run)}</t></r>`).join('')}<rPh sb="0" eb="1"><t>PHONETIC</t></rPh></si>`,
  );
  return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><sst xmlns="${NS}" count="${strings.length}" uniqueCount="${strings.length}">${items.join('')}</sst>`;
}

const STYLES = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><styleSheet xmlns="${NS}"><numFmts count="1"><numFmt numFmtId="164" formatCode="dd/mm/yyyy;@"/></numFmts><cellXfs count="2"><xf numFmtId="0"/><xf numFmtId="164" applyNumberFormat="1"/></cellXfs></styleSheet>`;

/** The parts of a one-sheet workbook other than the sheet and the shared strings. */
export function workbookParts(): Record<string, string> {
  return {
    '[Content_Types].xml': `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/><Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/><Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/></Types>`,
    '_rels/.rels': `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="${TYPE}/officeDocument" Target="xl/workbook.xml"/></Relationships>`,
    'xl/workbook.xml': `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook xmlns="${NS}" xmlns:r="${REL_NS}"><sheets><sheet name="Lines" sheetId="1" r:id="rId1"/></sheets></workbook>`,
    'xl/_rels/workbook.xml.rels': `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="${TYPE}/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="${TYPE}/sharedStrings" Target="sharedStrings.xml"/><Relationship Id="rId3" Type="${TYPE}/styles" Target="styles.xml"/></Relationships>`,
    'xl/styles.xml': STYLES,
  };
}

/** A zip of the parts in the order given (text parts, or bytes already deflated by `deflatedPart`). */
export function zipOf(parts: Record<string, string | Uint8Array>): Buffer {
  const entries: Zippable = {};
  for (const [name, content] of Object.entries(parts)) entries[name] = typeof content === 'string' ? new TextEncoder().encode(content) : content;
  return Buffer.from(zipSync(entries, { level: 6 }));
}

/**
 * A large part made of `head`, `middle` repeated `times` times and `tail`, deflated as a stream (never held whole) and
 * returned with a stored zip entry's worth of raw deflate data, for archiveWithDeflated.
 */
export function deflatedRepeat(head: string, middle: string, times: number, tail: string): Uint8Array {
  const chunks: Uint8Array[] = [];
  const deflate = new Deflate({ level: 9 }, (chunk) => chunks.push(chunk));
  const encoder = new TextEncoder();
  deflate.push(encoder.encode(head));
  const block = encoder.encode(middle.repeat(Math.max(1, Math.floor(65_536 / middle.length))));
  const perBlock = Math.max(1, Math.floor(65_536 / middle.length));
  let left = times;
  while (left >= perBlock) {
    deflate.push(block);
    left -= perBlock;
  }
  if (left > 0) deflate.push(encoder.encode(middle.repeat(left)));
  deflate.push(encoder.encode(tail), true);
  return Buffer.concat(chunks);
}

/**
 * A zip archive written by hand: each entry given as raw deflate data with the uncompressed size it *declares* (in
 * its local header and the central directory), which need not be true. CRCs are left 0: the reader does not check them.
 */
export function archiveWithDeflated(entries: readonly { name: string; deflated: Uint8Array; declaredSize: number }[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(entry.deflated.length, 18);
    local.writeUInt32LE(entry.declaredSize, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(entry.deflated.length, 20);
    central.writeUInt32LE(entry.declaredSize, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, Buffer.from(entry.deflated));
    centrals.push(central, name);
    offset += 30 + name.length + entry.deflated.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

/** Deflated bytes of a small text part, for archiveWithDeflated. */
export function deflatedText(text: string): Uint8Array {
  return deflatedRepeat(text, ' ', 0, '');
}

/** A central directory field a ZIP64 writer may mark 0xFFFFFFFF, its value then in the entry's ZIP64 extra field. */
export type Zip64Field = 'uncompressedSize' | 'compressedSize' | 'localHeaderOffset';

/**
 * A ZIP64 archive of the parts (deflated, CRCs right), written by hand as ZIP64 writers write it: a ZIP64 end record
 * and locator, the end record's count and offset marked 0xFFFF and 0xFFFFFFFF; each local header with both sizes
 * marked and in its ZIP64 extra field; in the central directory the `marked` fields, their values in a ZIP64 extra field
 * (0x0001) after an extended-timestamp one (0x5455). `zip64Extra: 'missing'` leaves that field out, `'short'` cuts it
 * to 4 bytes.
 */
export function zip64Of(parts: Record<string, string>, marked: readonly Zip64Field[], zip64Extra: 'whole' | 'missing' | 'short' = 'whole'): Buffer {
  const MARK = 0xffffffff;
  const uint64 = (value: number): Buffer => {
    const bytes = Buffer.alloc(8);
    bytes.writeBigUInt64LE(BigInt(value));
    return bytes;
  };
  const extraField = (id: number, data: Buffer): Buffer => {
    const header = Buffer.alloc(4);
    header.writeUInt16LE(id, 0);
    header.writeUInt16LE(data.length, 2);
    return Buffer.concat([header, data]);
  };
  const timestamp = extraField(0x5455, Buffer.from([1, 0, 0, 0, 0]));
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [entryName, text] of Object.entries(parts)) {
    const name = Buffer.from(entryName);
    const content = Buffer.from(text);
    const deflated = deflateRawSync(content);
    const values: Record<Zip64Field, number> = { uncompressedSize: content.length, compressedSize: deflated.length, localHeaderOffset: offset };
    const localExtra = extraField(0x0001, Buffer.concat([uint64(content.length), uint64(deflated.length)]));
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(45, 4);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(crc32(content), 14);
    local.writeUInt32LE(MARK, 18);
    local.writeUInt32LE(MARK, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(localExtra.length, 28);
    const zip64Values = Buffer.concat((['uncompressedSize', 'compressedSize', 'localHeaderOffset'] as const).filter((field) => marked.includes(field)).map((field) => uint64(values[field])));
    const centralExtra = Buffer.concat([
      timestamp,
      ...(zip64Extra === 'missing' ? [] : [extraField(0x0001, zip64Extra === 'short' ? zip64Values.subarray(0, 4) : zip64Values)]),
    ]);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(0x032d, 4);
    central.writeUInt16LE(45, 6);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(crc32(content), 16);
    central.writeUInt32LE(marked.includes('compressedSize') ? MARK : deflated.length, 20);
    central.writeUInt32LE(marked.includes('uncompressedSize') ? MARK : content.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt16LE(centralExtra.length, 30);
    central.writeUInt32LE(marked.includes('localHeaderOffset') ? MARK : offset, 42);
    locals.push(local, name, localExtra, deflated);
    centrals.push(central, name, centralExtra);
    offset += 30 + name.length + localExtra.length + deflated.length;
  }
  const count = Object.keys(parts).length;
  const directory = Buffer.concat(centrals);
  const record = Buffer.alloc(56);
  record.writeUInt32LE(0x06064b50, 0);
  record.writeBigUInt64LE(44n, 4);
  record.writeUInt16LE(0x032d, 12);
  record.writeUInt16LE(45, 14);
  record.writeBigUInt64LE(BigInt(count), 24);
  record.writeBigUInt64LE(BigInt(count), 32);
  record.writeBigUInt64LE(BigInt(directory.length), 40);
  record.writeBigUInt64LE(BigInt(offset), 48);
  const locator = Buffer.alloc(20);
  locator.writeUInt32LE(0x07064b50, 0);
  locator.writeBigUInt64LE(BigInt(offset + directory.length), 8);
  locator.writeUInt32LE(1, 16);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(0xffff, 8);
  end.writeUInt16LE(0xffff, 10);
  end.writeUInt32LE(MARK, 12);
  end.writeUInt32LE(MARK, 16);
  return Buffer.concat([...locals, directory, record, locator, end]);
}
