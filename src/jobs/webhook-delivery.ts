import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Job, JobInsert, PgBoss } from 'pg-boss';
import { Counter, Histogram, type Registry } from 'prom-client';
import { signatureHeaders } from '../domain/webhook-signature.ts';
import type { CredentialsVault } from '../services/credentials-vault.ts';
import { toEvent } from '../services/outbox.ts';
import type { DeliveryScheduler } from '../services/webhook-endpoints.ts';
import { longestAttemptMs, sendWebhook, type DeliveryOutcome } from '../services/webhook-sender.ts';
import type { Database } from '../store/database.ts';
import type { SweepPosition } from '../store/paging.ts';
import type { Schema } from '../store/schema.ts';
import * as store from '../store/webhook-attempts.ts';
import { executorOf, HEARTBEAT_SECONDS } from './boss.ts';
import { runGuarded } from './poison.ts';
import { inSpan } from '../telemetry/spans.ts';

const QUEUE = 'webhook-delivery';
/** Attempts kept due but without a job (a job pg-boss gave up on) are queued again by a sweep this often. */
const RECOVERY_INTERVAL_MS = 60_000;
const RECOVERY_BATCH = 1_000;
/** How often an idle worker looks for jobs of other processes; this process's own wake it at once. */
const POLL_MS = 500;
/**
 * How long a woken worker lets finished attempts gather before it writes their outcomes, or fetches for the slots they
 * freed: a statement for many instead of one each (on the embedded database's one connection, 999 deliveries to one
 * endpoint took 8.8 s one at a time).
 */
const GATHER_MS = 5;

type DeliveryJob = { attemptId: string };
/** `final`: failed for good, with no further attempt (an attempt set aside as poison). */
type Sent = DeliveryOutcome & { sentAt: Date; final?: boolean };
/** A job done with: its attempt and how it went (null for a job with nothing left to send). */
type Finished = { job: Job<DeliveryJob>; attempt: store.AttemptToDeliver | null; outcome: Sent | null };

export type DeliveryMetrics = {
  /** Attempts by outcome: succeeded, failed, refused (an internal address). */
  deliveries: Counter<'outcome'>;
  /** How long an attempt took, to its outcome. */
  duration: Histogram;
  /** From an event's change to its first successful delivery to an endpoint. */
  changeToDelivery: Histogram;
};

export type DeliveryOptions = {
  boss: PgBoss;
  database: Database;
  vault: CredentialsVault;
  log: FastifyBaseLogger;
  metrics: DeliveryMetrics;
  /** Seconds before each retry (WEBHOOK_RETRY_SCHEDULE). */
  retrySchedule: readonly number[];
  timeoutMs: number;
  allowPrivateUrls: boolean;
  disableAfterMs: number;
  /** Attempts in flight at once in this process; one endpoint gets at most a quarter of them. */
  concurrency: number;
  /** How many due pending attempts a recovery sweep reads (1,000). */
  recoveryBatch?: number;
};

/**
 * Delivers webhook attempts, as pg-boss jobs (one per attempt, grouped by endpoint), by Standard Webhooks. Each
 * attempt is a row; its outcome, the next attempt (per the retry schedule, with its job) and the endpoint's failure
 * streak are written in one transaction, then the job is completed: a process killed in between delivers again
 * (at least once, de-duplicated by webhook-id at the receiver), never loses an attempt. Jobs are fetched and run
 * side by side up to `concurrency`, and pg-boss's group limit keeps one endpoint to a quarter of that across every
 * process: a slow receiver holds its own slots, never the others'.
 */
export class WebhookDelivery implements DeliveryScheduler {
  readonly #options: DeliveryOptions;
  readonly #db: Kysely<Schema>;
  readonly #perEndpoint: number;
  readonly #expireSeconds: number;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #finished: Finished[] = [];
  /** The jobs this process holds (sending, or waiting for their outcome to be written): they beat until completed. */
  readonly #held = new Set<string>();
  /** The attempts this process is sending, until their outcomes are written. */
  readonly #sending = new Set<string>();
  #heartbeat: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #woken = false;
  #loop: Promise<void> | undefined;
  #recovery: NodeJS.Timeout | undefined;
  readonly #recoveryBatch: number;
  #sweepFrom: SweepPosition | undefined;
  #stopped = true;

  constructor(options: DeliveryOptions) {
    this.#options = options;
    this.#db = options.database.db;
    this.#perEndpoint = Math.max(1, Math.floor(options.concurrency / 4));
    this.#recoveryBatch = options.recoveryBatch ?? RECOVERY_BATCH;
    // A job still active this long after it started had its process die mid-attempt: pg-boss retries it.
    this.#expireSeconds = Math.ceil(longestAttemptMs(options.timeoutMs) / 1000) + 30;
  }

  /** Creates the queue (the boss is started). */
  async start(): Promise<void> {
    // A job whose process died stops beating: pg-boss fails it after HEARTBEAT_SECONDS and it runs again soon after.
    await this.#boss.createQueue(QUEUE, {
      policy: 'exclusive',
      heartbeatSeconds: HEARTBEAT_SECONDS,
      retryLimit: 20,
      retryDelay: 1,
      retryBackoff: true,
      retryDelayMax: 60,
      expireInSeconds: this.#expireSeconds,
    });
  }

  get #boss(): PgBoss {
    return this.#options.boss;
  }

  /** Schedules attempts in the caller's transaction: their rows and their jobs commit with it. */
  async schedule(tx: Kysely<Schema>, attempts: readonly store.NewAttempt[]): Promise<void> {
    if (attempts.length === 0) return;
    await store.insertAttempts(tx, attempts);
    const now = Date.now();
    const jobs: JobInsert<DeliveryJob>[] = attempts.map((attempt) => ({
      data: { attemptId: attempt.id },
      singletonKey: attempt.id,
      group: { id: attempt.endpointId },
      ...(attempt.dueAt.getTime() > now ? { startAfter: attempt.dueAt } : {}),
    }));
    await this.#boss.insert(QUEUE, jobs, { db: executorOf(tx) });
  }

  async deliverNow(db: Kysely<Schema>, delivery: { eventId: string; endpointId: string }): Promise<string> {
    const previous = await db
      .selectFrom('webhook_attempts')
      .select((eb) => eb.fn.max('attempt').as('attempt'))
      .where('event_id', '=', delivery.eventId)
      .where('endpoint_id', '=', delivery.endpointId)
      .executeTakeFirst();
    const id = randomUUID();
    // A redelivery is numbered after the event's last attempt to this endpoint, and starts the retry schedule afresh.
    await this.schedule(db, [{ id, endpointId: delivery.endpointId, eventId: delivery.eventId, attempt: (previous?.attempt ?? 0) + 1, retry: 0, dueAt: new Date() }]);
    return id;
  }

  committed(): void {
    this.#woken = true;
    this.#wake?.();
  }

  /** Starts delivering: first the attempts a dead process left running, then the loop and the recovery sweep. */
  async work(): Promise<void> {
    this.#stopped = false;
    await this.#releaseOrphanedJobs();
    await this.recover();
    this.#loop = this.#run();
    this.#heartbeat = setInterval(() => this.#beat(), (HEARTBEAT_SECONDS / 2) * 1000);
    this.#heartbeat.unref();
    this.#recovery = setInterval(() => {
      this.recover().catch((error: unknown) => this.#options.log.error({ err: error }, 'webhook recovery sweep failed'));
    }, RECOVERY_INTERVAL_MS);
    this.#recovery.unref();
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      const free = this.#options.concurrency - this.#inFlight.size;
      let fetched = 0;
      if (free > 0) {
        try {
          const jobs = await this.#boss.fetch<DeliveryJob>(QUEUE, { batchSize: free, groupConcurrency: this.#perEndpoint });
          fetched = jobs.length;
          if (fetched > 0) await this.#start(jobs);
        } catch (error) {
          this.#options.log.error({ err: error }, 'could not fetch webhook deliveries; will try again');
        }
      }
      // A full fetch may have left more behind: fetch again at once while there is room.
      if (fetched > 0 && fetched === free) continue;
      await this.#sleep();
    }
  }

  /** Until woken (a commit, a finished attempt) or the poll interval has passed. */
  async #sleep(): Promise<void> {
    if (this.#woken) {
      this.#woken = false;
      await delay(GATHER_MS);
      return;
    }
    const woken = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), POLL_MS);
      this.#wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
    this.#wake = undefined;
    this.#woken = false;
    if (woken) await delay(GATHER_MS);
  }

  /**
   * Reads the fetched jobs' attempts in one statement and sends each pending one, side by side. A job this process
   * already holds, fetched again (pg-boss failed it while it ran: its heartbeat lapsed while this process was stalled),
   * is left to the run under way, which completes it; another job of an attempt being sent only completes.
   */
  async #start(fetched: readonly Job<DeliveryJob>[]): Promise<void> {
    const jobs = fetched.filter((job) => !this.#held.has(job.id));
    for (const job of jobs) this.#held.add(job.id);
    const attempts = new Map((await store.findAttemptsToDeliver(this.#db, jobs.map((job) => job.data.attemptId))).map((attempt) => [attempt.id, attempt]));
    for (const job of jobs) {
      const attempt = attempts.get(job.data.attemptId);
      // Recorded already (a run that died before completing its job), or its endpoint deleted: nothing to send.
      if (attempt === undefined || attempt.status !== 'pending' || this.#sending.has(attempt.id)) {
        this.#settle({ job, attempt: null, outcome: null });
        continue;
      }
      this.#sending.add(attempt.id);
      // An attempt whose sending kept taking the process down is failed for good instead (src/jobs/poison.ts).
      const guard = { db: this.#db, queue: QUEUE, key: attempt.id, log: this.#options.log };
      const sending = runGuarded(guard, () => this.#attempt(attempt), async (reason) => setAside(reason)).then(
        (outcome) => this.#settle({ job, attempt, outcome }),
        (error: unknown) => {
          this.#options.log.error({ err: error, event: attempt.event_id, attempt: attempt.id }, 'webhook attempt failed unexpectedly; its job will run again');
          this.#sending.delete(attempt.id);
          this.#failJobs([job]);
        },
      );
      this.#inFlight.add(sending);
      void sending.finally(() => {
        this.#inFlight.delete(sending);
        this.committed();
      });
    }
  }

  async #attempt(attempt: store.AttemptToDeliver): Promise<Sent> {
    if (attempt.endpoint_status === 'disabled') {
      return { succeeded: false, refused: false, responseStatus: null, responseBody: null, durationMs: 0, error: 'the endpoint is disabled; nothing was sent', sentAt: new Date() };
    }
    const sentAt = new Date();
    const span = { 'webhook.attempt_id': attempt.id, 'webhook.endpoint_id': attempt.endpoint_id, 'webhook.event_id': attempt.event_id, 'webhook.event_type': attempt.event_type };
    return inSpan('webhook delivery', span, async (annotate) => {
      const sent = await this.#send(attempt, sentAt);
      annotate({ 'webhook.succeeded': sent.succeeded, ...(sent.responseStatus === null ? {} : { 'http.response.status_code': sent.responseStatus }) });
      return { ...sent, sentAt };
    });
  }

  /** Queues a finished attempt's outcome to be written; writes run one batch at a time, each in one transaction. */
  #settle(finished: Finished): void {
    this.#finished.push(finished);
    this.#scheduleFlush();
  }

  #scheduleFlush(): void {
    this.#flushing ??= this.#flush().finally(() => {
      this.#flushing = undefined;
      if (this.#finished.length > 0) this.#scheduleFlush();
    });
  }

  /**
   * Writes the finished attempts: their outcomes, the next attempts of the failed ones (with their jobs), the endpoints'
   * failure streaks, in one transaction; then completes their jobs. A process killed before the completion sends
   * those attempts' jobs again, which find them recorded and do nothing more.
   */
  async #flush(): Promise<void> {
    // Let the attempts finishing about now join this batch.
    await delay(GATHER_MS);
    const batch = this.#finished.splice(0);
    if (batch.length === 0) return;
    const { retrySchedule, disableAfterMs } = this.#options;
    const sent = batch.filter((item): item is Finished & { attempt: store.AttemptToDeliver; outcome: Sent } => item.attempt !== null && item.outcome !== null);
    const outcomes = sent.map(({ attempt, outcome }) => {
      const retryIn = outcome.succeeded || outcome.final === true || attempt.endpoint_status === 'disabled' ? undefined : retrySchedule[attempt.retry];
      return { attempt, outcome, nextAttemptAt: retryIn === undefined ? null : new Date(Date.now() + retryIn * 1000) };
    });
    let disabled: string[] = [];
    try {
      disabled = await this.#db.transaction().execute(async (tx) => {
        await store.lockEndpoints(tx, [...new Set(outcomes.map(({ attempt }) => attempt.endpoint_id))]);
        const recorded = await store.recordOutcomes(
          tx,
          outcomes.map(({ attempt, outcome, nextAttemptAt }) => ({
            id: attempt.id,
            status: outcome.succeeded ? 'succeeded' : 'failed',
            responseStatus: outcome.responseStatus,
            responseBody: outcome.responseBody,
            durationMs: outcome.durationMs,
            error: outcome.error,
            nextAttemptAt,
          })),
        );
        const fresh = outcomes.filter(({ attempt }) => recorded.has(attempt.id));
        await this.schedule(
          tx,
          fresh.flatMap(({ attempt, nextAttemptAt }) =>
            nextAttemptAt === null
              ? []
              : [{ id: randomUUID(), endpointId: attempt.endpoint_id, eventId: attempt.event_id, attempt: attempt.attempt + 1, retry: attempt.retry + 1, dueAt: nextAttemptAt }],
          ),
        );
        const live = fresh.filter(({ attempt }) => attempt.endpoint_status === 'enabled');
        const succeeded = new Set(live.filter(({ outcome }) => outcome.succeeded).map(({ attempt }) => attempt.endpoint_id));
        // Only a streak that exists needs ending: most successes change nothing.
        const streaksEnded = [...new Set(live.filter(({ attempt, outcome }) => outcome.succeeded && attempt.failing_since !== null).map(({ attempt }) => attempt.endpoint_id))];
        const failed = [...new Set(live.filter(({ outcome }) => !outcome.succeeded).map(({ attempt }) => attempt.endpoint_id))].filter((id) => !succeeded.has(id));
        return store.trackEndpointHealth(tx, { succeeded: streaksEnded, failed }, new Date(), disableAfterMs);
      });
    } catch (error) {
      this.#options.log.error({ err: error, attempts: batch.length }, 'could not record webhook attempts; their jobs will run again');
      for (const { attempt } of sent) this.#sending.delete(attempt.id);
      this.#failJobs(batch.map((item) => item.job));
      return;
    }
    for (const { attempt } of sent) this.#sending.delete(attempt.id);
    await this.#boss.complete(QUEUE, batch.map((item) => item.job.id)).catch((error: unknown) => {
      this.#options.log.error({ err: error }, 'could not complete webhook jobs; they will run again and find their attempts recorded');
    });
    for (const item of batch) this.#held.delete(item.job.id);
    // Completed jobs free their endpoints' group slots: fetch the next ones now, not at the next poll.
    this.committed();
    this.#report(outcomes, disabled);
  }

  #report(outcomes: readonly { attempt: store.AttemptToDeliver; outcome: Sent; nextAttemptAt: Date | null }[], disabled: readonly string[]): void {
    const { log, metrics } = this.#options;
    const now = Date.now();
    for (const { attempt, outcome, nextAttemptAt } of outcomes) {
      const label = outcome.succeeded ? 'succeeded' : outcome.refused ? 'refused' : 'failed';
      metrics.deliveries.labels({ outcome: label }).inc();
      metrics.duration.observe(outcome.durationMs / 1000);
      if (outcome.succeeded && attempt.attempt === 1) metrics.changeToDelivery.observe((now - attempt.event_created_at.getTime()) / 1000);
      const line = {
        event: attempt.event_id,
        type: attempt.event_type,
        endpoint: attempt.endpoint_id,
        attempt: attempt.attempt,
        outcome: label,
        responseStatus: outcome.responseStatus,
        durationMs: outcome.durationMs,
        error: outcome.error,
        nextAttemptAt,
      };
      if (outcome.succeeded) log.info(line, 'webhook delivered');
      else log.warn(line, nextAttemptAt === null ? 'webhook delivery failed; no attempt left' : 'webhook delivery failed; will retry');
    }
    for (const endpoint of disabled) log.warn({ endpoint }, 'webhook endpoint disabled: every delivery failed for the configured time');
  }

  #failJobs(jobs: readonly Job<DeliveryJob>[]): void {
    for (const job of jobs) this.#held.delete(job.id);
    this.#boss.fail(QUEUE, jobs.map((job) => job.id), { message: 'not recorded' }).catch(() => undefined);
  }

  #beat(): void {
    if (this.#held.size === 0) return;
    this.#boss.touch(QUEUE, [...this.#held]).catch((error: unknown) => this.#options.log.warn({ err: error }, 'could not refresh the heartbeat of webhook jobs'));
  }

  async #send(attempt: store.AttemptToDeliver, at: Date) {
    const { vault } = this.#options;
    const secrets = [vault.openWebhookSecret(attempt.endpoint_id, attempt.secret)];
    if (attempt.previous_secret !== null && attempt.previous_secret_expires_at !== null && attempt.previous_secret_expires_at > at) {
      secrets.push(vault.openWebhookSecret(attempt.endpoint_id, attempt.previous_secret));
    }
    const body = JSON.stringify(
      toEvent({ id: attempt.event_id, type: attempt.event_type, created_at: attempt.event_created_at, platform_customer_id: attempt.event_platform_customer_id, data: attempt.event_data as Record<string, unknown> }),
    );
    return sendWebhook({
      url: attempt.url,
      headers: signatureHeaders({ eventId: attempt.event_id, timestamp: at, body, secrets }),
      body,
      timeoutMs: this.#options.timeoutMs,
      allowPrivate: this.#options.allowPrivateUrls,
    });
  }

  /**
   * Queues a job for every due pending attempt of the sweep's next batch that has none (pg-boss gave up on it, or it
   * was cancelled). Each sweep goes on after the last one's batch, back to the first once it has read to the end: behind
   * a backlog of due attempts that have their jobs (an endpoint that answers slowly), one that lost its job is reached.
   */
  async recover(): Promise<void> {
    const { rows: due, next } = await store.duePendingAttempts(this.#db, new Date(Date.now() - 60_000), this.#recoveryBatch, this.#sweepFrom);
    // The queue is exclusive by attempt: one that still has a job queued or running gets no second one.
    if (due.length > 0) await this.#boss.insert(QUEUE, due.map((attempt) => ({ data: { attemptId: attempt.id }, singletonKey: attempt.id, group: { id: attempt.endpoint_id } })));
    this.#sweepFrom = next;
  }

  /**
   * On the embedded database this process holds the data folder, so every running job was left by a process that
   * died: they are failed, to be retried at once, instead of waiting out their expiry.
   */
  async #releaseOrphanedJobs(): Promise<void> {
    if (this.#options.database.kind !== 'embedded') return;
    const { rows: pending } = await store.duePendingAttempts(this.#db, new Date(Date.now() + 366 * 86_400_000), this.#recoveryBatch);
    for (const attempt of pending) {
      const jobs = await this.#boss.findJobs<DeliveryJob>(QUEUE, { key: attempt.id });
      const orphaned = jobs.filter((job) => job.state === 'active').map((job) => job.id);
      if (orphaned.length === 0) continue;
      this.#options.log.info({ attempt: attempt.id, jobs: orphaned }, 'retrying the webhook attempts of a process that died');
      await this.#boss.cancel(QUEUE, orphaned);
      await this.#boss.insert(QUEUE, [{ data: { attemptId: attempt.id }, singletonKey: attempt.id, group: { id: attempt.endpoint_id } }]);
    }
  }

  /** Stops fetching and waits for the attempts in flight (each bounded by the delivery timeout). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#recovery);
    clearInterval(this.#heartbeat);
    this.#wake?.();
    await this.#loop;
    await Promise.allSettled([...this.#inFlight]);
    while (this.#flushing) await this.#flushing;
  }
}

/** The outcome of an attempt set aside as poison: failed, with the reason in its delivery log, and no attempt after it. */
function setAside(reason: string): Sent {
  const error = `not sent again: ${reason}; redeliver the event to try again`;
  return { succeeded: false, refused: false, responseStatus: null, responseBody: null, durationMs: 0, error, sentAt: new Date(), final: true };
}

/** The webhook series of the metrics registry (GET /metrics). */
export function createDeliveryMetrics(registry: Registry): DeliveryMetrics & { outboxLag: Histogram } {
  const seconds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60];
  return {
    deliveries: new Counter({ name: 'webhook_deliveries_total', help: 'Webhook delivery attempts by outcome (succeeded, failed, refused)', labelNames: ['outcome'], registers: [registry] }),
    duration: new Histogram({ name: 'webhook_delivery_duration_seconds', help: 'Time from sending a webhook attempt to its outcome', buckets: seconds, registers: [registry] }),
    changeToDelivery: new Histogram({
      name: 'webhook_change_to_delivery_seconds',
      help: "Time from an event's change to its first attempt's successful delivery",
      buckets: seconds,
      registers: [registry],
    }),
    outboxLag: new Histogram({ name: 'event_outbox_lag_seconds', help: 'Time from an event being written to its dispatch to endpoints', buckets: seconds, registers: [registry] }),
  };
}
