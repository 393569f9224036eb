import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { customersDue } from '../store/reconciliations.ts';
import type { Schema } from '../store/schema.ts';

/** What the schedule runs for each customer due. */
export type ScheduledRun = (due: { id: string; platform_id: string }) => Promise<void>;

/**
 * Scheduled reconciliation runs (contract 13): every RECONCILE_INTERVAL_SECONDS for each verified customer, each at its
 * own point in the interval (store.customersDue), at most `concurrency` at a time in this process, one after another
 * within each slot, so that the authority sees a few callers at once however many customers are due. A tick finds
 * the customers due; a run that another process started for a customer makes this one's a no-op (one runs at a time).
 */
export class ReconcileSchedule {
  readonly #db: Kysely<Schema>;
  readonly #intervalSeconds: number;
  readonly #concurrency: number;
  readonly #tickMs: number;
  readonly #run: ScheduledRun;
  readonly #log: FastifyBaseLogger;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<number> | undefined;
  #stopped = false;

  constructor(options: { db: Kysely<Schema>; intervalSeconds: number; concurrency: number; tickSeconds: number; run: ScheduledRun; log: FastifyBaseLogger }) {
    this.#db = options.db;
    this.#intervalSeconds = options.intervalSeconds;
    this.#concurrency = options.concurrency;
    this.#tickMs = options.tickSeconds * 1000;
    this.#run = options.run;
    this.#log = options.log;
  }

  /** Ticks now and then every tick; nothing when the interval is 0 (RECONCILE_INTERVAL_SECONDS=0 turns it off). */
  start(): void {
    if (this.#intervalSeconds === 0) return;
    const tick = () => {
      this.runOnce().catch((error: unknown) => this.#log.error({ err: error }, 'scheduled reconciliation failed; will try again'));
    };
    tick();
    this.#timer = setInterval(tick, this.#tickMs);
    this.#timer.unref();
  }

  /** One tick (or the one under way): runs the customers due now; returns how many it ran. */
  runOnce(): Promise<number> {
    this.#running ??= this.#tick().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#running?.catch(() => undefined);
  }

  async #tick(): Promise<number> {
    if (this.#intervalSeconds === 0) return 0;
    // A customer is tried once a tick: one whose run could not start (another process runs it) stays due meanwhile.
    const tried = new Set<string>();
    while (!this.#stopped) {
      const found = await customersDue(this.#db, { intervalSeconds: this.#intervalSeconds, at: new Date(), limit: this.#concurrency + tried.size });
      const due = found.filter((customer) => !tried.has(customer.id)).slice(0, this.#concurrency);
      if (due.length === 0) break;
      for (const customer of due) tried.add(customer.id);
      await Promise.all(due.map((customer) =>
        this.#run(customer).catch((error: unknown) => this.#log.warn({ err: error, platformCustomerId: customer.id }, 'a scheduled reconciliation could not run'))));
    }
    return tried.size;
  }
}
