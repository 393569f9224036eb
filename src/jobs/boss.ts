import { CompiledQuery, type Kysely } from 'kysely';
import { PgBoss } from 'pg-boss';
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../store/database.ts';
import type { Schema } from '../store/schema.ts';

/**
 * A running job's worker beats every half of this; a job whose beat stops for this long (its process died) is failed
 * by pg-boss's supervision and retried, instead of waiting out its expiry.
 */
export const HEARTBEAT_SECONDS = 10;

/** The one pg-boss of a process, on the service's own database connection, shared by every queue. */
export function createBoss(database: Database, log: FastifyBaseLogger): PgBoss {
  // Supervision passes every half heartbeat: a job whose process died is retried within about 1.5 heartbeats.
  const boss = new PgBoss({
    db: database.executor as never,
    supervise: true,
    schedule: false,
    superviseIntervalSeconds: HEARTBEAT_SECONDS / 2,
    monitorIntervalSeconds: HEARTBEAT_SECONDS / 2,
  });
  boss.on('error', (error: unknown) => log.error({ err: error }, 'job queue error'));
  return boss;
}

/**
 * Installs or upgrades pg-boss's own tables (what a start does first, under pg-boss's own lock), for `npm run migrate`:
 * the processes started after it then find the job queue's schema up to date and change nothing.
 */
export async function migrateJobQueue(database: Database): Promise<void> {
  const boss = new PgBoss({ db: database.executor as never, supervise: false, schedule: false });
  boss.on('error', () => undefined);
  await boss.start();
  await boss.stop({ graceful: false });
}

/** A transaction as pg-boss's executor, so that the jobs it sends commit (or roll back) with the rows they belong to. */
/**
 * A queue of long runs, one at a time per key (`exclusive`), retried with back-off for as long as it takes: a run lasts
 * as long as its data does, so its heartbeat, not its age, says it is alive.
 */
export async function createLongRunQueue(boss: PgBoss, queue: string, retry: { delaySeconds: number; maxDelaySeconds: number }): Promise<void> {
  await boss.createQueue(queue, {
    policy: 'exclusive',
    heartbeatSeconds: HEARTBEAT_SECONDS,
    retryLimit: 100_000,
    retryDelay: retry.delaySeconds,
    retryBackoff: true,
    retryDelayMax: retry.maxDelaySeconds,
    expireInSeconds: 24 * 3600,
  });
}

export function executorOf(tx: Kysely<Schema>) {
  return {
    executeSql: async (text: string, values?: unknown[]) => ({ rows: [...(await tx.executeQuery(CompiledQuery.raw(text, values ?? []))).rows] }),
  };
}

/**
 * Cancels the running jobs, keyed by `keys`, that no live process works on, so that they can be queued again at once:
 * on the embedded database every running job (this process holds the data folder and has not started working), on
 * PostgreSQL those whose heartbeat has stopped (or that never had one). Returns the keys whose jobs were cancelled.
 */
export async function cancelOrphanedJobs(boss: PgBoss, database: Database, queue: string, keys: readonly string[]): Promise<string[]> {
  const everyRunningJob = database.kind === 'embedded';
  const silentSince = Date.now() - HEARTBEAT_SECONDS * 1000;
  const cancelled: string[] = [];
  for (const key of keys) {
    const jobs = await boss.findJobs(queue, { key });
    const orphaned = jobs.filter(
      (job) =>
        job.state === 'active' &&
        (everyRunningJob || job.heartbeatSeconds === null || (job.heartbeatOn ?? job.startedOn).getTime() < silentSince),
    );
    if (orphaned.length === 0) continue;
    await boss.cancel(queue, orphaned.map((job) => job.id));
    cancelled.push(key);
  }
  return cancelled;
}
