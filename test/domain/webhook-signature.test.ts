import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { newWebhookSecret, signatureHeaders } from '../../src/domain/webhook-signature.ts';

const body = JSON.stringify({ id: 'evt_1', type: 'webhook.test', timestamp: '2025-01-01T00:00:00.000Z', data: { note: 'नमस्ते ✓' } });

// standardwebhooks refuses timestamps more than five minutes from now, so sign with the current time.
function signNow(secrets: readonly string[], eventId = 'evt_1') {
  return signatureHeaders({ eventId, timestamp: new Date(), body, secrets });
}

describe('newWebhookSecret', () => {
  test('is whsec_ and the base64 of 32 random bytes', () => {
    const secret = newWebhookSecret();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    assert.equal(key.length, 32);
    assert.equal(key.toString('base64'), secret.slice('whsec_'.length));
  });

  test('is different every time', () => {
    const secrets = new Set(Array.from({ length: 50 }, () => newWebhookSecret()));
    assert.equal(secrets.size, 50);
  });
});

describe('signatureHeaders', () => {
  test('a Standard Webhooks receiver verifies the signature', () => {
    const secret = newWebhookSecret();
    const headers = signNow([secret]);
    assert.equal(headers['webhook-id'], 'evt_1');
    assert.match(headers['webhook-timestamp'], /^\d+$/);
    assert.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]{43}=$/);
    assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
  });

  test('the timestamp is the Unix seconds of the given time', () => {
    const headers = signatureHeaders({ eventId: 'evt_1', timestamp: new Date('2025-03-04T05:06:07.890Z'), body, secrets: [newWebhookSecret()] });
    assert.equal(headers['webhook-timestamp'], String(Date.UTC(2025, 2, 4, 5, 6, 7) / 1000));
  });

  test('matches the reference implementation byte for byte', () => {
    const secret = newWebhookSecret();
    const timestamp = new Date('2025-03-04T05:06:07.000Z');
    const headers = signatureHeaders({ eventId: 'evt_abc', timestamp, body, secrets: [secret] });
    assert.equal(headers['webhook-signature'], new Webhook(secret).sign('evt_abc', timestamp, body));
  });

  test('with two live secrets, both verify, newest first', () => {
    const newest = newWebhookSecret();
    const previous = newWebhookSecret();
    const headers = signNow([newest, previous]);
    const signatures = headers['webhook-signature'].split(' ');
    assert.equal(signatures.length, 2);
    const timestamp = new Date(Number(headers['webhook-timestamp']) * 1000);
    assert.equal(signatures[0], new Webhook(newest).sign('evt_1', timestamp, body));
    assert.equal(signatures[1], new Webhook(previous).sign('evt_1', timestamp, body));
    assert.doesNotThrow(() => new Webhook(newest).verify(body, headers));
    assert.doesNotThrow(() => new Webhook(previous).verify(body, headers));
    assert.throws(() => new Webhook(newWebhookSecret()).verify(body, headers), /No matching signature/);
  });

  test('a tampered body, timestamp or id is refused', () => {
    const secret = newWebhookSecret();
    const headers = signNow([secret]);
    const receiver = new Webhook(secret);
    assert.throws(() => receiver.verify(body.replace('webhook.test', 'webhook.tost'), headers), /No matching signature/);
    assert.throws(() => receiver.verify(`${body} `, headers), /No matching signature/);
    const later = String(Number(headers['webhook-timestamp']) + 1);
    assert.throws(() => receiver.verify(body, { ...headers, 'webhook-timestamp': later }), /No matching signature/);
    assert.throws(() => receiver.verify(body, { ...headers, 'webhook-id': 'evt_2' }), /No matching signature/);
  });

  test('refuses secrets that are not whsec_ and base64', () => {
    const good = newWebhookSecret();
    for (const secret of ['', 'whsec_', good.slice('whsec_'.length), `whsec ${good.slice(6)}`, 'whsec_not base64!', 'whsec_abc', 'whsec_YWJj=']) {
      assert.throws(() => signNow([good, secret]), /whsec_/, JSON.stringify(secret));
    }
  });

  test('refuses no secret and an invalid date', () => {
    assert.throws(() => signNow([]), /at least one/);
    assert.throws(() => signatureHeaders({ eventId: 'evt_1', timestamp: new Date(Number.NaN), body, secrets: [newWebhookSecret()] }), /valid date/);
  });
});
