import type { FastifyBaseLogger } from 'fastify';
import type { PgBoss } from 'pg-boss';
import type { ResealScheduler } from '../services/sealed-values.ts';
import type { Database } from '../store/database.ts';
import { cancelOrphanedJobs, createLongRunQueue, HEARTBEAT_SECONDS } from './boss.ts';

const QUEUE = 'encryption-reseal';
/** One job for the whole ring: the queue holds at most one of it at a time. */
const KEY = 'ring';

/**
 * Runs the re-sealing of src/services/sealed-values.ts on pg-boss: one job at a time (an `exclusive` queue), retried
 * with back-off when it fails. A job that a dead process left running is cancelled at start and queued again; since
 * each batch commits on its own and the values already moved no longer match, the new run goes on where the old one
 * stopped.
 */
export class ResealJobs implements ResealScheduler {
  readonly #boss: PgBoss;
  readonly #database: Database;
  readonly #log: FastifyBaseLogger;

  constructor(options: { boss: PgBoss; database: Database; log: FastifyBaseLogger }) {
    this.#boss = options.boss;
    this.#database = options.database;
    this.#log = options.log;
  }

  async start(): Promise<void> {
    await createLongRunQueue(this.#boss, QUEUE, { delaySeconds: 30, maxDelaySeconds: 3_600 });
  }

  /** Works the queue with `run` (which re-seals everything left); a run that leaves values it could not open fails, to be tried later. */
  async work(run: () => Promise<{ resealed: number; failed: number }>): Promise<void> {
    if ((await cancelOrphanedJobs(this.#boss, this.#database, QUEUE, [KEY])).length > 0) {
      this.#log.info('cancelled the re-sealing job of a process that died; it starts again now');
    }
    await this.#boss.work(QUEUE, { pollingIntervalSeconds: 2 }, async ([job]) => {
      if (job === undefined) return;
      const { resealed, failed } = await run();
      this.#log.info({ resealed, failed }, 'encryption: re-sealing finished');
      if (failed > 0) throw new Error(`${failed} sealed values did not open with the key ring; they are tried again later`);
    });
  }

  async scheduleReseal(): Promise<void> {
    await this.#boss.send(QUEUE, {}, { singletonKey: KEY, heartbeatSeconds: HEARTBEAT_SECONDS });
  }
}
