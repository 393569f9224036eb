import type { Cents } from './money.ts';
import { formatCents } from './money.ts';
import { BANNED_PURPOSE_CODES, VALID_PURPOSE_CODES } from './purpose-codes.ts';

export type IrmStatus = 'fresh' | 'partially_utilised' | 'utilised';

/** The IRM status for its amount and what is still available of it. Throws if available is outside 0..amount. */
export function irmStatusFor(amountCents: Cents, availableCents: Cents): IrmStatus {
  if (availableCents < 0n || availableCents > amountCents) {
    throw new RangeError(`Available amount ${formatCents(availableCents)} is outside 0 to ${formatCents(amountCents)}`);
  }
  if (availableCents === amountCents) return 'fresh';
  return availableCents === 0n ? 'utilised' : 'partially_utilised';
}

/** What decides whether an IRM can be mapped at all. */
export type MappableIrmFacts = {
  /** The authority's irmStatus C. */
  cancelled?: boolean | undefined;
  availableCents: Cents;
  purposeOfRemittance: string;
};

/**
 * Whether a push may map this IRM, whatever the invoice (contract 4 and 11; domain.md business rules 2 and 6): not
 * cancelled, an available balance above 0, and a valid inward purpose code that is not P0101 or P0108. The rules that
 * depend on the push (IT services' purpose codes, currency, bank) are the push's.
 */
export function isMappableIrm(irm: MappableIrmFacts): boolean {
  if (irm.cancelled === true || irm.availableCents <= 0n) return false;
  return VALID_PURPOSE_CODES.has(irm.purposeOfRemittance) && !BANNED_PURPOSE_CODES.has(irm.purposeOfRemittance);
}
