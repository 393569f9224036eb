import { sql, type Kysely } from 'kysely';
import type { Schema } from './schema.ts';

export type IdempotencyRecord = {
  fingerprint: string;
  state: 'running' | 'done';
  statusCode: number | null;
  responseBody: string | null;
  /** What the first request's work committed, linked in that work's transaction (null: nothing committed yet). */
  resourceId: string | null;
  /** The first request has ended (it answered 5xx and released the key) with its work committed: a retry may resume it. */
  released: boolean;
};

export type Claim = { platformId: string; key: string; claimId: string };

/**
 * Claims a key for a new request under `claimId`. A key whose record has expired is claimed afresh, and so is one
 * whose first request has been running longer than `abandonAfterSeconds` (its process died) with nothing committed:
 * a key whose work committed is never claimed again, whatever its age. Returns null when claimed, else the record
 * that holds the key.
 */
export async function claimKey(
  db: Kysely<Schema>,
  claim: Claim & { fingerprint: string; keepHours: number; abandonAfterSeconds: number },
): Promise<IdempotencyRecord | null> {
  // The record that refused the claim may be gone before it is read (released after a 5xx, or purged): claim again.
  for (let attempt = 1; attempt <= 3; attempt++) {
    const outcome = await tryClaim(db, claim);
    if (outcome !== undefined) return outcome;
  }
  throw new Error(`Idempotency-Key ${claim.key} could neither be claimed nor read three times in a row`);
}

/** null: claimed; the record that holds the key; undefined: it was gone when read. */
async function tryClaim(
  db: Kysely<Schema>,
  claim: Claim & { fingerprint: string; keepHours: number; abandonAfterSeconds: number },
): Promise<IdempotencyRecord | null | undefined> {
  const claimed = await db
    .insertInto('idempotency_keys')
    .values({
      platform_id: claim.platformId,
      key: claim.key,
      fingerprint: claim.fingerprint,
      state: 'running',
      status_code: null,
      response_body: null,
      claim_id: claim.claimId,
      resource_id: null,
      expires_at: sql<Date>`now() + make_interval(hours => ${claim.keepHours})`,
    })
    .onConflict((oc) =>
      oc.columns(['platform_id', 'key']).doUpdateSet({
        fingerprint: claim.fingerprint,
        state: 'running',
        status_code: null,
        response_body: null,
        claim_id: claim.claimId,
        resource_id: null,
        created_at: sql<Date>`now()`,
        expires_at: sql<Date>`now() + make_interval(hours => ${claim.keepHours})`,
      }).where((eb) =>
        eb.or([
          eb('idempotency_keys.expires_at', '<', sql<Date>`now()`),
          eb.and([
            eb('idempotency_keys.state', '=', 'running'),
            eb('idempotency_keys.resource_id', 'is', null),
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
    .select(['fingerprint', 'state', 'status_code', 'response_body', 'resource_id', 'claim_id'])
    .where('platform_id', '=', claim.platformId)
    .where('key', '=', claim.key)
    .executeTakeFirst();
  if (row === undefined) return undefined;
  return {
    fingerprint: row.fingerprint,
    state: row.state,
    statusCode: row.status_code,
    responseBody: row.response_body,
    resourceId: row.resource_id,
    released: row.state === 'running' && row.resource_id !== null && row.claim_id === null,
  };
}

/**
 * Records, inside the transaction of the work a claim guards, what that work committed. False when the claim no
 * longer holds the key (it was abandoned and claimed again): the caller must roll its work back.
 */
export async function linkResource(db: Kysely<Schema>, claim: Claim, resourceId: string): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    .set({ resource_id: resourceId })
    .where('platform_id', '=', claim.platformId)
    .where('key', '=', claim.key)
    .where('claim_id', '=', claim.claimId)
    .where('state', '=', 'running')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Keeps the answer of a claim's request, to be replayed. */
export async function completeKey(db: Kysely<Schema>, claim: Claim, answer: { statusCode: number; responseBody: string }): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ state: 'done', status_code: answer.statusCode, response_body: answer.responseBody })
    .where('platform_id', '=', claim.platformId)
    .where('key', '=', claim.key)
    .where('claim_id', '=', claim.claimId)
    .execute();
}

/** Keeps an answer rebuilt from a committed resource, unless the key was completed meanwhile. */
export async function completeFromResource(
  db: Kysely<Schema>,
  key: { platformId: string; key: string; resourceId: string },
  answer: { statusCode: number; responseBody: string },
): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ state: 'done', status_code: answer.statusCode, response_body: answer.responseBody })
    .where('platform_id', '=', key.platformId)
    .where('key', '=', key.key)
    .where('resource_id', '=', key.resourceId)
    .where('state', '=', 'running')
    .execute();
}

/**
 * Frees a claim's key after a failure that is not the request's outcome, so that a retry runs again. A key whose
 * work committed is not freed (a retry answers from what was committed) unless that work was undone
 * (`evenIfCommitted`): it is marked released instead (no claim holds it), so that a retry knows the first request has
 * ended and may resume its work without waiting.
 */
export async function releaseKey(db: Kysely<Schema>, claim: Claim, options: { evenIfCommitted: boolean }): Promise<void> {
  let release = db
    .deleteFrom('idempotency_keys')
    .where('platform_id', '=', claim.platformId)
    .where('key', '=', claim.key)
    .where('claim_id', '=', claim.claimId);
  if (!options.evenIfCommitted) release = release.where('resource_id', 'is', null);
  await release.execute();
  if (options.evenIfCommitted) return;
  await db
    .updateTable('idempotency_keys')
    .set({ claim_id: null })
    .where('platform_id', '=', claim.platformId)
    .where('key', '=', claim.key)
    .where('claim_id', '=', claim.claimId)
    .where('state', '=', 'running')
    .execute();
}

/** Takes a key released after its first request's 5xx answer for `claim`; false when another retry took it first. */
export async function takeOverReleasedKey(db: Kysely<Schema>, claim: Claim): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    .set({ claim_id: claim.claimId })
    .where('platform_id', '=', claim.platformId)
    .where('key', '=', claim.key)
    .where('state', '=', 'running')
    .where('claim_id', 'is', null)
    .where('resource_id', 'is not', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Frees every running key whose work committed nothing: for the embedded database at start, where no other process
 * can be running (this one holds the data folder), so they were left by a process that died. Returns how many.
 */
export async function releaseAbandonedClaims(db: Kysely<Schema>): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('state', '=', 'running').where('resource_id', 'is', null).executeTakeFirst();
  return Number(result.numDeletedRows);
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
