import { sql, type Kysely } from 'kysely';
import type { Schema } from './schema.ts';

export type IdempotencyRecord = {
  fingerprint: string;
  state: 'running' | 'done';
  statusCode: number | null;
  responseBody: string | null;
};

/**
 * Claims a key for a new request. A key whose record has expired, or whose first request has been
 * running longer than `abandonAfterSeconds` (its process died), is claimed afresh.
 * Returns null when claimed, else the record that holds the key.
 */
export async function claimKey(
  db: Kysely<Schema>,
  claim: { platformId: string; key: string; fingerprint: string; keepHours: number; abandonAfterSeconds: number },
): Promise<IdempotencyRecord | null> {
  const claimed = await db
    .insertInto('idempotency_keys')
    .values({
      platform_id: claim.platformId,
      key: claim.key,
      fingerprint: claim.fingerprint,
      state: 'running',
      status_code: null,
      response_body: null,
      expires_at: sql<Date>`now() + make_interval(hours => ${claim.keepHours})`,
    })
    .onConflict((oc) =>
      oc.columns(['platform_id', 'key']).doUpdateSet({
        fingerprint: claim.fingerprint,
        state: 'running',
        status_code: null,
        response_body: null,
        created_at: sql<Date>`now()`,
        expires_at: sql<Date>`now() + make_interval(hours => ${claim.keepHours})`,
      }).where((eb) =>
        eb.or([
          eb('idempotency_keys.expires_at', '<', sql<Date>`now()`),
          eb.and([
            eb('idempotency_keys.state', '=', 'running'),
            eb('idempotency_keys.created_at', '<', sql<Date>`now() - make_interval(secs => ${claim.abandonAfterSeconds})`),
          ]),
        ]),
      ),
    )
    .returning('key')
    .executeTakeFirst();
  if (claimed) return null;
  const row = await db
    .selectFrom('idempotency_keys')
    .select(['fingerprint', 'state', 'status_code', 'response_body'])
    .where('platform_id', '=', claim.platformId)
    .where('key', '=', claim.key)
    .executeTakeFirstOrThrow();
  return { fingerprint: row.fingerprint, state: row.state, statusCode: row.status_code, responseBody: row.response_body };
}

export async function completeKey(
  db: Kysely<Schema>,
  done: { platformId: string; key: string; statusCode: number; responseBody: string },
): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ state: 'done', status_code: done.statusCode, response_body: done.responseBody })
    .where('platform_id', '=', done.platformId)
    .where('key', '=', done.key)
    .execute();
}

export async function releaseKey(db: Kysely<Schema>, platformId: string, key: string): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('platform_id', '=', platformId).where('key', '=', key).execute();
}

/** Deletes up to `batch` expired records; returns how many. */
export async function purgeExpiredKeys(db: Kysely<Schema>, batch = 1000): Promise<number> {
  const result = await db
    .deleteFrom('idempotency_keys')
    .where(({ eb, selectFrom }) =>
      eb(
        sql`(platform_id, key)`,
        'in',
        selectFrom('idempotency_keys').select(['platform_id', 'key']).where('expires_at', '<', sql<Date>`now()`).limit(batch),
      ),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
