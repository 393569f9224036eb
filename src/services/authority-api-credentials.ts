import type { EnvelopeProfile } from '../authority/protocol/envelope.ts';
import { recordAudit, type AuditSource } from './audit.ts';
import { credentialSetToText, parseCredentialSet } from '../authority/protocol/credentials.ts';
import { AppError, type FieldError } from '../errors.ts';
import * as store from '../store/customers.ts';
import type { ServiceContext } from './context.ts';
import { requireCustomer } from './customers.ts';
import { toCustomer, type Customer } from './customer-view.ts';

/**
 * Stores a customer's API credential set for the authority, replacing the one before: read as the authority's portal
 * gives it or in this service's names (keys as base64 DER, PEM or a certificate), sealed whole, and never shown again
 * beyond its IEC, client id and envelope profile. A set for another IEC than the one the authority told for this
 * customer is refused.
 */
export async function storeApiCredentials(
  context: ServiceContext,
  platformId: string,
  customerId: string,
  body: Record<string, unknown>,
  defaultProfile: EnvelopeProfile,
  source: AuditSource,
): Promise<Customer> {
  const customer = await requireCustomer(context.db, platformId, customerId);
  const parsed = parseCredentialSet(body, defaultProfile);
  if (!parsed.ok) {
    const errors: FieldError[] = parsed.problems.map((problem) => ({
      path: problem.field === '' ? '' : `/${problem.field.replaceAll('~', '~0').replaceAll('/', '~1')}`,
      code: problem.message.endsWith('is required.') ? 'required' : 'invalid_value',
      message: problem.message,
    }));
    throw new AppError(
      'validation_failed',
      errors.length === 1 ? `The credential set has an invalid field: ${errors[0]!.message}` : `The credential set has ${errors.length} invalid fields; see errors.`,
      { errors },
    );
  }
  const credentials = parsed.credentials;
  if (customer.iec_code !== null && customer.iec_code !== credentials.iecCode) {
    const message = `iecCode must be this customer's IEC, ${customer.iec_code}, as the authority told it.`;
    throw new AppError('validation_failed', `The credential set has an invalid field: ${message}`, {
      errors: [{ path: '/iecCode', code: 'invalid_value', message }],
    });
  }
  const row = await context.db.transaction().execute(async (tx) => {
    const saved = await store.saveApiCredentials(tx, {
      id: customer.id,
      sealed: context.vault.sealApiCredentials(customer.id, credentialSetToText(credentials)),
      iecCode: credentials.iecCode,
      clientId: credentials.clientId,
      envelopeProfile: credentials.envelopeProfile,
      at: new Date(),
    });
    await recordAudit(tx, source, { platformId, action: 'authority_credentials.store', target: { type: 'platform_customer', id: customer.id } });
    return saved;
  });
  return toCustomer(row);
}
