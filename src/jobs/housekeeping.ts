import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { purgeAuditBefore } from '../services/audit.ts';
import { purgeExpiredSessions } from '../store/console-sessions.ts';
import { purgeEventsBefore } from '../store/events.ts';
import { purgeExpiredKeys } from '../store/idempotency.ts';
import type { Schema } from '../store/schema.ts';

const PURGE_BATCH = 1_000;

/**
 * Deletes what has outlived its keeping, on a schedule: expired Idempotency-Key records (kept 24 h), and events (with
 * their delivery attempts) older than EVENT_RETENTION_DAYS, audit entries older than AUDIT_RETENTION_DAYS (when set;
 * the only deletion of an entry, oldest first, each chain keeping its anchor so that it still verifies). In batches, each
 * a short statement, so that the embedded database's one connection is never held for long. Any number of processes
 * may run it on one database: a record is deleted once, whoever gets there first.
 */
export class Housekeeping {
  readonly #db: Kysely<Schema>;
  readonly #intervalMs: number;
  readonly #eventRetentionMs: number;
  readonly #auditRetentionMs: number | null;
  readonly #log: FastifyBaseLogger;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #running: Promise<number> | undefined;

  constructor(options: { db: Kysely<Schema>; intervalSeconds: number; eventRetentionDays: number; auditRetentionDays?: number | null; log: FastifyBaseLogger }) {
    this.#db = options.db;
    this.#auditRetentionMs = options.auditRetentionDays == null ? null : options.auditRetentionDays * 86_400_000;
    this.#eventRetentionMs = options.eventRetentionDays * 86_400_000;
    this.#intervalMs = options.intervalSeconds * 1000;
    this.#log = options.log;
  }

  /** Runs a pass now and then every interval. */
  start(): void {
    const pass = () => {
      this.runOnce().catch((error: unknown) => this.#log.error({ err: error }, 'housekeeping failed; will try again'));
    };
    pass();
    this.#timer = setInterval(pass, this.#intervalMs);
    this.#timer.unref();
  }

  /** One pass (or the one already under way); returns how many expired records (keys, events, console sessions) it deleted. */
  runOnce(): Promise<number> {
    this.#running ??= this.#purge().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #purge(): Promise<number> {
    const keys = await this.#inBatches((limit) => purgeExpiredKeys(this.#db, limit));
    if (keys > 0) this.#log.info({ purged: keys }, 'purged expired idempotency keys');
    const before = new Date(Date.now() - this.#eventRetentionMs);
    const events = await this.#inBatches((limit) => purgeEventsBefore(this.#db, before, limit));
    if (events > 0) this.#log.info({ purged: events, before }, 'purged events past their retention');
    const sessions = await this.#inBatches((limit) => purgeExpiredSessions(this.#db, limit));
    if (sessions > 0) this.#log.info({ purged: sessions }, 'purged expired console sessions');
    let audit = 0;
    if (this.#auditRetentionMs !== null) {
      const auditBefore = new Date(Date.now() - this.#auditRetentionMs);
      audit = await purgeAuditBefore(this.#db, auditBefore, PURGE_BATCH);
      if (audit > 0) this.#log.info({ purged: audit, before: auditBefore }, 'purged audit entries past their retention');
    }
    return keys + events + sessions + audit;
  }

  async #inBatches(purge: (limit: number) => Promise<number>): Promise<number> {
    let purged = 0;
    for (;;) {
      const deleted = await purge(PURGE_BATCH);
      purged += deleted;
      if (deleted < PURGE_BATCH || this.#stopped) break;
      // Let requests in between batches.
      await new Promise((resolve) => setImmediate(resolve));
    }
    return purged;
  }

  /** Stops the schedule and waits for a pass under way. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#running?.catch(() => undefined);
  }
}
