import { randomBytes } from 'node:crypto';

/** Every event type (contract 9), in the catalogue's order. */
export const EVENT_TYPES = [
  'genebrc.request.acknowledged',
  'genebrc.request.failed',
  'genebrc.request.processed',
  'genebrc.request.partially_processed',
  'genebrc.request.errored',
  'platform_customer.verified',
  'platform_customer.credentials_invalid',
  'irm.received',
  'irm.updated',
  'ebrc.generated',
  'ebrc.updated',
  'bulk_upload.completed',
  'reconciliation.completed',
  'webhook.test',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** What an endpoint may subscribe to: event types, or every type. */
export const ALL_EVENTS = '*';

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

/** Whether an endpoint subscribed to `enabledEvents` receives an event of this type (webhook.test goes to its endpoint alone). */
export function endpointWants(enabledEvents: readonly string[], type: string): boolean {
  return enabledEvents.includes(ALL_EVENTS) || enabledEvents.includes(type);
}

const EVENT_ID_BYTES = 24;
/**
 * Random bytes for this many ids are drawn at once: a finished 999-line request makes 999 events, and one call of
 * randomBytes per id cost more than all else its id takes (crypto.randomUUID keeps a pool for the same reason).
 */
const IDS_PER_DRAW = 256;
let randomPool = Buffer.alloc(0);
let poolOffset = 0;

/** "evt_" and 24 random bytes in base64url: unguessable, the same on every delivery attempt (webhook-id). */
export function newEventId(): string {
  if (poolOffset + EVENT_ID_BYTES > randomPool.length) {
    randomPool = randomBytes(EVENT_ID_BYTES * IDS_PER_DRAW);
    poolOffset = 0;
  }
  const id = randomPool.toString('base64url', poolOffset, poolOffset + EVENT_ID_BYTES);
  poolOffset += EVENT_ID_BYTES;
  return `evt_${id}`;
}
