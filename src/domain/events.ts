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

/** "evt_" and 24 random bytes in base64url: unguessable, the same on every delivery attempt (webhook-id). */
export function newEventId(): string {
  return `evt_${randomBytes(24).toString('base64url')}`;
}
