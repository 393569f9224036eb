import type { Kysely } from 'kysely';
import type { FastifyBaseLogger } from 'fastify';
import { beginRun, endRun } from '../store/job-runs.ts';
import type { Schema } from '../store/schema.ts';

/**
 * Runs of one job (by queue and key) that may begin without ending before the job is poison: each of them took its
 * process down (a kill or a crash mid-run leaves its run unended; an ordinary end, done or failed, clears the count).
 */
export const MAX_UNFINISHED_RUNS = 3;

/**
 * Poison-job protection for background work (docs/reliability.md, "Poison jobs"): a job is run with a record that
 * it began, committed before the work starts and cleared when the work ends, whether it succeeded or threw. A job
 * whose runs began MAX_UNFINISHED_RUNS times without ending is not run again: `setAside` is called instead, once
 * per later attempt, with the reason, so that the job's owner fails it for good (an upload is rejected, say) rather
 * than resume it, and the process with it, forever.
 */
export async function runGuarded<T>(
  options: { db: Kysely<Schema>; queue: string; key: string; log: FastifyBaseLogger },
  run: () => Promise<T>,
  setAside: (reason: string) => Promise<T>,
): Promise<T> {
  const { db, queue, key, log } = options;
  const unfinished = await beginRun(db, queue, key);
  if (unfinished > MAX_UNFINISHED_RUNS) {
    // The count goes on with each attempt set aside, but no run began after the last of the MAX_UNFINISHED_RUNS cut off.
    const reason = `its work was cut off ${MAX_UNFINISHED_RUNS} times in a row (the service stopped while working on it), so it was set aside instead of tried again`;
    // Said loudly the first time; a sweep that queues the job again later hears it quietly.
    (unfinished === MAX_UNFINISHED_RUNS + 1 ? log.error : log.warn).call(log, { queue, key, unfinishedRuns: MAX_UNFINISHED_RUNS }, `poison job set aside: ${reason}`);
    // The count stays: any later attempt is set aside again without running.
    return setAside(reason);
  }
  try {
    return await run();
  } finally {
    await endRun(db, queue, key);
  }
}
