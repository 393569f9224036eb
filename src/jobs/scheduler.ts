import type { Kysely } from 'kysely';
import type { Schema } from '../store/schema.ts';

/** Background work the services ask for; scheduled in the caller's transaction so it is never lost. */
export interface RequestScheduler {
  /** Makes sure a job will move this request (internal id) towards a final state. */
  scheduleAdvance(db: Kysely<Schema>, requestId: string): Promise<void>;
}

/** Webhook deliveries the services ask for (a redelivery, a test event); scheduled in the caller's transaction. */
export interface DeliveryScheduler {
  /** Schedules an attempt, due now, to deliver this event to this endpoint; returns the attempt's id. */
  deliverNow(db: Kysely<Schema>, delivery: { eventId: string; endpointId: string }): Promise<string>;
  /** Wakes this process's delivery worker after the transaction that scheduled attempts has committed. */
  committed(): void;
}
