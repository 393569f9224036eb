import type { Cents } from './money.ts';
import { BANNED_PURPOSE_CODES, VALID_PURPOSE_CODES } from './purpose-codes.ts';

export type IrmStatus = 'fresh' | 'partially_utilised' | 'utilised' | 'cancelled';

/** The authority's irmStatus letter for a cancelled IRM (F fresh and A amended are mapped as any other IRM). */
export const CANCELLED_AT_AUTHORITY = 'C';

/**
 * An IRM's status from its balances as stored (contract 4): `cancelled` for the authority's C; else `utilised` when
 * nothing is available, `fresh` when nothing is used, `partially_utilised` otherwise. No relation between the amounts
 * is assumed (an ORM amount can leave less available than remitted minus utilised): the status reads only these two.
 */
export function irmStatusOf(irm: { cancelled: boolean; availableCents: Cents; utilisedCents: Cents }): IrmStatus {
  if (irm.cancelled) return 'cancelled';
  if (irm.availableCents <= 0n) return 'utilised';
  return irm.utilisedCents <= 0n ? 'fresh' : 'partially_utilised';
}

/**
 * The balance model (contract 13), the one place it is written. The authority lowers an IRM's available amount when
 * it acknowledges a push as Validated and gives back the lines that fail at processing; what this service holds on
 * the IRM that the authority has not acknowledged yet (`heldCents`: requests stored and not yet answered, or held
 * for reconciliation) is not in its figures. So the IRM's balances after a pull are the authority's, less what is
 * held, never below 0; a cancelled IRM has nothing available. If the real authority turns out to lower the amount
 * only at processing, `heldCents` is what changes (the caller's reading of it), not this.
 */
export function balanceAfterPull(authority: {
  availableCents: Cents;
  utilisedCents: Cents;
  cancelled: boolean;
  heldCents: Cents;
}): { availableCents: Cents; utilisedCents: Cents } {
  const available = authority.availableCents - authority.heldCents;
  return {
    availableCents: authority.cancelled || available < 0n ? 0n : available,
    utilisedCents: authority.utilisedCents + authority.heldCents,
  };
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
