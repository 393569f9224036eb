import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import { parse as parseCsv } from 'csv-parse/sync';
import ExcelJS from 'exceljs';
import { FORMULA_TRIGGERS, unguardCellText } from '../../src/domain/spreadsheet-cells.ts';
import { SPREADSHEET_COLUMNS } from '../../src/domain/spreadsheet-columns.ts';
import { writeTemplate, type TemplateIrm } from '../../src/services/spreadsheets/template.ts';
import { templateFileName } from '../../src/services/irm-template.ts';

/** writeTemplate beyond the round trip of spreadsheets.test.ts: the formula guard, failures, backpressure. */

function irm(i: number, overrides: Partial<TemplateIrm> = {}): TemplateIrm {
  return {
    irmNumber: `IRM${String(i).padStart(8, '0')}`,
    irmDt: '2025-01-05',
    irmIfscCode: 'ABCD0123456',
    irmAdCode: '0012345',
    irmFCC: 'USD',
    irmPurposeCode: 'P0103',
    available: 150050n,
    ...overrides,
  };
}

/** `count` rows, counting how many were taken and whether the iteration was closed (its finally ran). */
function counted(count: number, failAt?: number) {
  const seen = { pulled: 0, closed: false };
  async function* rows(): AsyncGenerator<TemplateIrm> {
    try {
      for (let i = 0; i < count; i++) {
        if (i === failAt) throw new Error('the store failed');
        seen.pulled++;
        // A batch read from the database now and then.
        if (i % 1_000 === 0) await new Promise((resolve) => setImmediate(resolve));
        yield irm(i);
      }
    } finally {
      seen.closed = true;
    }
  }
  return { seen, rows: rows() };
}

async function collected(out: PassThrough): Promise<{ bytes: Buffer; ended: Promise<boolean> }> {
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  out.on('error', () => undefined); // Seen through `errored`; the HTTP reply listens the same way.
  const ended = new Promise<boolean>((resolve) => {
    out.on('end', () => resolve(true));
    out.on('close', () => resolve(false));
  });
  return { bytes: Buffer.concat(chunks), ended };
}

describe('the formula guard', () => {
  const hostile = ['=1+1', '+1', '-1', '@SUM(A1)', '\t=1', '\r=1', "'=already quoted", '=HYPERLINK("http://x","y")'];

  test('CSV: every cell that starts with a trigger gets a single quote, and reads back as the original', async () => {
    const rows = hostile.map((text, i) => irm(i, { irmNumber: text, irmIfscCode: text, irmAdCode: text, irmFCC: text, irmPurposeCode: text }));
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on('data', (chunk: Buffer) => chunks.push(chunk));
    await writeTemplate('csv', rows, out);
    const [header, ...records] = parseCsv(Buffer.concat(chunks)) as string[][];
    assert.deepEqual(header, [...SPREADSHEET_COLUMNS]);
    records.forEach((record, i) => {
      for (const column of ['irmNumber', 'irmIfscCode', 'irmAdCode', 'irmFCC', 'irmPurposeCode'] as const) {
        const cell = record[SPREADSHEET_COLUMNS.indexOf(column)]!;
        assert.ok(!FORMULA_TRIGGERS.has(cell[0]!), `${JSON.stringify(cell)} starts with no trigger`);
        assert.equal(unguardCellText(cell), hostile[i], column);
      }
    });
  });

  test('XLSX: the same texts are string cells as they are, and no cell is a formula', async () => {
    // A carriage return does not survive XML (a parser reads it as a line feed), so it is left out here.
    const texts = hostile.filter((text) => !text.includes('\r'));
    const rows = texts.map((text, i) => irm(i, { irmNumber: text, irmIfscCode: text }));
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on('data', (chunk: Buffer) => chunks.push(chunk));
    await writeTemplate('xlsx', rows, out);
    const file = Buffer.concat(chunks);
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength) as ArrayBuffer);
    const sheet = workbook.worksheets[0]!;
    texts.forEach((text, i) => {
      for (const column of ['irmNumber', 'irmIfscCode'] as const) {
        const cell = sheet.getRow(i + 2).getCell(SPREADSHEET_COLUMNS.indexOf(column) + 1);
        assert.equal(cell.type, ExcelJS.ValueType.String, `${JSON.stringify(text)} in ${column}`);
        assert.equal(unguardCellText(String(cell.value)), text);
        assert.equal(cell.formula, undefined);
      }
    });
  });
});

describe('failures', () => {
  for (const format of ['csv', 'xlsx'] as const) {
    test(`${format}: a row that cannot be read midway destroys the output, which never ends`, async () => {
      const { seen, rows } = counted(5_000, 3_000);
      const out = new PassThrough();
      const { ended } = await collected(out);
      const destroyed = new Promise((resolve) => out.once('close', resolve));
      await assert.rejects(writeTemplate(format, rows, out), /the store failed/);
      await destroyed;
      assert.equal(out.destroyed, true);
      assert.equal(out.errored?.message, 'the store failed');
      assert.equal(await ended, false, 'no end: a reader sees an error, never a complete file');
      assert.equal(seen.closed, true);
    });

    test(`${format}: an output closed before the end stops the reading of the rows`, async () => {
      const { seen, rows } = counted(200_000);
      const out = new PassThrough();
      let received = 0;
      out.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > 100_000) out.destroy();
      });
      await assert.rejects(writeTemplate(format, rows, out));
      assert.equal(seen.closed, true, 'the rows were let go');
      assert.ok(seen.pulled < 200_000, `${seen.pulled} rows were read for a reader that went away`);
    });

    test(`${format}: backpressure: while nobody reads, only a bounded number of rows is read`, async () => {
      const total = 400_000;
      const { seen, rows } = counted(total);
      const out = new PassThrough();
      const done = writeTemplate(format, rows, out);
      // Read until the reading stops (no row for half a second), as long as 30 s on a busy machine.
      let pulledWhileStalled = -1;
      for (let waited = 0; waited < 30_000 && seen.pulled !== pulledWhileStalled; waited += 500) {
        pulledWhileStalled = seen.pulled;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      // About 2,400 CSV rows fill the buffers between the writer and a reader that reads nothing; XLSX rows, which
      // deflate to a few bytes each, about 100,000 (some 70 KB of the file).
      assert.equal(seen.pulled, pulledWhileStalled, 'the reading stopped while nobody read the output');
      assert.ok(pulledWhileStalled < 200_000, `${pulledWhileStalled} rows were read while nobody read the output`);
      out.resume();
      await done;
      assert.equal(seen.pulled, total);
    });
  }
});

test('the file name: the IEC (else the customer id, made safe), the UTC day, the format', () => {
  const at = new Date('2026-11-24T23:30:00-02:00');
  assert.equal(templateFileName({ id: 'c1', iec_code: '0599001001' }, 'csv', at), 'irm-template-0599001001-20261125.csv');
  assert.equal(templateFileName({ id: 'a"b/c', iec_code: null }, 'xlsx', at), 'irm-template-a_b_c-20261125.xlsx');
});
