import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import bs58 from 'bs58';

const TOKEN_PREFIX = 'ebrc_admin_';
const TOKEN_RANDOM_BYTES = 32;

/**
 * Where the admin API's token comes from (contract 10): ADMIN_TOKEN; else, on the embedded default (no DATABASE_URL),
 * a file in the data folder made once; else nowhere, and the admin API is off.
 */
export type AdminTokenSource = { kind: 'env' } | { kind: 'file'; file: string } | { kind: 'off' };

export function adminTokenFileOf(dataDir: string): string {
  return path.join(dataDir, 'admin-token');
}

export function adminTokenSource(config: { adminToken?: string | undefined; databaseUrl?: string | undefined; dataDir: string }): AdminTokenSource {
  if (config.adminToken) return { kind: 'env' };
  if (config.databaseUrl) return { kind: 'off' };
  return { kind: 'file', file: adminTokenFileOf(config.dataDir) };
}

/**
 * The admin token, or undefined when the admin API is off. On the embedded default the file is created on the first
 * call (owner-only, 0600; `ebrc_admin_` and 256 random bits in base58) and read afterwards. The token itself is never
 * logged: only the file's path is named.
 */
export function loadAdminToken(config: { adminToken?: string | undefined; databaseUrl?: string | undefined; dataDir: string }): string | undefined {
  const source = adminTokenSource(config);
  if (source.kind === 'env') return config.adminToken;
  if (source.kind === 'off') return undefined;
  fs.mkdirSync(path.dirname(source.file), { recursive: true });
  try {
    fs.writeFileSync(source.file, `${TOKEN_PREFIX}${bs58.encode(randomBytes(TOKEN_RANDOM_BYTES))}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return readAdminTokenFile(source.file);
}

/** The token a file holds (its first line, trimmed); throws when the file holds none. */
export function readAdminTokenFile(file: string): string {
  const token = fs.readFileSync(file, 'utf8').split('\n')[0]!.trim();
  if (token.length < 32) throw new Error(`${file} does not hold an admin token; delete it and start the service again to make a new one`);
  return token;
}

/**
 * Compares a presented token with the expected one in constant time: both are hashed first, so neither their contents
 * nor their lengths change how long the comparison takes.
 */
export function adminTokenMatches(presented: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(presented), digest(expected));
}
