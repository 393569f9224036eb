/**
 * The client_secret of the token operation (authority-wire.md, "Operations"): never the secret itself but
 * base64(salt ‖ PBKDF2-HMAC-SHA256(client_secret, salt, 65536, 32)) with a fresh 32-byte salt per request.
 */
import { pbkdf2, randomBytes, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { decodeBase64Strictly } from './base64.ts';

const SALT_LENGTH = 32;
const HASH_LENGTH = 32;
const ITERATIONS = 65_536;

const pbkdf2Async = promisify(pbkdf2);

function hashClientSecret(clientSecret: string, salt: Buffer): Promise<Buffer> {
  return pbkdf2Async(Buffer.from(clientSecret, 'utf8'), salt, ITERATIONS, HASH_LENGTH, 'sha256');
}

/** The caller's side: what goes in the token request's client_secret. */
export async function sealClientSecret(clientSecret: string): Promise<string> {
  const salt = randomBytes(SALT_LENGTH);
  return Buffer.concat([salt, await hashClientSecret(clientSecret, salt)]).toString('base64');
}

/**
 * The authority's side: whether a sent client_secret proves knowledge of the client's secret. The last 32 bytes are
 * the hash and the rest the salt, whatever its length; anything that is not base64 of at least one salt byte and a
 * hash is refused.
 */
export async function checkClientSecret(sent: string, clientSecret: string): Promise<boolean> {
  const bytes = decodeBase64Strictly(sent);
  if (bytes === null || bytes.length <= HASH_LENGTH) return false;
  const salt = bytes.subarray(0, bytes.length - HASH_LENGTH);
  const hash = bytes.subarray(bytes.length - HASH_LENGTH);
  return timingSafeEqual(hash, await hashClientSecret(clientSecret, salt));
}
