import type { Kysely } from 'kysely';
import type { Authority, AuthorityCredentials } from '../authority/authority.ts';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import type { CustomerRow } from '../store/customers.ts';
import type { Schema } from '../store/schema.ts';
import type { CredentialsVault } from './credentials-vault.ts';
import type { ServerKey } from './server-key.ts';

/** What the services work with: the database, the authority (with its deadline), the server's key and the credentials vault. */
export type ServiceContext = {
  config: Config;
  db: Kysely<Schema>;
  authority: Authority;
  serverKey: ServerKey;
  vault: CredentialsVault;
};

/**
 * Called by a service inside the transaction that commits a request's work, with the id of what it committed: the
 * Idempotency-Key of the request is linked to it there, so that the work and the link commit together or not at all.
 */
export type CommitLink = (tx: Kysely<Schema>, resourceId: string) => Promise<void>;

export type VerifiedCustomer = CustomerRow & { iec_code: string; authority_credentials: string };

/** The customer's authority credentials, or 409 customer_not_verified when they were never validated. */
export function requireVerified(customer: CustomerRow): VerifiedCustomer {
  if (customer.authority_verified_at === null || customer.iec_code === null || customer.authority_credentials === null) {
    throw new AppError(
      'customer_not_verified',
      `Platform customer ${customer.id} has no validated authority credentials; call POST /api/v1/platform-customers/${customer.id}/check-authority-credentials first.`,
    );
  }
  return customer as VerifiedCustomer;
}

export function credentialsOf(context: ServiceContext, customer: VerifiedCustomer): AuthorityCredentials {
  return context.vault.open(customer.id, customer.authority_credentials);
}
