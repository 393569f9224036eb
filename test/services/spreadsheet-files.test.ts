import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import { unzipSync } from 'fflate';
import { guardStringCellText, unguardCellText } from '../../src/domain/spreadsheet-cells.ts';
import { SPREADSHEET_COLUMNS, type SpreadsheetColumn } from '../../src/domain/spreadsheet-columns.ts';
import { MAX_UPLOAD_PROBLEMS, readRows, validateRows, type SheetRow, type SpreadsheetProblem } from '../../src/services/spreadsheets/read.ts';
import { XLSX_LIMITS } from '../../src/services/spreadsheets/xlsx.ts';
import { checkInWorker } from '../../src/services/spreadsheets/worker.ts';
import {
  archiveWithDeflated,
  deflatedRepeat,
  deflatedText,
  sharedStringsXml,
  sheetXml,
  workbookParts,
  zip64Of,
  zipOf,
  type Cell,
  type Zip64Field,
} from '../support/xlsx-parts.ts';

const FORM = { uploadType: '101' };

const GOOD: Record<SpreadsheetColumn, string> = Object.assign(
  Object.fromEntries(SPREADSHEET_COLUMNS.map((column) => [column, ''])) as Record<SpreadsheetColumn, string>,
  {
    branchSlNo: '0',
    irmIfscCode: 'ABCD0123456',
    irmAdCode: '0390004',
    irmNumber: 'IRM00000001',
    irmDt: '15092025',
    irmFCC: 'USD',
    irmPurposeCode: 'P0103',
    irmRemitAmtFCC: '94404.25',
    sbCumInvoiceNumber: '15392',
    sbCumInvoiceDate: '14092025',
    portCode: 'INDEL4',
    billNo: '9807',
    sbCumInvoiceFCC: 'USD',
    sbCumInvoiceValueinFCC: '94404.25',
    mappedIRMAmountFCC: '1566',
    sacCode1: '998599',
  },
);

async function problemsOf(rows: AsyncIterable<SheetRow>): Promise<SpreadsheetProblem[]> {
  return (await validateRows(rows, FORM)).problems;
}

const csvField = (value: string): string => (/[",\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value);

const openDescriptors = (): number => readdirSync('/proc/self/fd').length;

/** The parts of a worksheet-first archive: header in shared strings (two of them rich text), the row mixing every kind of cell. */
function worksheetFirstParts(): Record<string, string> {
  const strings: (string | string[])[] = SPREADSHEET_COLUMNS.map((column, index) => (index % 10 === 3 ? [column.slice(0, 3), column.slice(3)] : column));
  const sharedFor = new Map<string, number>();
  const row: (Cell | null)[] = SPREADSHEET_COLUMNS.map((column, index): Cell | null => {
    const text = GOOD[column];
    if (text === '') return null;
    switch (column) {
      case 'irmAdCode':
        return { number: '390004' }; // Typed into a general cell: the zero is gone.
      case 'irmDt':
        return { number: '45915', dateStyle: true }; // 15 September 2025 as Excel stores it.
      case 'sbCumInvoiceDate':
        return { number: '45914' }; // A serial day in a cell whose format was lost.
      case 'irmRemitAmtFCC':
        return { number: '94404.250000000001' };
      case 'billNo':
        return { rich: ['98', '07'] };
      case 'branchSlNo':
        return { number: '0' };
      default: {
        if (index % 2 === 0) return { inline: text };
        if (!sharedFor.has(text)) {
          sharedFor.set(text, strings.length);
          strings.push(text);
        }
        return { shared: sharedFor.get(text)! };
      }
    }
  });
  const header = SPREADSHEET_COLUMNS.map((_, index): Cell => ({ shared: index }));
  const { '[Content_Types].xml': types, ...rest } = workbookParts();
  // Excel's and LibreOffice's own order: the worksheet before the shared strings.
  return { '[Content_Types].xml': types!, ...rest, 'xl/worksheets/sheet1.xml': sheetXml([header, row]), 'xl/sharedStrings.xml': sharedStringsXml(strings) };
}

const worksheetFirstWorkbook = (): Buffer => zipOf(worksheetFirstParts());

const run = promisify(execFile);
const SOFFICE = ['/usr/bin/soffice', '/usr/local/bin/soffice'].find((path) => existsSync(path));
/** Info-ZIP's zip, which writes ZIP64 records for any file when told to (-fz). */
const ZIP = ['/usr/bin/zip', '/usr/local/bin/zip'].find((path) => existsSync(path));

/** Converts with LibreOffice (headless, a profile of its own); the converted file's bytes. */
async function libreOffice(dir: string, file: string, to: 'xlsx' | 'csv'): Promise<Buffer> {
  const profile = `file://${join(dir, 'profile')}`;
  await run(SOFFICE!, [`-env:UserInstallation=${profile}`, '--headless', '--convert-to', to, '--outdir', join(dir, to), join(dir, file)], { timeout: 120_000 });
  return readFile(join(dir, to, file.replace(/\.[a-z]+$/, `.${to}`)));
}

/**
 * lines.xlsx in `dir`, as LibreOffice writes it from a filled-in CSV (two lines, codes and dates it turns into numbers);
 * its bytes.
 */
async function libreOfficeLines(dir: string): Promise<Buffer> {
  const rows = [
    GOOD,
    { ...GOOD, irmNumber: 'IRM00000002', irmDt: '2025-09-15', sbCumInvoiceDate: '14/09/2025', mappedIRMAmountFCC: '10.5' },
  ];
  const csv = [SPREADSHEET_COLUMNS.join(','), ...rows.map((row) => SPREADSHEET_COLUMNS.map((column) => row[column]).join(','))].join('\n') + '\n';
  await writeFile(join(dir, 'lines.csv'), csv);
  const xlsx = await libreOffice(dir, 'lines.csv', 'xlsx');
  await writeFile(join(dir, 'lines.xlsx'), xlsx);
  return xlsx;
}

describe('XLSX as producers write it', () => {
  test('worksheet before shared strings, rich text, inline strings, numbers and dates stored as numbers: read exactly, nothing left open', async () => {
    const file = worksheetFirstWorkbook();
    const descriptors = openDescriptors();
    const { lines, problems } = await validateRows(readRows('xlsx', file), FORM);
    assert.deepEqual(problems, []);
    assert.equal(lines.length, 1);
    const line = lines[0]!.line;
    assert.equal(lines[0]!.row, 2);
    assert.equal(line.irmAdCode, '0390004');
    assert.equal(line.irmDt, '15092025');
    assert.equal(line.sbCumInvoiceDate, '14092025');
    assert.equal(line.irmRemitAmtFCC, 94404.25);
    assert.equal(line.billNo, '9807');
    assert.equal(line.irmIfscCode, 'ABCD0123456');
    assert.equal(line.portCode, 'INDEL4');
    assert.equal(line.sacCode1, '998599');
    assert.equal(openDescriptors(), descriptors, 'no file or descriptor is left behind');
  });

  test('an XLSX written by LibreOffice from a filled-in CSV (codes and dates turned into numbers) is read as the exporter typed it', { skip: SOFFICE === undefined && 'soffice is not installed (.ci/run installs libreoffice-calc-nogui)' }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ebrc-soffice-'));
    try {
      const xlsx = await libreOfficeLines(dir);
      const { lines, problems } = await validateRows(readRows('xlsx', xlsx), FORM);
      assert.deepEqual(problems, []);
      assert.deepEqual(
        lines.map(({ row, line }) => [row, line.irmNumber, line.irmAdCode, line.irmDt, line.sbCumInvoiceDate, line.mappedIRMAmountFCC, line.sbCumInvoiceNumber]),
        [
          [2, 'IRM00000001', '0390004', '15092025', '14092025', 1566, '15392'],
          [3, 'IRM00000002', '0390004', '15092025', '14092025', 10.5, '15392'],
        ],
      );

      // The same sheet saved again as CSV by LibreOffice: zeros dropped, dates in its own form.
      const saved = await libreOffice(dir, 'lines.xlsx', 'csv');
      const again = await validateRows(readRows('csv', saved), FORM);
      assert.deepEqual(again.problems, []);
      assert.deepEqual(again.lines.map(({ line }) => [line.irmAdCode, line.irmDt]), [['0390004', '15092025'], ['0390004', '15092025']]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a worksheet-first archive LibreOffice itself reads gives the same header to this reader', { skip: SOFFICE === undefined && 'soffice is not installed' }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ebrc-soffice-'));
    try {
      await writeFile(join(dir, 'mine.xlsx'), worksheetFirstWorkbook());
      const csv = (await libreOffice(dir, 'mine.xlsx', 'csv')).toString('utf8');
      assert.equal(csv.split('\n')[0]!.trim(), SPREADSHEET_COLUMNS.join(','));
      const [header] = await collectCells(worksheetFirstWorkbook());
      assert.deepEqual(header, SPREADSHEET_COLUMNS);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('an XLSX LibreOffice wrote, zipped again as ZIP64 by Info-ZIP (zip -fz), is read exactly as the original', { skip: (SOFFICE === undefined || ZIP === undefined) && 'soffice or zip is not installed (.ci/run installs libreoffice-calc-nogui and zip)' }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ebrc-soffice-'));
    try {
      const xlsx = await libreOfficeLines(dir);
      for (const [name, content] of Object.entries(unzipSync(xlsx))) {
        await mkdir(dirname(join(dir, 'parts', name)), { recursive: true });
        await writeFile(join(dir, 'parts', name), content);
      }
      await run(ZIP!, ['-q', '-fz', '-X', '-r', join(dir, 'zip64.xlsx'), '.'], { cwd: join(dir, 'parts') });
      const zip64 = await readFile(join(dir, 'zip64.xlsx'));
      assert.ok(zip64.includes('PK\x06\x06') && zip64.includes('PK\x06\x07'), 'a ZIP64 end record and locator');
      assert.equal(zip64.readUInt32LE(zip64.length - 22 + 16), 0xffffffff, "the end record's directory offset is in the ZIP64 one only");
      // Another ZIP64 reader finds every part LibreOffice wrote in it, unchanged. (Not LibreOffice itself: Debian 12's
      // LibreOffice 7.4 refuses any archive with a ZIP64 end record, "source file could not be loaded"; later ones read it.)
      const unpacked = unzipSync(zip64, { filter: (entry) => !entry.name.endsWith('/') });
      assert.deepEqual(unpacked, unzipSync(xlsx));

      const original = await validateRows(readRows('xlsx', xlsx), FORM);
      assert.deepEqual(original.problems, []);
      assert.equal(original.lines.length, 2);
      assert.deepEqual(await validateRows(readRows('xlsx', zip64), FORM), original);
      assert.deepEqual(await collectCells(zip64), await collectCells(xlsx));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('ZIP64 archives as streaming writers write them (sizes and offsets marked in the central directory in any combination) read as the plain archive', async () => {
    const plain = await collectCells(worksheetFirstWorkbook());
    const fields: Zip64Field[] = ['uncompressedSize', 'compressedSize', 'localHeaderOffset'];
    for (let mask = 0; mask < 8; mask++) {
      const marked = fields.filter((_, index) => (mask & (1 << index)) !== 0);
      const file = zip64Of(worksheetFirstParts(), marked);
      // fflate's own unzip, another ZIP64 reader, finds the parts in it (this builder is right).
      assert.deepEqual(unzipSync(file), Object.fromEntries(Object.entries(worksheetFirstParts()).map(([name, text]) => [name, new TextEncoder().encode(text)])), marked.join(', '));
      assert.deepEqual(await collectCells(file), plain, marked.join(', '));
      assert.deepEqual((await validateRows(readRows('xlsx', file), FORM)).problems, [], marked.join(', '));
    }
  });

  test('a plain archive whose last bytes before its end record only look like a ZIP64 locator is read as it is', async () => {
    // The central directory's last bytes are its last entry's name: one that ends with a locator's signature.
    const parts = { ...worksheetFirstParts(), 'docProps/x-PK\u0006\u00070123456789abcdef': 'not a locator' };
    const file = zipOf(parts);
    const end = file.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
    assert.equal(file.readUInt32LE(end - 20), 0x07064b50, 'the bytes before the end record read as a locator');
    assert.deepEqual(await collectCells(file), await collectCells(worksheetFirstWorkbook()));
  });
});

/** The header row's cells as this reader gives them (readRows takes the header itself, so it is read off a CSV copy). */
async function collectCells(file: Buffer): Promise<string[][]> {
  const { xlsxRows } = await import('../../src/services/spreadsheets/xlsx.ts');
  return [...xlsxRows(file)].map((row) => Array.from(row.cells, (cell) => cell ?? ''));
}

describe('CSV as spreadsheet programs save it', () => {
  test('leading zeros of irmAdCode come back, dates in every form a program writes are read, grouped amounts too', async () => {
    const forms: [string, string][] = [
      ['15092025', '15092025'],
      ['5092025', '05092025'], // ddMMyyyy typed as a number: the leading zero is gone
      ['45915', '15092025'], // a serial day number
      ['45915.5', '15092025'],
      ['2025-09-15', '15092025'],
      ['2025-09-15 00:00:00', '15092025'],
      ['15/09/2025', '15092025'],
      ['15-09-25', '15092025'],
      ['15.09.2025', '15092025'],
      ['5/9/2025', '05092025'], // day first, as India writes dates: never 9 May
      ['15-Sep-2025', '15092025'],
      ['15 September 2025', '15092025'],
      ['Sep 15, 2025', '15092025'],
    ];
    const rows = forms.map(([irmDt], index) => ({ ...GOOD, irmNumber: `IRM${index}`, irmDt, irmAdCode: '390004', sbCumInvoiceValueinFCC: '94,404.25' }));
    const csv = [SPREADSHEET_COLUMNS.join(','), ...rows.map((row) => SPREADSHEET_COLUMNS.map((column) => csvField(row[column])).join(','))].join('\r\n');
    const { lines, problems } = await validateRows(readRows('csv', Buffer.from(csv)), FORM);
    assert.deepEqual(problems, []);
    assert.deepEqual(lines.map(({ line }) => line.irmDt), forms.map(([, expected]) => expected));
    assert.ok(lines.every(({ line }) => line.irmAdCode === '0390004' && line.sbCumInvoiceValueinFCC === 94404.25));
  });

  test('what is no date stays refused with the push code; an AD code too long is not cut', async () => {
    const rows = [
      { ...GOOD, irmDt: '31/02/2025' },
      { ...GOOD, irmDt: '13/13/2025' },
      { ...GOOD, irmAdCode: '12345678' },
    ];
    const csv = [SPREADSHEET_COLUMNS.join(','), ...rows.map((row) => SPREADSHEET_COLUMNS.map((column) => row[column]).join(','))].join('\n');
    const problems = await problemsOf(readRows('csv', Buffer.from(csv)));
    assert.deepEqual(problems.map(({ row, column, code }) => [row, column, code]), [[2, 'irmDt', 'ERR17'], [3, 'irmDt', 'ERR17'], [4, 'irmAdCode', 'ERR16']]);
  });
});

describe('files wrong throughout', () => {
  test('problems past the first thousand are counted, not kept', async () => {
    const row = SPREADSHEET_COLUMNS.map((column) => (column === 'irmDt' || column === 'sbCumInvoiceDate' ? 'x' : GOOD[column])).join(',');
    const csv = [SPREADSHEET_COLUMNS.join(','), ...Array.from({ length: 3_000 }, () => row)].join('\n');
    const problems = await problemsOf(readRows('csv', Buffer.from(csv)));
    assert.equal(problems.length, MAX_UPLOAD_PROBLEMS + 1);
    assert.deepEqual(problems.slice(0, 2).map(({ row, column }) => [row, column]), [[2, 'irmDt'], [2, 'sbCumInvoiceDate']]);
    assert.deepEqual(problems.at(-1), { row: null, column: null, code: 'more_problems', message: '5000 more problems are not listed; fix those above and upload the file again.' });
  });
});

describe('hostile XLSX files', () => {
  test('a shared-strings bomb (hundreds of MiB of empty rich-text runs, sizes declared honestly) is refused within its caps', async (t) => {
    const item = '<si><r><t></t></r></si>';
    const times = Math.floor((319 * 2 ** 20) / item.length);
    const strings = deflatedRepeat(`<?xml version="1.0"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">`, item, times, '</sst>');
    const parts = workbookParts();
    const file = archiveWithDeflated([
      ...Object.entries(parts).map(([name, text]) => ({ name, deflated: deflatedText(text), declaredSize: text.length })),
      { name: 'xl/sharedStrings.xml', deflated: strings, declaredSize: times * item.length + 100 },
      { name: 'xl/worksheets/sheet1.xml', deflated: deflatedText(sheetXml([[{ shared: 0 }]])), declaredSize: 200 },
    ]);
    t.diagnostic(`bomb: ${(file.length / 2 ** 20).toFixed(2)} MiB declaring ${Math.round((times * item.length) / 2 ** 20)} MiB of shared strings`);
    const heapBefore = process.memoryUsage().heapUsed;
    const problems = await problemsOf(readRows('xlsx', file));
    assert.equal(problems.length, 1);
    assert.equal(problems[0]!.code, 'unreadable_file');
    assert.match(problems[0]!.message, /more than 2000000 shared strings/);
    t.diagnostic(`heap growth ${Math.round((process.memoryUsage().heapUsed - heapBefore) / 2 ** 20)} MiB`);
  });

  test('one rich-text string of millions of empty runs holds no memory: read to the end, then refused for its missing columns', async () => {
    const run = '<r><rPr><b/></rPr><t></t></r>';
    const strings = deflatedRepeat('<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si>', run, 2_000_000, '</si></sst>');
    const { 'xl/styles.xml': _styles, ...parts } = workbookParts();
    const file = archiveWithDeflated([
      ...Object.entries(parts).map(([name, text]) => ({ name, deflated: deflatedText(text), declaredSize: text.length })),
      { name: 'xl/sharedStrings.xml', deflated: strings, declaredSize: 1000 },
      { name: 'xl/worksheets/sheet1.xml', deflated: deflatedText(sheetXml([[{ shared: 0 }]])), declaredSize: 200 },
    ]);
    const problems = await problemsOf(readRows('xlsx', file));
    assert.ok(problems.length > 0 && problems.every((problem) => problem.code === 'missing_column'), JSON.stringify(problems.slice(0, 2)));
  });

  test('a zip whose declared sizes lie is stopped by the bytes it actually unpacks to', async () => {
    const padding = deflatedRepeat('<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>', '<!-- padding -->', 1_600_000, '</sheetData></worksheet>');
    const parts = workbookParts();
    const file = archiveWithDeflated([
      ...Object.entries(parts).map(([name, text]) => ({ name, deflated: deflatedText(text), declaredSize: text.length })),
      // 24 MB of XML declared as 100 bytes.
      { name: 'xl/worksheets/sheet1.xml', deflated: padding, declaredSize: 100 },
    ]);
    const limits = { maxRows: 50_000, xlsx: { ...XLSX_LIMITS, maxUnpackedBytes: 8 * 2 ** 20 } };
    const problems = await problemsOf(readRows('xlsx', file, limits));
    assert.deepEqual(problems.map(({ code }) => code), ['unreadable_file']);
    assert.match(problems[0]!.message, /unpacks to more than 8 MiB/);
  });

  test('damaged, truncated and non-XLSX archives are refused with a reason, never thrown', async () => {
    const good = worksheetFirstWorkbook();
    const files = [good.subarray(0, good.length - 30), Buffer.concat([good.subarray(0, 200), Buffer.alloc(2000, 7), good.subarray(2200)]), zipOf({ 'hello.txt': 'hi' })];
    for (const file of files) {
      const problems = await problemsOf(readRows('xlsx', file));
      assert.equal(problems.length, 1, JSON.stringify(problems));
      assert.equal(problems[0]!.code, 'unreadable_file');
    }
  });

  test('ZIP64 records that lie (a locator past the file, an absurd entry count, marked fields with no ZIP64 sizes) are refused with a reason, never thrown', async () => {
    const all: Zip64Field[] = ['uncompressedSize', 'compressedSize', 'localHeaderOffset'];
    const good = zip64Of(worksheetFirstParts(), all);
    const locator = good.length - 22 - 20;
    const record = locator - 56;
    const edited = (at: number, value: bigint): Buffer => {
      const file = Buffer.from(good);
      file.writeBigUInt64LE(value, at);
      return file;
    };
    const cases: [string, Buffer, RegExp][] = [
      ['locator past the file', edited(locator + 8, BigInt(good.length + 1000)), /central directory is damaged \(its ZIP64 end record is missing\)/],
      ['locator past 2^53', edited(locator + 8, 2n ** 63n), /central directory is damaged/],
      ['locator pointing into the directory', edited(locator + 8, BigInt(record - 100)), /its ZIP64 end record is missing/],
      ['entry count over the limit', edited(record + 32, 10_001n), /more than 10000 entries/],
      ['entry count past 2^53', edited(record + 32, 2n ** 64n - 1n), /central directory is damaged/],
      ['directory offset past the file', edited(record + 48, BigInt(good.length * 2)), /central directory is damaged/],
      ['end record marked, locator gone', Buffer.concat([good.subarray(0, locator), good.subarray(locator + 20)]), /its ZIP64 end locator is missing/],
      ['sizes marked, no ZIP64 extra field', zip64Of(worksheetFirstParts(), ['compressedSize'], 'missing'), /is marked ZIP64 but has no ZIP64 sizes/],
      ['offset marked, ZIP64 extra field cut short', zip64Of(worksheetFirstParts(), ['uncompressedSize', 'localHeaderOffset'], 'short'), /ZIP64 sizes of .* are cut short/],
    ];
    for (const [what, file, message] of cases) {
      const problems = await problemsOf(readRows('xlsx', file));
      assert.equal(problems.length, 1, `${what}: ${JSON.stringify(problems)}`);
      assert.equal(problems[0]!.code, 'unreadable_file', what);
      assert.match(problems[0]!.message, message, what);
    }
  });

  test('XML with a custom entity (billion laughs) is refused, not expanded', async () => {
    const laughs = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>&lol2;</t></si></sst>`;
    const parts = workbookParts();
    const file = zipOf({ ...parts, 'xl/worksheets/sheet1.xml': sheetXml([[{ shared: 0 }]]), 'xl/sharedStrings.xml': laughs });
    const problems = await problemsOf(readRows('xlsx', file));
    assert.deepEqual(problems.map(({ code }) => code), ['unreadable_file']);
  });
});

describe('checking in a worker thread', () => {
  function bigCsv(rows: number): Buffer {
    const line = SPREADSHEET_COLUMNS.map((column) => GOOD[column]).join(',');
    return Buffer.from([SPREADSHEET_COLUMNS.join(','), ...Array.from({ length: rows }, () => line)].join('\n'));
  }

  test('a file checks in the worker as in the service: pushes planned with their rows', async () => {
    const checked = await checkInWorker({ file: bigCsv(1_200), fileName: 'lines.csv', uploadType: '101' });
    assert.deepEqual(checked.problems, []);
    assert.equal(checked.rowCount, 1_200);
    assert.equal(checked.lineCount, 1_200);
    assert.deepEqual(checked.pushes.map((push) => push.rows.length), [999, 201]);
    assert.equal((JSON.parse(checked.pushes[1]!.linesJson) as unknown[]).length, 201);
  });

  test('a file that needs more memory than the worker has rejects its upload (file_too_complex); this process goes on', async () => {
    const checked = await checkInWorker({ file: bigCsv(50_000), fileName: 'lines.csv', uploadType: '101' }, { heapMb: 24, timeoutMs: 120_000 });
    assert.deepEqual(checked.problems.map(({ code }) => code), ['file_too_complex']);
    assert.match(checked.problems[0]!.message, /more than 24 MiB of memory/);
    assert.deepEqual(checked.pushes, []);
  });

  test('a file that takes longer than the deadline is stopped and rejected (file_too_complex)', async () => {
    const checked = await checkInWorker({ file: bigCsv(50_000), fileName: 'lines.csv', uploadType: '101' }, { heapMb: 384, timeoutMs: 50 });
    assert.deepEqual(checked.problems.map(({ code }) => code), ['file_too_complex']);
    assert.match(checked.problems[0]!.message, /longer than 0.05 s/);
  });
});

/** The XLSX this service writes (the template, the reports), as bytes. */
async function writtenXlsx(header: string[], rows: (string | null)[][]): Promise<Buffer> {
  const { writeSpreadsheet } = await import('../../src/services/spreadsheets/write.ts');
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  await writeSpreadsheet('xlsx', [{ name: 'Odd text', header, rows }], out);
  return Buffer.concat(chunks);
}

/** Text of every kind a producer may send: markup, line breaks, control characters, escapes, emoji, formulas. */
const oddText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.constantFrom('a & b <c> "d" \'e\'', '  spaces around  ', 'two\nlines', 'tab\there', 'bell\u0007', '\u0000', '_x0041_', '_x005F_x0041_', '_x00', '😀 emoji', 'lone \uD800 high', 'lone \uDC00 low', '\uFFFE\uFFFF', '=1+1', "'=quoted", '-5', '0012', 'ü ñ 中文 ℃'),
);

describe("this service's XLSX", () => {
  test('any text, control characters and lone surrogates included, reads back exactly with this reader', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(oddText.filter((text) => text !== ''), { minLength: 3, maxLength: 3 }), { minLength: 1, maxLength: 20 }), async (rows) => {
        const file = await writtenXlsx(['a', 'b', 'c'], rows);
        // The upload reader takes the guard quote off as it reads (unguardCellText).
        const read = [...(await import('../../src/services/spreadsheets/xlsx.ts')).xlsxRows(file)].map((row) => Array.from(row.cells, (cell) => unguardCellText(cell ?? '')));
        assert.deepEqual(read, [['a', 'b', 'c'], ...rows]);
      }),
      { numRuns: 200 },
    );
  });

  test('LibreOffice reads the same text back, line breaks, control characters and escapes included', { skip: SOFFICE === undefined && 'soffice is not installed' }, async () => {
    // Lone surrogates have no UTF-8 form, so the CSV LibreOffice writes cannot show them; the reader test above keeps them.
    const texts = fc.sample(oddText.filter((text) => text !== '' && !/[\uD800-\uDFFF]/.test(text.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, ''))), { numRuns: 300, seed: 28 });
    const rows: string[][] = [];
    for (let i = 0; i < texts.length; i += 3) rows.push([texts[i] ?? 'x', texts[i + 1] ?? 'y', texts[i + 2] ?? 'z']);
    const dir = await mkdtemp(join(tmpdir(), 'ebrc-soffice-'));
    try {
      await writeFile(join(dir, 'odd.xlsx'), await writtenXlsx(['a', 'b', 'c'], rows));
      const profile = `file://${join(dir, 'profile')}`;
      // UTF-8 (76), every text cell quoted so that a line break stays in its cell.
      await run(SOFFICE!, [`-env:UserInstallation=${profile}`, '--headless', '--convert-to', 'csv:Text - txt - csv (StarCalc):44,34,76,1,,0,true', '--outdir', join(dir, 'csv'), join(dir, 'odd.xlsx')], { timeout: 120_000 });
      const read = parse(await readFile(join(dir, 'csv', 'odd.csv')), { relax_column_count: true });
      // What a person sees in LibreOffice: the text, with the guard quote on text that starts with quotes and a trigger.
      assert.deepEqual(read, [['a', 'b', 'c'], ...rows.map((row) => row.map(guardStringCellText))]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
