import { sql, type Kysely, type Selectable } from 'kysely';
import { pageRows, readPage, type PageWindow } from './paging.ts';
import type { EventsTable, Schema } from './schema.ts';

export type EventRow = Selectable<EventsTable>;

export type NewEventRow = {
  id: string;
  platformId: string;
  platformCustomerId: string | null;
  type: string;
  data: unknown;
  endpointId: string | null;
  createdAt: Date;
};

/**
 * Inserts events in one statement (their data as one JSON parameter, read as json so that each keeps its key order).
 * The statement's trigger queues them for the relay (migration 0027).
 */
export async function insertEvents(db: Kysely<Schema>, events: readonly NewEventRow[]): Promise<void> {
  if (events.length === 0) return;
  const rows = JSON.stringify(
    events.map((event) => ({
      id: event.id,
      platform_id: event.platformId,
      platform_customer_id: event.platformCustomerId,
      type: event.type,
      data: event.data,
      endpoint_id: event.endpointId,
      created_at: event.createdAt.toISOString(),
    })),
  );
  await sql`
    insert into events (id, platform_id, platform_customer_id, type, data, endpoint_id, created_at)
    select id, platform_id, platform_customer_id, type, data, endpoint_id, created_at
    from json_to_recordset(${rows}::json) as event(
      id text, platform_id uuid, platform_customer_id uuid, type text, data json, endpoint_id uuid, created_at timestamptz)`.execute(db);
}

/** An event as the relay routes it: who it is for and what it is, not its data. */
export type DispatchedEvent = { id: string; platform_id: string; type: string; endpoint_id: string | null; created_at: Date };

/**
 * Takes the oldest events off the relay's queue, in one statement, and returns them oldest first. Queue rows another
 * relay holds are skipped, so several processes relay side by side without dispatching an event twice; the caller's
 * transaction holds them until it schedules their deliveries and commits, and a rollback puts them back. The events'
 * rows are not touched: routing needs only the type and the owner, which the queue carries.
 */
export async function dispatchOldest(db: Kysely<Schema>, limit: number): Promise<DispatchedEvent[]> {
  const { rows } = await sql<DispatchedEvent & { seq: number }>`
    delete from event_queue
    where seq in (select seq from event_queue order by seq limit ${limit} for update skip locked)
    returning seq, event_id as id, platform_id, type, endpoint_id, created_at`.execute(db);
  return rows.sort((a, b) => a.seq - b.seq);
}

/**
 * Deletes up to `limit` events created before `before` (their delivery attempts go with them, and the table's trigger
 * takes their queue rows if the relay has not dispatched them yet); returns how many.
 */
export async function purgeEventsBefore(db: Kysely<Schema>, before: Date, limit: number): Promise<number> {
  const { rows } = await sql<{ deleted: number }>`
    with doomed as (select id from events where created_at < ${before} order by created_at limit ${limit}),
    deleted as (delete from events where id in (select id from doomed) returning 1)
    select count(*)::int as deleted from deleted`.execute(db);
  return rows[0]?.deleted ?? 0;
}

/** One of the platform's events; another platform's is not found, like a missing one. */
export async function findEventOfPlatform(db: Kysely<Schema>, platformId: string, id: string): Promise<EventRow | undefined> {
  return db.selectFrom('events').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

export type EventFilter = {
  platformId: string;
  type?: string | undefined;
  /** A customer of the platform (the caller checks that it is). */
  platformCustomerId?: string | undefined;
  /** UTC days of created_at, inclusive (YYYY-MM-DD). */
  fromDate?: string | undefined;
  toDate?: string | undefined;
};

/** An event as a list shows it: what the API answers with, without the delivery columns. */
export type ListedEventRow = Pick<EventRow, 'id' | 'type' | 'created_at' | 'platform_customer_id' | 'data'>;

/**
 * A page of the platform's events, newest first (created_at, then id), and how many match. The page's ids come from
 * the (platform, …, created_at, id) indexes alone and only their rows are read, from whichever end is nearer
 * (readPage); the total is summed from event_day_counts, a row per platform, customer, type and UTC day.
 */
export async function listEvents(
  db: Kysely<Schema>,
  filter: EventFilter & { offset: number; limit: number },
): Promise<{ rows: ListedEventRow[]; total: number }> {
  let base = db.selectFrom('events').where('platform_id', '=', filter.platformId);
  if (filter.type) base = base.where('type', '=', filter.type);
  if (filter.platformCustomerId) base = base.where('platform_customer_id', '=', filter.platformCustomerId);
  // Whole UTC days, whatever the session's time zone.
  if (filter.fromDate) base = base.where('created_at', '>=', sql<Date>`(${filter.fromDate}::date)::timestamp at time zone 'UTC'`);
  if (filter.toDate) base = base.where('created_at', '<', sql<Date>`(${filter.toDate}::date + 1)::timestamp at time zone 'UTC'`);
  const rowsOf = (window: PageWindow) => {
    const direction = window.reverse ? 'asc' : 'desc';
    const page = pageRows(base.select('id').orderBy('created_at', direction).orderBy('id', direction), window);
    return db
      .selectFrom('events')
      .innerJoin(page.as('page'), 'page.id', 'events.id')
      .select(['events.id', 'events.type', 'events.created_at', 'events.platform_customer_id', 'events.data'])
      .orderBy('events.created_at', direction)
      .orderBy('events.id', direction);
  };
  return readPage(db, filter, rowsOf, eventTotal(filter));
}

/** How many events match, from the kept day counts ('' is the customer key of an event with no customer). */
function eventTotal(filter: EventFilter) {
  return sql<number>`(select coalesce(sum(events), 0)::int from event_day_counts where platform_id = ${filter.platformId}${
    filter.type ? sql` and type = ${filter.type}` : sql``
  }${filter.platformCustomerId ? sql` and platform_customer_key = ${filter.platformCustomerId}` : sql``}${
    filter.fromDate ? sql` and created_day >= ${filter.fromDate}` : sql``
  }${filter.toDate ? sql` and created_day <= ${filter.toDate}` : sql``})`;
}
