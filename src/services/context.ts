import type { Kysely } from 'kysely';
import type { Authority, AuthorityCredentials } from '../authority/authority.ts';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import type { CustomerRow } from '../store/customers.ts';
import type { Schema } from '../store/schema.ts';
import type { CredentialsVault } from './credentials-vault.ts';

/** What the services work with: the database, the authority (with its deadline) and the credentials vault. */
export type ServiceContext = {
  config: Config;
  db: Kysely<Schema>;
  authority: Authority;
  vault: CredentialsVault;
};

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
