import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  compareDates,
  isoFromDdMMyyyy,
  parseIsoDate,
  parseLineDate,
  toDdMMyyyy,
  toIsoDate,
} from '../../src/domain/dates.ts';

describe('parseLineDate', () => {
  test('accepts ddMMyyyy and YYYY-MM-DD', () => {
    assert.deepEqual(parseLineDate('15092025'), { year: 2025, month: 9, day: 15 });
    assert.deepEqual(parseLineDate('2025-09-15'), { year: 2025, month: 9, day: 15 });
  });

  test('knows leap years', () => {
    assert.deepEqual(parseLineDate('29022024'), { year: 2024, month: 2, day: 29 });
    assert.equal(parseLineDate('29022023'), null);
    assert.deepEqual(parseLineDate('29022000'), { year: 2000, month: 2, day: 29 });
    assert.equal(parseLineDate('29021900'), null);
    assert.equal(parseLineDate('2100-02-29'), null);
  });

  test('rejects days a month does not have', () => {
    assert.equal(parseLineDate('31042025'), null);
    assert.equal(parseLineDate('2025-06-31'), null);
    assert.equal(parseLineDate('00012025'), null);
    assert.equal(parseLineDate('01132025'), null);
    assert.equal(parseLineDate('01002025'), null);
  });

  test('accepts only the years 1900 to 2999', () => {
    assert.deepEqual(parseLineDate('01011900'), { year: 1900, month: 1, day: 1 });
    assert.deepEqual(parseLineDate('31122999'), { year: 2999, month: 12, day: 31 });
    assert.equal(parseLineDate('31121899'), null);
    assert.equal(parseLineDate('01013000'), null);
  });

  test('rejects other shapes', () => {
    for (const bad of ['', '1592025', '150920250', '15-09-2025', '15/09/2025', '2025-9-15', '20250915x', '2025-09-15T00:00:00Z']) {
      assert.equal(parseLineDate(bad), null, bad);
    }
  });
});

describe('parseIsoDate', () => {
  test('is strict YYYY-MM-DD', () => {
    assert.deepEqual(parseIsoDate('2024-02-29'), { year: 2024, month: 2, day: 29 });
    assert.equal(parseIsoDate('2023-02-29'), null);
    assert.equal(parseIsoDate('15092025'), null);
    assert.equal(parseIsoDate('2025-09-15 '), null);
  });
});

describe('formatting', () => {
  test('toDdMMyyyy and toIsoDate pad every part', () => {
    const date = { year: 2025, month: 3, day: 7 };
    assert.equal(toDdMMyyyy(date), '07032025');
    assert.equal(toIsoDate(date), '2025-03-07');
  });

  test('isoFromDdMMyyyy converts only real ddMMyyyy dates', () => {
    assert.equal(isoFromDdMMyyyy('15092025'), '2025-09-15');
    assert.equal(isoFromDdMMyyyy('31042025'), null);
    assert.equal(isoFromDdMMyyyy('2025-09-15'), null);
  });
});

describe('compareDates', () => {
  test('orders by year, then month, then day', () => {
    const d = (year: number, month: number, day: number) => ({ year, month, day });
    assert.equal(compareDates(d(2025, 9, 15), d(2025, 9, 15)), 0);
    assert.ok(compareDates(d(2025, 9, 14), d(2025, 9, 15)) < 0);
    assert.ok(compareDates(d(2025, 10, 1), d(2025, 9, 30)) > 0);
    assert.ok(compareDates(d(2024, 12, 31), d(2025, 1, 1)) < 0);
  });
});
