import type { Kysely } from 'kysely';
import type { JobResult, PgBoss } from 'pg-boss';
import type { FastifyBaseLogger } from 'fastify';
import { Counter, Gauge, type Registry } from 'prom-client';
import { AuthorityError } from '../authority/authority.ts';
import type { RequestScheduler } from '../services/genebrc/lifecycle.ts';
import type { Database } from '../store/database.ts';
import type { SweepPosition } from '../store/paging.ts';
import { openRequestIds, openRequestsSummary, type OpenRequestsSummary } from '../store/requests.ts';
import type { Schema } from '../store/schema.ts';
import { cancelOrphanedJobs, executorOf, HEARTBEAT_SECONDS } from './boss.ts';
import { runGuarded } from './poison.ts';

const QUEUE = 'genebrc-advance';
const RECOVERY_INTERVAL_MS = 60_000;
const RECOVERY_BATCH = 1_000;
const ADVANCE_BATCH = 20;

type AdvanceJob = { requestId: string };

/**
 * Why a poll failed: `authority_unavailable` when the authority was down or slow (it mends when the authority does),
 * `authority_refused` when it refused the call (the customer's credentials, this service's address or configuration:
 * someone has to act), `service` for anything else (the database, or a fault of this service).
 */
type PollFailureCause = 'authority_unavailable' | 'authority_refused' | 'service';
const POLL_FAILURE_CAUSES: readonly PollFailureCause[] = ['authority_unavailable', 'authority_refused', 'service'];

/**
 * A failed poll's cause, and whether it is logged as an error: all but the authority being down, and the customer's
 * own credentials refused (the platform hears of those from the customer's credentials_invalid event).
 */
function pollFailureOf(error: unknown): { cause: PollFailureCause; error: boolean } {
  if (!(error instanceof AuthorityError)) return { cause: 'service', error: true };
  switch (error.failure) {
    case 'unavailable':
    case 'timeout':
      return { cause: 'authority_unavailable', error: false };
    case 'credentials_invalid':
    case 'credentials_expired':
      return { cause: 'authority_refused', error: false };
    default:
      return { cause: 'authority_refused', error: true };
  }
}

/** How long the open requests' summary is kept for the scrape that asked for it: one query serves both gauges. */
const SUMMARY_TTL_MS = 1_000;

/**
 * Keeps every open GenEBRC request moving without anyone asking, on pg-boss. Each request has at
 * most one job queued or running (an `exclusive` queue keyed by the request), scheduled in the
 * push's own transaction; the job asks the authority and, while the request is still open, fails
 * (that job alone, not the batch it came in) so that pg-boss retries it with backoff. A job whose
 * process died is noticed by its missing heartbeat; at start, the jobs a dead process left running
 * are cancelled at once (on the embedded database every one of them, since this process holds the
 * data folder), and a sweep at start and every minute queues a job for any open request without one. Several
 * processes may run it on one PostgreSQL database: pg-boss hands each job to one worker, and every
 * state change is a compare-and-set besides.
 */
export class RequestPoller implements RequestScheduler {
  readonly #boss: PgBoss;
  readonly #database: Database;
  readonly #pollIntervalSeconds: number;
  readonly #log: FastifyBaseLogger;
  #recovery: NodeJS.Timeout | undefined;
  readonly #recoveryBatch: number;
  #sweepFrom: SweepPosition | undefined;

  readonly #jobExpireSeconds: number;
  readonly #failures: Counter<'cause'>;
  #summary: { at: number; value: Promise<OpenRequestsSummary | undefined> } | undefined;
  #lastSummary: OpenRequestsSummary | undefined;

  /**
   * `jobExpireSeconds`: how long a job may run before pg-boss retries it elsewhere (a process killed mid-job, once
   * its heartbeat has not been the cause already: this bounds a job whose process lives but hangs). `metrics`: where
   * the poll failures and the open requests are told (README, "Health, metrics and shutdown"). `recoveryBatch`: how
   * many open requests a sweep reads (1,000).
   */
  constructor(options: {
    boss: PgBoss;
    database: Database;
    pollIntervalSeconds: number;
    jobExpireSeconds: number;
    log: FastifyBaseLogger;
    metrics: Registry;
    recoveryBatch?: number;
  }) {
    this.#recoveryBatch = options.recoveryBatch ?? RECOVERY_BATCH;
    this.#boss = options.boss;
    this.#jobExpireSeconds = options.jobExpireSeconds;
    this.#database = options.database;
    this.#pollIntervalSeconds = options.pollIntervalSeconds;
    this.#log = options.log;
    const registers = [options.metrics];
    this.#failures = new Counter({
      name: 'genebrc_poll_failures_total',
      help: 'Polls of an open GenEBRC request that failed, by cause: authority_unavailable (it mends when the authority does), authority_refused (someone has to act) or service (the database, or a fault of this service)',
      labelNames: ['cause'],
      registers,
    });
    for (const cause of POLL_FAILURE_CAUSES) this.#failures.inc({ cause }, 0);
    const summary = () => this.#openRequestsSummary();
    new Gauge({
      name: 'genebrc_open_requests',
      help: 'GenEBRC requests pushed and not yet final (SUBMITTING or PENDING), in the whole database (every process tells the same figure)',
      registers,
      async collect() {
        const value = await summary();
        if (value) this.set(value.open);
      },
    });
    new Gauge({
      name: 'genebrc_oldest_open_request_age_seconds',
      help: 'Seconds since the oldest open GenEBRC request (SUBMITTING or PENDING) was pushed; 0 when none is open',
      registers,
      async collect() {
        const value = await summary();
        if (value) this.set(value.oldestCreatedAt === null ? 0 : Math.max(0, (Date.now() - value.oldestCreatedAt.getTime()) / 1000));
      },
    });
  }

  /**
   * The open requests, read at most once a second (one read serves both gauges of a scrape). When the database cannot
   * be read, the last summary read: its oldest request is still open (nothing finishes without the database), so its
   * age keeps growing rather than dropping to the 0 of "none open".
   */
  #openRequestsSummary(): Promise<OpenRequestsSummary | undefined> {
    const now = Date.now();
    if (this.#summary === undefined || now - this.#summary.at > SUMMARY_TTL_MS) {
      const value = openRequestsSummary(this.#database.db).then(
        (read) => (this.#lastSummary = read),
        (error: unknown) => {
          this.#log.warn({ err: error }, 'could not read the open requests for /metrics; telling the last read');
          return this.#lastSummary;
        },
      );
      this.#summary = { at: now, value };
    }
    return this.#summary.value;
  }

  /** Creates the queue (the boss is started). */
  async start(): Promise<void> {
    await this.#boss.createQueue(QUEUE, {
      policy: 'exclusive',
      heartbeatSeconds: HEARTBEAT_SECONDS,
      retryLimit: 100_000,
      retryDelay: this.#pollIntervalSeconds,
      retryBackoff: true,
      retryDelayMax: 60,
      expireInSeconds: this.#jobExpireSeconds,
    });
  }

  /**
   * Starts working the queue with `advance`, which returns whether the request is still open. A poll that throws is
   * tried again with backoff (up to a minute apart), counted by cause and logged (pollFailureOf).
   */
  async work(advance: (requestId: string) => Promise<boolean>): Promise<void> {
    // A backlog is worked through batch after batch without waiting for the next poll (burstWhenBatchFull): with a
    // batch of 5 a poll, the poller settled 5 requests a second. The requests of a batch are advanced one at a time:
    // side by side, 20 large requests held the service's memory well past its 300 MB target (docs/performance.md).
    const options = {
      pollingIntervalSeconds: Math.max(0.5, this.#pollIntervalSeconds / 2),
      batchSize: ADVANCE_BATCH,
      burstWhenBatchFull: true,
      perJobResults: true,
    } as const;
    // Before working: a job this process fetched would look like one a dead process left.
    await this.#cancelOrphanedJobs();
    // Each job is settled on its own: one request still open must not hold back the others fetched with it.
    await this.#boss.work<AdvanceJob>(QUEUE, options, async (jobs) => {
      const results: JobResult[] = [];
      for (const job of jobs) {
        const { requestId } = job.data;
        // A request whose polls kept taking the process down is no longer polled (its status stays as it is; the
        // log says why): src/jobs/poison.ts.
        const open = await this.#poll(requestId, () =>
          runGuarded({ db: this.#database.db, queue: QUEUE, key: requestId, log: this.#log }, () => advance(requestId), async () => false),
        );
        results.push(open ? { id: job.id, status: 'failed', output: { message: `request ${job.data.requestId} is still open` } } : { id: job.id, status: 'completed' });
      }
      return results;
    });
    await this.recover();
    this.#recovery = setInterval(() => {
      this.recover().catch((error: unknown) => this.#log.error({ err: error }, 'recovery sweep failed'));
    }, RECOVERY_INTERVAL_MS);
    this.#recovery.unref();
  }

  /** One poll of a request, `run`: whether it is still open; a failed poll leaves it open. */
  async #poll(requestId: string, run: () => Promise<boolean>): Promise<boolean> {
    try {
      return await run();
    } catch (error) {
      const failure = pollFailureOf(error);
      this.#failures.inc({ cause: failure.cause });
      const line = { err: error, request: requestId, cause: failure.cause };
      if (failure.error) this.#log.error(line, 'could not advance a request; will retry');
      else this.#log.warn(line, 'could not advance a request; will retry');
      return true;
    }
  }

  async scheduleAdvance(db: Kysely<Schema>, requestId: string): Promise<void> {
    await this.#boss.send(QUEUE, { requestId } satisfies AdvanceJob, {
      singletonKey: requestId,
      startAfter: this.#pollIntervalSeconds,
      heartbeatSeconds: HEARTBEAT_SECONDS,
      db: executorOf(db),
    });
  }

  /**
   * Queues a job, to run now, for every open request of the sweep's next batch that has none. Each sweep goes on after
   * the last one's batch, back to the oldest once it has read to the end: behind a backlog of open requests that have
   * their jobs, a newer one that lost its job is still reached.
   */
  async recover(): Promise<void> {
    const { rows, next } = await openRequestIds(this.#database.db, this.#recoveryBatch, this.#sweepFrom);
    for (const { id: requestId } of rows) {
      await this.#boss.send(QUEUE, { requestId } satisfies AdvanceJob, { singletonKey: requestId, heartbeatSeconds: HEARTBEAT_SECONDS });
    }
    this.#sweepFrom = next;
  }

  /** Cancels the running jobs of open requests that no live process works on, so that recover() queues them again. */
  async #cancelOrphanedJobs(): Promise<void> {
    const requests = await cancelOrphanedJobs(this.#boss, this.#database, QUEUE, (await openRequestIds(this.#database.db, this.#recoveryBatch)).rows.map((row) => row.id));
    if (requests.length > 0) this.#log.info({ requests }, 'cancelled the poll jobs of a process that died; polling again now');
  }

  /** Stops the recovery sweep; the boss's own stop ends the work under way. */
  stop(): void {
    clearInterval(this.#recovery);
  }
}
