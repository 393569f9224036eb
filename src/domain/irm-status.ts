import type { Cents } from './money.ts';
import { formatCents } from './money.ts';

export type IrmStatus = 'fresh' | 'partially_utilised' | 'utilised';

/** The IRM status for its amount and what is still available of it. Throws if available is outside 0..amount. */
export function irmStatusFor(amountCents: Cents, availableCents: Cents): IrmStatus {
  if (availableCents < 0n || availableCents > amountCents) {
    throw new RangeError(`Available amount ${formatCents(availableCents)} is outside 0 to ${formatCents(amountCents)}`);
  }
  if (availableCents === amountCents) return 'fresh';
  return availableCents === 0n ? 'utilised' : 'partially_utilised';
}
