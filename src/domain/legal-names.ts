/**
 * Company-name normalisation and similarity, for comparing an IRM's remitter name with an invoice's buyer name.
 *
 * Normalisation: Unicode NFKD with diacritics removed, lower case, `&` read as "and", dots and apostrophes dropped
 * inside words ("S.A." = "sa", "O'Brien" = "obrien"), every other punctuation mark a word break, a leading "the"
 * dropped, and legal-form suffixes (Ltd, Limited, LLC, Inc, GmbH, Pvt, Private, Co, Corp, SA, BV, PLC, …) stripped
 * from the end, repeatedly ("Acme Pvt. Ltd." = "acme"), unless nothing would be left.
 *
 * Similarity (0-1): the best of
 * - the Dice coefficient over the name's word tokens (order-free: "Trading Acme" = "Acme Trading"),
 * - the Dice coefficient over character trigrams of the name with spaces removed (typos, run-together words:
 *   "ACMETRADING" against "Acme Trading"),
 * - 0.9 when one name with spaces removed is a prefix of the other of at least 8 characters (banks truncate the
 *   remitter name to a fixed field width, e.g. SWIFT's 35 characters).
 */

/** Legal-form words, compared after normalisation (lower case, no dots). */
export const LEGAL_SUFFIXES: ReadonlySet<string> = new Set([
  'ltd', 'limited', 'llc', 'llp', 'lp', 'inc', 'incorporated', 'gmbh', 'mbh', 'ag', 'kg', 'pvt', 'private', 'pte', 'pty',
  'co', 'company', 'corp', 'corporation', 'sa', 'sas', 'sarl', 'srl', 'spa', 'bv', 'nv', 'plc', 'ab', 'as', 'asa', 'oy',
  'oyj', 'aps', 'kk', 'ooo', 'sdn', 'bhd', 'fze', 'fzco', 'fzllc', 'fz', 'wll', 'lda', 'sl', 'sro', 'zoo', 'sp',
  'est', 'establishment', 'intl',
]);

/** Lower case, no diacritics, `&` as "and", punctuation removed, legal suffixes stripped; words joined by one space. */
export function normaliseLegalName(name: string): string {
  return legalNameTokens(name).join(' ');
}

/** The words of a normalised name. */
export function legalNameTokens(name: string): string[] {
  const text = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/ß/g, 'ss')
    .replace(/&/g, ' and ')
    .replace(/['’`.]/g, '')
    .replace(/[^a-z0-9]+/g, ' ')
    .trim();
  const tokens = text === '' ? [] : text.split(' ');
  if (tokens.length > 1 && tokens[0] === 'the') tokens.shift();
  // Suffixes from the end; "and" between them is part of the legal form ("GmbH & Co. KG", "Smith & Co Ltd").
  let stripped = false;
  while (tokens.length > 1) {
    const last = tokens[tokens.length - 1] ?? '';
    if (LEGAL_SUFFIXES.has(last) || (stripped && last === 'and' && tokens.length > 2)) {
      tokens.pop();
      stripped = true;
    } else {
      break;
    }
  }
  return tokens;
}

function dice<T>(a: ReadonlySet<T>, b: ReadonlySet<T>): number {
  if (a.size === 0 && b.size === 0) return 1;
  if (a.size === 0 || b.size === 0) return 0;
  let shared = 0;
  for (const x of a) if (b.has(x)) shared += 1;
  return (2 * shared) / (a.size + b.size);
}

function trigrams(s: string): Set<string> {
  const padded = `  ${s} `;
  const grams = new Set<string>();
  for (let i = 0; i + 3 <= padded.length; i += 1) grams.add(padded.slice(i, i + 3));
  return grams;
}

/** A name prepared once for many comparisons. */
export type PreparedName = { normalised: string; tokens: ReadonlySet<string>; compact: string; grams: ReadonlySet<string> };

export function prepareName(name: string): PreparedName {
  const tokens = legalNameTokens(name);
  const compact = tokens.join('');
  return { normalised: tokens.join(' '), tokens: new Set(tokens), compact, grams: trigrams(compact) };
}

const MIN_PREFIX = 8;

/** Similarity of two prepared names, 0 (nothing in common) to 1 (the same after normalisation). */
export function preparedNameSimilarity(a: PreparedName, b: PreparedName): number {
  if (a.compact === '' || b.compact === '') return 0;
  if (a.compact === b.compact) return 1;
  let best = Math.max(dice(a.tokens, b.tokens), dice(a.grams, b.grams));
  const [shorter, longer] = a.compact.length <= b.compact.length ? [a.compact, b.compact] : [b.compact, a.compact];
  if (shorter.length >= MIN_PREFIX && longer.startsWith(shorter)) best = Math.max(best, 0.9);
  return best;
}

/** Similarity of two company names, 0 to 1; see the module comment. */
export function nameSimilarity(a: string, b: string): number {
  return preparedNameSimilarity(prepareName(a), prepareName(b));
}
