import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { notFound } from '../errors.ts';
import type { EventListQuery as EventListQuerySchema } from '../schemas/events.ts';
import * as store from '../store/events.ts';
import type { Schema } from '../store/schema.ts';
import { requireCustomerId } from './customers.ts';
import { toEvent, type Event } from './outbox.ts';
import { itemsPage, offsetOf } from './pages.ts';

export type EventListQuery = Static<typeof EventListQuerySchema>;

/**
 * A page of the platform's events, newest first, and how many match. A customer filter names one of the platform's
 * customers (another platform's, or none, is a 404 as everywhere).
 */
export async function listEvents(db: Kysely<Schema>, platformId: string, query: EventListQuery) {
  // The stored id, not the one sent: the kept counts key a customer by its id's canonical text.
  const customerId = query.platformCustomerId === undefined ? undefined : await requireCustomerId(db, platformId, query.platformCustomerId);
  const { rows, total } = await store.listEvents(db, {
    platformId,
    type: query.type,
    platformCustomerId: customerId,
    fromDate: query.fromDate,
    toDate: query.toDate,
    offset: offsetOf(query),
    limit: query.limit,
  });
  return itemsPage(rows.map(toEvent), total, query);
}

/** One of the platform's events; another platform's is a 404, like a missing one. */
export async function getEvent(db: Kysely<Schema>, platformId: string, id: string): Promise<Event> {
  const row = await store.findEventOfPlatform(db, platformId, id);
  if (!row) throw notFound(`Event ${id}`);
  return toEvent(row);
}
