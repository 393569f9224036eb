/** An amount in hundredths of its currency unit (paise, cents). Money is never handled as binary floating point. */
export type Cents = bigint;

/** number(16,2) at the authority: 99,999,999,999,999.99. */
export const MAX_MONEY_CENTS: Cents = 9_999_999_999_999_999n;

// Above this, Number(cents) is no longer exact.
const MAX_SAFE_CENTS: Cents = BigInt(Number.MAX_SAFE_INTEGER);

// The shapes String(number) produces for non-negative finite numbers: "1566", "94404.25", "1e-7", "1.5e+21".
const NUMBER_TEXT = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/;

// 10^11 units: far below 2^46 units (about 7 * 10^13), above which two cents can share one double.
const FAST_LIMIT = 1e11;

const DECIMAL_TEXT = /^(-?)(\d+)(?:\.(\d{1,2}))?$/;

/**
 * Reads a JSON number as an amount with at most two decimals. The decimals are those of the shortest decimal
 * string that round-trips to the double, so 0.1 is 10n, while 1.005 (three decimals) is rejected.
 * Returns null for non-finite, negative, over-precise or too large values, and for values whose cents a double cannot
 * tell apart from their neighbours'.
 */
export function parseMoney(value: number): Cents | null {
  if (!Number.isFinite(value) || value < 0) return null;
  // The common case, without text or BigInt arithmetic: below FAST_LIMIT every cent has a double of its own, so
  // value * 100 rounds to the only cents that can mean this double, and they do when they read back as it (then the
  // shortest text of the double has at most two decimals, and says these cents). Anything else takes the exact way.
  if (value < FAST_LIMIT) {
    const cents = Math.round(value * 100);
    // cents / 100 is the double centsToNumber gives for these cents.
    if (cents / 100 === value) return BigInt(cents);
  }
  const match = NUMBER_TEXT.exec(String(value));
  if (match === null) return null;
  const [, integerDigits = '', fractionDigits = '', exponent = '0'] = match;
  const digits = BigInt(integerDigits + fractionDigits);
  const decimals = fractionDigits.length - Number(exponent);
  let cents: Cents;
  if (decimals <= 2) {
    cents = digits * 10n ** BigInt(2 - decimals);
  } else {
    const divisor = 10n ** BigInt(decimals - 2);
    if (digits % divisor !== 0n) return null;
    cents = digits / divisor;
  }
  if (cents > MAX_MONEY_CENTS || cents > MAX_SAFE_CENTS) return null;
  return isOnlyAmountOf(value, cents) ? cents : null;
}

/**
 * Whether no other two-decimal amount reads as the same double. Above 2^46 (about 7 * 10^13) doubles are too sparse
 * for every cent to have its own (90071992547409.91 and .90 are one double), so the amount sent cannot be known.
 */
function isOnlyAmountOf(value: number, cents: Cents): boolean {
  return Number(cents - 1n) / 100 !== value && Number(cents + 1n) / 100 !== value;
}

/** The JSON number for an amount: the double nearest to it, which parseMoney reads back as the same amount. */
export function centsToNumber(c: Cents): number {
  if (c > MAX_SAFE_CENTS || c < -MAX_SAFE_CENTS) {
    throw new RangeError(`${formatCents(c)} cannot be represented exactly as a JSON number`);
  }
  // Division is correctly rounded, so this is the double nearest to c / 100, the same one Number("x.yz") gives.
  return Number(c) / 100;
}

/** "1566.00", "-3.50". */
export function formatCents(c: Cents): string {
  const sign = c < 0n ? '-' : '';
  const magnitude = c < 0n ? -c : c;
  const fraction = String(magnitude % 100n).padStart(2, '0');
  return `${sign}${magnitude / 100n}.${fraction}`;
}

/** Reads a numeric(16,2) column value such as "94404.25", "12" or "-3.5". Throws on anything else. */
export function parseDecimalString(s: string): Cents {
  const match = DECIMAL_TEXT.exec(s);
  if (match === null) throw new Error(`Not a decimal amount with at most two decimals: ${JSON.stringify(s)}`);
  const [, sign = '', whole = '', fraction = ''] = match;
  const cents = BigInt(whole + fraction.padEnd(2, '0'));
  return sign === '-' ? -cents : cents;
}

export function sumCents(values: Iterable<Cents>): Cents {
  let total = 0n;
  for (const value of values) total += value;
  return total;
}
