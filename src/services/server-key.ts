import { createHmac, hkdfSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const KEY_BYTES = 32;

function derive(key: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `ebrc-gateway ${purpose}`, KEY_BYTES));
}

/**
 * The service's one secret (ENCRYPTION_KEY, or the key file of the embedded default) and the keys derived from it,
 * one for each use, so that no stored value made with one of them tells anything about another.
 */
export class ServerKey {
  /** AES-256-GCM key of the authority credentials: the secret itself, as credentials have been sealed from the start. */
  readonly credentialsKey: Buffer;
  /** HMAC key of the Idempotency-Key fingerprints. */
  readonly fingerprintKey: Buffer;
  /** A one-way check value of the secret, stored so that a process started with another secret is refused. */
  readonly check: string;

  constructor(secret: Buffer) {
    if (secret.length !== KEY_BYTES) throw new Error(`the encryption key must be ${KEY_BYTES} bytes`);
    this.credentialsKey = secret;
    this.fingerprintKey = derive(secret, 'idempotency fingerprint');
    this.check = derive(secret, 'encryption key check').toString('hex');
  }

  /** A short, safe name of the key for messages: the start of its check value. */
  get id(): string {
    return this.check.slice(0, 12);
  }

  fingerprint(text: string): string {
    return createHmac('sha256', this.fingerprintKey).update(text).digest('base64url');
  }
}

/** ENCRYPTION_KEY when set; otherwise a key file in the data folder, made once with owner-only access. */
export function loadServerKey(options: { encryptionKey?: string | undefined; dataDir: string }): ServerKey {
  if (options.encryptionKey) return new ServerKey(Buffer.from(options.encryptionKey, 'base64'));
  const file = keyFileOf(options.dataDir);
  fs.mkdirSync(options.dataDir, { recursive: true });
  try {
    fs.writeFileSync(file, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const key = Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== KEY_BYTES) throw new Error(`${file} does not hold a ${KEY_BYTES}-byte base64 key`);
  return new ServerKey(key);
}

export function keyFileOf(dataDir: string): string {
  return path.join(dataDir, 'encryption.key');
}
