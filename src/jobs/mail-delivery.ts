import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { PgBoss } from 'pg-boss';
import type { MailTransport } from '../mail/transport.ts';
import { composeMonthlyReports } from '../services/mail/monthly-report.ts';
import { SEALED_NOTE, type MailOutbox, type MailScheduler } from '../services/mail/outbox.ts';
import type { Database } from '../store/database.ts';
import type { SweepPosition } from '../store/paging.ts';
import * as store from '../store/mail.ts';
import type { Schema } from '../store/schema.ts';
import { cancelOrphanedJobs, executorOf, HEARTBEAT_SECONDS } from './boss.ts';
import { runGuarded } from './poison.ts';

const QUEUE = 'mail-send';
const RECOVERY_BATCH = 1_000;
/** How often the daily digests and monthly reports due are looked for. */
const DIGEST_INTERVAL_MS = 5 * 60_000;
/** How often a pending message without a job is given one (a job given up on while the database was down, say). */
const RECOVERY_INTERVAL_MS = 60_000;

/**
 * `attempts`: the attempts the message had when its job was queued. A job queued for an attempt already made (a sweep
 * that read the message just before that attempt failed and queued the next) finds a count that has moved on, and
 * sends nothing: the next attempt's own job, after its back-off, does. Jobs queued before it was kept have none.
 */
type MailJob = { mailId: string; attempts?: number };


export type MailDeliveryOptions = {
  boss: PgBoss;
  database: Database;
  transport: MailTransport;
  from: string;
  log: FastifyBaseLogger;
  maxAttempts: number;
  retryDelaySeconds: number;
  /** How many pending messages a recovery sweep reads (1,000). */
  recoveryBatch?: number;
};

/**
 * Sends the mail outbox (contract 15) as pg-boss jobs, one per message, queued in the transaction that wrote it
 * (an `exclusive` queue keyed by the message). A job sends its message and then records it sent; a message not taken
 * (a 5xx, a dropped connection) is recorded with its reason and its job fails, so that pg-boss tries again with
 * back-off, until MAIL_MAX_ATTEMPTS, when the message has failed. A process killed between the SMTP server's success
 * and the record leaves the message pending: it is sent again after the restart with the same Message-ID (one
 * duplicate at most per kill, which a mail client shows once). A message whose sending kept killing its process is
 * failed instead (src/jobs/poison.ts).
 */
export class MailDelivery implements MailScheduler {
  readonly #options: MailDeliveryOptions;
  #outbox: MailOutbox | undefined;
  #worker: string | undefined;
  #digests: NodeJS.Timeout | undefined;
  #recovery: NodeJS.Timeout | undefined;
  readonly #recoveryBatch: number;
  #sweepFrom: SweepPosition | undefined;

  constructor(options: MailDeliveryOptions) {
    this.#options = options;
    this.#recoveryBatch = options.recoveryBatch ?? RECOVERY_BATCH;
  }

  get #db(): Kysely<Schema> {
    return this.#options.database.db;
  }

  async start(): Promise<void> {
    await this.#options.boss.createQueue(QUEUE, {
      policy: 'exclusive',
      heartbeatSeconds: HEARTBEAT_SECONDS,
      // Only for a job that failed unexpectedly (the database, say): an attempt not taken queues its own next job.
      retryLimit: 20,
      retryDelay: 5,
      retryBackoff: true,
      retryDelayMax: 600,
      expireInSeconds: 300,
    });
  }

  async scheduleSend(db: Kysely<Schema>, mailIds: readonly string[]): Promise<void> {
    await this.#queue(db, mailIds.map((id) => ({ id, attempts: 0 })));
  }

  /**
   * A job per message and attempt, keyed `<message id>:<attempts so far>`: the queue is exclusive by key, so a message
   * has at most one job for its next attempt however often it is queued (a start queues every pending one).
   */
  async #queue(db: Kysely<Schema> | undefined, mails: readonly { id: string; attempts: number }[], startAfter?: Date): Promise<void> {
    if (mails.length === 0) return;
    const jobs = mails.map((mail) => ({ data: { mailId: mail.id, attempts: mail.attempts } satisfies MailJob, singletonKey: jobKeyOf(mail), heartbeatSeconds: HEARTBEAT_SECONDS, ...(startAfter === undefined ? {} : { startAfter }) }));
    await this.#options.boss.insert(QUEUE, jobs, db === undefined ? undefined : { db: executorOf(db) });
  }

  committed(): void {
    if (this.#worker !== undefined) this.#options.boss.notifyWorker(this.#worker);
  }

  /** Sends: first the messages a dead process left running, then every job as it comes; composes digests as they fall due. */
  async work(outbox: MailOutbox): Promise<void> {
    this.#outbox = outbox;
    const { boss, database, log } = this.#options;
    const { rows: pending } = await store.pendingMail(this.#db, this.#recoveryBatch);
    const orphaned = await cancelOrphanedJobs(boss, database, QUEUE, pending.map(jobKeyOf));
    if (orphaned.length > 0) log.info({ messages: orphaned }, 'sending again the messages of a process that died while sending them');
    this.#worker = await boss.work<MailJob>(QUEUE, { pollingIntervalSeconds: 0.5 }, async ([job]) => {
      if (job !== undefined) await this.send(job.data.mailId, job.data.attempts);
    });
    // A pending message without a job (its job cancelled above, or given up on) gets one; one that has one gets none.
    await this.#queue(undefined, pending);
    this.#recovery = setInterval(() => {
      this.recover().catch((error: unknown) => log.error({ err: error }, 'mail recovery sweep failed'));
    }, RECOVERY_INTERVAL_MS);
    this.#recovery.unref();
    const compose = () => void this.composeDigests().then(() => this.composeMonthlyReports());
    this.#digests = setInterval(compose, DIGEST_INTERVAL_MS);
    this.#digests.unref();
    compose();
  }

  /**
   * Gives every pending message without a job the job of its next attempt: a job pg-boss gave up on (its retries spent
   * while the database was down) would otherwise leave its message pending until the next start. A message that has
   * its job (queued, retrying, or waiting out its back-off) gets none: the queue is exclusive by message and attempt.
   * Each sweep reads the batch after the last one's, back to the oldest once it has read to the end: behind a backlog
   * of pending messages that have their jobs, a newer one without a job is still reached.
   */
  async recover(): Promise<void> {
    const { rows, next } = await store.pendingMail(this.#db, this.#recoveryBatch, this.#sweepFrom);
    await this.#queue(undefined, rows);
    this.#sweepFrom = next;
  }

  /** The monthly report messages due (src/services/mail/monthly-report.ts), looked for with the digests. */
  async composeMonthlyReports(now = new Date()): Promise<number> {
    if (this.#outbox === undefined) return 0;
    try {
      return await composeMonthlyReports(this.#db, this.#outbox, now);
    } catch (error) {
      this.#options.log.error({ err: error }, 'could not compose the monthly report e-mails; will try again');
      return 0;
    }
  }

  async composeDigests(now = new Date()): Promise<number> {
    if (this.#outbox === undefined) return 0;
    try {
      return await this.#outbox.composeDigests(this.#db, now);
    } catch (error) {
      this.#options.log.error({ err: error }, 'could not compose the daily digests; will try again');
      return 0;
    }
  }

  /**
   * One attempt at a message (nothing when it is no longer pending, or when `attempts`, the count its job was queued
   * for, is not the message's: MailJob). One not taken is recorded with its reason and,
   * in the same transaction, given the job of its next attempt after the back-off (MAIL_RETRY_DELAY_SECONDS, doubling
   * up to an hour), until MAIL_MAX_ATTEMPTS.
   */
  async send(mailId: string, attempts?: number): Promise<void> {
    const { transport, from, log, maxAttempts } = this.#options;
    const outbox = this.#outbox;
    if (outbox === undefined) throw new Error('the mail sender is not working yet');
    const row = await store.findMail(this.#db, mailId);
    if (row === undefined || row.status !== 'pending') return;
    if (attempts !== undefined && Number(row.attempts) !== attempts) return;
    await runGuarded(
      { db: this.#db, queue: QUEUE, key: mailId, log },
      async () => {
        let where: string;
        try {
          const bodies = outbox.bodiesOf(row);
          ({ where } = await transport.send({ outboxId: row.id, from, to: row.to_address, subject: row.subject, ...bodies, attachment: store.attachmentOf(row) }));
        } catch (error) {
          const reason = reasonOf(error);
          const retryAt = new Date(Date.now() + backoffSeconds(this.#options.retryDelaySeconds, row.attempts + 1) * 1000);
          const { attempts, failed } = await this.#db.transaction().execute(async (tx) => {
            const recorded = await store.markAttemptFailed(tx, row.id, reason, maxAttempts);
            if (!recorded.failed && recorded.attempts > 0) await this.#queue(tx, [{ id: row.id, attempts: recorded.attempts }], retryAt);
            return recorded;
          });
          if (failed) log.warn({ mail: row.id, attempts, error: reason }, 'e-mail not sent; no attempt left');
          else log.warn({ mail: row.id, attempts, error: reason, retryAt }, 'e-mail not sent; will retry');
          return;
        }
        await store.markSent(this.#db, row.id, new Date(), row.sealed ? { text: SEALED_NOTE, html: `<p>${SEALED_NOTE}</p>` } : null);
        log.info({ mail: row.id, kind: row.kind, where: where.startsWith('SMTP') ? 'smtp' : 'eml file' }, 'e-mail sent');
      },
      async (reason) => {
        await store.markAttemptFailed(this.#db, row.id, `not sent again: ${reason}`, 0);
      },
    );
  }

  async stop(): Promise<void> {
    clearInterval(this.#digests);
    clearInterval(this.#recovery);
    this.#options.transport.close();
  }
}

function jobKeyOf(mail: { id: string; attempts: number }): string {
  return `${mail.id}:${mail.attempts}`;
}

/** Seconds before the retry that follows `attempts` failed attempts: the first delay, doubling, at most an hour. */
export function backoffSeconds(firstDelaySeconds: number, attempts: number): number {
  return Math.min(3_600, firstDelaySeconds * 2 ** Math.max(0, Math.min(attempts - 1, 16)));
}

/** What went wrong, as the Outbox page shows it: the SMTP server's answer when there was one. */
function reasonOf(error: unknown): string {
  const failure = error as { response?: unknown; code?: unknown; message?: unknown };
  const text = typeof failure.response === 'string' ? failure.response : typeof failure.message === 'string' ? failure.message : String(error);
  const code = typeof failure.code === 'string' ? `${failure.code}: ` : '';
  return `${code}${text}`.slice(0, 500);
}
