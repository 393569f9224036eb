import { randomUUID } from 'node:crypto';
import { recordAudit, type AuditSource } from './audit.ts';
import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import type { Config } from '../config.ts';
import { ALL_EVENTS, EVENT_TYPES, isEventType } from '../domain/events.ts';
import { newWebhookSecret } from '../domain/webhook-signature.ts';
import { AppError, notFound, type FieldError } from '../errors.ts';
import type { CreatedWebhookEndpoint, NewWebhookEndpoint, WebhookDelivery, WebhookDeliveryListQuery, WebhookEndpoint, WebhookEndpointChanges, WebhookEndpointListQuery } from '../schemas/webhook-endpoints.ts';
import { findEventOfPlatform } from '../store/events.ts';
import type { Schema } from '../store/schema.ts';
import * as store from '../store/webhooks.ts';
import type { CommitLink } from './context.ts';
import type { CredentialsVault } from './credentials-vault.ts';
import type { Event, EventOutbox } from './outbox.ts';
import { checkWebhookUrl } from './webhook-url.ts';
import { itemsPage, offsetOf } from './pages.ts';

/** The port the webhook delivery worker implements: deliveries the services ask for (a redelivery, a test event), scheduled in the caller's transaction. */
export interface DeliveryScheduler {
  /** Schedules an attempt, due now, to deliver this event to this endpoint; returns the attempt's id. */
  deliverNow(db: Kysely<Schema>, delivery: { eventId: string; endpointId: string }): Promise<string>;
  /** Wakes this process's delivery worker after the transaction that scheduled attempts has committed. */
  committed(): void;
}

/** What the endpoint services work with. */
export type WebhookContext = { db: Kysely<Schema>; vault: CredentialsVault; config: Pick<Config, 'webhookAllowPrivateUrls'> };

/** The reason recorded when a platform disables its endpoint (the delivery worker records its own). */
export const DISABLED_BY_PLATFORM = 'disabled by the platform';

export const TEST_EVENT_MESSAGE = 'This is a test event from ebrc-gateway: your endpoint receives and verifies webhooks.';

export function toWebhookEndpoint(row: store.ShownEndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    enabledEvents: row.enabled_events,
    status: row.status,
    disabledReason: row.status === 'enabled' ? null : row.disabled_reason,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function toWebhookDelivery(row: store.AttemptLogRow): WebhookDelivery {
  return {
    id: row.id,
    eventId: row.event_id,
    eventType: row.event_type,
    attempt: row.attempt,
    status: row.status,
    responseStatus: row.response_status,
    responseBody: row.response_body,
    durationMs: row.duration_ms,
    error: row.error,
    createdAt: row.created_at.toISOString(),
    nextAttemptAt: row.next_attempt_at?.toISOString() ?? null,
  };
}

/**
 * The event types an endpoint subscribes to, as stored: each one known (else 400 naming every unknown one),
 * duplicates dropped in the order given, and "*" beside anything else meaning just ["*"].
 */
export function normaliseEnabledEvents(types: readonly string[], path = '/enabledEvents'): string[] {
  const errors: FieldError[] = [];
  types.forEach((type, index) => {
    if (type !== ALL_EVENTS && !isEventType(type)) {
      errors.push({
        path: `${path}/${index}`,
        code: 'unknown_event_type',
        message: `${JSON.stringify(type)} is not an event type; use "*" or one of: ${EVENT_TYPES.join(', ')}.`,
      });
    }
  });
  if (errors.length > 0) {
    const detail = errors.length === 1 ? `The request has an invalid field: ${errors[0]!.message}` : `The request has ${errors.length} unknown event types; see errors.`;
    throw new AppError('validation_failed', detail, { errors });
  }
  if (types.includes(ALL_EVENTS)) return [ALL_EVENTS];
  return [...new Set(types)];
}

/** What a refusal of an internal host adds: the setting that allows one, where a newcomer meets the refusal first. */
export const ALLOW_PRIVATE_HINT =
  'A receiver on this machine or your own network is allowed only when the service runs with WEBHOOK_ALLOW_PRIVATE_URLS=true (development and tests; never in production).';

/** The URL when deliveries may go there (contract 9); else 400 webhook_url_not_allowed with the reason. */
async function allowedUrl(config: WebhookContext['config'], url: string): Promise<string> {
  const checked = await checkWebhookUrl(url, { allowPrivate: config.webhookAllowPrivateUrls });
  if (!checked.ok) {
    const message = checked.internal ? `${checked.reason} ${ALLOW_PRIVATE_HINT}` : checked.reason;
    throw new AppError('webhook_url_not_allowed', message, {
      errors: [{ path: '/url', code: 'webhook_url_not_allowed', message }],
    });
  }
  return url;
}

/**
 * Creates an enabled endpoint with a new signing secret, which this answer alone shows (it is stored sealed).
 * `link` is called in the transaction that stores the endpoint (its Idempotency-Key's link, see CommitLink).
 */
export async function createWebhookEndpoint(
  context: WebhookContext,
  platformId: string,
  input: NewWebhookEndpoint,
  source: AuditSource,
  link?: CommitLink,
): Promise<CreatedWebhookEndpoint> {
  const enabledEvents = normaliseEnabledEvents(input.enabledEvents);
  const url = await allowedUrl(context.config, input.url);
  const id = randomUUID();
  const secret = newWebhookSecret();
  const row = await context.db.transaction().execute(async (tx) => {
    const inserted = await store.insertEndpoint(tx, {
      id,
      platformId,
      url,
      description: input.description ?? null,
      enabledEvents,
      sealedSecret: context.vault.sealWebhookSecret(id, secret),
    });
    await link?.(tx, id);
    await recordAudit(tx, source, { platformId, action: 'webhook_endpoint.create', target: { type: 'webhook_endpoint', id } });
    return inserted;
  });
  return createdAnswer(row, secret);
}

function createdAnswer(row: store.ShownEndpointRow, secret: string): CreatedWebhookEndpoint {
  const shown = toWebhookEndpoint(row);
  return {
    id: shown.id,
    url: shown.url,
    description: shown.description,
    enabledEvents: shown.enabledEvents,
    status: 'enabled',
    secret,
    createdAt: shown.createdAt,
  };
}

/**
 * The answer of a creation whose first answer was lost (the process stopped after the commit): the endpoint with the
 * secret it signs with now. Null when the endpoint is gone.
 */
export async function replayCreatedWebhookEndpoint(context: WebhookContext, platformId: string, id: string): Promise<CreatedWebhookEndpoint | null> {
  const row = await store.findEndpoint(context.db, platformId, id);
  return row ? createdAnswer(row, context.vault.openWebhookSecret(row.id, row.secret)) : null;
}

/** The platform's endpoint, or 404 for a missing id and for another platform's endpoint alike. */
export async function requireWebhookEndpoint(db: Kysely<Schema>, platformId: string, id: string): Promise<store.WebhookEndpointRow> {
  const row = await store.findEndpoint(db, platformId, id);
  if (!row) throw notFound(`Webhook endpoint ${id}`);
  return row;
}

export async function getWebhookEndpoint(db: Kysely<Schema>, platformId: string, id: string): Promise<WebhookEndpoint> {
  return toWebhookEndpoint(await requireWebhookEndpoint(db, platformId, id));
}

export async function listWebhookEndpoints(db: Kysely<Schema>, platformId: string, query: Static<typeof WebhookEndpointListQuery>) {
  const { rows, total } = await store.listEndpoints(db, { platformId, offset: offsetOf(query), limit: query.limit });
  return itemsPage(rows.map(toWebhookEndpoint), total, query);
}

/**
 * Changes what is sent (at least one field): a new URL is checked as at creation, enabling clears the failure clock
 * and the reason, disabling records that the platform did it.
 */
export async function updateWebhookEndpoint(
  context: WebhookContext,
  platformId: string,
  id: string,
  changes: WebhookEndpointChanges,
  source: AuditSource,
): Promise<WebhookEndpoint> {
  if (changes.url === undefined && changes.description === undefined && changes.enabledEvents === undefined && changes.status === undefined) {
    const message = 'Send at least one of url, description, enabledEvents and status.';
    throw new AppError('validation_failed', `The request changes nothing: ${message}`, { errors: [{ path: '', code: 'required', message }] });
  }
  const enabledEvents = changes.enabledEvents === undefined ? undefined : normaliseEnabledEvents(changes.enabledEvents);
  // An unknown endpoint is a 404 before its new URL is looked at (and resolved).
  await requireWebhookEndpoint(context.db, platformId, id);
  const url = changes.url === undefined ? undefined : await allowedUrl(context.config, changes.url);
  const row = await context.db.transaction().execute(async (tx) => {
    const updated = await store.updateEndpoint(tx, platformId, id, {
      url,
      description: changes.description,
      enabledEvents,
      status:
        changes.status === undefined
          ? undefined
          : changes.status === 'enabled'
            ? { status: 'enabled' }
            : { status: 'disabled', reason: DISABLED_BY_PLATFORM },
    });
    if (updated) await recordAudit(tx, source, { platformId, action: 'webhook_endpoint.update', target: { type: 'webhook_endpoint', id: updated.id } });
    return updated;
  });
  if (!row) throw notFound(`Webhook endpoint ${id}`);
  return toWebhookEndpoint(row);
}

/** Deletes the endpoint and its delivery log; what is due to it is not delivered. */
export async function deleteWebhookEndpoint(db: Kysely<Schema>, platformId: string, id: string, source: AuditSource): Promise<void> {
  const deleted = await db.transaction().execute(async (tx) => {
    const endpoint = await store.findEndpoint(tx, platformId, id);
    if (!endpoint || !(await store.deleteEndpoint(tx, platformId, endpoint.id))) return false;
    await recordAudit(tx, source, { platformId, action: 'webhook_endpoint.delete', target: { type: 'webhook_endpoint', id: endpoint.id } });
    return true;
  });
  if (!deleted) throw notFound(`Webhook endpoint ${id}`);
}

/**
 * A new signing secret, shown in this answer alone; the one it replaces keeps signing beside it for 24 hours (a
 * second rotation within them drops the oldest). `link`: the Idempotency-Key's, with the endpoint.
 */
export async function rotateWebhookSecret(
  context: WebhookContext,
  platformId: string,
  id: string,
  source: AuditSource,
  link?: CommitLink,
): Promise<{ secret: string }> {
  const endpoint = await requireWebhookEndpoint(context.db, platformId, id);
  const secret = newWebhookSecret();
  // Sealed to the stored id (a path may spell the uuid in capitals), as the delivery worker opens it.
  const sealedSecret = context.vault.sealWebhookSecret(endpoint.id, secret);
  const rotated = await context.db.transaction().execute(async (tx) => {
    if (!(await store.rotateSecret(tx, platformId, endpoint.id, sealedSecret))) return false;
    await link?.(tx, endpoint.id);
    await recordAudit(tx, source, { platformId, action: 'webhook_endpoint.rotate_secret', target: { type: 'webhook_endpoint', id: endpoint.id } });
    return true;
  });
  if (!rotated) throw notFound(`Webhook endpoint ${id}`);
  return { secret };
}

/** The answer of a rotation whose first answer was lost: the secret the endpoint signs with now. */
export async function replayRotatedSecret(context: WebhookContext, platformId: string, id: string): Promise<{ secret: string } | null> {
  const row = await store.findEndpoint(context.db, platformId, id);
  return row ? { secret: context.vault.openWebhookSecret(row.id, row.secret) } : null;
}

function requireEnabled(endpoint: store.WebhookEndpointRow): void {
  if (endpoint.status !== 'enabled') {
    throw new AppError(
      'webhook_endpoint_disabled',
      `Webhook endpoint ${endpoint.id} is disabled (${endpoint.disabled_reason ?? 'disabled'}); enable it with PATCH /api/v1/webhook-endpoints/${endpoint.id} {"status": "enabled"} first.`,
    );
  }
}

/**
 * Records a webhook.test event for this endpoint alone, in its own transaction (the outbox), and wakes the relay
 * after the commit. 409 for a disabled endpoint.
 */
export async function sendTestEvent(db: Kysely<Schema>, outbox: EventOutbox, platformId: string, id: string, source: AuditSource): Promise<Event> {
  const event = await db.transaction().execute(async (tx) => {
    const endpoint = await requireWebhookEndpoint(tx, platformId, id);
    requireEnabled(endpoint);
    const [recorded] = await outbox.record(tx, [
      {
        platformId,
        platformCustomerId: null,
        type: 'webhook.test',
        data: { endpointId: endpoint.id, url: endpoint.url, message: TEST_EVENT_MESSAGE },
        endpointId: endpoint.id,
      },
    ]);
    await recordAudit(tx, source, { platformId, action: 'webhook_endpoint.test', target: { type: 'webhook_endpoint', id: endpoint.id } });
    return recorded!;
  });
  outbox.committed();
  return event;
}

/** A page of the endpoint's delivery attempts, newest first. */
export async function listWebhookDeliveries(
  db: Kysely<Schema>,
  platformId: string,
  id: string,
  query: Static<typeof WebhookDeliveryListQuery>,
) {
  const endpoint = await requireWebhookEndpoint(db, platformId, id);
  const { rows, total } = await store.listAttempts(db, { endpointId: endpoint.id, offset: offsetOf(query), limit: query.limit });
  return itemsPage(rows.map(toWebhookDelivery), total, query);
}

/**
 * Schedules a new attempt, due now, to deliver one of the platform's events to this endpoint (whatever the endpoint
 * subscribes to: a redelivery is asked for by name), and answers it as the deliveries log shows it. 404 for another
 * platform's event or endpoint, 409 for a disabled endpoint. `link`: the Idempotency-Key's, with the attempt.
 */
export async function redeliverEvent(
  db: Kysely<Schema>,
  deliveries: DeliveryScheduler,
  platformId: string,
  id: string,
  eventId: string,
  source: AuditSource,
  link?: CommitLink,
): Promise<WebhookDelivery> {
  // Nothing is locked ahead of the attempt's insert: its own locks (its endpoint and event by foreign key, then the
  // endpoint's attempt count) come in the order the relay takes them, where locking the endpoint first deadlocked
  // with a relay dispatching the same event. An endpoint deleted (or an event purged) meanwhile fails the insert.
  const attempt = await db
    .transaction()
    .execute(async (tx) => {
      const endpoint = await requireWebhookEndpoint(tx, platformId, id);
      const event = await findEventOfPlatform(tx, platformId, eventId);
      if (!event) throw notFound(`Event ${eventId}`);
      requireEnabled(endpoint);
      const attemptId = await deliveries.deliverNow(tx, { eventId: event.id, endpointId: endpoint.id });
      const row = await store.findAttemptOfPlatform(tx, platformId, attemptId);
      if (!row) throw new Error(`The delivery attempt ${attemptId} just scheduled was not found`);
      await link?.(tx, attemptId);
      await recordAudit(tx, source, { platformId, action: 'event.redeliver', target: { type: 'event', id: event.id } });
      return row;
    })
    .catch((error: unknown) => {
      const missing = store.missingAttemptReference(error);
      if (missing === 'endpoint') throw notFound(`Webhook endpoint ${id}`);
      if (missing === 'event') throw notFound(`Event ${eventId}`);
      throw error;
    });
  deliveries.committed();
  return toWebhookDelivery(attempt);
}

/** The answer of a redelivery whose first answer was lost: its attempt as the log shows it now. */
export async function shownDelivery(db: Kysely<Schema>, platformId: string, attemptId: string): Promise<WebhookDelivery | null> {
  const row = await store.findAttemptOfPlatform(db, platformId, attemptId);
  return row ? toWebhookDelivery(row) : null;
}
