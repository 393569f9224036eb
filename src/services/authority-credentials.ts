import type { CredentialSet } from '../authority/protocol/credentials.ts';
import { recordAudit, type AuditSource } from './audit.ts';
import { credentialSetToText } from '../authority/protocol/credentials.ts';
import { AppError } from '../errors.ts';
import * as store from '../store/customers.ts';
import type { CustomerRow } from '../store/customers.ts';
import { openCredentialSet, type CommitLink, type ServiceContext } from './context.ts';
import { requireCustomer } from './customers.ts';
import { toCustomer, type Customer } from './customer-view.ts';

/**
 * Validates a customer's authority credentials (contract 7). In sandbox mode the username and password log in at the
 * sandbox, which issues the account's API credential set; in dgft mode the set stored with PUT
 * …/authority-api-credentials is used. Either way the set must then take a token and read its IEC's IRMs. Only when it
 * does is anything kept: the login (encrypted, as given), the issued set (encrypted), the IEC and the verification,
 * in one transaction, with a platform_customer.verified event when the customer was not verified until then. A refusal or an outage leaves what was stored before, and so do valid credentials of another
 * IEC than the one the customer was verified with (422).
 */
export async function checkAuthorityCredentials(
  context: ServiceContext,
  platformId: string,
  customerId: string,
  body: { authorityUsername: string; authorityPassword: string },
  source: AuditSource,
  link?: CommitLink,
): Promise<Customer> {
  const customer = await requireCustomer(context.db, platformId, customerId);
  const login = { username: body.authorityUsername, password: body.authorityPassword };
  const issued = context.sandboxCredentials === null ? null : await context.sandboxCredentials.issueApiCredentials(login);
  const credentials = issued ?? storedCredentialSet(context, customer);
  if (customer.iec_code !== null && customer.iec_code !== credentials.iecCode) {
    // Another exporter's credentials: this customer's IRMs and requests belong to its own IEC.
    throw new AppError(
      'authority_credentials_invalid',
      `These credentials are the exporter ${credentials.iecCode}'s; platform customer ${customer.id} is the exporter ${customer.iec_code}, ` +
        'as the authority told it. Nothing was changed; create another customer for the other exporter.',
    );
  }
  await context.authority.checkCredentials(credentials);
  const at = new Date();
  const { shown, becameVerified } = await context.db.transaction().execute(async (tx) => {
    // Decided on the status as it is now, locked: of two checks at once, one makes the customer verified.
    const before = await store.lockCredentialsStatus(tx, customer.id);
    if (issued !== null) {
      await store.saveApiCredentials(tx, {
        id: customer.id,
        sealed: context.vault.sealApiCredentials(customer.id, credentialSetToText(issued)),
        iecCode: issued.iecCode,
        clientId: issued.clientId,
        envelopeProfile: issued.envelopeProfile,
        at,
      });
    }
    const saved = await store.saveVerification(tx, {
      id: customer.id,
      iecCode: credentials.iecCode,
      username: login.username,
      encryptedCredentials: context.vault.seal(customer.id, login),
      verifiedAt: at,
    });
    await link?.(tx, customer.id);
    const shown = toCustomer(saved);
    // An event when the customer becomes verified (first time, or again after its credentials were refused).
    if (before !== 'valid') {
      await context.outbox.record(tx, [{ platformId, platformCustomerId: customer.id, type: 'platform_customer.verified', data: shown }]);
    }
    await recordAudit(tx, source, { platformId, action: 'platform_customer.verify', target: { type: 'platform_customer', id: customer.id } });
    return { shown, becameVerified: before !== 'valid' };
  });
  if (becameVerified) context.outbox.committed();
  return shown;
}

/** The set stored for the customer; in dgft mode a check cannot go on without one (409). */
function storedCredentialSet(context: ServiceContext, customer: CustomerRow): CredentialSet {
  if (customer.authority_api_credentials === null) {
    throw new AppError(
      'authority_api_credentials_missing',
      `Platform customer ${customer.id} has no API credential set: the real authority checks credentials only through the set ` +
        `the exporter downloads from its portal. Store it with PUT /api/v1/platform-customers/${customer.id}/authority-api-credentials, then check again.`,
    );
  }
  return openCredentialSet(context, customer.id, customer.authority_api_credentials);
}
