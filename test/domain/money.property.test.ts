import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { MAX_MONEY_CENTS, centsToNumber, formatCents, parseDecimalString, parseMoney, sumCents } from '../../src/domain/money.ts';
import { scaled } from '../support/reliability.ts';

/** Money arithmetic, for any amount (fast-check): exact in cents, never more than two decimals. */

const runs = { numRuns: scaled(1_000, 50_000) };

/** Amounts a double tells apart to the cent: below 2^46 cents (see isOnlyAmountOf in money.ts). */
const exactCents = fc.bigInt({ min: 0n, max: 2n ** 46n });

/** Decimal text with 1 to 15 significant digits, which a double keeps exactly as its shortest form. */
const decimalText = (decimals: number) =>
  fc.tuple(fc.bigInt({ min: 0n, max: 10n ** BigInt(15 - decimals) - 1n }), fc.bigInt({ min: 0n, max: 10n ** BigInt(decimals) - 1n })).map(
    ([whole, fraction]) => `${whole}.${String(fraction).padStart(decimals, '0')}`,
  );

describe('money, by property', () => {
  test('centsToNumber then parseMoney gives the same cents back, for every amount a double tells apart', () => {
    fc.assert(
      fc.property(exactCents, (cents) => {
        assert.equal(parseMoney(centsToNumber(cents)), cents);
      }),
      runs,
    );
  });

  test('the JSON number of an amount is the double of its decimal text', () => {
    fc.assert(
      fc.property(exactCents, (cents) => {
        assert.equal(centsToNumber(cents), Number(formatCents(cents)));
        assert.equal(JSON.parse(JSON.stringify(centsToNumber(cents))), centsToNumber(cents));
      }),
      runs,
    );
  });

  test('formatCents and parseDecimalString are inverse, negative amounts included', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), (cents) => {
        const text = formatCents(cents);
        assert.match(text, /^-?\d+\.\d{2}$/);
        assert.equal(parseDecimalString(text), cents);
      }),
      runs,
    );
  });

  test('an amount with a third decimal that is not 0 is never accepted', () => {
    fc.assert(
      fc.property(decimalText(3).filter((text) => !text.endsWith('0')), (text) => {
        assert.equal(parseMoney(Number(text)), null, text);
      }),
      runs,
    );
    fc.assert(
      fc.property(fc.integer({ min: 3, max: 12 }).chain(decimalText).filter((text) => !/0$/.test(text)), (text) => {
        assert.equal(parseMoney(Number(text)), null, text);
      }),
      runs,
    );
  });

  test('an amount with at most two decimals is read exactly, up to 2^46 cents; none is read beyond 2^53', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 }).chain(decimalText), (text) => {
        const expected = BigInt(text.replace('.', '')) * 10n ** BigInt(2 - (text.length - text.indexOf('.') - 1));
        if (expected <= 2n ** 46n) assert.equal(parseMoney(Number(text)), expected, text);
        else if (expected > 2n ** 53n) assert.equal(parseMoney(Number(text)), null, text);
        else assert.ok([expected, null].includes(parseMoney(Number(text))), text);
      }),
      runs,
    );
  });

  test('whatever double comes in, parseMoney answers null or cents that mean that same double', () => {
    fc.assert(
      fc.property(fc.double(), (value) => {
        const cents = parseMoney(value);
        if (cents === null) return;
        assert.ok(cents >= 0n && cents <= MAX_MONEY_CENTS);
        assert.equal(Number(formatCents(cents)), value === 0 ? 0 : value);
        assert.ok(Number.isFinite(value) && value >= 0);
      }),
      runs,
    );
  });

  test('sums are exact: the sum of amounts is the amount of the sum, in any order', () => {
    fc.assert(
      fc.property(fc.array(exactCents, { maxLength: 50 }), (amounts) => {
        const total = sumCents(amounts);
        assert.equal(total, amounts.reduce((a, b) => a + b, 0n));
        assert.equal(sumCents([...amounts].reverse()), total);
        const text = formatCents(total);
        assert.equal(parseDecimalString(text), total);
      }),
      runs,
    );
  });
});
