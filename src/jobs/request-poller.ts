import { CompiledQuery, type Kysely } from 'kysely';
import { PgBoss, type JobResult } from 'pg-boss';
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../store/database.ts';
import { openRequestIds } from '../store/requests.ts';
import type { Schema } from '../store/schema.ts';
import type { RequestScheduler } from './scheduler.ts';

const QUEUE = 'genebrc-advance';
const RECOVERY_INTERVAL_MS = 60_000;
const RECOVERY_BATCH = 1_000;
const ADVANCE_BATCH = 20;

type AdvanceJob = { requestId: string };

/**
 * Keeps every open GenEBRC request moving without anyone asking, on pg-boss. Each request has at
 * most one job queued or running (an `exclusive` queue keyed by the request), scheduled in the
 * push's own transaction; the job asks the authority and, while the request is still open, fails
 * (that job alone, not the batch it came in) so that pg-boss retries it with backoff. A sweep at
 * start and every minute re-queues any open request without a job (after a crash, say). Several
 * processes may run it on one PostgreSQL database: pg-boss hands each job to one worker, and every
 * state change is a compare-and-set besides.
 */
export class RequestPoller implements RequestScheduler {
  readonly #boss: PgBoss;
  readonly #database: Database;
  readonly #pollIntervalSeconds: number;
  readonly #log: FastifyBaseLogger;
  #recovery: NodeJS.Timeout | undefined;

  readonly #jobExpireSeconds: number;

  /** `jobExpireSeconds`: how long a job may run before pg-boss retries it elsewhere (a process killed mid-job). */
  constructor(options: { database: Database; pollIntervalSeconds: number; jobExpireSeconds: number; log: FastifyBaseLogger }) {
    this.#jobExpireSeconds = options.jobExpireSeconds;
    this.#database = options.database;
    this.#pollIntervalSeconds = options.pollIntervalSeconds;
    this.#log = options.log;
    // pg-boss notices a job whose process died (still `active` past its expiry) on its supervise pass, once a minute by
    // default: a job left by a killed process would wait up to a minute more than its expiry. A pass every quarter of
    // the expiry (5 to 60 s) retries it within about 1.25 × jobExpireSeconds.
    const sweepSeconds = Math.min(60, Math.max(5, Math.ceil(options.jobExpireSeconds / 4)));
    this.#boss = new PgBoss({
      db: options.database.executor as never,
      supervise: true,
      schedule: false,
      superviseIntervalSeconds: sweepSeconds,
      monitorIntervalSeconds: sweepSeconds,
    });
    this.#boss.on('error', (error: unknown) => this.#log.error({ err: error }, 'job queue error'));
  }

  async start(): Promise<void> {
    await this.#boss.start();
    await this.#boss.createQueue(QUEUE, {
      policy: 'exclusive',
      retryLimit: 100_000,
      retryDelay: this.#pollIntervalSeconds,
      retryBackoff: true,
      retryDelayMax: 60,
      expireInSeconds: this.#jobExpireSeconds,
    });
  }

  /** Starts working the queue with `advance`, which returns whether the request is still open. */
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
    // Each job is settled on its own: one request still open must not hold back the others fetched with it.
    await this.#boss.work<AdvanceJob>(QUEUE, options, async (jobs) => {
      const results: JobResult[] = [];
      for (const job of jobs) {
        const open = await advance(job.data.requestId);
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

  async scheduleAdvance(db: Kysely<Schema>, requestId: string): Promise<void> {
    await this.#boss.send(QUEUE, { requestId } satisfies AdvanceJob, {
      singletonKey: requestId,
      startAfter: this.#pollIntervalSeconds,
      db: {
        executeSql: async (text: string, values?: unknown[]) => ({
          rows: [...(await db.executeQuery(CompiledQuery.raw(text, values ?? []))).rows],
        }),
      },
    });
  }

  /** Queues a job for every open request that has none. */
  async recover(): Promise<void> {
    for (const requestId of await openRequestIds(this.#database.db, RECOVERY_BATCH)) {
      await this.#boss.send(QUEUE, { requestId } satisfies AdvanceJob, { singletonKey: requestId });
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.#recovery);
    await this.#boss.stop({ graceful: true, timeout: 10_000 });
  }
}
