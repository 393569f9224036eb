/**
 * The API credential sets the sandbox hands out, one per test account, and the access tokens it issues for them.
 * The sets and the authority's own key pair are generated at the first start and kept in the sandbox's database,
 * so a set downloaded once keeps working across restarts.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPair, randomBytes } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import type { Kysely } from 'kysely';
import type { EnvelopeProfile } from '../src/authority/protocol/envelope.ts';
import type { AccessTokenResponse } from '../src/authority/protocol/messages.ts';
import { TOKEN_LIFETIME_SECONDS } from '../src/authority/protocol/messages.ts';
import type { SandboxAccount } from './accounts.ts';
import { SANDBOX_ACCOUNTS } from './accounts.ts';
import type { SandboxSchema } from './store/schema.ts';

const RSA_MODULUS_BITS = 2048;
const SECRET_BYTES = 24;
const TOKEN_BYTES = 32;

const generateRsaKeyPair = promisify(generateKeyPair);

export type SandboxCredentialSet = {
  account: SandboxAccount;
  clientId: string;
  clientSecret: string;
  apiKey: string;
  userPrivateKey: KeyObject;
  /** Checks the signatures of the set's requests. */
  userPublicKey: KeyObject;
  /** The profile this set was issued for; null: the sandbox's default. */
  issuedProfile: EnvelopeProfile | null;
};

/** The set as the authority's own credential file names it, keys as base64 DER; iecCode and envelopeProfile added. */
export type CredentialFile = {
  iecCode: string;
  client_Id: string;
  client_secret: string;
  'x-Api-Key': string;
  dgftpublicKey: string;
  userprivateKey: string;
  envelopeProfile: EnvelopeProfile;
};

export type CredentialRegistry = {
  authorityPrivateKey: KeyObject;
  byApiKey(apiKey: string): SandboxCredentialSet | undefined;
  byUsername(username: string): SandboxCredentialSet | undefined;
  /** The profile the sandbox speaks with this set. */
  profileOf(set: SandboxCredentialSet): EnvelopeProfile;
  /** From now on the set speaks `profile`, also after a restart. */
  issueForProfile(set: SandboxCredentialSet, profile: EnvelopeProfile): Promise<void>;
  credentialFile(set: SandboxCredentialSet): CredentialFile;
};

type Db = Kysely<SandboxSchema>;

/** Loads the credential sets, generating the authority's key pair and the sets of accounts that have none yet. */
export async function loadCredentialRegistry(db: Db, defaultProfile: EnvelopeProfile): Promise<CredentialRegistry> {
  const authorityPrivateKey = await loadAuthorityKey(db);
  const authorityPublicKey = createPublicKey(authorityPrivateKey);
  await generateMissingSets(db);
  const rows = await db.selectFrom('authority_sandbox.credential_sets').selectAll().execute();
  const byUsername = new Map<string, SandboxCredentialSet>();
  for (const row of rows) {
    const account = SANDBOX_ACCOUNTS.find((candidate) => candidate.username === row.account_username);
    if (account === undefined) continue;
    const userPrivateKey = createPrivateKey({ key: Buffer.from(row.user_private_key, 'base64'), format: 'der', type: 'pkcs8' });
    byUsername.set(account.username, {
      account,
      clientId: row.client_id,
      clientSecret: row.client_secret,
      apiKey: row.api_key,
      userPrivateKey,
      userPublicKey: createPublicKey(userPrivateKey),
      issuedProfile: row.envelope_profile,
    });
  }
  const byApiKey = new Map([...byUsername.values()].map((set) => [set.apiKey, set]));

  return {
    authorityPrivateKey,
    byApiKey: (apiKey) => byApiKey.get(apiKey),
    byUsername: (username) => byUsername.get(username),
    profileOf: (set) => set.issuedProfile ?? defaultProfile,
    async issueForProfile(set, profile) {
      if (set.issuedProfile === profile) return;
      await db
        .updateTable('authority_sandbox.credential_sets')
        .set({ envelope_profile: profile })
        .where('account_username', '=', set.account.username)
        .execute();
      set.issuedProfile = profile;
    },
    credentialFile: (set) => ({
      iecCode: set.account.iecCode,
      client_Id: set.clientId,
      client_secret: set.clientSecret,
      'x-Api-Key': set.apiKey,
      dgftpublicKey: derBase64(authorityPublicKey, 'spki'),
      userprivateKey: derBase64(set.userPrivateKey, 'pkcs8'),
      envelopeProfile: set.issuedProfile ?? defaultProfile,
    }),
  };
}

async function loadAuthorityKey(db: Db): Promise<KeyObject> {
  const stored = async () => (await db.selectFrom('authority_sandbox.authority_key').select('private_key').executeTakeFirst())?.private_key;
  let privateKey = await stored();
  if (privateKey === undefined) {
    const generated = await generateRsaKeyPair('rsa', { modulusLength: RSA_MODULUS_BITS });
    // Two sandboxes starting on one new PostgreSQL schema: the first key stored wins, and both use it.
    await db
      .insertInto('authority_sandbox.authority_key')
      .values({ private_key: derBase64(generated.privateKey, 'pkcs8') })
      .onConflict((conflict) => conflict.doNothing())
      .execute();
    privateKey = await stored();
    if (privateKey === undefined) throw new Error("The authority's key pair could not be stored.");
  }
  return createPrivateKey({ key: Buffer.from(privateKey, 'base64'), format: 'der', type: 'pkcs8' });
}

async function generateMissingSets(db: Db): Promise<void> {
  const existing = new Set(
    (await db.selectFrom('authority_sandbox.credential_sets').select('account_username').execute()).map((row) => row.account_username),
  );
  const missing = SANDBOX_ACCOUNTS.filter((account) => !existing.has(account.username));
  if (missing.length === 0) return;
  const rows = await Promise.all(missing.map(async (account) => {
    const userKeys = await generateRsaKeyPair('rsa', { modulusLength: RSA_MODULUS_BITS });
    return {
      account_username: account.username,
      iec_code: account.iecCode,
      client_id: `sandbox-${account.iecCode}-${randomBytes(4).toString('hex')}`,
      client_secret: randomBytes(SECRET_BYTES).toString('base64url'),
      api_key: `sbx_${randomBytes(SECRET_BYTES).toString('base64url')}`,
      user_private_key: derBase64(userKeys.privateKey, 'pkcs8'),
      envelope_profile: null,
    };
  }));
  await db
    .insertInto('authority_sandbox.credential_sets')
    .values(rows)
    .onConflict((conflict) => conflict.column('account_username').doNothing())
    .execute();
}

function derBase64(key: KeyObject, type: 'spki' | 'pkcs8'): string {
  return type === 'spki'
    ? key.export({ format: 'der', type: 'spki' }).toString('base64')
    : key.export({ format: 'der', type: 'pkcs8' }).toString('base64');
}

export type TokenStore = {
  issue(set: SandboxCredentialSet, at: Date): Promise<AccessTokenResponse>;
  /** Whether the token was issued to this client and has not expired at `at`. */
  isValid(accessToken: string, clientId: string, at: Date): Promise<boolean>;
};

export function createTokenStore(db: Db): TokenStore {
  return {
    async issue(set, at) {
      const accessToken = randomBytes(TOKEN_BYTES).toString('base64url');
      await db.deleteFrom('authority_sandbox.access_tokens').where('expires_at', '<=', at).execute();
      await db
        .insertInto('authority_sandbox.access_tokens')
        .values({
          token_hash: tokenHash(accessToken),
          client_id: set.clientId,
          expires_at: new Date(at.getTime() + TOKEN_LIFETIME_SECONDS * 1000),
        })
        .execute();
      return { accessToken, expiresIn: TOKEN_LIFETIME_SECONDS, client_id: set.clientId };
    },
    async isValid(accessToken, clientId, at) {
      const row = await db
        .selectFrom('authority_sandbox.access_tokens')
        .select('token_hash')
        .where('token_hash', '=', tokenHash(accessToken))
        .where('client_id', '=', clientId)
        .where('expires_at', '>', at)
        .executeTakeFirst();
      return row !== undefined;
    },
  };
}

function tokenHash(accessToken: string): string {
  return createHash('sha256').update(accessToken).digest('hex');
}
