/**
 * The `{data, sign}` envelope of authority-wire.md ("The envelope"), both profiles, both directions:
 *
 *   caller                                   authority
 *   sealRequest  ── data, sign, secretVal ─▶ openRequest
 *   openResponse ◀──────── data, sign ────── sealResponse (same secret, fresh salt and IV)
 *
 * The message is JSON, then base64 of its UTF-8 bytes; that base64 text is what AES-256-GCM encrypts.
 * data = base64(IV ‖ salt ‖ ciphertext ‖ tag). The receiver always reads IV and salt from data.
 */
import {
  constants,
  createCipheriv,
  createDecipheriv,
  createHash,
  pbkdf2,
  privateDecrypt,
  publicEncrypt,
  randomBytes,
  randomInt,
  sign as rsaSign,
  verify as rsaVerify,
} from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { decodeBase64Strictly } from './base64.ts';
import type { EnvelopeErrorCode } from './error-codes.ts';
import type { EnvelopeBody } from './messages.ts';
import { HEADER_NAMES, MAX_MESSAGE_ID_LENGTH } from './messages.ts';

export const ENVELOPE_PROFILES = ['spec-sha256', 'java-pbkdf2'] as const;

/**
 * spec-sha256: key SHA-256(secret ‖ salt), IV the key's first 12 bytes, response signed over the decrypted base64 text.
 * java-pbkdf2: key PBKDF2-HMAC-SHA256(secret, salt, 65536, 32), IV random, response signed over its data string.
 * Both sign a request over its base64 text.
 */
export type EnvelopeProfile = (typeof ENVELOPE_PROFILES)[number];

export const DEFAULT_ENVELOPE_PROFILE: EnvelopeProfile = 'spec-sha256';

export function isEnvelopeProfile(value: unknown): value is EnvelopeProfile {
  return typeof value === 'string' && (ENVELOPE_PROFILES as readonly string[]).includes(value);
}

/** Why an envelope could not be opened, as the authority's code for it (error-codes.ts says which is which). */
export class EnvelopeError extends Error {
  readonly code: EnvelopeErrorCode;
  constructor(code: EnvelopeErrorCode, message: string) {
    super(message);
    this.name = 'EnvelopeError';
    this.code = code;
  }
}

const SECRET_LENGTH = 32;
const SALT_LENGTH = 32;
const IV_LENGTH = 12;
const TAG_LENGTH = 16;
const KEY_LENGTH = 32;
const PBKDF2_ITERATIONS = 65_536;
const CIPHER = 'aes-256-gcm';
// Printable ASCII is 0x20-0x7E. A secret we make leaves out the space, which some implementations trim.
const SECRET_ALPHABET_FIRST = 0x21;
const SECRET_ALPHABET_END = 0x7f;
const RECEIVED_SECRET = /^[\x20-\x7e]{32}$/;

const pbkdf2Async = promisify(pbkdf2);
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

export type SealedRequest = {
  body: EnvelopeBody;
  /** The secretVal header. */
  secretVal: string;
  /** The call's secret: the caller keeps it to open the response. */
  secret: string;
};

export type OpenedRequest = { message: Record<string, unknown>; secret: string };

export type EnvelopeHeaders = { accessToken: string; clientId: string; secretVal: string; messageId: string };

/** The caller's side: seals a plain request for the authority. */
export async function sealRequest(
  message: object,
  keys: { profile: EnvelopeProfile; authorityPublicKey: KeyObject; userPrivateKey: KeyObject },
): Promise<SealedRequest> {
  const secret = newSecret();
  const text = encodeMessage(message);
  const data = await encryptText(keys.profile, secret, text);
  return {
    body: { data, sign: signBytes(text, keys.userPrivateKey) },
    secretVal: publicEncrypt(oaep(keys.authorityPublicKey), Buffer.from(secret, 'latin1')).toString('base64'),
    secret,
  };
}

/**
 * The authority's side: reads the four envelope headers from Node's lower-cased request headers. x-api-key is the
 * gateway's concern, before the envelope is looked at.
 */
export function readEnvelopeHeaders(headers: Record<string, string | string[] | undefined>): EnvelopeHeaders {
  const read = (name: string): string => {
    const value = headers[name.toLowerCase()];
    if (typeof value !== 'string' || value.length === 0) {
      throw new EnvelopeError('ERR02', `The mandatory header ${name} is missing or empty.`);
    }
    return value;
  };
  const messageId = read(HEADER_NAMES.messageId);
  if (messageId.length > MAX_MESSAGE_ID_LENGTH) {
    throw new EnvelopeError('ERR02', `The header ${HEADER_NAMES.messageId} is longer than ${MAX_MESSAGE_ID_LENGTH} characters.`);
  }
  return {
    accessToken: read(HEADER_NAMES.accessToken),
    clientId: read(HEADER_NAMES.clientId),
    secretVal: read(HEADER_NAMES.secretVal),
    messageId,
  };
}

/** The authority's side: opens a request with its private key and checks it was signed with the user's key. */
export async function openRequest(input: {
  rawBody: string;
  secretVal: string;
  profile: EnvelopeProfile;
  authorityPrivateKey: KeyObject;
  userPublicKey: KeyObject;
}): Promise<OpenedRequest> {
  const body = readEnvelopeBody(parseJson(input.rawBody));
  const secret = openSecretVal(input.secretVal, input.authorityPrivateKey);
  const plaintext = await decryptData(input.profile, secret, body.data);
  verifySignature(plaintext, body.sign, input.userPublicKey, 'the request');
  return { message: decodeMessage(plaintext), secret };
}

/** The authority's side: seals its answer under the request's secret, with a fresh salt and IV. */
export async function sealResponse(
  message: object,
  keys: { profile: EnvelopeProfile; secret: string; authorityPrivateKey: KeyObject },
): Promise<EnvelopeBody> {
  const text = encodeMessage(message);
  const data = await encryptText(keys.profile, keys.secret, text);
  const signInput = keys.profile === 'spec-sha256' ? text : Buffer.from(data, 'latin1');
  return { data, sign: signBytes(signInput, keys.authorityPrivateKey) };
}

/**
 * A sealed body as JSON text, the same text JSON.stringify gives. Both fields are base64, which JSON never escapes, so
 * the text is put together as it is: JSON.stringify would scan a 999-line push's 2 MB of data a character at a time.
 */
export function envelopeJson(body: EnvelopeBody): string {
  return `{"data":"${body.data}","sign":"${body.sign}"}`;
}

/** The caller's side: checks the authority's signature on its answer, then decrypts and parses it. */
export async function openResponse(
  body: unknown,
  keys: { profile: EnvelopeProfile; secret: string; authorityPublicKey: KeyObject },
): Promise<Record<string, unknown>> {
  const envelope = readEnvelopeBody(body);
  if (keys.profile === 'java-pbkdf2') {
    verifySignature(Buffer.from(envelope.data, 'utf8'), envelope.sign, keys.authorityPublicKey, 'the answer');
    return decodeMessage(await decryptData(keys.profile, keys.secret, envelope.data));
  }
  const plaintext = await decryptData(keys.profile, keys.secret, envelope.data);
  verifySignature(plaintext, envelope.sign, keys.authorityPublicKey, 'the answer');
  return decodeMessage(plaintext);
}

function newSecret(): string {
  let secret = '';
  for (let i = 0; i < SECRET_LENGTH; i++) secret += String.fromCharCode(randomInt(SECRET_ALPHABET_FIRST, SECRET_ALPHABET_END));
  return secret;
}

/** The message's base64 text, as the bytes that are encrypted and signed: encoded once for both. */
function encodeMessage(message: object): Buffer {
  return Buffer.from(Buffer.from(JSON.stringify(message), 'utf8').toString('base64'), 'latin1');
}

function decodeMessage(plaintext: Buffer): Record<string, unknown> {
  const bytes = decodeBase64Strictly(plaintext.toString('latin1'));
  if (bytes === null) throw new EnvelopeError('ERR03', 'The decrypted message is not base64 text.');
  let json: string;
  try {
    json = strictUtf8.decode(bytes);
  } catch {
    throw new EnvelopeError('ERR03', 'The decrypted message is not UTF-8.');
  }
  const message = parseJson(json);
  if (!isPlainObject(message)) throw new EnvelopeError('ERR03', 'The decrypted message is not a JSON object.');
  return message;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new EnvelopeError('ERR03', 'The body is not JSON.');
  }
}

function readEnvelopeBody(body: unknown): EnvelopeBody {
  if (!isPlainObject(body) || typeof body.data !== 'string' || typeof body.sign !== 'string') {
    throw new EnvelopeError('ERR03', 'The body is not a JSON object with the strings data and sign.');
  }
  return { data: body.data, sign: body.sign };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

async function deriveKey(profile: EnvelopeProfile, secret: string, salt: Buffer): Promise<Buffer> {
  const secretBytes = Buffer.from(secret, 'latin1');
  if (profile === 'spec-sha256') return createHash('sha256').update(secretBytes).update(salt).digest();
  return pbkdf2Async(secretBytes, salt, PBKDF2_ITERATIONS, KEY_LENGTH, 'sha256');
}

async function encryptText(profile: EnvelopeProfile, secret: string, text: Buffer): Promise<string> {
  const salt = randomBytes(SALT_LENGTH);
  const key = await deriveKey(profile, secret, salt);
  const iv = profile === 'spec-sha256' ? key.subarray(0, IV_LENGTH) : randomBytes(IV_LENGTH);
  const cipher = createCipheriv(CIPHER, key, iv, { authTagLength: TAG_LENGTH });
  // The elements are evaluated in order: the tag is there only once the cipher is final.
  return Buffer.concat([iv, salt, cipher.update(text), cipher.final(), cipher.getAuthTag()]).toString('base64');
}

async function decryptData(profile: EnvelopeProfile, secret: string, data: string): Promise<Buffer> {
  const bytes = decodeBase64Strictly(data);
  if (bytes === null) throw new EnvelopeError('ERR05', 'data is not base64.');
  if (bytes.length < IV_LENGTH + SALT_LENGTH + TAG_LENGTH) {
    throw new EnvelopeError('ERR05', 'data is too short to hold an IV, a salt and a GCM tag.');
  }
  const iv = bytes.subarray(0, IV_LENGTH);
  const salt = bytes.subarray(IV_LENGTH, IV_LENGTH + SALT_LENGTH);
  const ciphertext = bytes.subarray(IV_LENGTH + SALT_LENGTH, bytes.length - TAG_LENGTH);
  const tag = bytes.subarray(bytes.length - TAG_LENGTH);
  const key = await deriveKey(profile, secret, salt);
  const decipher = createDecipheriv(CIPHER, key, iv, { authTagLength: TAG_LENGTH });
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]);
  } catch {
    throw new EnvelopeError('ERR05', `data does not decrypt under envelope profile ${profile}.`);
  }
}

function signBytes(signed: Buffer, privateKey: KeyObject): string {
  return rsaSign('sha256', signed, { key: privateKey, padding: constants.RSA_PKCS1_PADDING }).toString('base64');
}

function verifySignature(signed: Buffer, sign: string, publicKey: KeyObject, what: string): void {
  const signature = decodeBase64Strictly(sign);
  let valid = false;
  if (signature !== null) {
    try {
      valid = rsaVerify('sha256', signed, { key: publicKey, padding: constants.RSA_PKCS1_PADDING }, signature);
    } catch {
      valid = false;
    }
  }
  if (!valid) throw new EnvelopeError('ERR06', `The signature of ${what} does not verify.`);
}

function oaep(key: KeyObject) {
  // oaepHash sets both the OAEP digest and the MGF1 digest; the label stays empty.
  return { key, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' };
}

function openSecretVal(secretVal: string, authorityPrivateKey: KeyObject): string {
  const encrypted = decodeBase64Strictly(secretVal);
  if (encrypted === null) throw new EnvelopeError('ERR04', 'secretVal is not base64.');
  let secret: string;
  try {
    secret = privateDecrypt(oaep(authorityPrivateKey), encrypted).toString('latin1');
  } catch {
    throw new EnvelopeError('ERR04', "secretVal does not decrypt with the authority's private key.");
  }
  if (!RECEIVED_SECRET.test(secret)) throw new EnvelopeError('ERR04', 'secretVal is not 32 printable ASCII characters.');
  return secret;
}
