import type { Kysely, SelectQueryBuilder } from 'kysely';
import { isUuid } from './ids.ts';
import { readNewestFirst } from './paging.ts';
import type { Schema } from './schema.ts';

export type PlatformRow = { id: string; name: string; requireTwoFactor: boolean; createdAt: Date };
export type ApiKeyRow = { id: string; platformId: string; displayPrefix: string; createdAt: Date; lastUsedAt: Date | null; revokedAt: Date | null };

export async function insertPlatform(db: Kysely<Schema>, platform: { id: string; name: string }): Promise<PlatformRow> {
  const row = await db.insertInto('platforms').values(platform).returningAll().executeTakeFirstOrThrow();
  return { id: row.id, name: row.name, requireTwoFactor: row.require_two_factor, createdAt: row.created_at };
}

export async function findPlatform(db: Kysely<Schema>, id: string): Promise<PlatformRow | undefined> {
  if (!isUuid(id)) return undefined;
  const row = await db.selectFrom('platforms').selectAll().where('id', '=', id).executeTakeFirst();
  return row && { id: row.id, name: row.name, requireTwoFactor: row.require_two_factor, createdAt: row.created_at };
}

/** Sets whether every console user of the platform must sign in with a second factor; the platform, or undefined. */
export async function setRequireTwoFactor(db: Kysely<Schema>, id: string, required: boolean): Promise<PlatformRow | undefined> {
  if (!isUuid(id)) return undefined;
  const row = await db.updateTable('platforms').set({ require_two_factor: required }).where('id', '=', id).returningAll().executeTakeFirst();
  return row && { id: row.id, name: row.name, requireTwoFactor: row.require_two_factor, createdAt: row.created_at };
}

/** Operator tables (platforms, a platform's keys and console users) counted for a list's total: never reached. */
export const OPERATOR_ROWS_COUNTED_AT_MOST = 100_000;

/** A page of the platforms, newest first, and how many there are. */
export async function listPlatformsPage(db: Kysely<Schema>, page: { offset: number; limit: number }): Promise<{ rows: PlatformRow[]; total: number }> {
  const shown = (platforms: SelectQueryBuilder<Schema, 'platforms', object>) => platforms.select(['id', 'name', 'require_two_factor', 'created_at']);
  const { rows, total: counted } = await readNewestFirst(db, page, db.selectFrom('platforms'), shown, OPERATOR_ROWS_COUNTED_AT_MOST);
  return { rows: rows.map((row) => ({ id: row.id, name: row.name, requireTwoFactor: row.require_two_factor, createdAt: row.created_at })), total: counted };
}

export async function anyPlatformExists(db: Kysely<Schema>): Promise<boolean> {
  return (await db.selectFrom('platforms').select('id').limit(1).executeTakeFirst()) !== undefined;
}

export async function insertApiKey(
  db: Kysely<Schema>,
  key: { id: string; platformId: string; keyHash: string; displayPrefix: string },
): Promise<ApiKeyRow> {
  const row = await db
    .insertInto('api_keys')
    .values({ id: key.id, platform_id: key.platformId, key_hash: key.keyHash, display_prefix: key.displayPrefix })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toApiKey(row);
}

/** A page of the platform's keys, newest first, and how many it has. */
export async function listApiKeysPage(
  db: Kysely<Schema>,
  query: { platformId: string; offset: number; limit: number },
): Promise<{ rows: ApiKeyRow[]; total: number }> {
  const matching = db.selectFrom('api_keys').where('platform_id', '=', query.platformId);
  const { rows, total: counted } = await readNewestFirst(db, query, matching, (keys) => keys.select(API_KEY_COLUMNS), OPERATOR_ROWS_COUNTED_AT_MOST);
  return { rows: rows.map(toApiKey), total: counted };
}

export async function findApiKey(db: Kysely<Schema>, keyId: string): Promise<ApiKeyRow | undefined> {
  if (!isUuid(keyId)) return undefined;
  const row = await db.selectFrom('api_keys').select(API_KEY_COLUMNS).where('id', '=', keyId).executeTakeFirst();
  return row && toApiKey(row);
}

/**
 * Records that these keys were used at `at`. Never moves `last_used_at` back (several processes write it, each at
 * most once a minute per key: see ApiKeyAuthenticator).
 */
export async function touchApiKeys(db: Kysely<Schema>, keyIds: string[], at: Date): Promise<void> {
  if (keyIds.length === 0) return;
  await db
    .updateTable('api_keys')
    .set({ last_used_at: at })
    .where('id', 'in', keyIds)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
    .execute();
}

/**
 * Marks a key revoked; returns it, or undefined when there is no such key. Revoking twice keeps the first time:
 * `alreadyRevoked` says the key was revoked before this call (at `revokedAt`).
 */
export async function revokeApiKey(db: Kysely<Schema>, keyId: string): Promise<(ApiKeyRow & { alreadyRevoked: boolean }) | undefined> {
  if (!isUuid(keyId)) return undefined;
  const revoked = await db
    .updateTable('api_keys')
    .set({ revoked_at: new Date() })
    .where('id', '=', keyId)
    .where('revoked_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  if (revoked) return { ...toApiKey(revoked), alreadyRevoked: false };
  const row = await db.selectFrom('api_keys').selectAll().where('id', '=', keyId).executeTakeFirst();
  return row && { ...toApiKey(row), alreadyRevoked: true };
}

/** The platform of an active key with this hash. */
export async function findActiveKeyByHash(
  db: Kysely<Schema>,
  keyHash: string,
): Promise<{ keyId: string; platformId: string; keyPrefix: string } | undefined> {
  const row = await db
    .selectFrom('api_keys')
    .select(['id', 'platform_id', 'display_prefix'])
    .where('key_hash', '=', keyHash)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return row && { keyId: row.id, platformId: row.platform_id, keyPrefix: row.display_prefix };
}

/** Every column but the key's hash, which nothing outside authentication reads. */
const API_KEY_COLUMNS = ['id', 'platform_id', 'display_prefix', 'created_at', 'last_used_at', 'revoked_at'] as const;

function toApiKey(row: {
  id: string;
  platform_id: string;
  display_prefix: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}): ApiKeyRow {
  return {
    id: row.id,
    platformId: row.platform_id,
    displayPrefix: row.display_prefix,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
  };
}
