import type { Kysely } from 'kysely';
import type { PgBoss } from 'pg-boss';
import type { FastifyBaseLogger } from 'fastify';
import type { UploadProgress, UploadScheduler } from '../services/bulk-uploads.ts';
import type { Database } from '../store/database.ts';
import type { Schema } from '../store/schema.ts';
import { unfinishedUploadIds } from '../store/uploads.ts';
import { cancelOrphanedJobs, createLongRunQueue, executorOf, HEARTBEAT_SECONDS } from './boss.ts';
import { runGuarded } from './poison.ts';

const QUEUE = 'bulk-upload';
const RECOVERY_BATCH = 1_000;
const RETRY_DELAY_SECONDS = 5;

type UploadJob = { uploadId: string };

/**
 * Runs spreadsheet uploads (contract 11) on pg-boss: one job at a time per upload (an `exclusive` queue keyed by the
 * upload), queued in the upload's own transaction. A job works its upload as far as it can; while one of its pushes
 * waits on the authority (a request held after a timeout), the job fails so that pg-boss tries again later. At start,
 * jobs a dead process left running are cancelled and every unfinished upload gets a job: a killed service resumes
 * its uploads where they stopped (the upload's own records say which pushes are done).
 */
export class BulkUploadJobs implements UploadScheduler {
  readonly #boss: PgBoss;
  readonly #database: Database;
  readonly #log: FastifyBaseLogger;

  constructor(options: { boss: PgBoss; database: Database; log: FastifyBaseLogger }) {
    this.#boss = options.boss;
    this.#database = options.database;
    this.#log = options.log;
  }

  async start(): Promise<void> {
    // A job runs as long as its upload takes (up to 51 pushes).
    await createLongRunQueue(this.#boss, QUEUE, { delaySeconds: RETRY_DELAY_SECONDS, maxDelaySeconds: 60 });
  }

  /**
   * Works the queue with `run`; an upload whose runs kept being cut off by the process dying is given to `setAside`
   * instead (src/jobs/poison.ts).
   */
  async work(run: (uploadId: string) => Promise<UploadProgress>, setAside: (uploadId: string, reason: string) => Promise<UploadProgress>): Promise<void> {
    const unfinished = await unfinishedUploadIds(this.#database.db, RECOVERY_BATCH);
    const uploads = await cancelOrphanedJobs(this.#boss, this.#database, QUEUE, unfinished);
    if (uploads.length > 0) this.#log.info({ uploads }, 'cancelled the upload jobs of a process that died; resuming them now');
    await this.#boss.work<UploadJob>(QUEUE, { pollingIntervalSeconds: 0.5 }, async ([job]) => {
      if (job === undefined) return;
      const { uploadId } = job.data;
      const progress = await runGuarded(
        { db: this.#database.db, queue: QUEUE, key: uploadId, log: this.#log },
        () => run(uploadId),
        (reason) => setAside(uploadId, reason),
      );
      if (progress === 'waiting') throw new Error(`upload ${job.data.uploadId} waits on a request the authority has not settled`);
    });
    for (const uploadId of unfinished) await this.#send(uploadId);
  }

  async scheduleUpload(db: Kysely<Schema>, uploadId: string): Promise<void> {
    await this.#send(uploadId, db);
  }

  async #send(uploadId: string, db?: Kysely<Schema>): Promise<void> {
    await this.#boss.send(QUEUE, { uploadId } satisfies UploadJob, {
      singletonKey: uploadId,
      heartbeatSeconds: HEARTBEAT_SECONDS,
      ...(db === undefined ? {} : { db: executorOf(db) }),
    });
  }
}
