import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/** Console passwords (contract 10): at least this many characters. */
export const MIN_PASSWORD_LENGTH = 12;

// scrypt with N = 2^15, r = 8, p = 1: about 50 ms and 32 MiB per check on one core. Repeated failures are slowed
// on top (the console), so the cost stays affordable for the service while guessing stays slow.
const PARAMETERS = { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;
const KEY_LENGTH = 32;
const PREFIX = 'scrypt';

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

/** `scrypt$N$r$p$salt$hash` (base64url): the parameters travel with the hash, so they can be raised later. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, PARAMETERS);
  return [PREFIX, PARAMETERS.N, PARAMETERS.r, PARAMETERS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [prefix, n, r, p, salt, hash] = stored.split('$');
  if (prefix !== PREFIX || salt === undefined || hash === undefined) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await derive(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p), maxmem: PARAMETERS.maxmem });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** A hash to check against when the e-mail is unknown, so that an unknown e-mail takes as long as a wrong password. */
export const DECOY_PASSWORD_HASH = await hashPassword(randomBytes(16).toString('hex'));
