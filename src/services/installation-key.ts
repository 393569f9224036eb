import type { Kysely } from 'kysely';
import { ConfigError } from '../config.ts';
import { anySealedCredentials } from '../store/customers.ts';
import type { Schema } from '../store/schema.ts';
import { readSetting, settleSetting } from '../store/settings.ts';
import type { CredentialsVault } from './credentials-vault.ts';
import type { ServerKey } from './server-key.ts';

const KEY_CHECK = 'encryption_key_check';

/**
 * Refuses to start with another encryption key than the one the database was written with: every call that needs
 * stored credentials would fail, and Idempotency-Key fingerprints would no longer match. The first start stores the
 * key's check value; a database from before the check is tested by opening one stored credential set.
 */
export async function checkInstallationKey(
  db: Kysely<Schema>,
  key: ServerKey,
  vault: CredentialsVault,
  where: { keyFile?: string | undefined },
): Promise<void> {
  let expected = await readSetting(db, KEY_CHECK);
  if (expected === undefined) {
    const stored = await anySealedCredentials(db);
    if (stored) {
      try {
        vault.open(stored.id, stored.sealed);
      } catch {
        throw mismatch(key, undefined, where);
      }
    }
    expected = await settleSetting(db, KEY_CHECK, key.check);
  }
  if (expected !== key.check) throw mismatch(key, expected.slice(0, key.id.length), where);
}

function mismatch(key: ServerKey, expectedId: string | undefined, where: { keyFile?: string | undefined }): ConfigError {
  const source = where.keyFile ? `the key file ${where.keyFile}` : 'ENCRYPTION_KEY';
  return new ConfigError(
    `the encryption key (${source}, key id ${key.id}) is not the one this database was written with` +
      `${expectedId ? ` (key id ${expectedId})` : ': stored authority credentials do not open with it'}. ` +
      'Start with the key the data was written with: the same ENCRYPTION_KEY on every process of one database, ' +
      'or, on the embedded database, its own encryption.key file. Keys cannot be rotated in place (docs/decisions.md, "Encryption key").',
  );
}
