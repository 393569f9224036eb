import * as store from '../store/customers.ts';
import type { CommitLink, ServiceContext } from './context.ts';
import { requireCustomer, toCustomer, type Customer } from './customers.ts';

/**
 * Validates a customer's authority credentials. Only when the authority accepts them are they
 * kept (encrypted) with the IEC it tells; a refusal or an outage leaves what was stored before.
 */
export async function checkAuthorityCredentials(
  context: ServiceContext,
  platformId: string,
  customerId: string,
  credentials: { authorityUsername: string; authorityPassword: string },
  link?: CommitLink,
): Promise<Customer> {
  const customer = await requireCustomer(context.db, platformId, customerId);
  const authorityCredentials = { username: credentials.authorityUsername, password: credentials.authorityPassword };
  const { iecCode } = await context.authority.checkCredentials(authorityCredentials);
  const row = await context.db.transaction().execute(async (tx) => {
    const saved = await store.saveVerification(tx, {
      id: customer.id,
      iecCode,
      username: credentials.authorityUsername,
      encryptedCredentials: context.vault.seal(customer.id, authorityCredentials),
      verifiedAt: new Date(),
    });
    await link?.(tx, customer.id);
    return saved;
  });
  return toCustomer(row);
}
