import { createHash, randomBytes, randomUUID } from 'node:crypto';
import bs58 from 'bs58';
import type { Kysely } from 'kysely';
import type { Schema } from '../store/schema.ts';
import * as store from '../store/platforms.ts';

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

export async function createPlatform(db: Kysely<Schema>, name: string): Promise<{ platform: store.PlatformRow } & IssuedKey> {
  return db.transaction().execute(async (tx) => {
    const platform = await store.insertPlatform(tx, { id: randomUUID(), name });
    return { platform, ...(await issueApiKey(tx, platform.id)) };
  });
}

export type Principal = { platformId: string; keyId: string };

/**
 * Resolves API keys to their platform. Answers are cached for `ttlMs` (a few seconds), so a
 * request costs no database round trip while a revoked key still stops working within that time
 * on every process.
 */
export class ApiKeyAuthenticator {
  readonly #db: Kysely<Schema>;
  readonly #ttlMs: number;
  readonly #cache = new Map<string, { principal: Principal | undefined; expiresAt: number }>();
  readonly #maxEntries = 10_000;

  constructor(db: Kysely<Schema>, ttlMs: number) {
    this.#db = db;
    this.#ttlMs = ttlMs;
  }

  /** The key's principal: at once from the cache, or a promise of the database's answer. */
  authenticate(apiKey: string): Principal | undefined | Promise<Principal | undefined> {
    if (!isWellFormedApiKey(apiKey)) return undefined;
    const hash = hashApiKey(apiKey);
    const now = Date.now();
    const cached = this.#cache.get(hash);
    if (cached && cached.expiresAt > now) return cached.principal;
    return this.#lookUp(hash, now);
  }

  async #lookUp(hash: string, now: number): Promise<Principal | undefined> {
    const found = await store.findActiveKeyByHash(this.#db, hash);
    const principal = found && { platformId: found.platformId, keyId: found.keyId };
    if (this.#ttlMs > 0) {
      if (this.#cache.size >= this.#maxEntries) this.#cache.clear();
      this.#cache.set(hash, { principal, expiresAt: now + this.#ttlMs });
    }
    return principal;
  }
}
