import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { constants, createPrivateKey, createPublicKey, generateKeyPairSync, privateDecrypt, publicEncrypt } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { credentialSetToText, parseCredentialSet } from '../../../src/authority/protocol/credentials.ts';
import type { CredentialSet } from '../../../src/authority/protocol/credentials.ts';
import { AUTHORITY_CERTIFICATE_PEM, AUTHORITY_PRIVATE_KEY_PEM } from './certificate-fixture.ts';

const authorityPrivateKey = createPrivateKey(AUTHORITY_PRIVATE_KEY_PEM);
const authorityPublicKey = createPublicKey(authorityPrivateKey);
const user = generateKeyPairSync('rsa', { modulusLength: 2048 });

const derBase64 = (key: KeyObject) =>
  key.export({ format: 'der', type: key.type === 'private' ? 'pkcs8' : 'spki' }).toString('base64');
const pem = (key: KeyObject) =>
  String(key.export({ format: 'pem', type: key.type === 'private' ? 'pkcs8' : 'spki' }));
const certificateDerBase64 = AUTHORITY_CERTIFICATE_PEM.replace(/-----[A-Z ]+-----|\s/g, '');

/** The file as the authority's portal gives it, with the IEC the caller adds. */
const AUTHORITY_FILE = {
  iecCode: '0599001001',
  client_Id: 'client-7781',
  client_secret: 's3cr3t',
  'x-Api-Key': 'gateway-key',
  dgftpublicKey: certificateDerBase64,
  userprivateKey: derBase64(user.privateKey),
};

function parsed(input: unknown): CredentialSet {
  const result = parseCredentialSet(input, 'spec-sha256');
  assert.ok(result.ok, JSON.stringify(result));
  return result.credentials;
}

function problemsOf(input: unknown): { field: string; message: string }[] {
  const result = parseCredentialSet(input, 'spec-sha256');
  assert.equal(result.ok, false);
  return result.ok ? [] : result.problems;
}

/** The public key reads as the fixture authority's: what it encrypts, the authority's private key decrypts. */
function assertIsAuthorityKey(key: KeyObject): void {
  const padding = { padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' };
  const encrypted = publicEncrypt({ key, ...padding }, Buffer.from('secret'));
  assert.equal(privateDecrypt({ key: authorityPrivateKey, ...padding }, encrypted).toString(), 'secret');
}

describe('credential set', () => {
  test("reads the authority's own file names with a DER certificate and a bare base64 PKCS#8 key", () => {
    const credentials = parsed(AUTHORITY_FILE);
    assert.equal(credentials.iecCode, '0599001001');
    assert.equal(credentials.clientId, 'client-7781');
    assert.equal(credentials.clientSecret, 's3cr3t');
    assert.equal(credentials.apiKey, 'gateway-key');
    assert.equal(credentials.envelopeProfile, 'spec-sha256');
    assertIsAuthorityKey(credentials.authorityPublicKey);
    assert.equal(derBase64(credentials.userPrivateKey), derBase64(user.privateKey));
  });

  test("reads this service's names with PEM keys and a profile", () => {
    const credentials = parsed({
      iecCode: '0599001001',
      clientId: 'client-7781',
      clientSecret: 's3cr3t',
      apiKey: 'gateway-key',
      authorityPublicKey: pem(authorityPublicKey),
      userPrivateKey: pem(user.privateKey),
      envelopeProfile: 'java-pbkdf2',
    });
    assert.equal(credentials.envelopeProfile, 'java-pbkdf2');
    assertIsAuthorityKey(credentials.authorityPublicKey);
  });

  test('reads every encoding of the public key: bare base64 SPKI, PEM, a PEM certificate, a DER certificate wrapped in lines', () => {
    const encodings = [
      derBase64(authorityPublicKey),
      pem(authorityPublicKey),
      AUTHORITY_CERTIFICATE_PEM,
      certificateDerBase64.replace(/(.{64})/g, '$1\n'),
      String(authorityPublicKey.export({ format: 'pem', type: 'pkcs1' })),
    ];
    for (const dgftpublicKey of encodings) assertIsAuthorityKey(parsed({ ...AUTHORITY_FILE, dgftpublicKey }).authorityPublicKey);
  });

  test('reads every encoding of the private key: bare base64 PKCS#8, PEM PKCS#8, PEM PKCS#1', () => {
    const encodings = [
      derBase64(user.privateKey),
      pem(user.privateKey),
      String(user.privateKey.export({ format: 'pem', type: 'pkcs1' })),
    ];
    for (const userprivateKey of encodings) {
      assert.equal(derBase64(parsed({ ...AUTHORITY_FILE, userprivateKey }).userPrivateKey), derBase64(user.privateKey));
    }
  });

  test('names the field of a malformed key, in the name the input used', () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ dgftpublicKey: 'not a key' }, 'dgftpublicKey', /neither PEM nor base64/],
      [{ dgftpublicKey: Buffer.from('hello world!').toString('base64') }, 'dgftpublicKey', /not DER/],
      [{ dgftpublicKey: pem(user.privateKey) }, 'dgftpublicKey', /private key/],
      [{ dgftpublicKey: pem(ec.publicKey) }, 'dgftpublicKey', /ec key; an RSA key/],
      [{ dgftpublicKey: AUTHORITY_CERTIFICATE_PEM.replace('MIID', 'MIIX') }, 'dgftpublicKey', /certificate/],
      [{ userprivateKey: derBase64(user.publicKey) }, 'userprivateKey', /not DER of a PKCS#8/],
      [{ userprivateKey: AUTHORITY_CERTIFICATE_PEM }, 'userprivateKey', /CERTIFICATE/],
      [{ userprivateKey: pem(ec.privateKey) }, 'userprivateKey', /RSA key is expected/],
      [{ userprivateKey: '-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----' }, 'userprivateKey', /passphrase/],
      [{ userprivateKey: 42 }, 'userprivateKey', /non-empty string/],
    ];
    for (const [change, field, message] of cases) {
      const problems = problemsOf({ ...AUTHORITY_FILE, ...change });
      assert.equal(problems.length, 1, JSON.stringify(problems));
      assert.equal(problems[0]?.field, field);
      assert.match(problems[0]?.message ?? '', message);
    }
  });

  test('names missing fields, a bad IEC, an unknown profile and a field given twice with different values', () => {
    const { client_secret: _secret, userprivateKey: _key, ...partial } = AUTHORITY_FILE;
    assert.deepEqual(problemsOf(partial).map((problem) => problem.field), ['clientSecret', 'userPrivateKey']);
    assert.match(problemsOf(partial)[1]?.message ?? '', /userprivateKey in the authority's file/);
    assert.deepEqual(problemsOf({ ...AUTHORITY_FILE, iecCode: '05990' }).map((p) => p.field), ['iecCode']);
    assert.deepEqual(problemsOf({ ...AUTHORITY_FILE, envelopeProfile: 'aes-cbc' }).map((p) => p.field), ['envelopeProfile']);
    assert.deepEqual(problemsOf({ ...AUTHORITY_FILE, clientId: 'other' }).map((p) => p.field), ['clientId']);
    assert.equal(parsed({ ...AUTHORITY_FILE, clientId: AUTHORITY_FILE.client_Id }).clientId, 'client-7781');
    assert.deepEqual(problemsOf([AUTHORITY_FILE]).map((p) => p.field), ['']);
  });

  test('the text form reads back to the same set', () => {
    const credentials = parsed({ ...AUTHORITY_FILE, envelopeProfile: 'java-pbkdf2' });
    const text = credentialSetToText(credentials);
    assert.equal(text.authorityPublicKey, derBase64(authorityPublicKey));
    const again = parsed(text);
    assert.deepEqual(credentialSetToText(again), text);
  });
});
