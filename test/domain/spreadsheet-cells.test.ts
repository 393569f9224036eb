import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { FORMULA_TRIGGERS, guardCellText, guardStringCellText, unguardCellText } from '../../src/domain/spreadsheet-cells.ts';

test('a cell starting with = + - @, a tab or a carriage return gets a single quote in front', () => {
  for (const text of ['=1+1', '+91', '-3.50', '@SUM(A1)', '\t=1', '\r=1']) assert.equal(guardCellText(text), `'${text}`);
  for (const text of ['', '0012345', 'USD', 'P0103', '1500.50', ' =1', "'quoted", 'a=b', "'''"]) assert.equal(guardCellText(text), text);
  assert.equal(guardCellText("'=already quoted"), "''=already quoted", 'text that starts with a quote and a trigger keeps its quote');
});

test('an XLSX string cell keeps its text, unless it starts with quotes before a trigger', () => {
  for (const text of ['=1+1', '-3.50', '0012345', "'quoted", '']) assert.equal(guardStringCellText(text), text);
  assert.equal(guardStringCellText("'=x"), "''=x");
});

test('unguard takes the quote off a guarded cell only', () => {
  assert.equal(unguardCellText("'=1+1"), '=1+1');
  assert.equal(unguardCellText("'-3.50"), '-3.50');
  assert.equal(unguardCellText("''=x"), "'=x");
  for (const text of ["'", "''", "'0012345", "'abc", '=1+1', '', 'x']) assert.equal(unguardCellText(text), text);
});

test('for any text: the guarded CSV cell starts with no trigger, and both guards read back as the text', () => {
  const start = fc.array(fc.constantFrom(...FORMULA_TRIGGERS, "'"), { maxLength: 4 }).map((chars) => chars.join(''));
  fc.assert(
    fc.property(fc.tuple(start, fc.string()).map(([first, rest]) => first + rest), (text) => {
      const guarded = guardCellText(text);
      assert.ok(guarded === '' || !FORMULA_TRIGGERS.has(guarded[0]!));
      assert.equal(unguardCellText(guarded), text);
      assert.equal(unguardCellText(guardStringCellText(text)), text);
    }),
    { numRuns: 2_000 },
  );
});
