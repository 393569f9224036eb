import { sql, type Kysely, type Selectable } from 'kysely';
import { isUuid } from './ids.ts';
import type { PlatformCustomersTable, Schema } from './schema.ts';

export type CustomerRow = Selectable<PlatformCustomersTable>;

export const EMAIL_UNIQUE_INDEX = 'platform_customers_email';

export async function insertCustomer(
  db: Kysely<Schema>,
  customer: { id: string; platformId: string; name: string; email: string; type: string; companyName: string; address: string | null },
): Promise<CustomerRow> {
  return db
    .insertInto('platform_customers')
    .values({
      id: customer.id,
      platform_id: customer.platformId,
      name: customer.name,
      email: customer.email,
      type: customer.type,
      company_name: customer.companyName,
      address: customer.address,
      iec_code: null,
      authority_verified_at: null,
      authority_username: null,
      authority_credentials: null,
      irms_pulled_at: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** A customer of the given platform; another platform's customer is not found, like a missing one. */
export async function findCustomer(db: Kysely<Schema>, platformId: string, id: string): Promise<CustomerRow | undefined> {
  if (!isUuid(id)) return undefined;
  return db
    .selectFrom('platform_customers')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .executeTakeFirst();
}

function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

export async function listCustomers(
  db: Kysely<Schema>,
  query: { platformId: string; search?: string | undefined; offset: number; limit: number },
): Promise<{ rows: CustomerRow[]; total: number }> {
  let base = db.selectFrom('platform_customers').where('platform_id', '=', query.platformId);
  if (query.search) {
    const pattern = `%${escapeLike(query.search)}%`;
    base = base.where((eb) => eb.or([eb('name', 'ilike', pattern), eb('email', 'ilike', pattern)]));
  }
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').offset(query.offset).limit(query.limit).execute(),
    base.select(sql<number>`count(*)::int`.as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: count.total };
}

export async function saveVerification(
  db: Kysely<Schema>,
  customer: { id: string; iecCode: string; username: string; encryptedCredentials: string; verifiedAt: Date },
): Promise<CustomerRow> {
  return db
    .updateTable('platform_customers')
    .set({
      iec_code: customer.iecCode,
      authority_username: customer.username,
      authority_credentials: customer.encryptedCredentials,
      authority_verified_at: customer.verifiedAt,
      updated_at: customer.verifiedAt,
    })
    .where('id', '=', customer.id)
    .returningAll()
    .executeTakeFirstOrThrow();
}
