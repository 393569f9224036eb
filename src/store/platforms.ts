import type { Kysely } from 'kysely';
import type { Schema } from './schema.ts';

export type PlatformRow = { id: string; name: string; createdAt: Date };
export type ApiKeyRow = { id: string; platformId: string; displayPrefix: string; createdAt: Date; revokedAt: Date | null };

export async function insertPlatform(db: Kysely<Schema>, platform: { id: string; name: string }): Promise<PlatformRow> {
  const row = await db.insertInto('platforms').values(platform).returningAll().executeTakeFirstOrThrow();
  return { id: row.id, name: row.name, createdAt: row.created_at };
}

export async function findPlatform(db: Kysely<Schema>, id: string): Promise<PlatformRow | undefined> {
  const row = await db.selectFrom('platforms').selectAll().where('id', '=', id).executeTakeFirst();
  return row && { id: row.id, name: row.name, createdAt: row.created_at };
}

export async function listPlatforms(db: Kysely<Schema>): Promise<PlatformRow[]> {
  const rows = await db.selectFrom('platforms').selectAll().orderBy('created_at').orderBy('id').execute();
  return rows.map((row) => ({ id: row.id, name: row.name, createdAt: row.created_at }));
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

export async function listApiKeys(db: Kysely<Schema>, platformId: string): Promise<ApiKeyRow[]> {
  const rows = await db
    .selectFrom('api_keys')
    .selectAll()
    .where('platform_id', '=', platformId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map(toApiKey);
}

/**
 * Marks a key revoked; returns it, or undefined when there is no such key. Revoking twice keeps the first time:
 * `alreadyRevoked` says the key was revoked before this call (at `revokedAt`).
 */
export async function revokeApiKey(db: Kysely<Schema>, keyId: string): Promise<(ApiKeyRow & { alreadyRevoked: boolean }) | undefined> {
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
export async function findActiveKeyByHash(db: Kysely<Schema>, keyHash: string): Promise<{ keyId: string; platformId: string } | undefined> {
  const row = await db
    .selectFrom('api_keys')
    .select(['id', 'platform_id'])
    .where('key_hash', '=', keyHash)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return row && { keyId: row.id, platformId: row.platform_id };
}

function toApiKey(row: { id: string; platform_id: string; display_prefix: string; created_at: Date; revoked_at: Date | null }): ApiKeyRow {
  return { id: row.id, platformId: row.platform_id, displayPrefix: row.display_prefix, createdAt: row.created_at, revokedAt: row.revoked_at };
}
