/**
 * Standard Webhooks (standardwebhooks.com) signing secrets and signature headers. A receiver verifies a delivery with
 * any Standard Webhooks library, given the endpoint's secret.
 */
import { createHmac, randomBytes } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';

// Canonical padded base64, as Buffer#toString('base64') writes it; Buffer.from(…, 'base64') would skip anything else.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export type WebhookSignatureHeaders = {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
};

/** A new endpoint signing secret: "whsec_" + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

/**
 * The headers of one delivery attempt: `webhook-signature` holds "v1," + base64 HMAC-SHA256 of
 * "{eventId}.{unix seconds}.{body}" for each secret, space-separated in the order given (newest secret first, so that
 * while a rotated secret is still live, a receiver already on the new one finds its signature first).
 * Throws when there is no secret, when a secret is not "whsec_" + base64, or when the timestamp is not a valid date.
 */
export function signatureHeaders(message: {
  eventId: string;
  timestamp: Date;
  body: string;
  secrets: readonly string[];
}): WebhookSignatureHeaders {
  if (message.secrets.length === 0) throw new Error('A webhook needs at least one signing secret.');
  const seconds = Math.floor(message.timestamp.getTime() / 1000);
  if (!Number.isSafeInteger(seconds)) throw new Error('The webhook timestamp is not a valid date.');
  const signed = `${message.eventId}.${seconds}.${message.body}`;
  const signatures = message.secrets.map(
    (secret) => `v1,${createHmac('sha256', secretKey(secret)).update(signed, 'utf8').digest('base64')}`,
  );
  return {
    'webhook-id': message.eventId,
    'webhook-timestamp': String(seconds),
    'webhook-signature': signatures.join(' '),
  };
}

/** The HMAC key of a "whsec_…" secret: the bytes its base64 stands for. */
function secretKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : null;
  // The secret itself never goes into the message: it may end up in a log.
  if (encoded === null || encoded === '' || !BASE64.test(encoded)) {
    throw new Error('A webhook signing secret must be "whsec_" followed by base64.');
  }
  return Buffer.from(encoded, 'base64');
}
