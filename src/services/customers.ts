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

/**
 * Which platform each customer looked up by requireCustomerId belongs to, by the id as sent (lowercase): the
 * customer's stored id and its platform. A customer is never deleted and never moves to another platform, so what was
 * read once stays true for every process; an id not found is not kept (it may be created next). The oldest entry goes
 * when OWNERS_KEPT are held (about 200 bytes each).
 */
const owners = new Map<string, { id: string; platformId: string }>();
const OWNERS_KEPT = 50_000;

/**
 * The stored id of the platform's customer (its canonical text, which the kept counts key it by), or 404 for a missing
 * id and for another platform's customer alike, as requireCustomer; for the reads that need the customer's id alone
 * (list pages), which then ask the database for it only once per process (docs/performance.md, "List pages: the
 * customer read once").
 */
export async function requireCustomerId(db: Kysely<Schema>, platformId: string, id: string): Promise<string> {
  const key = id.toLowerCase();
  let owner = owners.get(key);
  if (owner === undefined) {
    const row = await store.findCustomer(db, platformId, id);
    if (!row) throw notFound(`Platform customer ${id}`);
    owner = { id: row.id, platformId: row.platform_id };
    if (owners.size >= OWNERS_KEPT) owners.delete(owners.keys().next().value!);
    owners.set(key, owner);
  }
  if (owner.platformId !== platformId) throw notFound(`Platform customer ${id}`);
  return owner.id;
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
