import type { FastifyBaseLogger } from 'fastify';
import type { Schema } from '../store/schema.ts';
import type { Kysely } from 'kysely';
import { recordAudit, type AuditSource } from './audit.ts';
import type { Static } from 'typebox';
import { AuthorityError } from '../authority/authority.ts';
import { AppError, authorityProblem } from '../errors.ts';
import type { ReconciliationSchema } from '../schemas/reconciliations.ts';
import { findCustomer } from '../store/customers.ts';
import { endRun } from '../store/job-runs.ts';
import * as store from '../store/reconciliations.ts';
import { requireStoredCredentials, requireVerified, type ServiceContext, type VerifiedCustomer } from './context.ts';
import { requireCustomer } from './customers.ts';
import { syncEbrcs } from './ebrcs.ts';
import type { IrmPuller } from './irms.ts';
import { itemsPage, offsetOf, type PageRequest } from './pages.ts';

export type Reconciliation = Static<typeof ReconciliationSchema>;

/** A run still `running` after this long was left by a process that died (a run is two authority pulls). */
const STALE_RUN_MS = 15 * 60 * 1000;
/** A customer's runs are counted against poison under this name (table job_runs, keyed by the customer). */
const GUARDED_AS = 'reconciliation';

/**
 * Runs a job guarded against poison (`runGuarded`, src/jobs/poison.ts, given by src/service.ts): a job whose runs kept
 * being cut off by the process dying gets `setAside` with the reason instead of `run`.
 */
export type PoisonGuard = <T>(job: { queue: string; key: string }, run: () => Promise<T>, setAside: (reason: string) => Promise<T>) => Promise<T>;

export function toReconciliation(row: store.ReconciliationRow): Reconciliation {
  return {
    id: row.id,
    platformCustomerId: row.platform_customer_id,
    trigger: row.trigger,
    status: row.status,
    startedAt: row.started_at.toISOString(),
    finishedAt: row.finished_at?.toISOString() ?? null,
    irmsUpdated: row.irms_updated,
    irmsCancelled: row.irms_cancelled,
    ebrcsDiscovered: row.ebrcs_discovered,
    ebrcsCancelled: row.ebrcs_cancelled,
    error: row.error,
  };
}

/**
 * Reconciliation runs (contract 13): a customer's IRMs pulled (every IRM updated in place, irm.updated for outside
 * changes) and its eBRC register brought up to date with all the authority reports (ebrc.updated), as one recorded
 * run, on request or on the schedule. At most one runs per customer; a finished run raises reconciliation.completed.
 */
export class Reconciliations {
  readonly #context: ServiceContext;
  readonly #puller: IrmPuller;
  readonly #guard: PoisonGuard;
  readonly #log: FastifyBaseLogger | undefined;
  readonly #running = new Set<Promise<unknown>>();

  constructor(context: ServiceContext, puller: IrmPuller, guard: PoisonGuard, log?: FastifyBaseLogger) {
    this.#context = context;
    this.#puller = puller;
    this.#guard = guard;
    this.#log = log;
  }

  /** POST …/reconcile: starts a run and answers it at once (202); it goes on in the background. */
  async request(platformId: string, customerId: string, source: AuditSource): Promise<Reconciliation> {
    const customer = requireVerified(await requireCustomer(this.#context.db, platformId, customerId));
    const run = await this.#context.db.transaction().execute(async (tx) => {
      const started = await this.#start(customer, 'request', tx);
      if (started !== undefined) {
        await recordAudit(tx, source, { platformId: customer.platform_id, action: 'reconciliation.request', target: { type: 'reconciliation', id: started.id } });
      }
      return started;
    });
    if (run === undefined) {
      throw new AppError('reconciliation_running', `A reconciliation of platform customer ${customer.id} is running; follow it with GET /api/v1/platform-customers/${customer.id}/reconciliations.`);
    }
    this.#track(this.#work(run, customer));
    return toReconciliation(run);
  }

  /**
   * A scheduled run of the customer, awaited (the scheduler bounds how many run at once). A customer whose credentials
   * the authority refused is not asked again: its run fails with the reason. Nothing when one is running already.
   */
  async scheduled(due: { id: string; platform_id: string }): Promise<void> {
    const row = await findCustomer(this.#context.db, due.platform_id, due.id);
    if (row === undefined) return;
    const customer = requireStoredCredentials(row);
    const run = await this.#start(customer, 'schedule');
    if (run === undefined) return;
    if (customer.authority_credentials_status === 'invalid') {
      await this.#finish(run, { ...NOTHING, status: 'failed', error: 'skipped: the authority refused the customer\'s credentials; check them again' });
      return;
    }
    await this.#work(run, customer);
  }

  async list(platformId: string, customerId: string, query: PageRequest) {
    const customer = await requireCustomer(this.#context.db, platformId, customerId);
    const { rows, total } = await store.listReconciliations(this.#context.db, customer.id, { offset: offsetOf(query), limit: query.limit });
    return itemsPage(rows.map(toReconciliation), total, query);
  }

  /** Waits for the runs started on request by this process (a clean shutdown; tests). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#running]);
  }

  /** Starts a run in `tx`, or in a transaction of its own. */
  #start(customer: VerifiedCustomer, trigger: store.ReconciliationRow['trigger'], tx?: Kysely<Schema>) {
    const start = (db: Kysely<Schema>) =>
      store.startReconciliation(db, {
        platformId: customer.platform_id,
        customerId: customer.id,
        trigger,
        at: new Date(),
        staleAfterMs: STALE_RUN_MS,
      });
    return tx === undefined ? this.#context.db.transaction().execute(start) : start(tx);
  }

  #track(work: Promise<unknown>): void {
    this.#running.add(work);
    void work.finally(() => this.#running.delete(work));
  }

  /**
   * The run's work: the IRMs, then every eBRC the authority reports; its outcome, whatever happens. A customer whose
   * runs kept being cut off by the process dying is not worked: its run fails with the reason, until a request
   * (which forgets the runs cut off before it: someone asked to try again).
   */
  async #work(run: store.ReconciliationRow, customer: VerifiedCustomer): Promise<void> {
    let outcome: store.RunOutcome;
    try {
      if (run.trigger === 'request') await endRun(this.#context.db, GUARDED_AS, customer.id);
      outcome = await this.#guard({ queue: GUARDED_AS, key: customer.id }, () => this.#reconcile(customer), async (reason) => ({
        ...NOTHING,
        status: 'failed',
        error: `${reason}; request a reconciliation to try again`,
      }));
    } catch (error) {
      if (!(error instanceof AuthorityError) && !(error instanceof AppError)) this.#log?.error({ err: error, reconciliationId: run.id }, 'a reconciliation failed');
      outcome = { ...NOTHING, status: 'failed', error: reasonOf(error) };
    }
    await this.#finish(run, outcome).catch((error: unknown) => this.#log?.error({ err: error, reconciliationId: run.id }, 'a reconciliation could not be recorded'));
  }

  async #reconcile(customer: VerifiedCustomer): Promise<store.RunOutcome> {
    const irms = await this.#puller.pullNow(customer);
    const ebrcs = await syncEbrcs(this.#context, customer, {});
    return {
      status: 'completed',
      irmsUpdated: irms.updated,
      irmsCancelled: irms.cancelled,
      ebrcsDiscovered: ebrcs.discovered,
      ebrcsCancelled: ebrcs.cancelled,
      error: null,
    };
  }

  /** Records the run's outcome with its reconciliation.completed event, in one transaction. */
  async #finish(run: store.ReconciliationRow, outcome: store.RunOutcome): Promise<void> {
    const finished = await this.#context.db.transaction().execute(async (tx) => {
      const row = await store.finishReconciliation(tx, run.id, outcome, new Date());
      if (row === undefined) return undefined;
      await this.#context.outbox.record(tx, [
        { platformId: row.platform_id, platformCustomerId: row.platform_customer_id, type: 'reconciliation.completed', data: toReconciliation(row) },
      ]);
      return row;
    });
    if (finished !== undefined) this.#context.outbox.committed();
  }
}

const NOTHING = { irmsUpdated: 0, irmsCancelled: 0, ebrcsDiscovered: 0, ebrcsCancelled: 0 };

/** Why a run failed, as its record says it: the problem's detail for the authority's failures and ours. */
function reasonOf(error: unknown): string {
  if (error instanceof AuthorityError) return authorityProblem(error).detail;
  if (error instanceof AppError) return error.message;
  return 'an internal error; see the service log';
}
