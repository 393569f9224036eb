import { createHash, randomBytes, randomUUID } from 'node:crypto';
import bs58 from 'bs58';
import type { Kysely } from 'kysely';
import { AppError, notFound } from '../errors.ts';
import type { Schema } from '../store/schema.ts';
import * as store from '../store/platforms.ts';
import { recordAudit, type AuditSource } from './audit.ts';
import { itemsPage, offsetOf, type PageRequest } from './pages.ts';

const KEY_PREFIX = 'ebrc_test_';
const KEY_RANDOM_BYTES = 20; // 160 bits, above the contract's 128
const DISPLAY_PREFIX_LENGTH = KEY_PREFIX.length + 6;

export type IssuedKey = { apiKey: string; key: store.ApiKeyRow };

function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey).digest('hex');
}

function isWellFormedApiKey(value: string): boolean {
  return value.startsWith(KEY_PREFIX) && /^[1-9A-HJ-NP-Za-km-z]{22,64}$/.test(value.slice(KEY_PREFIX.length));
}

export async function issueApiKey(db: Kysely<Schema>, platformId: string): Promise<IssuedKey> {
  const apiKey = KEY_PREFIX + bs58.encode(randomBytes(KEY_RANDOM_BYTES));
  const key = await store.insertApiKey(db, {
    id: randomUUID(),
    platformId,
    keyHash: hashApiKey(apiKey),
    displayPrefix: apiKey.slice(0, DISPLAY_PREFIX_LENGTH),
  });
  return { apiKey, key };
}

export async function createPlatform(db: Kysely<Schema>, name: string, source: AuditSource): Promise<{ platform: store.PlatformRow } & IssuedKey> {
  return db.transaction().execute(async (tx) => {
    const platform = await store.insertPlatform(tx, { id: randomUUID(), name });
    const issued = await issueApiKey(tx, platform.id);
    await recordAudit(tx, source, { platformId: platform.id, action: 'platform.create', target: { type: 'platform', id: platform.id } });
    await recordAudit(tx, source, { platformId: platform.id, action: 'api_key.issue', target: { type: 'api_key', id: issued.key.id } });
    return { platform, ...issued };
  });
}

// ---- The operator's operations (contract 10: the admin API and the CLI) ----

/** A platform as the admin API shows it. */
export type PlatformView = { id: string; name: string; requireTwoFactor: boolean; createdAt: string };

/** An API key as the admin API shows it: never the key, nor its hash. */
export type ApiKeyView = {
  id: string;
  platformId: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
};

/** A key just issued: the key itself, shown this once. */
export type IssuedKeyView = { id: string; apiKey: string; prefix: string; createdAt: string };

export function toPlatformView(row: store.PlatformRow): PlatformView {
  return { id: row.id, name: row.name, requireTwoFactor: row.requireTwoFactor, createdAt: row.createdAt.toISOString() };
}

export function toApiKeyView(row: store.ApiKeyRow): ApiKeyView {
  return {
    id: row.id,
    platformId: row.platformId,
    prefix: row.displayPrefix,
    createdAt: row.createdAt.toISOString(),
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
    revokedAt: row.revokedAt?.toISOString() ?? null,
  };
}

/** The platform, or 404. A malformed id is not found like an unknown one. */
export async function requirePlatform(db: Kysely<Schema>, id: string): Promise<PlatformView> {
  const row = await store.findPlatform(db, id);
  if (!row) throw notFound(`Platform ${id}`);
  return toPlatformView(row);
}

/** Requires (or stops requiring) a second factor of every console user of the platform; 404 for an unknown one. */
export async function setPlatformRequiresTwoFactor(db: Kysely<Schema>, id: string, required: boolean, source: AuditSource): Promise<PlatformView> {
  const row = await db.transaction().execute(async (tx) => {
    const platform = await store.setRequireTwoFactor(tx, id, required);
    if (platform) await recordAudit(tx, source, { platformId: platform.id, action: 'platform.update', target: { type: 'platform', id: platform.id } });
    return platform;
  });
  if (!row) throw notFound(`Platform ${id}`);
  return toPlatformView(row);
}

/** A new platform and its first API key (the key shown this once). */
export async function createPlatformWithKey(
  db: Kysely<Schema>,
  name: string,
  source: AuditSource,
): Promise<{ platform: PlatformView; apiKey: string; keyId: string }> {
  const { platform, apiKey, key } = await createPlatform(db, name, source);
  return { platform: toPlatformView(platform), apiKey, keyId: key.id };
}

export async function listPlatformsPage(db: Kysely<Schema>, query: PageRequest) {
  const { rows, total } = await store.listPlatformsPage(db, { offset: offsetOf(query), limit: query.limit });
  return itemsPage(rows.map(toPlatformView), total, query);
}

/** Another API key for the platform (404 when there is no such platform). */
export async function issuePlatformKey(db: Kysely<Schema>, platformId: string, source: AuditSource): Promise<IssuedKeyView> {
  const platform = await requirePlatform(db, platformId);
  const { apiKey, key } = await db.transaction().execute(async (tx) => {
    const issued = await issueApiKey(tx, platform.id);
    await recordAudit(tx, source, { platformId: platform.id, action: 'api_key.issue', target: { type: 'api_key', id: issued.key.id } });
    return issued;
  });
  return { id: key.id, apiKey, prefix: key.displayPrefix, createdAt: key.createdAt.toISOString() };
}

export async function listPlatformKeys(db: Kysely<Schema>, platformId: string, query: PageRequest) {
  await requirePlatform(db, platformId);
  const { rows, total } = await store.listApiKeysPage(db, { platformId, offset: offsetOf(query), limit: query.limit });
  return itemsPage(rows.map(toApiKeyView), total, query);
}

export async function requireApiKey(db: Kysely<Schema>, keyId: string): Promise<ApiKeyView> {
  const row = await store.findApiKey(db, keyId);
  if (!row) throw notFound(`API key ${keyId}`);
  return toApiKeyView(row);
}

/**
 * Revokes the key; 404 when there is none, 409 `api_key_already_revoked` (saying when) when it was revoked before.
 * `authenticator` is this process's: the key is dropped from its cache, so that it is refused from the next request
 * on (other processes refuse it once their cache entry expires, API_KEY_CACHE_SECONDS).
 */
export async function revokePlatformKey(
  db: Kysely<Schema>,
  keyId: string,
  source: AuditSource,
  authenticator?: Pick<ApiKeyAuthenticator, 'forget'>,
): Promise<ApiKeyView> {
  const revoked = await db.transaction().execute(async (tx) => {
    const row = await store.revokeApiKey(tx, keyId);
    if (row !== undefined && !row.alreadyRevoked) {
      await recordAudit(tx, source, { platformId: row.platformId, action: 'api_key.revoke', target: { type: 'api_key', id: row.id } });
    }
    return row;
  });
  if (!revoked) throw notFound(`API key ${keyId}`);
  authenticator?.forget(keyId);
  const { alreadyRevoked, ...row } = revoked;
  const key = toApiKeyView(row);
  if (alreadyRevoked) {
    throw new AppError('api_key_already_revoked', `API key ${key.id} (${key.prefix}…) was already revoked at ${key.revokedAt}; nothing changed.`);
  }
  return key;
}

/** The platform of a request's API key, and the key (its id and display prefix, which the audit trail names it by). */
export type Principal = { platformId: string; keyId: string; keyPrefix: string };

/** How often, at most, a key's `last_used_at` is written by one process. */
const LAST_USED_INTERVAL_MS = 60_000;
/** Uses are gathered this long, then written in one statement. */
const LAST_USED_FLUSH_DELAY_MS = 1_000;

/**
 * Resolves API keys to their platform. Answers are cached for `ttlMs` (a few seconds), so a request costs no database
 * round trip while a key revoked elsewhere (the CLI on PostgreSQL, another process) still stops working within that
 * time on every process; a key revoked through this process's admin API is forgotten at once (`forget`).
 *
 * It also records when each key was last used: at most once a minute per key, gathered for a second and written in one
 * statement (`touchApiKeys`), never a write per request. `close()` writes what is gathered.
 */
export class ApiKeyAuthenticator {
  readonly #db: Kysely<Schema>;
  readonly #ttlMs: number;
  readonly #cache = new Map<string, { principal: Principal | undefined; expiresAt: number }>();
  readonly #maxEntries = 10_000;
  /** When each key's use was last queued for writing (this process). */
  readonly #lastTouched = new Map<string, number>();
  readonly #pending = new Set<string>();
  #flushTimer: ReturnType<typeof setTimeout> | undefined;
  #writing: Promise<void> = Promise.resolve();
  #closed = false;
  /** Counts `forget` calls: a lookup that a forget overtook does not cache what it read. */
  #forgets = 0;
  readonly #onWriteError: ((error: unknown) => void) | undefined;

  constructor(db: Kysely<Schema>, ttlMs: number, options: { onWriteError?: (error: unknown) => void } = {}) {
    this.#db = db;
    this.#ttlMs = ttlMs;
    this.#onWriteError = options.onWriteError;
  }

  /** The key's principal: at once from the cache, or a promise of the database's answer. */
  authenticate(apiKey: string): Principal | undefined | Promise<Principal | undefined> {
    if (!isWellFormedApiKey(apiKey)) return undefined;
    const hash = hashApiKey(apiKey);
    const now = Date.now();
    const cached = this.#cache.get(hash);
    if (cached && cached.expiresAt > now) {
      if (cached.principal) this.#touch(cached.principal.keyId, now);
      return cached.principal;
    }
    return this.#lookUp(hash, now);
  }

  /** Drops the key from the cache, so that its next request is looked up (a revocation takes effect at once). */
  forget(keyId: string): void {
    this.#forgets++;
    for (const [hash, entry] of this.#cache) if (entry.principal?.keyId === keyId) this.#cache.delete(hash);
  }

  /** Writes the uses gathered so far and stops gathering. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#flushTimer !== undefined) clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    await this.#writing;
    await this.#flush();
  }

  async #lookUp(hash: string, now: number): Promise<Principal | undefined> {
    const forgets = this.#forgets;
    const found = await store.findActiveKeyByHash(this.#db, hash);
    const principal = found && { platformId: found.platformId, keyId: found.keyId, keyPrefix: found.keyPrefix };
    // A key forgotten while this lookup ran may have been read before its revocation: answer, but do not keep it.
    if (this.#ttlMs > 0 && forgets === this.#forgets) {
      if (this.#cache.size >= this.#maxEntries) this.#cache.clear();
      this.#cache.set(hash, { principal, expiresAt: now + this.#ttlMs });
    }
    if (principal) this.#touch(principal.keyId, now);
    return principal;
  }

  #touch(keyId: string, now: number): void {
    if (this.#closed) return;
    const last = this.#lastTouched.get(keyId);
    if (last !== undefined && now - last < LAST_USED_INTERVAL_MS) return;
    if (this.#lastTouched.size >= this.#maxEntries) this.#lastTouched.clear();
    this.#lastTouched.set(keyId, now);
    this.#pending.add(keyId);
    if (this.#flushTimer === undefined) {
      this.#flushTimer = setTimeout(() => {
        this.#flushTimer = undefined;
        void this.#flush();
      }, LAST_USED_FLUSH_DELAY_MS);
      this.#flushTimer.unref();
    }
  }

  #flush(): Promise<void> {
    const keyIds = [...this.#pending];
    this.#pending.clear();
    if (keyIds.length === 0) return this.#writing;
    this.#writing = this.#writing.then(() =>
      store.touchApiKeys(this.#db, keyIds, new Date()).catch((error: unknown) => {
        // Best effort: the next use of these keys tries again.
        for (const keyId of keyIds) this.#lastTouched.delete(keyId);
        this.#onWriteError?.(error);
      }),
    );
    return this.#writing;
  }
}
