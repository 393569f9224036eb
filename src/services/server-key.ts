import { createHmac, hkdfSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_KEY_ID, type EncryptionKey } from '../config.ts';

const KEY_BYTES = 32;

function derive(key: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `ebrc-gateway ${purpose}`, KEY_BYTES));
}

/**
 * One key of the ring and the keys derived from it, one for each use, so that no stored value made with one of them
 * tells anything about another.
 */
export class ServerKey {
  /** The ring's name of the key, recorded in every value sealed with it. */
  readonly id: string;
  /** AES-256-GCM key of the sealed values: the secret itself, as credentials have been sealed from the start. */
  readonly credentialsKey: Buffer;
  /** HMAC key of the Idempotency-Key fingerprints. */
  readonly fingerprintKey: Buffer;
  /** A one-way check value of the secret, stored so that a process started with another secret under this id is refused. */
  readonly check: string;

  constructor(secret: Buffer, id: string = DEFAULT_KEY_ID) {
    if (secret.length !== KEY_BYTES) throw new Error(`the encryption key must be ${KEY_BYTES} bytes`);
    this.id = id;
    this.credentialsKey = secret;
    this.fingerprintKey = derive(secret, 'idempotency fingerprint');
    this.check = derive(secret, 'encryption key check').toString('hex');
  }

  /** A short, safe name of the secret itself for messages: the start of its check value. */
  get checkId(): string {
    return this.check.slice(0, 12);
  }

  fingerprint(text: string): string {
    return createHmac('sha256', this.fingerprintKey).update(text).digest('base64url');
  }
}

/**
 * The keys a process holds: the current one (first) seals, and each opens what was sealed with it. Keys other than
 * the current one are kept only until the re-sealing job has moved every value off them.
 */
export class KeyRing {
  readonly keys: readonly ServerKey[];

  constructor(keys: readonly ServerKey[]) {
    if (keys.length === 0) throw new Error('a key ring needs a key');
    this.keys = keys;
  }

  /** The ring of one key (`default` unless named). */
  static of(secret: Buffer, id: string = DEFAULT_KEY_ID): KeyRing {
    return new KeyRing([new ServerKey(secret, id)]);
  }

  get current(): ServerKey {
    return this.keys[0]!;
  }

  byId(id: string): ServerKey | undefined {
    return this.keys.find((key) => key.id === id);
  }

  get ids(): string[] {
    return this.keys.map((key) => key.id);
  }
}

/**
 * The configured ring (ENCRYPTION_KEYS or ENCRYPTION_KEY); otherwise the ring {default: the key file in the data
 * folder}, the file made once with owner-only access.
 */
export function loadKeyRing(options: { encryptionKeys?: EncryptionKey[] | undefined; dataDir: string }): KeyRing {
  if (options.encryptionKeys && options.encryptionKeys.length > 0) {
    return new KeyRing(options.encryptionKeys.map(({ id, key }) => new ServerKey(key, id)));
  }
  const file = keyFileOf(options.dataDir);
  fs.mkdirSync(options.dataDir, { recursive: true });
  try {
    fs.writeFileSync(file, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const key = Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== KEY_BYTES) throw new Error(`${file} does not hold a ${KEY_BYTES}-byte base64 key`);
  return new KeyRing([new ServerKey(key, DEFAULT_KEY_ID)]);
}

export function keyFileOf(dataDir: string): string {
  return path.join(dataDir, 'encryption.key');
}
