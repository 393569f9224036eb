import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { PortalLogin } from '../authority/authority.ts';
import type { CredentialSetText } from '../authority/protocol/credentials.ts';
import { DEFAULT_KEY_ID } from '../config.ts';
import type { KeyRing, ServerKey } from './server-key.ts';

/** Sealed text before key ids: `v1:<base64>`, always under the key `default`. */
const LEGACY_VERSION = 'v1';
/** Sealed text now: `v2:<key id>:<base64 of iv, tag, ciphertext>`. */
const VERSION = 'v2';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * What each kind of sealed value is bound to (its additional authenticated data): the vault's methods and the
 * re-sealing of src/services/sealed-values.ts use the same.
 */
export const BINDINGS = {
  portalLogin: (customerId: string) => customerId,
  apiCredentials: (customerId: string) => `${customerId}/api-credentials`,
  webhookSecret: (endpointId: string) => `webhook-endpoint/${endpointId}`,
  answer: (boundTo: string) => `idempotency-answer/${boundTo}`,
  totpSecret: (userId: string) => `console-user-totp/${userId}`,
} as const;

/** What marks a kept Idempotency-Key answer as sealed (the others are JSON text). */
export const SEALED_ANSWER_PREFIX = 'sealed:';

/** A sealed value names a key the ring does not hold. */
export class UnknownKeyError extends Error {
  readonly keyId: string;

  constructor(keyId: string, what: string) {
    super(`${what} is sealed with the key id ${keyId}, which this process's key ring (ENCRYPTION_KEYS) does not hold`);
    this.keyId = keyId;
  }
}

/** The id of the key a sealed text was sealed with (`default` for the texts from before key ids). */
export function keyIdOf(sealed: string): string {
  if (sealed.startsWith(`${VERSION}:`)) return sealed.slice(VERSION.length + 1, sealed.indexOf(':', VERSION.length + 1));
  return DEFAULT_KEY_ID;
}

/**
 * Keeps authority credentials (and webhook signing secrets, and the kept answers that show one) encrypted at rest with
 * AES-256-GCM under the ring's current key; each sealed text names its key, which opens it. Each ciphertext is bound
 * to its customer and to what it holds (the additional authenticated data), so a stored blob copied onto another
 * customer, or from one column to the other, does not decrypt.
 */
export class CredentialsVault {
  readonly #ring: KeyRing;

  constructor(ring: KeyRing) {
    this.#ring = ring;
  }

  get currentKeyId(): string {
    return this.#ring.current.id;
  }

  /** The username and password of a credential check. */
  seal(customerId: string, credentials: PortalLogin): string {
    return this.#seal(BINDINGS.portalLogin(customerId), credentials);
  }

  open(customerId: string, sealed: string): PortalLogin {
    return this.#open(BINDINGS.portalLogin(customerId), sealed) as PortalLogin;
  }

  /** An API credential set (keys as base64 DER). */
  sealApiCredentials(customerId: string, credentials: CredentialSetText): string {
    return this.#seal(BINDINGS.apiCredentials(customerId), credentials);
  }

  openApiCredentials(customerId: string, sealed: string): CredentialSetText {
    return this.#open(BINDINGS.apiCredentials(customerId), sealed) as CredentialSetText;
  }

  /** A webhook endpoint's signing secret (whsec_…): it must sign, so it is encrypted, not hashed. */
  sealWebhookSecret(endpointId: string, secret: string): string {
    return this.#seal(BINDINGS.webhookSecret(endpointId), secret);
  }

  openWebhookSecret(endpointId: string, sealed: string): string {
    return this.#open(BINDINGS.webhookSecret(endpointId), sealed) as string;
  }

  /** A console user's TOTP secret (base32): it must compute codes, so it is encrypted, not hashed. */
  sealTotpSecret(userId: string, secret: string): string {
    return this.#seal(BINDINGS.totpSecret(userId), secret);
  }

  openTotpSecret(userId: string, sealed: string): string {
    return this.#open(BINDINGS.totpSecret(userId), sealed) as string;
  }

  /** An answer kept for an Idempotency-Key replay that holds a secret, bound to its platform and key. */
  sealAnswer(boundTo: string, answer: string): string {
    return this.#seal(BINDINGS.answer(boundTo), answer);
  }

  openAnswer(boundTo: string, sealed: string): string {
    return this.#open(BINDINGS.answer(boundTo), sealed) as string;
  }

  /** The same value sealed again under the current key (for the re-sealing job); `boundTo` as BINDINGS makes it. */
  reseal(boundTo: string, sealed: string): string {
    return this.#sealBytes(boundTo, this.#openBytes(boundTo, sealed));
  }

  /** Whether the sealed text opens (the start-up check of a key). */
  opens(boundTo: string, sealed: string): boolean {
    try {
      this.#openBytes(boundTo, sealed);
      return true;
    } catch {
      return false;
    }
  }

  #seal(boundTo: string, value: unknown): string {
    return this.#sealBytes(boundTo, Buffer.from(JSON.stringify(value), 'utf8'));
  }

  #sealBytes(boundTo: string, plain: Buffer): string {
    const key = this.#ring.current;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key.credentialsKey, iv);
    cipher.setAAD(Buffer.from(boundTo));
    const body = Buffer.concat([cipher.update(plain), cipher.final()]);
    return `${VERSION}:${key.id}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
  }

  #open(boundTo: string, sealed: string): unknown {
    return JSON.parse(this.#openBytes(boundTo, sealed).toString('utf8'));
  }

  #openBytes(boundTo: string, sealed: string): Buffer {
    const { key, payload } = this.#keyOf(boundTo, sealed);
    const raw = Buffer.from(payload, 'base64');
    const decipher = createDecipheriv('aes-256-gcm', key.credentialsKey, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(boundTo));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
    } catch {
      // What the operator needs to read in the log of the 500 this becomes: the usual cause is configuration.
      throw new Error(
        `the sealed value of ${boundTo} does not decrypt with the key ${key.id} of this process's key ring: ` +
          'every process must run with the keys the values were sealed with, in ENCRYPTION_KEYS or ENCRYPTION_KEY (or the customer must verify again)',
      );
    }
  }

  #keyOf(boundTo: string, sealed: string): { key: ServerKey; payload: string } {
    let id: string;
    let payload: string;
    if (sealed.startsWith(`${VERSION}:`)) {
      const idEnd = sealed.indexOf(':', VERSION.length + 1);
      if (idEnd < 0) throw new Error(`the sealed value of ${boundTo} is not in a known format`);
      id = sealed.slice(VERSION.length + 1, idEnd);
      payload = sealed.slice(idEnd + 1);
    } else if (sealed.startsWith(`${LEGACY_VERSION}:`)) {
      id = DEFAULT_KEY_ID;
      payload = sealed.slice(LEGACY_VERSION.length + 1);
    } else {
      throw new Error(`the sealed value of ${boundTo} is not in a known format`);
    }
    const key = this.#ring.byId(id);
    if (key === undefined) throw new UnknownKeyError(id, `the sealed value of ${boundTo}`);
    if (payload === '') throw new Error(`the sealed value of ${boundTo} is not in a known format`);
    return { key, payload };
  }
}
