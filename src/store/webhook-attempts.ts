import { sql, type Kysely } from 'kysely';
import { readSweep, type SweepPosition, type Swept } from './paging.ts';
import type { Schema } from './schema.ts';

/** An endpoint as the relay matches events against it. */
export type RelayEndpoint = { id: string; platform_id: string; enabled_events: string[]; status: 'enabled' | 'disabled' };

/** The enabled endpoints of these platforms, and these endpoints whatever their platform (a test event's target). */
export async function endpointsForRelay(db: Kysely<Schema>, platformIds: readonly string[], endpointIds: readonly string[]): Promise<RelayEndpoint[]> {
  if (platformIds.length === 0 && endpointIds.length === 0) return [];
  return db
    .selectFrom('webhook_endpoints')
    .select(['id', 'platform_id', 'enabled_events', 'status'])
    .where((eb) =>
      eb.or([
        ...(platformIds.length > 0 ? [eb.and([eb('platform_id', 'in', platformIds), eb('status', '=', 'enabled')])] : []),
        ...(endpointIds.length > 0 ? [eb('id', 'in', endpointIds)] : []),
      ]),
    )
    .execute();
}

/** `retry`: which wait of the retry schedule follows this attempt if it fails (0: the first, for a new delivery). */
export type NewAttempt = { id: string; endpointId: string; eventId: string; attempt: number; retry: number; dueAt: Date };

/** Inserts pending attempts in one statement. */
export async function insertAttempts(db: Kysely<Schema>, attempts: readonly NewAttempt[]): Promise<void> {
  if (attempts.length === 0) return;
  const rows = JSON.stringify(
    attempts.map((attempt) => ({
      id: attempt.id,
      endpoint_id: attempt.endpointId,
      event_id: attempt.eventId,
      attempt: attempt.attempt,
      retry: attempt.retry,
      next_attempt_at: attempt.dueAt.toISOString(),
    })),
  );
  await sql`
    insert into webhook_attempts (id, endpoint_id, event_id, attempt, retry, status, next_attempt_at)
    select id, endpoint_id, event_id, attempt, retry, 'pending', next_attempt_at
    from jsonb_to_recordset(${rows}::jsonb) as attempt(id uuid, endpoint_id uuid, event_id text, attempt integer, retry integer, next_attempt_at timestamptz)`.execute(db);
}

/** A pending attempt with what delivering it needs: its endpoint and its event. */
export type AttemptToDeliver = {
  id: string;
  attempt: number;
  retry: number;
  status: 'pending' | 'succeeded' | 'failed';
  endpoint_id: string;
  url: string;
  endpoint_status: 'enabled' | 'disabled';
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
  event_id: string;
  event_type: string;
  event_platform_customer_id: string | null;
  event_data: unknown;
  event_created_at: Date;
};

/** The attempts of these ids, with their endpoints and events, in one statement (deleted endpoints' are gone). */
export async function findAttemptsToDeliver(db: Kysely<Schema>, ids: readonly string[]): Promise<AttemptToDeliver[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('webhook_attempts as attempt')
    .innerJoin('webhook_endpoints as endpoint', 'endpoint.id', 'attempt.endpoint_id')
    .innerJoin('events as event', 'event.id', 'attempt.event_id')
    .select([
      'attempt.id',
      'attempt.attempt',
      'attempt.retry',
      'attempt.status',
      'attempt.endpoint_id',
      'endpoint.url',
      'endpoint.status as endpoint_status',
      'endpoint.secret',
      'endpoint.previous_secret',
      'endpoint.previous_secret_expires_at',
      'endpoint.failing_since',
      'event.id as event_id',
      'event.type as event_type',
      'event.platform_customer_id as event_platform_customer_id',
      'event.data as event_data',
      'event.created_at as event_created_at',
    ])
    .where('attempt.id', 'in', ids)
    .execute();
}

export type AttemptOutcome = {
  status: 'succeeded' | 'failed';
  responseStatus: number | null;
  responseBody: string | null;
  durationMs: number;
  error: string | null;
  /** When the next attempt is due, for a failed one that has one. */
  nextAttemptAt: Date | null;
};

/** Locks endpoints in id order, as the attempt count's trigger does: the order every writer takes them in. */
export async function lockEndpoints(db: Kysely<Schema>, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.selectFrom('webhook_endpoints').select('id').where('id', 'in', ids).orderBy('id').forNoKeyUpdate().execute();
}

/** Records pending attempts' outcomes in one statement; returns the ids recorded (those still pending until now). */
export async function recordOutcomes(db: Kysely<Schema>, outcomes: readonly (AttemptOutcome & { id: string })[]): Promise<Set<string>> {
  if (outcomes.length === 0) return new Set();
  const rows = JSON.stringify(
    outcomes.map((outcome) => ({
      id: outcome.id,
      status: outcome.status,
      response_status: outcome.responseStatus,
      response_body: outcome.responseBody,
      duration_ms: outcome.durationMs,
      error: outcome.error,
      next_attempt_at: outcome.nextAttemptAt?.toISOString() ?? null,
    })),
  );
  const { rows: recorded } = await sql<{ id: string }>`
    update webhook_attempts as attempt
    set status = outcome.status, response_status = outcome.response_status, response_body = outcome.response_body,
        duration_ms = outcome.duration_ms, error = outcome.error, next_attempt_at = outcome.next_attempt_at
    from jsonb_to_recordset(${rows}::jsonb) as outcome(
      id uuid, status text, response_status integer, response_body text, duration_ms integer, error text, next_attempt_at timestamptz)
    where attempt.id = outcome.id and attempt.status = 'pending'
    returning attempt.id`.execute(db);
  return new Set(recorded.map((row) => row.id));
}

/**
 * Keeps endpoints' failure streaks: a success ends an endpoint's streak; a failure (of an endpoint with no success
 * in the same batch) starts it, or, once it is older than `disableAfterMs`, disables the endpoint. Returns the ids of
 * the endpoints this disabled.
 */
export async function trackEndpointHealth(
  db: Kysely<Schema>,
  health: { succeeded: readonly string[]; failed: readonly string[] },
  now: Date,
  disableAfterMs: number,
): Promise<string[]> {
  if (health.succeeded.length > 0) {
    await db.updateTable('webhook_endpoints').set({ failing_since: null }).where('id', 'in', health.succeeded).where('failing_since', 'is not', null).execute();
  }
  if (health.failed.length === 0) return [];
  await db.updateTable('webhook_endpoints').set({ failing_since: now }).where('id', 'in', health.failed).where('failing_since', 'is', null).execute();
  const disabled = await db
    .updateTable('webhook_endpoints')
    .set({ status: 'disabled', disabled_reason: 'every delivery failed for the configured time (5 days by default)', updated_at: now })
    .where('id', 'in', health.failed)
    .where('status', '=', 'enabled')
    .where('failing_since', '<=', new Date(now.getTime() - disableAfterMs))
    .returning('id')
    .execute();
  return disabled.map((row) => row.id);
}

/**
 * Pending attempts due before `before`, the longest due first, after `after` (from the first without it): what recovery
 * makes sure has a job. A sweep goes on where the last one stopped.
 */
export async function duePendingAttempts(
  db: Kysely<Schema>,
  before: Date,
  limit: number,
  after?: SweepPosition,
): Promise<Swept<{ id: string; endpoint_id: string }>> {
  const due = db
    .selectFrom('webhook_attempts')
    .select(['id', 'endpoint_id'])
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', before);
  return readSweep(due, 'next_attempt_at', limit, after);
}
