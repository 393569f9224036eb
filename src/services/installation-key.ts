import type { Kysely } from 'kysely';
import { ConfigError, DEFAULT_KEY_ID } from '../config.ts';
import type { Schema } from '../store/schema.ts';
import { oneSealedUnder, sealedOutside } from '../store/sealed-values.ts';
import { readSetting, settleSetting } from '../store/settings.ts';
import type { CredentialsVault } from './credentials-vault.ts';
import { SEALED_COLUMNS, type SealedColumn } from './sealed-values.ts';
import type { KeyRing, ServerKey } from './server-key.ts';

/** The setting that holds a key id's check value; the key `default`'s is the one from before the ring. */
function checkSettingOf(keyId: string): string {
  return keyId === DEFAULT_KEY_ID ? 'encryption_key_check' : `encryption_key_check:${keyId}`;
}

/**
 * Refuses to start with a key ring that does not open what the database holds:
 * - each key of the ring must be the key its id named before: the first start that sees an id stores the key's check
 *   value (a one-way digest) under it, and a later start with another key under that id is refused; a database from
 *   before the check (or an id first seen on a database that already holds values under it) is tested by opening one
 *   value sealed under that id;
 * - no sealed value may be under a key id the ring lacks (a key dropped too early): the start names the id and how
 *   many values still use it.
 */
export async function checkInstallationKey(
  db: Kysely<Schema>,
  ring: KeyRing,
  vault: CredentialsVault,
  where: { keyFile?: string | undefined },
  columns: readonly SealedColumn[] = SEALED_COLUMNS,
): Promise<void> {
  for (const key of ring.keys) {
    const name = checkSettingOf(key.id);
    let expected = await readSetting(db, name);
    if (expected === undefined) {
      for (const place of columns) {
        const sample = await oneSealedUnder(db, place, key.id);
        if (sample && !vault.opens(place.boundTo(sample.key), sample.sealed)) throw mismatch(key, undefined, where);
      }
      expected = await settleSetting(db, name, key.check);
    }
    if (expected !== key.check) throw mismatch(key, expected.slice(0, key.checkId.length), where);
  }
  const missing = new Map<string, number>();
  for (const place of columns) {
    for (const [keyId, count] of await sealedOutside(db, place, ring.ids)) missing.set(keyId, (missing.get(keyId) ?? 0) + count);
  }
  if (missing.size > 0) {
    const named = [...missing].map(([keyId, count]) => `${keyId} (${count} sealed value${count === 1 ? '' : 's'})`).join(', ');
    throw new ConfigError(
      `values in this database are sealed with the key id${missing.size === 1 ? '' : 's'} ${named}, which the key ring ` +
        `(${where.keyFile ? `the key file ${where.keyFile}` : 'ENCRYPTION_KEYS or ENCRYPTION_KEY'}: ${ring.ids.join(', ')}) does not hold. ` +
        'Put the key back in ENCRYPTION_KEYS after the current one and start again: the re-sealing job moves those values onto ' +
        'the current key, and `npm run cli -- encryption-status` shows when none is left under it; only then drop it (README, "Security").',
    );
  }
}

function mismatch(key: ServerKey, expectedCheck: string | undefined, where: { keyFile?: string | undefined }): ConfigError {
  const source = where.keyFile ? `the key file ${where.keyFile}` : key.id === DEFAULT_KEY_ID ? 'ENCRYPTION_KEY or the key default of ENCRYPTION_KEYS' : 'ENCRYPTION_KEYS';
  return new ConfigError(
    `the encryption key with the key id ${key.id} (${source}, check ${key.checkId}) is not the one this database's values under that id were written with` +
      `${expectedCheck ? ` (check ${expectedCheck})` : ': a value sealed under it does not open with it'}. ` +
      'Start with the keys the data was written with: the same ENCRYPTION_KEYS (or ENCRYPTION_KEY) on every process of one database, ' +
      'or, on the embedded database, its own encryption.key file. To change keys, add a new key in front of the ring instead (README, "Security").',
  );
}
