import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { PassThrough, Readable } from 'node:stream';
import ExcelJS from 'exceljs';
import { parseDecimalString } from '../../src/domain/money.ts';
import type { RawLine } from '../../src/domain/push-line.ts';
import { IRM_SIDE_COLUMNS, MAY_BE_EMPTY_COLUMNS, REQUIRED_COLUMNS, SPREADSHEET_COLUMNS, type SpreadsheetColumn } from '../../src/domain/spreadsheet-columns.ts';
import { PushLineSchema } from '../../src/schemas/genebrc-requests.ts';
import {
  SERIAL_NO_UNASSIGNED,
  SpreadsheetRejected,
  detectFormat,
  readRows,
  validateRows,
  type SheetRow,
  type SpreadsheetProblem,
} from '../../src/services/spreadsheets/read.ts';
import { splitRows } from '../../src/services/spreadsheets/split.ts';
import { writeTemplate, type SpreadsheetFormat, type TemplateIrm } from '../../src/services/spreadsheets/template.ts';

const FORM = { uploadType: '101' };

function irm(i: number): TemplateIrm {
  return {
    irmNumber: `IRM${String(i).padStart(8, '0')}`,
    irmDt: i % 2 === 0 ? '2025-01-05' : '05012025',
    irmIfscCode: '0BCD0123456',
    irmAdCode: '0012345',
    irmFCC: 'USD',
    irmPurposeCode: 'P0103',
    available: parseDecimalString(i % 3 === 0 ? '100' : '1500.5'),
  };
}

/** A row an exporter has completed: the IRM side as the template gives it, the invoice side filled in. */
function completedRow(overrides: Partial<Record<SpreadsheetColumn, string>> = {}, irmNumber = 'IRM00000001'): Record<SpreadsheetColumn, string> {
  const row = Object.fromEntries(SPREADSHEET_COLUMNS.map((column) => [column, ''])) as Record<SpreadsheetColumn, string>;
  Object.assign(row, {
    branchSlNo: '0',
    irmIfscCode: 'ABCD0123456',
    irmAdCode: '0390004',
    irmNumber,
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
  });
  return Object.assign(row, overrides);
}

function csvField(value: string): string {
  return /[",\n\r]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

function csvOf(header: readonly string[], rows: Iterable<Record<string, string>>): Readable {
  return Readable.from(
    (function* () {
      yield `${header.map(csvField).join(',')}\r\n`;
      for (const row of rows) yield `${header.map((column) => csvField(row[column] ?? '')).join(',')}\r\n`;
    })(),
  );
}

async function bufferOf(format: SpreadsheetFormat, irms: Iterable<TemplateIrm>): Promise<Buffer> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  await writeTemplate(format, irms, out);
  return Buffer.concat(chunks);
}

async function collect(rows: AsyncIterable<SheetRow>): Promise<SheetRow[]> {
  const all: SheetRow[] = [];
  for await (const row of rows) all.push(row);
  return all;
}

async function rejection(rows: AsyncIterable<SheetRow>): Promise<SpreadsheetProblem[]> {
  try {
    await collect(rows);
  } catch (error) {
    assert.ok(error instanceof SpreadsheetRejected, String(error));
    return error.problems;
  }
  assert.fail('the spreadsheet was not rejected');
}

describe('spreadsheet columns', () => {
  test('are the push line fields in interface order', () => {
    assert.deepEqual([...SPREADSHEET_COLUMNS], Object.keys((PushLineSchema as unknown as { properties: object }).properties));
  });

  test('the required ones are the fields a push line requires, but serialNo and uploadType (which may be empty)', () => {
    const required = (PushLineSchema as unknown as { required: string[] }).required;
    assert.deepEqual([...REQUIRED_COLUMNS], required.filter((field) => !(MAY_BE_EMPTY_COLUMNS as readonly string[]).includes(field)));
  });
});

describe('template', () => {
  for (const format of ['csv', 'xlsx'] as const) {
    test(`${format}: round-trips with the header, leading zeros and amounts as text`, async () => {
      const irms = [irm(1), irm(2), irm(3)];
      const file = await bufferOf(format, irms);
      assert.equal(detectFormat({ head: file }), format);
      const rows = await collect(readRows(format, Readable.from([file]), { maxRows: 50_000 }));
      assert.deepEqual(rows.map((row) => row.row), [2, 3, 4]);
      assert.deepEqual(rows[0]!.values, {
        ...Object.fromEntries(SPREADSHEET_COLUMNS.map((column) => [column, ''])),
        irmNumber: 'IRM00000001',
        irmDt: '05012025',
        irmIfscCode: '0BCD0123456',
        irmAdCode: '0012345',
        irmFCC: 'USD',
        irmPurposeCode: 'P0103',
        irmRemitAmtFCC: '1500.50',
      });
      assert.equal(rows[1]!.values.irmDt, '05012025', 'an ISO date is written as ddMMyyyy');
      assert.equal(rows[2]!.values.irmRemitAmtFCC, '100.00');
      const filled = new Set<string>(IRM_SIDE_COLUMNS);
      for (const row of rows) {
        for (const column of SPREADSHEET_COLUMNS) if (!filled.has(column)) assert.equal(row.values[column], '', column);
      }
      if (format === 'csv') {
        assert.equal(file.toString('utf8').split(/\r?\n/)[0], SPREADSHEET_COLUMNS.join(','));
      }
    });
  }

  test('xlsx: the header row is the columns, and the IRM side is text cells formatted as text', async () => {
    const workbook = new ExcelJS.Workbook();
    const file = await bufferOf('xlsx', [irm(3)]);
    await workbook.xlsx.load(file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength) as ArrayBuffer);
    const sheet = workbook.worksheets[0]!;
    assert.deepEqual((sheet.getRow(1).values as unknown[]).slice(1), [...SPREADSHEET_COLUMNS]);
    for (const column of IRM_SIDE_COLUMNS) {
      const cell = sheet.getRow(2).getCell(SPREADSHEET_COLUMNS.indexOf(column) + 1);
      assert.equal(cell.type, ExcelJS.ValueType.String, column);
      assert.equal(cell.numFmt, '@', column);
    }
    assert.equal(sheet.getRow(2).getCell(SPREADSHEET_COLUMNS.indexOf('irmAdCode') + 1).value, '0012345');
    assert.equal(sheet.getRow(2).getCell(SPREADSHEET_COLUMNS.indexOf('irmRemitAmtFCC') + 1).value, '100.00');
  });

  test('xlsx: each column is as wide as its text in the first rows (within 12 and 60), so an eBRC number shows whole', async () => {
    const { writeSpreadsheet } = await import('../../src/services/spreadsheets/write.ts');
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on('data', (chunk: Buffer) => chunks.push(chunk));
    const rows = [['EBRC000000000000000001', 'x', 'y'.repeat(500)], ...Array.from({ length: 300 }, () => ['1', '2', '3'])];
    await writeSpreadsheet('xlsx', [{ name: 'Widths', header: ['ebrcNumber', 'a', 'b'], rows }], out);
    const workbook = new ExcelJS.Workbook();
    const file = Buffer.concat(chunks);
    await workbook.xlsx.load(file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength) as ArrayBuffer);
    const sheet = workbook.worksheets[0]!;
    assert.deepEqual([1, 2, 3].map((index) => sheet.getColumn(index).width), [24, 12, 60]);
    assert.equal(sheet.rowCount, 302, 'the rows read ahead for the widths are written too, once');
    assert.equal(sheet.getRow(2).getCell(1).value, 'EBRC000000000000000001');
  });

  test('detectFormat reads the bytes first, then the name, then the content type', () => {
    assert.equal(detectFormat({ fileName: 'x.xlsx', head: Buffer.from('a,b\n') }), 'csv');
    assert.equal(detectFormat({ fileName: 'Lines.XLSX' }), 'xlsx');
    assert.equal(detectFormat({ fileName: 'lines.csv' }), 'csv');
    assert.equal(detectFormat({ contentType: 'text/csv; charset=utf-8' }), 'csv');
    assert.equal(detectFormat({ contentType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' }), 'xlsx');
    assert.equal(detectFormat({ fileName: 'lines.pdf', contentType: 'application/pdf' }), null);
  });
});

describe('upload rows', () => {
  test('a completed sheet becomes the lines a push takes, amounts exact, serialNo and uploadType left to the push', async () => {
    const input = csvOf(SPREADSHEET_COLUMNS, [
      completedRow(),
      completedRow({ serialNo: '7', uploadType: 'GOODS', irmDt: '2025-09-15', mappedIRMAmountFCC: '0.10', commissionValDeduct: '12.5' }),
    ]);
    const { lines, problems } = await validateRows(readRows('csv', input, { maxRows: 50_000 }), FORM);
    assert.deepEqual(problems, []);
    assert.deepEqual(lines.map((line) => line.row), [2, 3]);
    const [first, second] = lines.map((line) => line.line);
    assert.equal(first!.serialNo, SERIAL_NO_UNASSIGNED);
    assert.equal(first!.uploadType, 101);
    assert.equal(first!.irmAdCode, '0390004');
    assert.equal(first!.irmRemitAmtFCC, 94404.25);
    assert.equal(first!.mappedIRMAmountFCC, 1566);
    assert.equal(first!.isVostro, undefined, 'an empty optional cell is an absent field');
    assert.equal(second!.serialNo, 7);
    assert.equal(second!.uploadType, 'GOODS');
    assert.equal(second!.mappedIRMAmountFCC, 0.1);
    assert.equal(second!.commissionValDeduct, 12.5);
  });

  test('a malformed file: every problem by row number and column header, with the push codes', async () => {
    const input = csvOf(SPREADSHEET_COLUMNS, [
      completedRow(), // row 2: fine
      completedRow({ irmIfscCode: 'SHORT', irmAdCode: '12345678' }), // row 3
      completedRow({ irmDt: '31022025' }), // row 4: no such day
      completedRow({ sbCumInvoiceNumber: 'INV-1', portCode: 'IN' }), // row 5
      completedRow({ mappedIRMAmountFCC: '1.005', irmRemitAmtFCC: '-3' }), // row 6
      completedRow({ sbCumInvoiceValueinFCC: '12abc', irmNumber: '', branchSlNo: '1.5' }), // row 7
      completedRow({ serialNo: '1000', uploadType: '102', isGstAvail: 'X' }), // row 8
    ]);
    const { lines, problems } = await validateRows(readRows('csv', input, { maxRows: 50_000 }), FORM);
    assert.deepEqual(lines, [], 'nothing is pushed when any row is malformed');
    const found = problems.map(({ row, column, code }) => `${row} ${column} ${code}`).sort();
    assert.deepEqual(
      found,
      [
        '3 irmAdCode ERR16',
        '3 irmIfscCode ERR14',
        '4 irmDt ERR17',
        '5 portCode ERR29',
        '5 sbCumInvoiceNumber ERR25',
        '6 irmRemitAmtFCC invalid_money',
        '6 mappedIRMAmountFCC invalid_money',
        '7 branchSlNo invalid_type',
        '7 irmNumber required',
        '7 sbCumInvoiceValueinFCC invalid_type',
        '8 isGstAvail invalid_flag',
        '8 serialNo ERR10',
        '8 uploadType upload_type_mismatch',
      ].sort(),
    );
    const overPrecise = problems.find((problem) => problem.row === 6 && problem.column === 'mappedIRMAmountFCC');
    assert.match(overPrecise!.message, /\(got "1\.005"\)\.$/, 'the message quotes the cell');
  });

  test('a missing header column is a problem on row 1 naming the column', async () => {
    const header = SPREADSHEET_COLUMNS.filter((column) => column !== 'portCode' && column !== 'irmDt');
    const problems = await rejection(readRows('csv', csvOf(header, [completedRow()]), { maxRows: 50_000 }));
    assert.deepEqual(
      problems.map(({ row, column, code }) => ({ row, column, code })),
      [
        { row: 1, column: 'irmDt', code: 'missing_column' },
        { row: 1, column: 'portCode', code: 'missing_column' },
      ],
    );
    const validated = await validateRows(readRows('csv', csvOf(header, [completedRow()]), { maxRows: 50_000 }), FORM);
    assert.equal(validated.problems.length, 2);
    assert.deepEqual(validated.lines, []);
  });

  test('a sheet whose optional columns were deleted is read as if they were empty; a missing required one is named', async () => {
    // The exporter deleted every column after mappedIRMAmountFCC, and serialNo and uploadType (which may be empty).
    const header: string[] = SPREADSHEET_COLUMNS.slice(0, SPREADSHEET_COLUMNS.indexOf('mappedIRMAmountFCC') + 1).filter(
      (column) => column !== 'serialNo' && column !== 'uploadType',
    );
    const kept = new Set(header);
    assert.deepEqual(header, [...REQUIRED_COLUMNS]);
    const validated = await validateRows(readRows('csv', csvOf(header, [completedRow()]), { maxRows: 50_000 }), FORM);
    assert.deepEqual(validated.problems, []);
    assert.equal(validated.lines.length, 1);
    assert.equal(validated.lines[0]!.line.portCode, 'INDEL4');
    // The same as the full sheet with those cells left empty.
    const emptied = completedRow();
    for (const column of SPREADSHEET_COLUMNS) if (!kept.has(column)) emptied[column] = '';
    const full = await validateRows(readRows('csv', csvOf(SPREADSHEET_COLUMNS, [emptied]), { maxRows: 50_000 }), FORM);
    assert.deepEqual(validated.lines, full.lines);

    for (const column of REQUIRED_COLUMNS) {
      const problems = await rejection(readRows('csv', csvOf(header.filter((c) => c !== column), [completedRow()]), { maxRows: 50_000 }));
      assert.deepEqual(problems.map((p) => `${p.row} ${p.column} ${p.code}`), [`1 ${column} missing_column`]);
    }
  });

  test('headers match ignoring case and spaces; other columns are ignored; blank rows keep the numbering', async () => {
    const header = [...SPREADSHEET_COLUMNS.map((column) => ` ${column.toUpperCase()} `), 'My notes'];
    const text = [
      header.join(','),
      SPREADSHEET_COLUMNS.map((column) => completedRow()[column]).join(',') + ',hello',
      '',
      SPREADSHEET_COLUMNS.map(() => '').join(','),
      SPREADSHEET_COLUMNS.map((column) => completedRow({ irmDt: 'x' })[column]).join(',') + ',world',
    ].join('\n');
    const { problems } = await validateRows(readRows('csv', Readable.from([text]), { maxRows: 50_000 }), FORM);
    assert.deepEqual(problems.map(({ row, column, code }) => ({ row, column, code })), [{ row: 5, column: 'irmDt', code: 'ERR17' }]);
  });

  test('an xlsx upload: codes typed as numbers get their zeros back, dates typed as dates are read', async () => {
    const workbook = new ExcelJS.Workbook();
    const sheet = workbook.addWorksheet('mine');
    sheet.addRow([...SPREADSHEET_COLUMNS]);
    const good = completedRow();
    sheet.addRow(SPREADSHEET_COLUMNS.map((column) => (column === 'irmDt' ? new Date(Date.UTC(2025, 8, 15)) : good[column] || null)));
    sheet.addRow(SPREADSHEET_COLUMNS.map((column) => (column === 'irmAdCode' ? 390004 : column === 'mappedIRMAmountFCC' ? 1566.5 : good[column] || null)));
    sheet.getCell('J2').numFmt = 'dd/mm/yyyy';
    const file = Buffer.from(await workbook.xlsx.writeBuffer());
    const { lines, problems } = await validateRows(readRows('xlsx', Readable.from([file]), { maxRows: 50_000 }), FORM);
    assert.deepEqual(problems, []);
    assert.deepEqual(lines.map(({ row, line }) => [row, line.irmAdCode, line.irmDt, line.mappedIRMAmountFCC]), [
      [2, '0390004', '15092025', 1566],
      [3, '0390004', '15092025', 1566.5],
    ]);
  });

  test('a file that is not a spreadsheet is refused, not thrown', async () => {
    const { problems } = await validateRows(readRows('xlsx', Readable.from([Buffer.from('PK\u0003\u0004 not really a zip')]), { maxRows: 50_000 }), FORM);
    assert.equal(problems.length, 1);
    assert.equal(problems[0]!.code, 'unreadable_file');
  });

  test('a 50,001-row CSV is refused', async (t) => {
    const rows = (function* () {
      for (let i = 0; i < 50_001; i++) yield completedRow({}, `IRM${i % 4000}`);
    })();
    const started = performance.now();
    const { lines, problems } = await validateRows(readRows('csv', csvOf(SPREADSHEET_COLUMNS, rows), { maxRows: 50_000 }), FORM);
    t.diagnostic(`50,001 rows read and checked in ${Math.round(performance.now() - started)} ms`);
    assert.deepEqual(lines, []);
    assert.deepEqual(problems.map(({ row, column, code }) => ({ row, column, code })), [{ row: 50_002, column: null, code: 'too_many_rows' }]);
  });
});

describe('cells the template guarded', () => {
  test("a cell guarded against formula injection reads back as its text, and the guard's own quotes survive", async () => {
    const input = csvOf(SPREADSHEET_COLUMNS, [completedRow({ billNo: "'=HYPERLINK(1)", otherdeductionsInfo: "''-note" })]);
    const [row] = await collect(readRows('csv', input));
    assert.equal(row!.values.billNo, '=HYPERLINK(1)');
    assert.equal(row!.values.otherdeductionsInfo, "'-note");
  });
});

describe('splitting into pushes', () => {
  test('1,200 rows become two pushes of at most 999 lines with every IRM group intact', async () => {
    // IRM groups of 1 to 30 rows, interleaved in the sheet as an exporter would list invoices.
    const sizes: number[] = [];
    for (let total = 0, i = 0; total < 1_200; i++) {
      const size = Math.min((i * 7) % 30 + 1, 1_200 - total);
      sizes.push(size);
      total += size;
    }
    const sheetRows: Record<SpreadsheetColumn, string>[] = [];
    const left = [...sizes];
    while (left.some((n) => n > 0)) {
      left.forEach((n, group) => {
        if (n > 0) {
          sheetRows.push(completedRow({ sbCumInvoiceNumber: String(sheetRows.length + 1) }, `IRM${group}`));
          left[group] = n - 1;
        }
      });
    }
    const { lines, problems } = await validateRows(readRows('csv', csvOf(SPREADSHEET_COLUMNS, sheetRows), { maxRows: 50_000 }), FORM);
    assert.deepEqual(problems, []);
    assert.equal(lines.length, 1_200);

    const pushes = splitRows(lines);
    assert.equal(pushes.length, 2);
    const irmPush = new Map<string, number>();
    const rowsSeen: number[] = [];
    pushes.forEach((push, index) => {
      assert.ok(push.lines.length <= 999);
      assert.equal(push.lines.length, push.rows.length);
      assert.deepEqual(push.lines.map((line) => line.serialNo), push.lines.map((_, i) => i + 1));
      push.lines.forEach((line, i) => {
        const earlier = irmPush.get(line.irmNumber);
        assert.ok(earlier === undefined || earlier === index, `IRM ${line.irmNumber} is split across pushes`);
        irmPush.set(line.irmNumber, index);
        // Each line is still the one on its row.
        assert.equal(line.sbCumInvoiceNumber, String(push.rows[i]! - 1));
      });
      rowsSeen.push(...push.rows);
    });
    assert.deepEqual(rowsSeen.sort((a, b) => a - b), Array.from({ length: 1_200 }, (_, i) => i + 2));
  });

  test('an IRM with more rows than a push fills whole pushes', () => {
    const line = (row: number, irmNumber: string) => ({ row, line: { irmNumber, serialNo: SERIAL_NO_UNASSIGNED } as RawLine });
    const lines = [
      ...Array.from({ length: 1_500 }, (_, i) => line(i + 2, 'BIG')),
      ...Array.from({ length: 10 }, (_, i) => line(i + 1_502, 'SMALL')),
    ];
    const pushes = splitRows(lines);
    assert.deepEqual(pushes.map((push) => push.lines.length), [999, 511]);
    assert.ok(pushes[1]!.lines.filter((l) => l.irmNumber === 'SMALL').length === 10);
  });
});

describe('streaming', () => {
  test('reading a 50,000-row XLSX keeps memory growth modest', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'ebrc-sheets-'));
    try {
      const path = join(dir, 'big.xlsx');
      const irms = (function* () {
        for (let i = 0; i < 50_000; i++) yield irm(i);
      })();
      const writeStarted = process.memoryUsage().rss;
      await writeTemplate('xlsx', irms, createWriteStream(path));
      const size = (await stat(path)).size;
      t.diagnostic(`wrote ${size} bytes; RSS growth while writing ${Math.round((process.memoryUsage().rss - writeStarted) / 2 ** 20)} MiB`);

      // Garbage collection on demand, so the live heap can be told from garbage V8 has not yet collected.
      setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc') as () => void;
      gc();
      const before = process.memoryUsage();
      let peakRss = before.rss;
      let peakLiveHeap = before.heapUsed;
      let count = 0;
      let lastRow = 0;
      for await (const row of readRows('xlsx', createReadStream(path), { maxRows: 50_000 })) {
        count++;
        lastRow = row.row;
        if (count % 1_000 === 0) peakRss = Math.max(peakRss, process.memoryUsage().rss);
        if (count % 10_000 === 0) {
          gc();
          peakLiveHeap = Math.max(peakLiveHeap, process.memoryUsage().heapUsed);
        }
      }
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
      const rssGrowth = (peakRss - before.rss) / 2 ** 20;
      const liveHeapGrowth = (peakLiveHeap - before.heapUsed) / 2 ** 20;
      t.diagnostic(
        `read ${count} rows of a ${(size / 2 ** 20).toFixed(1)} MiB XLSX; RSS ${Math.round(before.rss / 2 ** 20)} MiB before, ` +
          `peak RSS growth ${rssGrowth.toFixed(1)} MiB, peak live heap growth ${liveHeapGrowth.toFixed(1)} MiB`,
      );
      assert.equal(count, 50_000);
      assert.equal(lastRow, 50_001);
      // Loading this sheet whole (new ExcelJS.Workbook().xlsx.readFile) grows RSS by about 850 MiB and the live heap by
      // about 630 MiB; streaming keeps no rows, so the live heap hardly grows and RSS only by collectable garbage.
      assert.ok(liveHeapGrowth < 64, `the live heap grew by ${liveHeapGrowth.toFixed(1)} MiB`);
      assert.ok(rssGrowth < 400, `RSS grew by ${rssGrowth.toFixed(1)} MiB`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
