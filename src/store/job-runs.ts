import { sql, type Kysely } from 'kysely';
import type { Schema } from './schema.ts';

/** Records that a run of the key begins; how many runs of it, this one included, have begun without ending. */
export async function beginRun(db: Kysely<Schema>, queue: string, key: string): Promise<number> {
  const row = await db
    .insertInto('job_runs')
    .values({ queue, job_key: key, unfinished: 1 })
    .onConflict((conflict) => conflict.columns(['queue', 'job_key']).doUpdateSet({ unfinished: sql`job_runs.unfinished + 1`, updated_at: new Date() }))
    .returning('unfinished')
    .executeTakeFirstOrThrow();
  return Number(row.unfinished);
}

/** The run of the key ended (in any ordinary way): no unfinished runs are left to count. */
export async function endRun(db: Kysely<Schema>, queue: string, key: string): Promise<void> {
  await db.deleteFrom('job_runs').where('queue', '=', queue).where('job_key', '=', key).execute();
}
