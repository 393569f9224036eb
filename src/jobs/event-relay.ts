import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Histogram } from 'prom-client';
import { endpointWants } from '../domain/events.ts';
import type { EventOutbox } from '../services/outbox.ts';
import { dispatchOldest } from '../store/events.ts';
import type { Schema } from '../store/schema.ts';
import { endpointsForRelay, type NewAttempt } from '../store/webhook-attempts.ts';
import type { WebhookDelivery } from './webhook-delivery.ts';

const BATCH = 500;
/** How often the relay looks for events other processes wrote; this process's own wake it at once. */
const POLL_MS = 500;

/**
 * Relays the outbox: each event on the relay's queue becomes one pending delivery attempt (and its job) per endpoint
 * that wants it, and leaves the queue, in one transaction, so an event is dispatched exactly once whatever is killed
 * when. The oldest events first, in batches; several processes relay side by side (the batch's rows are locked and
 * skipped by the others).
 */
export class EventRelay {
  readonly #db: Kysely<Schema>;
  readonly #delivery: WebhookDelivery;
  readonly #log: FastifyBaseLogger;
  readonly #lag: Histogram;
  readonly #unsubscribe: () => void;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = true;

  constructor(options: { db: Kysely<Schema>; outbox: EventOutbox; delivery: WebhookDelivery; log: FastifyBaseLogger; lag: Histogram }) {
    this.#db = options.db;
    this.#delivery = options.delivery;
    this.#log = options.log;
    this.#lag = options.lag;
    this.#unsubscribe = options.outbox.onCommitted(() => this.wake());
  }

  start(): void {
    this.#stopped = false;
    this.wake();
  }

  /** Relays now (or right after the pass under way). */
  wake(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    clearTimeout(this.#timer);
    this.#running = this.#drain()
      .catch((error: unknown) => this.#log.error({ err: error }, 'event relay failed; will try again'))
      .finally(() => {
        this.#running = undefined;
        if (this.#stopped) return;
        if (this.#again) {
          this.#again = false;
          this.wake();
          return;
        }
        this.#timer = setTimeout(() => this.wake(), POLL_MS);
        this.#timer.unref();
      });
  }

  /** Relays batch after batch until the outbox is empty; returns once it is. */
  async #drain(): Promise<void> {
    while (!this.#stopped && (await this.relayBatch()) === BATCH);
  }

  /** One batch, in one transaction; returns how many events it dispatched. */
  async relayBatch(): Promise<number> {
    const dispatched = await this.#db.transaction().execute(async (tx) => {
      const now = new Date();
      const events = await dispatchOldest(tx, BATCH);
      if (events.length === 0) return [];
      const platformIds = [...new Set(events.filter((event) => event.endpoint_id === null).map((event) => event.platform_id))];
      const targeted = [...new Set(events.flatMap((event) => (event.endpoint_id === null ? [] : [event.endpoint_id])))];
      const endpoints = await endpointsForRelay(tx, platformIds, targeted);
      const attempts: NewAttempt[] = [];
      for (const event of events) {
        const targets = event.endpoint_id === null
          ? endpoints.filter((endpoint) => endpoint.platform_id === event.platform_id && endpoint.status === 'enabled' && endpointWants(endpoint.enabled_events, event.type))
          : endpoints.filter((endpoint) => endpoint.id === event.endpoint_id && endpoint.platform_id === event.platform_id);
        for (const endpoint of targets) attempts.push({ id: randomUUID(), endpointId: endpoint.id, eventId: event.id, attempt: 1, retry: 0, dueAt: now });
      }
      await this.#delivery.schedule(tx, attempts);
      return events.map((event) => ({ id: event.id, lagSeconds: (now.getTime() - event.created_at.getTime()) / 1000, attempts: attempts.length }));
    });
    if (dispatched.length === 0) return 0;
    for (const event of dispatched) this.#lag.observe(Math.max(0, event.lagSeconds));
    this.#log.debug({ events: dispatched.map((event) => event.id), attempts: dispatched[0]!.attempts }, 'relayed events to webhook endpoints');
    this.#delivery.committed();
    return dispatched.length;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe();
    clearTimeout(this.#timer);
    await this.#running;
  }
}
