import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { text } from 'node:stream/consumers';
import { test } from 'node:test';
import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import { FORMULA_TRIGGERS, unguardCellText } from '../../src/domain/spreadsheet-cells.ts';
import { formatCents } from '../../src/domain/money.ts';
import { CurrencyTotals, makeReport, type ReportShape } from '../../src/services/reports/output.ts';

type Row = { currency: string; cents: bigint; note: string };
type Total = ReturnType<CurrencyTotals<'value'>['rows']>[number];

const SHAPE: ReportShape<Row, Total> = {
  name: 'Rows',
  columns: [
    { header: 'currency', cell: (row) => row.currency },
    { header: 'value', cell: (row) => formatCents(row.cents) },
    { header: 'note', cell: (row) => (row.note === '' ? null : row.note) },
  ],
  totalsName: 'Totals',
  totalsColumns: [
    { header: 'currency', cell: (total) => total.currency },
    { header: 'count', cell: (total) => String(total.count) },
    { header: 'value', cell: (total) => total.value },
  ],
};

async function* streamed<T>(items: readonly T[]): AsyncGenerator<T> {
  yield* items;
}

/** The report in a format, as the bytes a client gets. */
async function written(format: 'csv' | 'json', rows: readonly Row[]): Promise<string> {
  const totals = new CurrencyTotals(['value'] as const);
  async function* counted() {
    for await (const row of streamed(rows)) {
      totals.add(row.currency, { value: row.cents });
      yield row;
    }
  }
  const report = makeReport({ owner: '0599001001', name: 'test', query: { format }, now: new Date() }, SHAPE, counted(), () => totals.rows());
  const out = new PassThrough();
  const [body] = await Promise.all([text(out), report.write(out)]);
  return body;
}

const rowArbitrary = fc.record({
  currency: fc.constantFrom('USD', 'EUR', 'AED', 'JPY'),
  cents: fc.bigInt({ min: 0n, max: 9_999_999_999_999_999n }),
  // Hostile text: formula starts, quotes, separators, line breaks, any Unicode.
  note: fc.tuple(fc.array(fc.constantFrom(...FORMULA_TRIGGERS, "'", '"', ',', '\n'), { maxLength: 3 }), fc.string({ unit: 'grapheme' })).map(([start, rest]) => start.join('') + rest),
});

test('CSV: every cell reads back exactly once unguarded, no cell starts a formula, and the totals section holds the exact sums', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(rowArbitrary, { maxLength: 30 }), async (rows) => {
      const records: string[][] = parse(await written('csv', rows), { relax_column_count: true });
      const gap = records.findIndex((record) => record.length === 1 && record[0] === '');
      assert.deepEqual(records[0], ['currency', 'value', 'note']);
      const body = records.slice(1, gap);
      assert.deepEqual(body.map(([currency, value, note]) => [currency, value, unguardCellText(note!)]), rows.map((row) => [row.currency, formatCents(row.cents), row.note]));
      for (const cell of body.flat()) assert.ok(cell === '' || !FORMULA_TRIGGERS.has(cell[0]!), `a cell starts a formula: ${JSON.stringify(cell)}`);
      assert.deepEqual(records[gap + 1], ['currency', 'count', 'value']);
      const expected = new Map<string, { count: number; cents: bigint }>();
      for (const row of rows) {
        const entry = expected.get(row.currency) ?? { count: 0, cents: 0n };
        expected.set(row.currency, { count: entry.count + 1, cents: entry.cents + row.cents });
      }
      const sorted = [...expected.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
      assert.deepEqual(records.slice(gap + 2), sorted.map(([currency, { count, cents }]) => [currency, String(count), formatCents(cents)]));
    }),
    { numRuns: 60 },
  );
});

test('json: {rows, totals}, amounts as decimal text with two places, an empty cell as null', async () => {
  const body = JSON.parse(
    await written('json', [
      { currency: 'USD', cents: 150n, note: '=1+1' },
      { currency: 'USD', cents: 9_999_999_999_999_999n, note: '' },
      { currency: 'EUR', cents: 5n, note: 'x' },
    ]),
  );
  assert.deepEqual(body, {
    rows: [
      { currency: 'USD', value: '1.50', note: '=1+1' },
      { currency: 'USD', value: '99999999999999.99', note: null },
      { currency: 'EUR', value: '0.05', note: 'x' },
    ],
    totals: [
      { currency: 'EUR', count: 1, value: '0.05' },
      { currency: 'USD', count: 2, value: '100000000000001.49' },
    ],
  });
});
