import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { compareDates, isoFromDdMMyyyy, parseIsoDate, parseLineDate, toDdMMyyyy, toIsoDate, type CalendarDate } from '../../src/domain/dates.ts';
import { scaled } from '../support/reliability.ts';

/** Line dates, for any input (fast-check), against a reference calendar: JavaScript's own proleptic Gregorian one. */

const runs = { numRuns: scaled(2_000, 50_000) };

/** The reference: whether year-month-day is a real date, by what Date.UTC makes of it. */
function isRealDate(year: number, month: number, day: number): boolean {
  const date = new Date(Date.UTC(2000, 0, 1));
  date.setUTCFullYear(year, month - 1, day);
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** Any digits in the date shapes, real dates or not. */
const parts = fc.record({ year: fc.integer({ min: 0, max: 9999 }), month: fc.integer({ min: 0, max: 99 }), day: fc.integer({ min: 0, max: 99 }) });

/** Real dates in the range the service takes (1900-2999). */
const realDate = fc
  .date({ min: new Date(Date.UTC(1900, 0, 1)), max: new Date(Date.UTC(2999, 11, 31)), noInvalidDate: true })
  .map((d): CalendarDate => ({ year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() }));

describe('line dates, by property', () => {
  test('ddMMyyyy and YYYY-MM-DD are accepted exactly when the date is real and within 1900-2999', () => {
    fc.assert(
      fc.property(parts, ({ year, month, day }) => {
        const expected = year >= 1900 && year <= 2999 && isRealDate(year, month, day) ? { year, month, day } : null;
        assert.deepEqual(parseLineDate(`${pad(day, 2)}${pad(month, 2)}${pad(year, 4)}`), expected);
        assert.deepEqual(parseLineDate(`${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`), expected);
        assert.deepEqual(parseIsoDate(`${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`), expected);
      }),
      runs,
    );
  });

  test('a real date round-trips through both formats', () => {
    fc.assert(
      fc.property(realDate, (date) => {
        assert.deepEqual(parseLineDate(toDdMMyyyy(date)), date);
        assert.deepEqual(parseLineDate(toIsoDate(date)), date);
        assert.equal(isoFromDdMMyyyy(toDdMMyyyy(date)), toIsoDate(date));
        assert.equal(toIsoDate(date), new Date(Date.UTC(date.year, date.month - 1, date.day)).toISOString().slice(0, 10));
      }),
      runs,
    );
  });

  test('whatever the text, a date is read only from one of the two shapes, and writes back to the same text', () => {
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 12 }),
      fc.stringMatching(/^\d{8}$/),
      fc.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      fc.stringMatching(/^[\d\- ./]{6,12}$/),
    );
    fc.assert(
      fc.property(text, (s) => {
        const date = parseLineDate(s);
        if (date === null) return;
        assert.ok(s === toDdMMyyyy(date) || s === toIsoDate(date), s);
      }),
      { numRuns: scaled(500, 20_000) },
    );
  });

  test('dates compare as the calendar does', () => {
    fc.assert(
      fc.property(realDate, realDate, (a, b) => {
        const reference = Date.UTC(a.year, a.month - 1, a.day) - Date.UTC(b.year, b.month - 1, b.day);
        assert.equal(Math.sign(compareDates(a, b)), Math.sign(reference));
      }),
      runs,
    );
  });
});
