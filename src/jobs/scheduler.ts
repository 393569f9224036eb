import type { Kysely } from 'kysely';
import type { Schema } from '../store/schema.ts';

/** Background work the services ask for; scheduled in the caller's transaction so it is never lost. */
export interface RequestScheduler {
  /** Makes sure a job will move this request (internal id) towards a final state. */
  scheduleAdvance(db: Kysely<Schema>, requestId: string): Promise<void>;
}
