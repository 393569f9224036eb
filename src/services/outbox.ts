import type { Kysely } from 'kysely';
import { newEventId, type EventType } from '../domain/events.ts';
import { insertEvents, type EventRow } from '../store/events.ts';
import type { Schema } from '../store/schema.ts';

export type NewEvent = {
  platformId: string;
  platformCustomerId: string | null;
  type: EventType;
  data: unknown;
  /** webhook.test only: the endpoint it is sent to (and no other). */
  endpointId?: string | undefined;
};

/** An event as the API shows it and webhooks deliver it (contract 9). */
export type Event = { id: string; type: string; timestamp: string; platformCustomerId: string | null; data: unknown };

export function toEvent(row: Pick<EventRow, 'id' | 'type' | 'created_at' | 'platform_customer_id' | 'data'>): Event {
  return { id: row.id, type: row.type, timestamp: row.created_at.toISOString(), platformCustomerId: row.platform_customer_id, data: row.data };
}

/** Who hears of events as they are recorded, in their transaction (the e-mail notifications). */
export interface EventNotifier {
  notify(tx: Kysely<Schema>, events: readonly { id: string; type: string; timestamp: string; data: unknown; platformId: string }[]): Promise<void>;
  committed(): void;
}

/**
 * The outbox: the one way events are created. Every change the contract lists records its events here in its own
 * transaction, so a change and its events commit together or not at all; the relay delivers them after the commit.
 * Writers record their events as the last statement of their transaction (the count rows' locks are held to commit).
 */
export class EventOutbox {
  readonly #listeners = new Set<() => void>();
  readonly #notifier: EventNotifier | undefined;

  /** `notifier`: the e-mail notifications of the events, written in the same transaction (src/services/mail/outbox.ts). */
  constructor(notifier?: EventNotifier) {
    this.#notifier = notifier;
  }

  /** Writes the events in the caller's transaction; returns them as they will be delivered. */
  async record(tx: Kysely<Schema>, events: readonly NewEvent[]): Promise<Event[]> {
    const createdAt = new Date();
    const rows = events.map((event) => ({
      id: newEventId(),
      platformId: event.platformId,
      platformCustomerId: event.platformCustomerId,
      type: event.type,
      data: event.data,
      endpointId: event.endpointId ?? null,
      createdAt,
    }));
    await insertEvents(tx, rows);
    await this.#notifier?.notify(tx, rows.map((row) => ({ id: row.id, type: row.type, timestamp: createdAt.toISOString(), data: row.data, platformId: row.platformId })));
    return rows.map((row) => ({ id: row.id, type: row.type, timestamp: createdAt.toISOString(), platformCustomerId: row.platformCustomerId, data: row.data }));
  }

  /** Tells this process's relay that events were committed, so that it does not wait for its next poll. */
  committed(): void {
    this.#notifier?.committed();
    for (const listener of this.#listeners) listener();
  }

  onCommitted(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
