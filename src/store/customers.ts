import { CompiledQuery, sql, type Kysely, type Selectable } from 'kysely';
import { isUuid } from './ids.ts';
import type { PlatformCustomersTable, Schema } from './schema.ts';
import { pageRows } from './paging.ts';

export type CustomerRow = Selectable<PlatformCustomersTable>;

/** What a customer's answer shows: a list reads only these columns (not the sealed credentials). */
export const SHOWN_COLUMNS = [
  'id',
  'name',
  'email',
  'company_name',
  'address',
  'platform_id',
  'is_active',
  'iec_code',
  'authority_verified_at',
  'authority_credentials_status',
  'authority_api_iec_code',
  'authority_api_client_id',
  'authority_api_envelope_profile',
  'authority_api_credentials_updated_at',
  'created_at',
  'updated_at',
] as const;
export type ShownCustomerRow = Pick<CustomerRow, (typeof SHOWN_COLUMNS)[number]>;

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
  // The most frequent query of all, written out once: building it with Kysely cost ~5% of a customer lookup's CPU.
  // By the primary key alone, the platform compared here: on the embedded database planning the two-column condition
  // cost 36 µs more a lookup (of the limit route's 840 µs), and the answer is the same (another platform's customer is
  // not found).
  const { rows } = await db.executeQuery<CustomerRow>(CompiledQuery.raw(FIND_CUSTOMER, [id]));
  const row = rows[0];
  return row !== undefined && row.platform_id === platformId ? row : undefined;
}

const FIND_CUSTOMER = 'select * from platform_customers where id = $1';

/**
 * A page of the platform's customers, newest first, and how many match: one scan, the total counted by a window
 * over it. A page past the end has no row to carry the total, so only then is it counted on its own.
 */
export async function listCustomers(
  db: Kysely<Schema>,
  query: { platformId: string; search?: string | undefined; offset: number; limit: number },
): Promise<{ rows: ShownCustomerRow[]; total: number }> {
  let base = db.selectFrom('platform_customers').where('platform_id', '=', query.platformId);
  if (query.search) {
    // The text as it is, anywhere in the name or email, whatever its case: on the lowercase copies the database keeps
    // (lowercasing every row was the cost). strpos, not LIKE: no pattern to escape, a third less of the scan's time,
    // and a plan PostgreSQL keeps. The search text is lowercased in a subquery, once a call: in the kept plan, lower()
    // of the parameter itself would run for every row (docs/performance.md, "The customer search").
    const text = sql<string>`(select lower(${query.search}))`;
    base = base.where(sql<boolean>`(strpos(name_lower, ${text}) > 0 or strpos(email_lower, ${text}) > 0)`);
  }
  const counted = await pageRows(
    base.select(SHOWN_COLUMNS).select(sql<number>`(count(*) over ())::int`.as('total_matching')).orderBy('created_at', 'desc').orderBy('id', 'desc'),
    query,
  ).execute();
  if (counted.length === 0 && query.offset > 0) {
    const count = await base.select(sql<number>`count(*)::int`.as('total')).executeTakeFirstOrThrow();
    return { rows: [], total: count.total };
  }
  const total = counted[0]?.total_matching ?? 0;
  const rows = counted.map(({ total_matching: _total, ...row }) => row);
  return { rows, total };
}

/** The customer's credential status, its row locked until the transaction ends: a change decided on it stays true. */
export async function lockCredentialsStatus(db: Kysely<Schema>, id: string): Promise<CustomerRow['authority_credentials_status'] | undefined> {
  const row = await db.selectFrom('platform_customers').select('authority_credentials_status').where('id', '=', id).forUpdate().executeTakeFirst();
  return row?.authority_credentials_status;
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
      authority_credentials_status: 'valid',
      updated_at: customer.verifiedAt,
    })
    .where('id', '=', customer.id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function saveApiCredentials(
  db: Kysely<Schema>,
  customer: { id: string; sealed: string; iecCode: string; clientId: string; envelopeProfile: string; at: Date },
): Promise<CustomerRow> {
  return db
    .updateTable('platform_customers')
    .set({
      authority_api_credentials: customer.sealed,
      authority_api_iec_code: customer.iecCode,
      authority_api_client_id: customer.clientId,
      authority_api_envelope_profile: customer.envelopeProfile,
      authority_api_credentials_updated_at: customer.at,
      updated_at: customer.at,
    })
    .where('id', '=', customer.id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * The authority refused the customer's stored API credential set: it stays, marked invalid until a check succeeds.
 * Only the set that was refused (`sealedSet`): a set stored or checked meanwhile is not undone by a late refusal.
 */
export async function markCredentialsInvalid(db: Kysely<Schema>, id: string, sealedSet: string): Promise<ShownCustomerRow | undefined> {
  return db
    .updateTable('platform_customers')
    .set({ authority_credentials_status: 'invalid', updated_at: new Date() })
    .where('id', '=', id)
    .where('authority_api_credentials', '=', sealedSet)
    .where('authority_credentials_status', '<>', 'invalid')
    .returningAll()
    .executeTakeFirst();
}
