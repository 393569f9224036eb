import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook, WebhookVerificationError, type WebhookVerificationReason } from '@ebrc-gateway/sdk';

const secret = 'whsec_' + Buffer.from('a signing secret of 32 bytes....').toString('base64');
const other = 'whsec_' + Buffer.from('another secret of 32 bytes......').toString('base64');
const body = JSON.stringify({ id: 'evt_1', type: 'webhook.test', createdAt: '2026-01-01T00:00:00.000Z', data: { ok: true } });

function signed(id: string, at: Date, key = secret): Record<string, string> {
  return { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': new Webhook(key).sign(id, at, body) };
}

function refuses(reason: WebhookVerificationReason) {
  return (error: unknown) => error instanceof WebhookVerificationError && error.reason === reason;
}

test('verifyWebhook accepts what standardwebhooks signs, from a Headers or a plain object, as text or bytes', () => {
  const headers = signed('evt_1', new Date());
  assert.deepEqual(verifyWebhook(body, headers, secret), JSON.parse(body));
  assert.deepEqual(verifyWebhook(new TextEncoder().encode(body), new Headers(headers), secret), JSON.parse(body));
  // Capitalised header names, as some frameworks keep them.
  assert.equal(verifyWebhook<{ id: string }>(body, { 'Webhook-Id': headers['webhook-id'], 'Webhook-Timestamp': headers['webhook-timestamp'], 'Webhook-Signature': headers['webhook-signature'] }, secret).id, 'evt_1');
});

test('any one of several space-separated signatures is enough (a rotation)', () => {
  const now = new Date();
  const fromOld = signed('evt_1', now, other)['webhook-signature']!;
  const fromNew = signed('evt_1', now)['webhook-signature']!;
  const headers = { ...signed('evt_1', now), 'webhook-signature': `${fromOld} v2,ignored ${fromNew}` };
  assert.equal(verifyWebhook<{ id: string }>(body, headers, secret).id, 'evt_1');
  assert.equal(verifyWebhook<{ id: string }>(body, headers, other).id, 'evt_1');
});

test('verifyWebhook refuses a tampered body, another id, the wrong secret, an old or future timestamp, missing headers', () => {
  const now = new Date();
  const headers = signed('evt_1', now);
  assert.throws(() => verifyWebhook(body.replace('true', 'false'), headers, secret), refuses('no_matching_signature'));
  assert.throws(() => verifyWebhook(body, { ...headers, 'webhook-id': 'evt_2' }, secret), refuses('no_matching_signature'));
  assert.throws(() => verifyWebhook(body, headers, other), refuses('no_matching_signature'));
  assert.throws(() => verifyWebhook(body, { ...headers, 'webhook-signature': 'v1,' }, secret), refuses('no_matching_signature'));
  const old = signed('evt_1', new Date(now.getTime() - 6 * 60_000));
  assert.throws(() => verifyWebhook(body, old, secret), refuses('timestamp_too_old'));
  const future = signed('evt_1', new Date(now.getTime() + 6 * 60_000));
  assert.throws(() => verifyWebhook(body, future, secret), refuses('timestamp_too_new'));
  // Within 5 minutes either way it passes.
  assert.ok(verifyWebhook(body, signed('evt_1', new Date(now.getTime() - 4 * 60_000)), secret));
  assert.throws(() => verifyWebhook(body, { ...headers, 'webhook-timestamp': 'soon' }, secret), refuses('invalid_timestamp'));
  const { 'webhook-signature': _dropped, ...unsigned } = headers;
  assert.throws(() => verifyWebhook(body, unsigned, secret), refuses('missing_headers'));
  assert.throws(() => verifyWebhook(body, headers, 'whsec_'), refuses('invalid_secret'));
});
