import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pbkdf2Sync, randomBytes } from 'node:crypto';
import { checkClientSecret, sealClientSecret } from '../../../src/authority/protocol/token-secret.ts';

const CLIENT_SECRET = 'Zx9-client-secret-ü';

function sealByHand(clientSecret: string, salt: Buffer): string {
  return Buffer.concat([salt, pbkdf2Sync(Buffer.from(clientSecret, 'utf8'), salt, 65_536, 32, 'sha256')]).toString('base64');
}

test('the sealed client secret is a fresh 32-byte salt and PBKDF2-HMAC-SHA256 of the secret under it', async () => {
  const first = await sealClientSecret(CLIENT_SECRET);
  const second = await sealClientSecret(CLIENT_SECRET);
  const bytes = Buffer.from(first, 'base64');
  assert.equal(bytes.length, 64);
  assert.equal(first, sealByHand(CLIENT_SECRET, bytes.subarray(0, 32)));
  assert.notEqual(first, second);
});

test('the authority accepts a right secret, sealed by us or by hand, with any salt length', async () => {
  assert.equal(await checkClientSecret(await sealClientSecret(CLIENT_SECRET), CLIENT_SECRET), true);
  assert.equal(await checkClientSecret(sealByHand(CLIENT_SECRET, randomBytes(32)), CLIENT_SECRET), true);
  assert.equal(await checkClientSecret(sealByHand(CLIENT_SECRET, randomBytes(16)), CLIENT_SECRET), true);
});

test('the authority refuses a wrong secret', async () => {
  assert.equal(await checkClientSecret(await sealClientSecret('another secret'), CLIENT_SECRET), false);
  assert.equal(await checkClientSecret(await sealClientSecret(CLIENT_SECRET), 'another secret'), false);
  const bytes = Buffer.from(await sealClientSecret(CLIENT_SECRET), 'base64');
  bytes[40] = (bytes[40] ?? 0) ^ 1;
  assert.equal(await checkClientSecret(bytes.toString('base64'), CLIENT_SECRET), false);
});

test('the authority refuses a malformed secret', async () => {
  const sealed = await sealClientSecret(CLIENT_SECRET);
  for (const malformed of [
    '',
    CLIENT_SECRET,
    `${sealed}!`,
    sealed.slice(0, -4),
    Buffer.alloc(32).toString('base64'),
    sealed.replaceAll('=', ''),
  ]) {
    assert.equal(await checkClientSecret(malformed, CLIENT_SECRET), false, JSON.stringify(malformed));
  }
});
