import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  constants,
  createCipheriv,
  createDecipheriv,
  createHash,
  generateKeyPairSync,
  pbkdf2Sync,
  privateDecrypt,
  publicDecrypt,
  publicEncrypt,
  randomBytes,
  sign as rsaSign,
} from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import {
  ENVELOPE_PROFILES,
  EnvelopeError,
  envelopeJson,
  openRequest,
  openResponse,
  readEnvelopeHeaders,
  sealRequest,
  sealResponse,
} from '../../../src/authority/protocol/envelope.ts';
import type { EnvelopeProfile } from '../../../src/authority/protocol/envelope.ts';
import type { EnvelopeErrorCode } from '../../../src/authority/protocol/error-codes.ts';

const authority = generateKeyPairSync('rsa', { modulusLength: 2048 });
const user = generateKeyPairSync('rsa', { modulusLength: 2048 });
const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });

const REQUEST = { iecCode: '0599001001', irmFromDate: '01042025', irmToDate: '', irmNumber: '' };
const ANSWER = { irmResplst: [{ irmNumber: 'IRM-1', remitterName: 'Zürich Exports – ₹ and 中文', irmAvailableAmt: '94404.25' }] };

const SHA256_DIGEST_INFO_PREFIX = Buffer.from('3031300d060960864801650304020105000420', 'hex');

function callerKeys(profile: EnvelopeProfile) {
  return { profile, authorityPublicKey: authority.publicKey, userPrivateKey: user.privateKey };
}

function authorityKeys(profile: EnvelopeProfile) {
  return { profile, authorityPrivateKey: authority.privateKey, userPublicKey: user.publicKey };
}

function base64Of(message: object): string {
  return Buffer.from(JSON.stringify(message), 'utf8').toString('base64');
}

async function rejectsWith(promise: Promise<unknown>, code: EnvelopeErrorCode): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof EnvelopeError, String(error));
    assert.equal(error.code, code, error.message);
    return true;
  });
}

function mgf1Sha256(seed: Buffer, length: number): Buffer {
  const blocks: Buffer[] = [];
  for (let counter = 0; blocks.length * 32 < length; counter++) {
    const counterBytes = Buffer.alloc(4);
    counterBytes.writeUInt32BE(counter);
    blocks.push(createHash('sha256').update(seed).update(counterBytes).digest());
  }
  return Buffer.concat(blocks).subarray(0, length);
}

function xor(a: Buffer, b: Buffer): Buffer {
  return Buffer.from(a.map((byte, i) => byte ^ (b[i] ?? 0)));
}

/** RSAES-OAEP decoding (RFC 8017, 7.1.2) written out, with SHA-256 for both the label hash and MGF1. */
function decryptOaepSha256ByHand(ciphertext: Buffer, privateKey: KeyObject): Buffer {
  const encoded = privateDecrypt({ key: privateKey, padding: constants.RSA_NO_PADDING }, ciphertext);
  const hashLength = 32;
  assert.equal(encoded[0], 0);
  const maskedSeed = encoded.subarray(1, 1 + hashLength);
  const maskedBlock = encoded.subarray(1 + hashLength);
  const seed = xor(maskedSeed, mgf1Sha256(maskedBlock, hashLength));
  const block = xor(maskedBlock, mgf1Sha256(seed, maskedBlock.length));
  assert.deepEqual(block.subarray(0, hashLength), createHash('sha256').update('').digest(), 'the label hash is SHA-256 of the empty label');
  const separator = block.indexOf(1, hashLength);
  assert.ok(block.subarray(hashLength, separator).every((byte) => byte === 0));
  return block.subarray(separator + 1);
}

/** The SHA-256 digest inside a PKCS#1 v1.5 signature, read with the raw public-key operation. */
function signedDigest(sign: string, publicKey: KeyObject): Buffer {
  const digestInfo = publicDecrypt({ key: publicKey, padding: constants.RSA_PKCS1_PADDING }, Buffer.from(sign, 'base64'));
  assert.deepEqual(digestInfo.subarray(0, SHA256_DIGEST_INFO_PREFIX.length), SHA256_DIGEST_INFO_PREFIX);
  return digestInfo.subarray(SHA256_DIGEST_INFO_PREFIX.length);
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

function keyByHand(profile: EnvelopeProfile, secret: string, salt: Buffer): Buffer {
  return profile === 'spec-sha256'
    ? createHash('sha256').update(Buffer.from(secret, 'latin1')).update(salt).digest()
    : pbkdf2Sync(Buffer.from(secret, 'latin1'), salt, 65_536, 32, 'sha256');
}

function decryptByHand(profile: EnvelopeProfile, secret: string, data: string): { text: string; iv: Buffer; key: Buffer } {
  const bytes = Buffer.from(data, 'base64');
  const iv = bytes.subarray(0, 12);
  const salt = bytes.subarray(12, 44);
  const key = keyByHand(profile, secret, salt);
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAuthTag(bytes.subarray(bytes.length - 16));
  const text = Buffer.concat([decipher.update(bytes.subarray(44, bytes.length - 16)), decipher.final()]).toString('latin1');
  return { text, iv, key };
}

function encryptByHand(profile: EnvelopeProfile, secret: string, text: string): string {
  const salt = randomBytes(32);
  const key = keyByHand(profile, secret, salt);
  const iv = profile === 'spec-sha256' ? key.subarray(0, 12) : randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(text, 'latin1'), cipher.final()]);
  return Buffer.concat([iv, salt, ciphertext, cipher.getAuthTag()]).toString('base64');
}

function signByHand(text: string, privateKey: KeyObject): string {
  return rsaSign('sha256', Buffer.from(text, 'utf8'), privateKey).toString('base64');
}

function secretValByHand(secret: string, publicKey: KeyObject = authority.publicKey): string {
  return publicEncrypt({ key: publicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, Buffer.from(secret, 'latin1')).toString('base64');
}

const HAND_SECRET = 'k3Y!~ 0aZ#Q9_pL2^wE5&rT7*yU1(iO8';

for (const profile of ENVELOPE_PROFILES) {
  describe(`envelope, profile ${profile}`, () => {
    test('a request and its answer make the round trip', async () => {
      const sealed = await sealRequest(REQUEST, callerKeys(profile));
      assert.equal(envelopeJson(sealed.body), JSON.stringify(sealed.body), 'the body is sent as the JSON text JSON.stringify gives');
      const opened = await openRequest({ rawBody: envelopeJson(sealed.body), secretVal: sealed.secretVal, ...authorityKeys(profile) });
      assert.deepEqual(opened.message, REQUEST);
      assert.equal(opened.secret, sealed.secret);

      const answer = await sealResponse(ANSWER, { profile, secret: opened.secret, authorityPrivateKey: authority.privateKey });
      assert.equal(envelopeJson(answer), JSON.stringify(answer));
      const read = await openResponse(JSON.parse(envelopeJson(answer)), { profile, secret: sealed.secret, authorityPublicKey: authority.publicKey });
      assert.deepEqual(read, ANSWER);
    });

    test('every call has a fresh 32-character printable secret, salt and ciphertext', async () => {
      const first = await sealRequest(REQUEST, callerKeys(profile));
      const second = await sealRequest(REQUEST, callerKeys(profile));
      assert.match(first.secret, /^[\x21-\x7e]{32}$/);
      assert.notEqual(first.secret, second.secret);
      assert.notEqual(first.secretVal, second.secretVal);
      assert.notEqual(first.body.data, second.body.data);
      const salt = (data: string) => Buffer.from(data, 'base64').subarray(12, 44).toString('hex');
      assert.notEqual(salt(first.body.data), salt(second.body.data));
    });

    test('a sealed request reads by hand: OAEP SHA-256/MGF1-SHA-256 secret, AES-256-GCM of the base64 text, PKCS#1 v1.5 sign', async () => {
      const sealed = await sealRequest(REQUEST, callerKeys(profile));
      const secret = decryptOaepSha256ByHand(Buffer.from(sealed.secretVal, 'base64'), authority.privateKey).toString('latin1');
      assert.equal(secret, sealed.secret);

      const { text, iv, key } = decryptByHand(profile, secret, sealed.body.data);
      assert.equal(text, base64Of(REQUEST));
      if (profile === 'spec-sha256') assert.deepEqual(iv, key.subarray(0, 12), 'spec-sha256 takes the IV from the key');
      assert.deepEqual(signedDigest(sealed.body.sign, user.publicKey), sha256(text), 'the request is signed over its base64 text');
    });

    test('an answer reads by hand, signed over the profile\'s response sign input', async () => {
      const answer = await sealResponse(ANSWER, { profile, secret: HAND_SECRET, authorityPrivateKey: authority.privateKey });
      const { text, iv, key } = decryptByHand(profile, HAND_SECRET, answer.data);
      assert.equal(text, base64Of(ANSWER));
      if (profile === 'spec-sha256') assert.deepEqual(iv, key.subarray(0, 12));
      const signInput = profile === 'spec-sha256' ? text : answer.data;
      assert.deepEqual(signedDigest(answer.sign, authority.publicKey), sha256(signInput));
    });

    test('a request built by hand opens', async () => {
      const text = base64Of(REQUEST);
      const rawBody = JSON.stringify({ data: encryptByHand(profile, HAND_SECRET, text), sign: signByHand(text, user.privateKey) });
      const opened = await openRequest({ rawBody, secretVal: secretValByHand(HAND_SECRET), ...authorityKeys(profile) });
      assert.deepEqual(opened.message, REQUEST);
      assert.equal(opened.secret, HAND_SECRET);
    });

    test('an answer built by hand opens', async () => {
      const text = base64Of(ANSWER);
      const data = encryptByHand(profile, HAND_SECRET, text);
      const sign = signByHand(profile === 'spec-sha256' ? text : data, authority.privateKey);
      const read = await openResponse({ data, sign }, { profile, secret: HAND_SECRET, authorityPublicKey: authority.publicKey });
      assert.deepEqual(read, ANSWER);
    });

    test('the receiver takes the IV from data, not from the key', async () => {
      const text = base64Of(REQUEST);
      const salt = randomBytes(32);
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', keyByHand(profile, HAND_SECRET, salt), iv);
      const ciphertext = Buffer.concat([cipher.update(text, 'latin1'), cipher.final()]);
      const data = Buffer.concat([iv, salt, ciphertext, cipher.getAuthTag()]).toString('base64');
      const rawBody = JSON.stringify({ data, sign: signByHand(text, user.privateKey) });
      const opened = await openRequest({ rawBody, secretVal: secretValByHand(HAND_SECRET), ...authorityKeys(profile) });
      assert.deepEqual(opened.message, REQUEST);
    });

    describe('refusals', () => {
      async function sealed() {
        const request = await sealRequest(REQUEST, callerKeys(profile));
        const open = (changes: { data?: string; sign?: string; secretVal?: string; rawBody?: string }) => openRequest({
          rawBody: changes.rawBody ?? JSON.stringify({ data: changes.data ?? request.body.data, sign: changes.sign ?? request.body.sign }),
          secretVal: changes.secretVal ?? request.secretVal,
          ...authorityKeys(profile),
        });
        return { request, open };
      }

      test('altered data cannot be decrypted (ERR05)', async () => {
        const { request, open } = await sealed();
        for (const offset of [0, 20, 60, -1]) {
          const bytes = Buffer.from(request.body.data, 'base64');
          const at = offset < 0 ? bytes.length + offset : offset;
          bytes[at] = (bytes[at] ?? 0) ^ 1;
          await rejectsWith(open({ data: bytes.toString('base64') }), 'ERR05');
        }
        await rejectsWith(open({ data: 'not base64!' }), 'ERR05');
        await rejectsWith(open({ data: randomBytes(59).toString('base64') }), 'ERR05');
      });

      test('a signature that does not match fails (ERR06)', async () => {
        const { open } = await sealed();
        const other = await sealRequest({ ...REQUEST, irmNumber: 'IRM-2' }, callerKeys(profile));
        await rejectsWith(open({ sign: other.body.sign }), 'ERR06');
        const text = base64Of(REQUEST);
        await rejectsWith(open({ sign: signByHand(text, stranger.privateKey) }), 'ERR06');
        await rejectsWith(open({ sign: signByHand(JSON.stringify(REQUEST), user.privateKey) }), 'ERR06');
        await rejectsWith(open({ sign: '%%%' }), 'ERR06');
      });

      test('a secretVal that is not the authority\'s to open is invalid (ERR04)', async () => {
        const { open } = await sealed();
        await rejectsWith(open({ secretVal: secretValByHand(HAND_SECRET, stranger.publicKey) }), 'ERR04');
        await rejectsWith(open({ secretVal: 'not base64!' }), 'ERR04');
        await rejectsWith(open({ secretVal: secretValByHand(HAND_SECRET.slice(1)) }), 'ERR04');
        await rejectsWith(open({ secretVal: secretValByHand(`${HAND_SECRET.slice(1)}\n`) }), 'ERR04');
      });

      test('a secretVal of another secret cannot decrypt data (ERR05)', async () => {
        const { open } = await sealed();
        await rejectsWith(open({ secretVal: secretValByHand(HAND_SECRET) }), 'ERR05');
      });

      test('a body that is not the envelope, or data that is not base64 JSON, is invalid JSON (ERR03)', async () => {
        const { request, open } = await sealed();
        await rejectsWith(open({ rawBody: '{"data":' }), 'ERR03');
        await rejectsWith(open({ rawBody: JSON.stringify({ data: request.body.data }) }), 'ERR03');
        await rejectsWith(open({ rawBody: JSON.stringify([request.body.data, request.body.sign]) }), 'ERR03');

        for (const text of ['{"not":"base64"}', Buffer.from('[1,2]').toString('base64'), Buffer.from('{"a":').toString('base64')]) {
          const rawBody = JSON.stringify({ data: encryptByHand(profile, HAND_SECRET, text), sign: signByHand(text, user.privateKey) });
          await rejectsWith(openRequest({ rawBody, secretVal: secretValByHand(HAND_SECRET), ...authorityKeys(profile) }), 'ERR03');
        }
      });

      test('an altered or foreign answer is refused by the caller', async () => {
        const answer = await sealResponse(ANSWER, { profile, secret: HAND_SECRET, authorityPrivateKey: authority.privateKey });
        const keys = { profile, secret: HAND_SECRET, authorityPublicKey: authority.publicKey };
        const other = await sealResponse({ irmResplst: [] }, { profile, secret: HAND_SECRET, authorityPrivateKey: authority.privateKey });
        await rejectsWith(openResponse({ data: answer.data, sign: other.sign }, keys), 'ERR06');
        const forged = await sealResponse(ANSWER, { profile, secret: HAND_SECRET, authorityPrivateKey: stranger.privateKey });
        await rejectsWith(openResponse(forged, keys), 'ERR06');
        const bytes = Buffer.from(answer.data, 'base64');
        bytes[50] = (bytes[50] ?? 0) ^ 1;
        await rejectsWith(openResponse({ data: bytes.toString('base64'), sign: answer.sign }, keys), profile === 'java-pbkdf2' ? 'ERR06' : 'ERR05');
        await rejectsWith(openResponse(answer, { ...keys, secret: HAND_SECRET.toUpperCase() }), 'ERR05');
        await rejectsWith(openResponse({ data: answer.data }, keys), 'ERR03');
      });
    });
  });
}

describe('a profile mismatch', () => {
  test('the authority cannot decrypt a request sealed under the other profile (ERR05)', async () => {
    for (const [sealedUnder, openedUnder] of [['spec-sha256', 'java-pbkdf2'], ['java-pbkdf2', 'spec-sha256']] as const) {
      const sealed = await sealRequest(REQUEST, callerKeys(sealedUnder));
      await rejectsWith(
        openRequest({ rawBody: JSON.stringify(sealed.body), secretVal: sealed.secretVal, ...authorityKeys(openedUnder) }),
        'ERR05',
      );
    }
  });

  test('the caller refuses an answer sealed under the other profile (ERR05, or ERR06 where the signature is read first)', async () => {
    const spec = await sealResponse(ANSWER, { profile: 'spec-sha256', secret: HAND_SECRET, authorityPrivateKey: authority.privateKey });
    await rejectsWith(openResponse(spec, { profile: 'java-pbkdf2', secret: HAND_SECRET, authorityPublicKey: authority.publicKey }), 'ERR06');
    const java = await sealResponse(ANSWER, { profile: 'java-pbkdf2', secret: HAND_SECRET, authorityPrivateKey: authority.privateKey });
    await rejectsWith(openResponse(java, { profile: 'spec-sha256', secret: HAND_SECRET, authorityPublicKey: authority.publicKey }), 'ERR05');
  });
});

describe('envelope headers on the authority\'s side', () => {
  const headers = { accesstoken: 'token', client_id: 'client', secretval: 'c2VjcmV0', messageid: 'a'.repeat(50), 'x-api-key': 'key' };

  test('reads the four envelope headers from Node\'s lower-cased names', () => {
    assert.deepEqual(readEnvelopeHeaders(headers), { accessToken: 'token', clientId: 'client', secretVal: 'c2VjcmV0', messageId: 'a'.repeat(50) });
  });

  test('a missing or empty header, or a messageID over 50 characters, is ERR02', () => {
    const refused = (changed: Record<string, string | undefined>) =>
      assert.throws(() => readEnvelopeHeaders({ ...headers, ...changed }), (error: unknown) => error instanceof EnvelopeError && error.code === 'ERR02');
    refused({ accesstoken: undefined });
    refused({ client_id: '' });
    refused({ secretval: undefined });
    refused({ messageid: 'a'.repeat(51) });
  });
});
