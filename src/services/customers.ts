import { recordAudit, type AuditSource } from './audit.ts';
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { AppError, notFound } from '../errors.ts';
import * as store from '../store/customers.ts';
import { isUniqueViolation } from '../store/errors.ts';
import type { Schema } from '../store/schema.ts';
import type { CommitLink } from './context.ts';
import { toCustomer, type Customer } from './customer-view.ts';
import { itemsPage, offsetOf } from './pages.ts';

export type NewCustomer = { name: string; email: string; companyName: string; address?: string | null | undefined };

/** `link` is called in the transaction that stores the customer (its Idempotency-Key's link, see CommitLink). */
export async function createCustomer(
  db: Kysely<Schema>,
  platformId: string,
  input: NewCustomer,
  source: AuditSource,
  link?: CommitLink,
): Promise<Customer> {
  try {
    const row = await db.transaction().execute(async (tx) => {
      const inserted = await store.insertCustomer(tx, {
        id: randomUUID(),
        platformId,
        name: input.name,
        email: input.email,
        type: 'customer',
        companyName: input.companyName,
        address: input.address ?? null,
      });
      await link?.(tx, inserted.id);
      await recordAudit(tx, source, { platformId, action: 'platform_customer.create', target: { type: 'platform_customer', id: inserted.id } });
      return inserted;
    });
    return toCustomer(row);
  } catch (error) {
    if (isUniqueViolation(error, store.EMAIL_UNIQUE_INDEX)) {
      throw new AppError('customer_email_taken', `This platform already has a customer with the email ${input.email}.`, {
        errors: [{ path: '/email', code: 'customer_email_taken', message: 'Another customer of this platform uses this email.' }],
      });
    }
    throw error;
  }
}

/** The platform's customer as the API shows it, or null when the platform has none with this id. */
export async function shownCustomer(db: Kysely<Schema>, platformId: string, id: string): Promise<Customer | null> {
  const row = await store.findCustomer(db, platformId, id);
  return row ? toCustomer(row) : null;
}

/** The platform's customer, or 404 for a missing id and for another platform's customer alike. */
export async function requireCustomer(db: Kysely<Schema>, platformId: string, id: string): Promise<store.CustomerRow> {
  const row = await store.findCustomer(db, platformId, id);
  if (!row) throw notFound(`Platform customer ${id}`);
  return row;
}

export async function listCustomers(
  db: Kysely<Schema>,
  platformId: string,
  query: { page: number; limit: number; search?: string | undefined },
) {
  const { rows, total } = await store.listCustomers(db, {
    platformId,
    search: query.search,
    offset: offsetOf(query),
    limit: query.limit,
  });
  return itemsPage(rows.map(toCustomer), total, query);
}
