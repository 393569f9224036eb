import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_MONEY_CENTS, centsToNumber, formatCents, parseDecimalString, parseMoney, sumCents } from '../../src/domain/money.ts';

describe('parseMoney', () => {
  test('reads whole and two-decimal amounts exactly', () => {
    assert.equal(parseMoney(1566), 156600n);
    assert.equal(parseMoney(94404.25), 9440425n);
    assert.equal(parseMoney(0.1), 10n);
    assert.equal(parseMoney(0.07), 7n);
    assert.equal(parseMoney(1.1), 110n);
    assert.equal(parseMoney(0), 0n);
    assert.equal(parseMoney(-0), 0n);
  });

  test('rejects more than two decimals', () => {
    assert.equal(parseMoney(1.005), null);
    assert.equal(parseMoney(0.001), null);
    assert.equal(parseMoney(12.345), null);
  });

  test('handles exponent forms of the shortest decimal string', () => {
    assert.equal(parseMoney(1e-7), null);
    assert.equal(parseMoney(1.5e-7), null);
    assert.equal(parseMoney(1e21), null);
    assert.equal(parseMoney(1e13), 10n ** 15n);
  });

  test('rejects negative, non-finite and NaN values', () => {
    assert.equal(parseMoney(-1), null);
    assert.equal(parseMoney(-0.01), null);
    assert.equal(parseMoney(Number.NaN), null);
    assert.equal(parseMoney(Number.POSITIVE_INFINITY), null);
  });

  test('rejects amounts whose cents are not a safe integer', () => {
    assert.equal(parseMoney(90071992547409.92), null);
    assert.equal(parseMoney(99999999999999.99), null);
    assert.equal(parseMoney(1e16), null);
  });

  test('rejects amounts that share their double with a neighbouring cent', () => {
    // 90071992547409.91 is read by JSON.parse as the double that prints as 90071992547409.9.
    assert.equal(parseMoney(90071992547409.91), null);
    assert.equal(parseMoney(90071992547409.9), null);
  });

  test('accepts every cent up to 15 significant digits', () => {
    assert.equal(parseMoney(9999999999999.99), 999999999999999n);
    assert.equal(parseMoney(9999999999999.98), 999999999999998n);
    assert.equal(parseMoney(12345678901234.56), 1234567890123456n);
  });

  test('MAX_MONEY_CENTS is number(16,2)', () => {
    assert.equal(MAX_MONEY_CENTS, 9_999_999_999_999_999n);
  });
});

describe('centsToNumber', () => {
  test('gives the JSON number of the two-decimal amount', () => {
    assert.equal(centsToNumber(156600n), 1566);
    assert.equal(centsToNumber(9440425n), 94404.25);
    assert.equal(centsToNumber(10n), 0.1);
    assert.equal(centsToNumber(-350n), -3.5);
  });

  test('round-trips with parseMoney for awkward values', () => {
    for (const cents of [1n, 7n, 29n, 110n, 123456789n, 999999999999999n]) {
      assert.equal(parseMoney(centsToNumber(cents)), cents);
    }
  });

  test('refuses amounts a double cannot carry exactly', () => {
    assert.throws(() => centsToNumber(9007199254740992n), RangeError);
  });
});

describe('formatCents', () => {
  test('always shows two decimals', () => {
    assert.equal(formatCents(156600n), '1566.00');
    assert.equal(formatCents(9440425n), '94404.25');
    assert.equal(formatCents(5n), '0.05');
    assert.equal(formatCents(0n), '0.00');
    assert.equal(formatCents(-350n), '-3.50');
  });
});

describe('parseDecimalString', () => {
  test('reads numeric(16,2) column values', () => {
    assert.equal(parseDecimalString('94404.25'), 9440425n);
    assert.equal(parseDecimalString('12'), 1200n);
    assert.equal(parseDecimalString('-3.5'), -350n);
    assert.equal(parseDecimalString('0.00'), 0n);
    assert.equal(parseDecimalString('99999999999999.99'), MAX_MONEY_CENTS);
  });

  test('throws on anything else', () => {
    for (const bad of ['', '1.005', 'abc', '1e5', ' 12', '12.', '.5', '+1', '1,000.00']) {
      assert.throws(() => parseDecimalString(bad), Error, bad);
    }
  });
});

describe('sumCents', () => {
  test('adds any iterable of amounts', () => {
    assert.equal(sumCents([]), 0n);
    assert.equal(sumCents([10n, 20n, 156600n]), 156630n);
    assert.equal(sumCents(new Set([1n, 2n])), 3n);
  });

  test('is exact where floating point is not', () => {
    assert.equal(sumCents([parseMoney(0.1) ?? 0n, parseMoney(0.2) ?? 0n]), parseMoney(0.3));
  });
});
