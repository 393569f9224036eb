import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { PgBoss } from 'pg-boss';
import type { MailTransport } from '../mail/transport.ts';
import { SEALED_NOTE, type MailOutbox, type MailScheduler } from '../services/mail/outbox.ts';
import type { Database } from '../store/database.ts';
import * as store from '../store/mail.ts';
import type { Schema } from '../store/schema.ts';
import { cancelOrphanedJobs, executorOf, HEARTBEAT_SECONDS } from './boss.ts';
import { runGuarded } from './poison.ts';

const QUEUE = 'mail-send';
const RECOVERY_BATCH = 1_000;
/** How often the daily digests due are looked for. */
const DIGEST_INTERVAL_MS = 5 * 60_000;

type MailJob = { mailId: string };

/** A send that did not succeed and will be tried again (pg-boss retries the job after its back-off). */
class NotSentYet extends Error {}

export type MailDeliveryOptions = {
  boss: PgBoss;
  database: Database;
  transport: MailTransport;
  from: string;
  log: FastifyBaseLogger;
  maxAttempts: number;
  retryDelaySeconds: number;
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

  constructor(options: MailDeliveryOptions) {
    this.#options = options;
  }

  get #db(): Kysely<Schema> {
    return this.#options.database.db;
  }

  async start(): Promise<void> {
    await this.#options.boss.createQueue(QUEUE, {
      policy: 'exclusive',
      heartbeatSeconds: HEARTBEAT_SECONDS,
      retryLimit: this.#options.maxAttempts + 10,
      retryDelay: this.#options.retryDelaySeconds,
      retryBackoff: true,
      retryDelayMax: Math.max(this.#options.retryDelaySeconds, 3_600),
      expireInSeconds: 300,
    });
  }

  async scheduleSend(db: Kysely<Schema>, mailIds: readonly string[]): Promise<void> {
    if (mailIds.length === 0) return;
    await this.#options.boss.insert(QUEUE, mailIds.map((mailId) => ({ data: { mailId }, singletonKey: mailId, heartbeatSeconds: HEARTBEAT_SECONDS })), { db: executorOf(db) });
  }

  committed(): void {
    if (this.#worker !== undefined) this.#options.boss.notifyWorker(this.#worker);
  }

  /** Sends: first the messages a dead process left running, then every job as it comes; composes digests as they fall due. */
  async work(outbox: MailOutbox): Promise<void> {
    this.#outbox = outbox;
    const { boss, database, log } = this.#options;
    const pending = await store.pendingMailIds(this.#db, RECOVERY_BATCH);
    const orphaned = await cancelOrphanedJobs(boss, database, QUEUE, pending);
    if (orphaned.length > 0) log.info({ messages: orphaned }, 'sending again the messages of a process that died while sending them');
    this.#worker = await boss.work<MailJob>(QUEUE, { pollingIntervalSeconds: 0.5 }, async ([job]) => {
      if (job !== undefined) await this.send(job.data.mailId);
    });
    // A pending message without a job (its job cancelled above, or given up on) gets one; one that has one gets none.
    await boss.insert(QUEUE, pending.map((mailId) => ({ data: { mailId }, singletonKey: mailId, heartbeatSeconds: HEARTBEAT_SECONDS })));
    this.#digests = setInterval(() => void this.composeDigests(), DIGEST_INTERVAL_MS);
    this.#digests.unref();
    void this.composeDigests();
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

  /** One attempt at a message (nothing when it is no longer pending); throws NotSentYet when it is to be tried again. */
  async send(mailId: string): Promise<void> {
    const { transport, from, log, maxAttempts } = this.#options;
    const outbox = this.#outbox;
    if (outbox === undefined) throw new Error('the mail sender is not working yet');
    const row = await store.findMail(this.#db, mailId);
    if (row === undefined || row.status !== 'pending') return;
    await runGuarded(
      { db: this.#db, queue: QUEUE, key: mailId, log },
      async () => {
        let where: string;
        try {
          const bodies = outbox.bodiesOf(row);
          ({ where } = await transport.send({ outboxId: row.id, from, to: row.to_address, subject: row.subject, ...bodies }));
        } catch (error) {
          const reason = reasonOf(error);
          const { attempts, failed } = await store.markAttemptFailed(this.#db, row.id, reason, maxAttempts);
          if (failed) {
            log.warn({ mail: row.id, attempts, error: reason }, 'e-mail not sent; no attempt left');
            return;
          }
          log.warn({ mail: row.id, attempts, error: reason }, 'e-mail not sent; will retry');
          throw new NotSentYet(reason);
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
    this.#options.transport.close();
  }
}

/** What went wrong, as the Outbox page shows it: the SMTP server's answer when there was one. */
function reasonOf(error: unknown): string {
  const failure = error as { response?: unknown; code?: unknown; message?: unknown };
  const text = typeof failure.response === 'string' ? failure.response : typeof failure.message === 'string' ? failure.message : String(error);
  const code = typeof failure.code === 'string' ? `${failure.code}: ` : '';
  return `${code}${text}`.slice(0, 500);
}
