import { createHmac, timingSafeEqual } from 'node:crypto';
import type { components } from './schema.d.ts';

/** An event as a webhook delivers it (and GET /api/v1/events/{id} answers it). */
export type WebhookEvent = components['schemas']['Event'];

export type WebhookVerificationReason =
  | 'invalid_secret'
  | 'missing_headers'
  | 'invalid_timestamp'
  | 'timestamp_too_old'
  | 'timestamp_too_new'
  | 'no_matching_signature'
  | 'invalid_body';

/** A webhook that must not be trusted: why is in `reason`. */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
  readonly reason: WebhookVerificationReason;
  constructor(reason: WebhookVerificationReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export type VerifyOptions = {
  /** How far the webhook-timestamp may be from now (300 s, as Standard Webhooks libraries allow). */
  toleranceSeconds?: number;
  /** The clock (for tests). */
  now?: () => Date;
};

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value.join(', ') : value;
  }
  return undefined;
}

/**
 * Verifies a webhook by the Standard Webhooks rules and returns its parsed event: `webhook-signature` holds one or
 * more space-separated `v1,<base64 HMAC-SHA256>` of `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the
 * base64-decoded part of the endpoint's secret after `whsec_`; any one matching (compared in constant time) is
 * enough; `webhook-timestamp` must be within 5 minutes of now. Pass the body exactly as received (the raw text or
 * bytes, never re-serialized JSON). Throws WebhookVerificationError otherwise.
 */
export function verifyWebhook<Event = WebhookEvent>(
  body: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyOptions = {},
): Event {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  if (key.length === 0) throw new WebhookVerificationError('invalid_secret', 'the secret is empty or not base64 (expected whsec_…)');
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) {
    throw new WebhookVerificationError('missing_headers', 'webhook-id, webhook-timestamp and webhook-signature are required');
  }
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('invalid_timestamp', `webhook-timestamp is not Unix seconds: ${timestamp}`);
  const nowSeconds = Math.floor((options.now?.() ?? new Date()).getTime() / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  const sentAt = Number(timestamp);
  if (sentAt < nowSeconds - tolerance) throw new WebhookVerificationError('timestamp_too_old', 'the webhook is older than the tolerance');
  if (sentAt > nowSeconds + tolerance) throw new WebhookVerificationError('timestamp_too_new', 'the webhook is dated in the future');
  const payload = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(payload).digest();
  const matches = signatures.split(' ').some((entry) => {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== 'v1') return false;
    const given = Buffer.from(entry.slice(comma + 1), 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matches) throw new WebhookVerificationError('no_matching_signature', 'no signature matches the secret');
  try {
    return JSON.parse(payload.toString('utf8')) as Event;
  } catch {
    throw new WebhookVerificationError('invalid_body', 'the body is not JSON');
  }
}
