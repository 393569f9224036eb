import { Type, type Static } from 'typebox';
import { EVENT_TYPES } from '../domain/events.ts';
import { DateTime, EXAMPLE_EVENT_ID, EXAMPLE_WEBHOOK_ENDPOINT_ID, ItemsPage, Nullable, PageQuery, type Examples } from './common.ts';
import { EXAMPLE_TEST_EVENT } from './events.ts';

// ---- Webhook endpoints and their deliveries (contract 9) ----

const WEBHOOK_URL = Type.String({
  minLength: 1,
  maxLength: 2048,
  format: 'uri',
  description:
    'https://, or http:// for a public host; a host that is or resolves to a loopback, private, link-local or internal address is refused (400 webhook_url_not_allowed)',
  examples: ['https://platform.example/webhooks/ebrc'],
});
const WEBHOOK_DESCRIPTION = Nullable(Type.String({ maxLength: 500 }), { description: 'A note of your own, up to 500 characters' });
const ENABLED_EVENTS = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
  minItems: 1,
  maxItems: 20,
  description: `The event types to receive (${EVENT_TYPES.join(', ')}), or ["*"] for every type. Duplicates are dropped; "*" beside other types means every type. An unknown type is a 400 (code unknown_event_type).`,
  examples: [['genebrc.request.processed', 'ebrc.generated'], ['*']],
});
const WEBHOOK_STATUS = Type.Union([Type.Literal('enabled'), Type.Literal('disabled')], {
  description: 'disabled: nothing is delivered to it (by its platform, or after every delivery failed for 5 days)',
});

export const WebhookEndpointSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    url: Type.String(),
    description: Nullable(Type.String()),
    enabledEvents: Type.Array(Type.String()),
    status: WEBHOOK_STATUS,
    disabledReason: Nullable(Type.String(), {
      description: 'Why it is disabled ("disabled by the platform", or its deliveries failing); null while enabled. A field this service adds to the contract\'s.',
    }),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { $id: 'WebhookEndpoint', description: 'A webhook endpoint; its signing secret is never shown here' },
);
export type WebhookEndpoint = Static<typeof WebhookEndpointSchema>;
export const WebhookEndpointRef = Type.Unsafe<WebhookEndpoint>(Type.Ref('WebhookEndpoint'));

const WEBHOOK_SECRET = Type.String({
  description:
    'The signing secret: "whsec_" and the base64 of 32 random bytes. Shown only in this answer; keep it to verify the webhook-signature header (Standard Webhooks).',
  examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
});

export const CreatedWebhookEndpointSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  url: Type.String(),
  description: Nullable(Type.String()),
  enabledEvents: Type.Array(Type.String()),
  status: Type.Literal('enabled'),
  secret: WEBHOOK_SECRET,
  createdAt: DateTime,
});
export type CreatedWebhookEndpoint = Static<typeof CreatedWebhookEndpointSchema>;

export const WebhookSecretSchema = Type.Object({ secret: WEBHOOK_SECRET });

export const CreateWebhookEndpointBody = Type.Object(
  { url: WEBHOOK_URL, description: Type.Optional(WEBHOOK_DESCRIPTION), enabledEvents: ENABLED_EVENTS },
  { additionalProperties: false },
);
export type NewWebhookEndpoint = Static<typeof CreateWebhookEndpointBody>;

export const UpdateWebhookEndpointBody = Type.Object(
  {
    url: Type.Optional(WEBHOOK_URL),
    description: Type.Optional(WEBHOOK_DESCRIPTION),
    enabledEvents: Type.Optional(ENABLED_EVENTS),
    status: Type.Optional(WEBHOOK_STATUS),
  },
  { additionalProperties: false, description: 'At least one field; those left out stay as they are' },
);
export type WebhookEndpointChanges = Static<typeof UpdateWebhookEndpointBody>;

export const WebhookEndpointParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100, description: 'The webhook endpoint id' }) });

export const WebhookEndpointListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });
export const WebhookEndpointListSchema = ItemsPage(WebhookEndpointRef);

export const WebhookDeliverySchema = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The attempt' }),
  eventId: Type.String(),
  eventType: Type.String(),
  attempt: Type.Integer({ description: '1 for the first attempt to deliver the event to this endpoint, then 2, 3, …' }),
  status: Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')]),
  responseStatus: Nullable(Type.Integer(), { description: "The receiver's HTTP status; null when none came (a timeout, a refused connection)" }),
  responseBody: Nullable(Type.String(), { description: "The start of the receiver's answer, at most 1 KiB. A field this service adds to the contract's." }),
  durationMs: Nullable(Type.Integer()),
  error: Nullable(Type.String(), { description: 'Why the attempt failed, when it did' }),
  createdAt: DateTime,
  nextAttemptAt: Nullable(DateTime, { description: 'Pending: when it is due. Failed: when the next attempt is due; null when none follows' }),
});
export type WebhookDelivery = Static<typeof WebhookDeliverySchema>;

export const WebhookDeliveryListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });
export const WebhookDeliveryListSchema = ItemsPage(WebhookDeliverySchema);

export const RedeliverBody = Type.Object(
  { eventId: Type.String({ minLength: 1, maxLength: 100, description: "One of the platform's events (evt_…)" }) },
  { additionalProperties: false },
);

const EXAMPLE_ENDPOINT = {
  id: EXAMPLE_WEBHOOK_ENDPOINT_ID,
  url: 'https://platform.example/webhooks/ebrc',
  description: 'Production receiver',
  enabledEvents: ['genebrc.request.processed', 'ebrc.generated'],
  status: 'enabled' as const,
  disabledReason: null,
  createdAt: '2026-11-25T02:00:00.000Z',
  updatedAt: '2026-11-25T02:00:00.000Z',
};

const EXAMPLE_DELIVERY = {
  id: '5c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f',
  eventId: EXAMPLE_EVENT_ID,
  eventType: 'platform_customer.verified',
  attempt: 1,
  status: 'pending' as const,
  responseStatus: null,
  responseBody: null,
  durationMs: null,
  error: null,
  createdAt: '2026-11-25T02:06:00.000Z',
  nextAttemptAt: '2026-11-25T02:06:00.000Z',
};

export const WEBHOOK_ENDPOINT_EXAMPLES = {
  createEndpoint: {
    request: {
      endpoint: {
        summary: 'Processed requests and their eBRCs',
        value: { url: 'https://platform.example/webhooks/ebrc', description: 'Production receiver', enabledEvents: ['genebrc.request.processed', 'ebrc.generated'] },
      },
    },
    created: {
      endpoint: {
        summary: 'Created and enabled, with its signing secret (shown this once)',
        value: {
          id: EXAMPLE_WEBHOOK_ENDPOINT_ID,
          url: 'https://platform.example/webhooks/ebrc',
          description: 'Production receiver',
          enabledEvents: ['genebrc.request.processed', 'ebrc.generated'],
          status: 'enabled',
          secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
          createdAt: '2026-11-25T02:00:00.000Z',
        },
      },
    },
  },
  endpoint: { endpoint: { summary: 'An enabled endpoint', value: EXAMPLE_ENDPOINT } },
  endpointList: {
    page: { summary: 'The first page', value: { items: [EXAMPLE_ENDPOINT], meta: { totalItems: 1, itemsPerPage: 10, totalPages: 1, currentPage: 1 } } },
  },
  updateEndpoint: {
    request: {
      subscribe: { summary: 'Subscribe to every event type', value: { enabledEvents: ['*'], description: 'Every event' } },
    },
    updated: {
      subscribe: {
        summary: 'The endpoint, changed',
        value: { ...EXAMPLE_ENDPOINT, enabledEvents: ['*'], description: 'Every event', updatedAt: '2026-11-25T02:10:00.000Z' },
      },
    },
  },
  secret: { rotated: { summary: 'The new secret', value: { secret: 'whsec_Q2hhbmdlZFNlY3JldEV4YW1wbGVPbmx5MDE=' } } },
  testEvent: { event: { summary: 'The webhook.test event', value: EXAMPLE_TEST_EVENT } },
  deliveryList: {
    page: {
      summary: 'Two attempts',
      value: {
        items: [
          { ...EXAMPLE_DELIVERY, status: 'succeeded', responseStatus: 200, responseBody: 'ok', durationMs: 84, nextAttemptAt: null },
          {
            ...EXAMPLE_DELIVERY,
            id: '6d2e3f4a-5b6c-4d7e-8f9a-0b1c2d3e4f5a',
            status: 'failed',
            responseStatus: 503,
            responseBody: 'Service Unavailable',
            durationMs: 120,
            error: 'The endpoint answered 503',
            createdAt: '2026-11-25T02:01:00.000Z',
            nextAttemptAt: null,
          },
        ],
        meta: { totalItems: 2, itemsPerPage: 10, totalPages: 1, currentPage: 1 },
      },
    },
  },
  redeliver: {
    request: { event: { summary: 'One of the platform\'s events', value: { eventId: EXAMPLE_EVENT_ID } } },
    scheduled: { event: { summary: 'The new attempt, due now', value: EXAMPLE_DELIVERY } },
  },
} satisfies Record<string, Examples | Record<string, Examples>>;
