import { sql, type Kysely, type Selectable } from 'kysely';
import { isUuid } from './ids.ts';
import { readNewestFirst, readPage, type PageWindow } from './paging.ts';
import type { Schema, WebhookAttemptsTable, WebhookEndpointsTable } from './schema.ts';

export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>;

/** What an endpoint's answer shows: a list reads only these columns (not the sealed secrets). */
export const SHOWN_ENDPOINT_COLUMNS = [
  'id',
  'platform_id',
  'url',
  'description',
  'enabled_events',
  'status',
  'disabled_reason',
  'created_at',
  'updated_at',
] as const;
export type ShownEndpointRow = Pick<WebhookEndpointRow, (typeof SHOWN_ENDPOINT_COLUMNS)[number]>;

/** How long the secret a rotation replaces keeps signing beside the new one (contract 9). */
export const PREVIOUS_SECRET_HOURS = 24;

/**
 * The most endpoints a list total counts. Endpoints have no kept count: a platform has a handful (one per receiving
 * system), so counting its rows on the (platform_id, created_at, id) index is a few index entries. The count stops
 * here all the same, so that no platform, however many endpoints it makes, turns a list into a scan of all of them;
 * pages themselves are capped at 100 rows by the query schema.
 */
export const ENDPOINTS_COUNTED_AT_MOST = 10_000;

export async function insertEndpoint(
  db: Kysely<Schema>,
  endpoint: { id: string; platformId: string; url: string; description: string | null; enabledEvents: readonly string[]; sealedSecret: string },
): Promise<ShownEndpointRow> {
  return db
    .insertInto('webhook_endpoints')
    .values({
      id: endpoint.id,
      platform_id: endpoint.platformId,
      url: endpoint.url,
      description: endpoint.description,
      enabled_events: JSON.stringify(endpoint.enabledEvents),
      status: 'enabled',
      disabled_reason: null,
      secret: endpoint.sealedSecret,
      previous_secret: null,
      previous_secret_expires_at: null,
      failing_since: null,
    })
    .returning(SHOWN_ENDPOINT_COLUMNS)
    .executeTakeFirstOrThrow();
}

/** An endpoint of the given platform; another platform's endpoint is not found, like a missing one. */
export async function findEndpoint(db: Kysely<Schema>, platformId: string, id: string): Promise<WebhookEndpointRow | undefined> {
  if (!isUuid(id)) return undefined;
  return db.selectFrom('webhook_endpoints').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

/**
 * Which row an attempt's insert found missing, when `error` is its foreign-key violation (the endpoint deleted, or
 * the event purged, after they were read); null for any other error. Both backends.
 */
export function missingAttemptReference(error: unknown): 'endpoint' | 'event' | null {
  const e = error as { code?: string; constraint?: string; message?: string } | null;
  if (e?.code !== '23503') return null;
  const named = `${e.constraint ?? ''} ${e.message ?? ''}`;
  if (named.includes('webhook_attempts_endpoint_id_fkey')) return 'endpoint';
  if (named.includes('webhook_attempts_event_id_fkey')) return 'event';
  return null;
}

/** A page of the platform's endpoints, newest first, and how many it has (see ENDPOINTS_COUNTED_AT_MOST). */
export async function listEndpoints(
  db: Kysely<Schema>,
  query: { platformId: string; offset: number; limit: number },
): Promise<{ rows: ShownEndpointRow[]; total: number }> {
  const matching = db.selectFrom('webhook_endpoints').where('platform_id', '=', query.platformId);
  return readNewestFirst(db, query, matching, (endpoints) => endpoints.select(SHOWN_ENDPOINT_COLUMNS), ENDPOINTS_COUNTED_AT_MOST);
}

export type EndpointUpdate = {
  url?: string | undefined;
  description?: string | null | undefined;
  enabledEvents?: readonly string[] | undefined;
  /** enabled clears the failure clock and the reason; disabled records the reason. */
  status?: { status: 'enabled' } | { status: 'disabled'; reason: string } | undefined;
};

/** Changes the platform's endpoint; undefined when it has none with this id. */
export async function updateEndpoint(
  db: Kysely<Schema>,
  platformId: string,
  id: string,
  change: EndpointUpdate,
): Promise<ShownEndpointRow | undefined> {
  if (!isUuid(id)) return undefined;
  return db
    .updateTable('webhook_endpoints')
    .set({
      ...(change.url !== undefined ? { url: change.url } : {}),
      ...(change.description !== undefined ? { description: change.description } : {}),
      ...(change.enabledEvents !== undefined ? { enabled_events: JSON.stringify(change.enabledEvents) } : {}),
      ...(change.status?.status === 'enabled' ? { status: 'enabled' as const, disabled_reason: null, failing_since: null } : {}),
      ...(change.status?.status === 'disabled' ? { status: 'disabled' as const, disabled_reason: change.status.reason } : {}),
      updated_at: sql<Date>`now()`,
    })
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .returning(SHOWN_ENDPOINT_COLUMNS)
    .executeTakeFirst();
}

/** Deletes the platform's endpoint, its delivery attempts with it (cascade); false when it has none with this id. */
export async function deleteEndpoint(db: Kysely<Schema>, platformId: string, id: string): Promise<boolean> {
  if (!isUuid(id)) return false;
  const result = await db.deleteFrom('webhook_endpoints').where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

/**
 * Makes `sealedSecret` the endpoint's signing secret; the one it replaces keeps signing for PREVIOUS_SECRET_HOURS.
 * One statement, so the right-hand `secret` is the value before it: a second rotation within the overlap drops the
 * oldest secret (two at most are ever live). False when the platform has no endpoint with this id.
 */
export async function rotateSecret(db: Kysely<Schema>, platformId: string, id: string, sealedSecret: string): Promise<boolean> {
  if (!isUuid(id)) return false;
  const result = await db
    .updateTable('webhook_endpoints')
    .set((eb) => ({
      previous_secret: eb.ref('secret'),
      previous_secret_expires_at: sql<Date>`now() + make_interval(hours => ${PREVIOUS_SECRET_HOURS})`,
      secret: sealedSecret,
      updated_at: sql<Date>`now()`,
    }))
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** A delivery attempt as the deliveries log shows it: the attempt and its event's type. */
export type AttemptLogRow = Pick<
  Selectable<WebhookAttemptsTable>,
  'id' | 'event_id' | 'attempt' | 'status' | 'response_status' | 'response_body' | 'duration_ms' | 'error' | 'created_at' | 'next_attempt_at'
> & { event_type: string };

const ATTEMPT_LOG_COLUMNS = [
  'webhook_attempts.id',
  'webhook_attempts.event_id',
  'webhook_attempts.attempt',
  'webhook_attempts.status',
  'webhook_attempts.response_status',
  'webhook_attempts.response_body',
  'webhook_attempts.duration_ms',
  'webhook_attempts.error',
  'webhook_attempts.created_at',
  'webhook_attempts.next_attempt_at',
  'events.type as event_type',
] as const;

/**
 * A page of an endpoint's delivery attempts, newest first (created_at, then id), with each one's event type. The
 * total is the endpoint's attempt_count, kept by the attempts' triggers; the page is read from whichever end is nearer.
 */
export async function listAttempts(
  db: Kysely<Schema>,
  query: { endpointId: string; offset: number; limit: number },
): Promise<{ rows: AttemptLogRow[]; total: number }> {
  const rowsOf = (window: PageWindow) => {
    const direction = window.reverse ? 'asc' : 'desc';
    return db
      .selectFrom('webhook_attempts')
      .innerJoin('events', 'events.id', 'webhook_attempts.event_id')
      .select(ATTEMPT_LOG_COLUMNS)
      .where('webhook_attempts.endpoint_id', '=', query.endpointId)
      .orderBy('webhook_attempts.created_at', direction)
      .orderBy('webhook_attempts.id', direction)
      .offset(window.offset)
      .limit(window.limit);
  };
  const total = sql<number>`(select coalesce((select attempt_count::int from webhook_endpoints where id = ${query.endpointId}), 0))`;
  return readPage(db, query, rowsOf, total);
}

/** One attempt of one of the platform's endpoints, as the deliveries log shows it. */
export async function findAttemptOfPlatform(db: Kysely<Schema>, platformId: string, attemptId: string): Promise<AttemptLogRow | undefined> {
  if (!isUuid(attemptId)) return undefined;
  return db
    .selectFrom('webhook_attempts')
    .innerJoin('webhook_endpoints', 'webhook_endpoints.id', 'webhook_attempts.endpoint_id')
    .innerJoin('events', 'events.id', 'webhook_attempts.event_id')
    .select(ATTEMPT_LOG_COLUMNS)
    .where('webhook_endpoints.platform_id', '=', platformId)
    .where('webhook_attempts.id', '=', attemptId)
    .executeTakeFirst();
}
