import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { recordAudit, SYSTEM_SOURCE } from './audit.ts';
import { AuthorityError, type Authority, type SandboxCredentialIssuer } from '../authority/authority.ts';
import { parseCredentialSet, type CredentialSet } from '../authority/protocol/credentials.ts';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { markCredentialsInvalid, type CustomerRow } from '../store/customers.ts';
import type { Schema } from '../store/schema.ts';
import type { CredentialsVault } from './credentials-vault.ts';
import { toCustomer } from './customer-view.ts';
import type { EventOutbox } from './outbox.ts';
import type { KeyRing, ServerKey } from './server-key.ts';

/**
 * What the services work with: the database, the authority (with its deadline), in sandbox mode the sandbox's
 * credential-set login, the server's key and the credentials vault.
 */
export type ServiceContext = {
  config: Config;
  db: Kysely<Schema>;
  authority: Authority;
  /** Set in AUTHORITY_MODE=sandbox only: a credential check logs in there and receives the account's set. */
  sandboxCredentials: SandboxCredentialIssuer | null;
  /** The ring's current key (what the console's cookie keys derive from). */
  serverKey: ServerKey;
  /** Every key of the ring, the current one first. */
  keyRing: KeyRing;
  vault: CredentialsVault;
  /** Where every change an integrator would otherwise poll for records its event, in the change's transaction. */
  outbox: EventOutbox;
  /** Warnings about the authority's data that the services store around (an IRM or eBRC that cannot be stored). */
  log?: FastifyBaseLogger | undefined;
};

/**
 * Called by a service inside the transaction that commits a request's work, with the id of what it committed: the
 * Idempotency-Key of the request is linked to it there, so that the work and the link commit together or not at all.
 */
export type CommitLink = (tx: Kysely<Schema>, resourceId: string) => Promise<void>;

export type VerifiedCustomer = CustomerRow & { iec_code: string; authority_api_credentials: string };

/** What the rules on a customer's credentials read of it (a customer's row, or a page's note of its customer). */
export type CredentialState = Pick<CustomerRow, 'authority_verified_at' | 'iec_code' | 'authority_credentials_status'> & { hasApiCredentials: boolean };

function credentialStateOf(customer: CustomerRow): CredentialState {
  return { ...customer, hasApiCredentials: customer.authority_api_credentials !== null };
}

/** Whether the customer has credentials that were once validated (requireStoredCredentials). */
export function hasStoredCredentials(state: CredentialState): boolean {
  return state.authority_verified_at !== null && state.iec_code !== null && state.hasApiCredentials;
}

/** Whether the customer has credentials the authority accepted and has not refused since (requireVerified). */
export function hasAcceptedCredentials(state: CredentialState): boolean {
  return hasStoredCredentials(state) && state.authority_credentials_status !== 'invalid';
}

/**
 * The customer, when it has credentials the authority accepted and has not refused since; else 409
 * customer_not_verified.
 */
export function requireVerified(customer: CustomerRow): VerifiedCustomer {
  const stored = requireStoredCredentials(customer);
  if (!hasAcceptedCredentials(credentialStateOf(customer))) {
    throw new AppError(
      'customer_not_verified',
      `The authority refused the stored credentials of platform customer ${customer.id}; check them again with POST /api/v1/platform-customers/${customer.id}/check-authority-credentials.`,
    );
  }
  return stored;
}

/**
 * The customer, when it has credentials that were once validated, even if the authority refused them since: for
 * background work on what was already accepted, which asks again rather than stopping.
 */
export function requireStoredCredentials(customer: CustomerRow): VerifiedCustomer {
  if (!hasStoredCredentials(credentialStateOf(customer))) {
    throw new AppError(
      'customer_not_verified',
      `Platform customer ${customer.id} has no validated authority credentials; call POST /api/v1/platform-customers/${customer.id}/check-authority-credentials first.`,
    );
  }
  return customer as VerifiedCustomer;
}

/**
 * Calls the authority with the customer's stored API credential set. A set it refuses (invalid or expired) marks the
 * customer's credentials invalid: refresh, push and eBRCs then answer 409 customer_not_verified until a check succeeds.
 */
export async function asCustomer<T>(
  context: ServiceContext,
  customer: VerifiedCustomer,
  call: (credentials: CredentialSet) => Promise<T>,
): Promise<T> {
  try {
    return await call(openCredentialSet(context, customer.id, customer.authority_api_credentials));
  } catch (error) {
    if (error instanceof AuthorityError && (error.failure === 'credentials_invalid' || error.failure === 'credentials_expired')) {
      await markInvalid(context, customer);
    }
    throw error;
  }
}

/** Marks the customer's set invalid, with its platform_customer.credentials_invalid event, unless it was already. */
async function markInvalid(context: ServiceContext, customer: VerifiedCustomer): Promise<void> {
  const marked = await context.db.transaction().execute(async (tx) => {
    const row = await markCredentialsInvalid(tx, customer.id, customer.authority_api_credentials);
    if (row === undefined) return false;
    await context.outbox.record(tx, [{ platformId: row.platform_id, platformCustomerId: row.id, type: 'platform_customer.credentials_invalid', data: toCustomer(row) }]);
    await recordAudit(tx, SYSTEM_SOURCE, { platformId: row.platform_id, action: 'authority_credentials.invalidate', target: { type: 'platform_customer', id: row.id } });
    return true;
  });
  if (marked) context.outbox.committed();
}

/** A stored credential set, opened and read back into keys. */
export function openCredentialSet(context: ServiceContext, customerId: string, sealed: string): CredentialSet {
  const text = context.vault.openApiCredentials(customerId, sealed);
  const parsed = parseCredentialSet(text, text.envelopeProfile);
  if (!parsed.ok) throw new Error(`The stored credential set of platform customer ${customerId} no longer reads: ${JSON.stringify(parsed.problems)}`);
  return parsed.credentials;
}
