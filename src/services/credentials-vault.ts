import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { PortalLogin } from '../authority/authority.ts';
import type { CredentialSetText } from '../authority/protocol/credentials.ts';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Keeps authority credentials (and webhook signing secrets, and the kept answers that show one) encrypted at rest with AES-256-GCM. Each ciphertext is bound to its customer and to
 * what it holds (the additional authenticated data), so a stored blob copied onto another customer, or from one
 * column to the other, does not decrypt.
 */
export class CredentialsVault {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('the credentials key must be 32 bytes');
    this.#key = key;
  }

  /** The username and password of a credential check. */
  seal(customerId: string, credentials: PortalLogin): string {
    return this.#seal(customerId, credentials);
  }

  open(customerId: string, sealed: string): PortalLogin {
    return this.#open(customerId, sealed) as PortalLogin;
  }

  /** An API credential set (keys as base64 DER). */
  sealApiCredentials(customerId: string, credentials: CredentialSetText): string {
    return this.#seal(`${customerId}/api-credentials`, credentials);
  }

  openApiCredentials(customerId: string, sealed: string): CredentialSetText {
    return this.#open(`${customerId}/api-credentials`, sealed) as CredentialSetText;
  }

  /** A webhook endpoint's signing secret (whsec_…): it must sign, so it is encrypted, not hashed. */
  sealWebhookSecret(endpointId: string, secret: string): string {
    return this.#seal(`webhook-endpoint/${endpointId}`, secret);
  }

  openWebhookSecret(endpointId: string, sealed: string): string {
    return this.#open(`webhook-endpoint/${endpointId}`, sealed) as string;
  }

  /** A console user's TOTP secret (base32): it must compute codes, so it is encrypted, not hashed. */
  sealTotpSecret(userId: string, secret: string): string {
    return this.#seal(`console-user-totp/${userId}`, secret);
  }

  openTotpSecret(userId: string, sealed: string): string {
    return this.#open(`console-user-totp/${userId}`, sealed) as string;
  }

  /** An answer kept for an Idempotency-Key replay that holds a secret, bound to its platform and key. */
  sealAnswer(boundTo: string, answer: string): string {
    return this.#seal(`idempotency-answer/${boundTo}`, answer);
  }

  openAnswer(boundTo: string, sealed: string): string {
    return this.#open(`idempotency-answer/${boundTo}`, sealed) as string;
  }

  #seal(boundTo: string, value: unknown): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(boundTo));
    const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
    return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
  }

  #open(boundTo: string, sealed: string): unknown {
    const [version, payload] = sealed.split(':');
    if (version !== VERSION || !payload) throw new Error('unknown credentials format');
    const raw = Buffer.from(payload, 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(boundTo));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    let text: string;
    try {
      text = Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      // What the operator needs to read in the log of the 500 this becomes: the usual cause is configuration.
      throw new Error(
        `the stored authority credentials of ${boundTo} do not decrypt with this process's key: ` +
          'every process must run with the ENCRYPTION_KEY they were sealed with (or the customer must verify again)',
      );
    }
    return JSON.parse(text);
  }
}
