/**
 * An exporter's API credential set for one IEC (authority-wire.md, "Credentials: one set per IEC"), read from the
 * authority's own file (client_Id, client_secret, x-Api-Key, dgftpublicKey, userprivateKey) or from this service's
 * names, with keys as bare base64 DER, PEM, or a .cer certificate (X.509, PEM or DER).
 */
import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { decodeBase64Strictly } from './base64.ts';
import type { EnvelopeProfile } from './envelope.ts';
import { ENVELOPE_PROFILES, isEnvelopeProfile } from './envelope.ts';

export type CredentialSet = {
  iecCode: string;
  clientId: string;
  clientSecret: string;
  apiKey: string;
  /** The authority's RSA public key ("dgftpublicKey"). */
  authorityPublicKey: KeyObject;
  /** The exporter's RSA private key ("userprivateKey"). */
  userPrivateKey: KeyObject;
  envelopeProfile: EnvelopeProfile;
};

/** A credential set as text, in this service's names, keys as base64 DER (SPKI, PKCS#8): what can be stored. */
export type CredentialSetText = {
  iecCode: string;
  clientId: string;
  clientSecret: string;
  apiKey: string;
  authorityPublicKey: string;
  userPrivateKey: string;
  envelopeProfile: EnvelopeProfile;
};

/** `field` is the name the input used, so a 400 can point at it. */
export type CredentialFieldProblem = { field: string; message: string };

export type CredentialSetParse =
  | { ok: true; credentials: CredentialSet }
  | { ok: false; problems: CredentialFieldProblem[] };

type FieldName = keyof CredentialSetText;

// Names compared without case, underscores and hyphens: "client_Id", "clientId" and "client_id" are one field.
const FIELD_ALIASES: ReadonlyMap<string, FieldName> = new Map([
  ['ieccode', 'iecCode'],
  ['clientid', 'clientId'],
  ['clientsecret', 'clientSecret'],
  ['apikey', 'apiKey'],
  ['xapikey', 'apiKey'],
  ['authoritypublickey', 'authorityPublicKey'],
  ['dgftpublickey', 'authorityPublicKey'],
  ['userprivatekey', 'userPrivateKey'],
  ['envelopeprofile', 'envelopeProfile'],
]);

const AUTHORITY_FILE_NAMES: Partial<Record<FieldName, string>> = {
  clientId: 'client_Id',
  clientSecret: 'client_secret',
  apiKey: 'x-Api-Key',
  authorityPublicKey: 'dgftpublicKey',
  userPrivateKey: 'userprivateKey',
};

const IEC_CODE = /^[A-Za-z0-9]{10}$/;
const PEM_LABEL = /-----BEGIN ([A-Z0-9 ]+)-----/;

type Given = { field: string; value: unknown };

type KeyReading = { key: KeyObject } | { problem: string };

export function parseCredentialSet(input: unknown, defaultProfile: EnvelopeProfile): CredentialSetParse {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { ok: false, problems: [{ field: '', message: 'The credential set must be a JSON object.' }] };
  }
  const problems: CredentialFieldProblem[] = [];
  const given = new Map<FieldName, Given>();
  for (const [field, value] of Object.entries(input)) {
    const name = FIELD_ALIASES.get(field.replace(/[-_]/g, '').toLowerCase());
    if (name === undefined) continue;
    const earlier = given.get(name);
    if (earlier !== undefined && earlier.value !== value) {
      problems.push({ field, message: `${field} and ${earlier.field} name the same field with different values.` });
    }
    given.set(name, { field, value });
  }

  const fieldOf = (name: FieldName): string => given.get(name)?.field ?? name;
  const text = (name: FieldName): string | null => {
    const entry = given.get(name);
    if (entry === undefined) {
      const fileName = AUTHORITY_FILE_NAMES[name];
      problems.push({ field: name, message: `${name}${fileName === undefined ? '' : ` (${fileName} in the authority's file)`} is required.` });
      return null;
    }
    if (typeof entry.value !== 'string' || entry.value.trim().length === 0) {
      problems.push({ field: entry.field, message: `${entry.field} must be a non-empty string.` });
      return null;
    }
    return entry.value.trim();
  };
  const key = (name: 'authorityPublicKey' | 'userPrivateKey', read: (text: string) => KeyReading): KeyObject | null => {
    const value = text(name);
    if (value === null) return null;
    const reading = read(value);
    if ('key' in reading) return reading.key;
    problems.push({ field: fieldOf(name), message: `${fieldOf(name)} ${reading.problem}` });
    return null;
  };

  const iecCode = text('iecCode');
  if (iecCode !== null && !IEC_CODE.test(iecCode)) {
    problems.push({ field: fieldOf('iecCode'), message: `${fieldOf('iecCode')} must be 10 letters or digits.` });
  }
  const clientId = text('clientId');
  const clientSecret = text('clientSecret');
  const apiKey = text('apiKey');
  const authorityPublicKey = key('authorityPublicKey', readPublicKey);
  const userPrivateKey = key('userPrivateKey', readPrivateKey);
  const envelopeProfile = readProfile(given.get('envelopeProfile'), defaultProfile, problems);

  if (
    problems.length > 0 || iecCode === null || clientId === null || clientSecret === null || apiKey === null ||
    authorityPublicKey === null || userPrivateKey === null || envelopeProfile === null
  ) {
    return { ok: false, problems };
  }
  return {
    ok: true,
    credentials: { iecCode, clientId, clientSecret, apiKey, authorityPublicKey, userPrivateKey, envelopeProfile },
  };
}

/** The set as text that parseCredentialSet reads back to the same set. */
export function credentialSetToText(credentials: CredentialSet): CredentialSetText {
  return {
    iecCode: credentials.iecCode,
    clientId: credentials.clientId,
    clientSecret: credentials.clientSecret,
    apiKey: credentials.apiKey,
    authorityPublicKey: credentials.authorityPublicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
    userPrivateKey: credentials.userPrivateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
    envelopeProfile: credentials.envelopeProfile,
  };
}

function readProfile(entry: Given | undefined, defaultProfile: EnvelopeProfile, problems: CredentialFieldProblem[]): EnvelopeProfile | null {
  if (entry === undefined || entry.value === null || entry.value === '') return defaultProfile;
  if (isEnvelopeProfile(entry.value)) return entry.value;
  problems.push({ field: entry.field, message: `${entry.field} must be one of ${ENVELOPE_PROFILES.join(', ')}.` });
  return null;
}

function readPublicKey(text: string): KeyReading {
  const label = PEM_LABEL.exec(text)?.[1];
  if (label !== undefined) {
    if (label === 'CERTIFICATE') return rsaKey(() => new X509Certificate(text).publicKey, 'is not a readable X.509 certificate.');
    if (label === 'PUBLIC KEY' || label === 'RSA PUBLIC KEY') return rsaKey(() => createPublicKey(text), 'is not a readable PEM public key.');
    if (label.includes('PRIVATE KEY')) return { problem: "holds a private key; the authority's public key is expected." };
    return { problem: `is PEM of a ${label}; a public key or a certificate is expected.` };
  }
  const der = decodeBase64Strictly(text.replace(/\s+/g, ''));
  if (der === null) return { problem: 'is neither PEM nor base64 DER.' };
  return rsaKey(
    () => firstReadable([
      () => createPublicKey({ key: der, format: 'der', type: 'spki' }),
      () => new X509Certificate(der).publicKey,
      () => createPublicKey({ key: der, format: 'der', type: 'pkcs1' }),
    ]),
    'is base64 but not DER of an X.509 SubjectPublicKeyInfo or certificate.',
  );
}

function readPrivateKey(text: string): KeyReading {
  const label = PEM_LABEL.exec(text)?.[1];
  if (label !== undefined) {
    if (label === 'ENCRYPTED PRIVATE KEY') return { problem: 'is encrypted with a passphrase; an unencrypted private key is expected.' };
    if (label === 'PRIVATE KEY' || label === 'RSA PRIVATE KEY') return rsaKey(() => createPrivateKey(text), 'is not a readable PEM private key.');
    return { problem: `is PEM of a ${label}; the exporter's private key is expected.` };
  }
  const der = decodeBase64Strictly(text.replace(/\s+/g, ''));
  if (der === null) return { problem: 'is neither PEM nor base64 DER.' };
  return rsaKey(
    () => firstReadable([
      () => createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }),
      () => createPrivateKey({ key: der, format: 'der', type: 'pkcs1' }),
    ]),
    'is base64 but not DER of a PKCS#8 private key.',
  );
}

function firstReadable(readers: (() => KeyObject)[]): KeyObject {
  let failure: unknown;
  for (const read of readers) {
    try {
      return read();
    } catch (error) {
      failure = error;
    }
  }
  throw failure;
}

function rsaKey(read: () => KeyObject, unreadable: string): KeyReading {
  let key: KeyObject;
  try {
    key = read();
  } catch {
    return { problem: unreadable };
  }
  if (key.asymmetricKeyType !== 'rsa') return { problem: `is a ${key.asymmetricKeyType ?? 'non-asymmetric'} key; an RSA key is expected.` };
  return { key };
}
