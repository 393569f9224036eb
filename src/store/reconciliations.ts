import { randomUUID } from 'node:crypto';
import { sql, type Kysely, type Selectable } from 'kysely';
import type { ReconciliationsTable, Schema } from './schema.ts';
import { pageRows } from './paging.ts';

export type ReconciliationRow = Selectable<ReconciliationsTable>;

/**
 * Starts a run for the customer: undefined when one is running already (the partial unique index decides, across
 * processes). A run still `running` after `staleAfterMs` was left by a process that died: it is failed first, in the
 * same transaction (the caller's: `db` is a transaction).
 */
export async function startReconciliation(
  db: Kysely<Schema>,
  run: { platformId: string; customerId: string; trigger: ReconciliationRow['trigger']; at: Date; staleAfterMs: number },
): Promise<ReconciliationRow | undefined> {
  await db
    .updateTable('reconciliations')
    .set({ status: 'failed', finished_at: run.at, error: 'interrupted: the process running it stopped' })
    .where('platform_customer_id', '=', run.customerId)
    .where('status', '=', 'running')
    .where('started_at', '<', new Date(run.at.getTime() - run.staleAfterMs))
    .execute();
  return db
    .insertInto('reconciliations')
    .values({ id: randomUUID(), platform_id: run.platformId, platform_customer_id: run.customerId, trigger: run.trigger, status: 'running', started_at: run.at })
    // The arbiter's predicate is a literal: PostgreSQL matches a parameter to the partial index only in a custom plan,
    // and a pooled connection that has run the statement often enough plans it generically ("no unique or exclusion
    // constraint matching the ON CONFLICT specification").
    .onConflict((oc) => oc.column('platform_customer_id').where('status', '=', sql.lit('running')).doNothing())
    .returningAll()
    .executeTakeFirst();
}

export type RunOutcome = {
  status: 'completed' | 'failed';
  irmsUpdated: number;
  irmsCancelled: number;
  ebrcsDiscovered: number;
  ebrcsCancelled: number;
  error: string | null;
};

/** Finishes a running run with its outcome; the row as finished (undefined when it was not running any more). */
export async function finishReconciliation(db: Kysely<Schema>, id: string, outcome: RunOutcome, at: Date): Promise<ReconciliationRow | undefined> {
  return db
    .updateTable('reconciliations')
    .set({
      status: outcome.status,
      finished_at: at,
      irms_updated: outcome.irmsUpdated,
      irms_cancelled: outcome.irmsCancelled,
      ebrcs_discovered: outcome.ebrcsDiscovered,
      ebrcs_cancelled: outcome.ebrcsCancelled,
      error: outcome.error,
    })
    .where('id', '=', id)
    .where('status', '=', 'running')
    .returningAll()
    .executeTakeFirst();
}

/** A page of the customer's runs, newest first, and how many there are. */
export async function listReconciliations(db: Kysely<Schema>, customerId: string, page: { offset: number; limit: number }): Promise<{ rows: ReconciliationRow[]; total: number }> {
  const matching = db.selectFrom('reconciliations').where('platform_customer_id', '=', customerId);
  const rows = await pageRows(matching.selectAll().orderBy('started_at', 'desc').orderBy('id', 'desc'), page).execute();
  const counted = await matching.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
  return { rows, total: Number(counted.total) };
}

/**
 * Verified customers due a scheduled run, at most `limit`, the longest waiting first: none started within the
 * interval, and (for a customer never reconciled) its own point in the interval reached since it was verified, so
 * that customers verified together are spread over the interval instead of all running at once.
 */
export async function customersDue(db: Kysely<Schema>, options: { intervalSeconds: number; at: Date; limit: number }): Promise<{ id: string; platform_id: string }[]> {
  const { rows } = await sql<{ id: string; platform_id: string }>`
    select customer.id, customer.platform_id
    from platform_customers customer
    left join lateral (
      select max(started_at) as last from reconciliations where platform_customer_id = customer.id
    ) run on true
    where customer.authority_verified_at is not null and customer.authority_api_credentials is not null
      and coalesce(run.last, customer.authority_verified_at
        + make_interval(secs => (('x' || substr(md5(customer.id::text), 1, 8))::bit(32)::bigint % ${options.intervalSeconds}))
        - make_interval(secs => ${options.intervalSeconds}))
        <= ${options.at}::timestamptz - make_interval(secs => ${options.intervalSeconds})
    order by coalesce(run.last, customer.authority_verified_at)
    limit ${options.limit}`.execute(db);
  return rows;
}
