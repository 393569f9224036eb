import type { ConsoleRole } from '../../domain/console-roles.ts';
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import * as store from '../../store/mail.ts';
import type { Schema } from '../../store/schema.ts';
import type { CredentialsVault } from '../credentials-vault.ts';
import { digestMessage, noticeOf, notificationMessage, type Composed, type Notice, type NotificationType, type Recipient } from './messages.ts';

/** Sending the outbox's messages: a job per message, queued in the transaction that wrote it (src/jobs/mail-delivery.ts). */
export interface MailScheduler {
  scheduleSend(db: Kysely<Schema>, mailIds: readonly string[]): Promise<void>;
  /** Wakes this process's sender after the transaction that queued messages has committed. */
  committed(): void;
}

export type Delivery = 'immediate' | 'daily' | 'off';

const IMMEDIATE_BY_DEFAULT: readonly string[] = [
  'genebrc.request.failed',
  'genebrc.request.errored',
  'genebrc.request.partially_processed',
  'platform_customer.credentials_invalid',
  'bulk_upload.completed',
];

/** What a user gets of a type without a choice of their own (contract 15): owners and operators the request, credential and upload notifications at once; viewers none. */
export function defaultDelivery(role: ConsoleRole, type: NotificationType): Delivery {
  if (role === 'viewer') return 'off';
  return IMMEDIATE_BY_DEFAULT.includes(type) ? 'immediate' : 'off';
}

export function deliveryOf(preferences: Record<string, string>, type: NotificationType, role: ConsoleRole): Delivery {
  const chosen = preferences[type];
  return chosen === 'immediate' || chosen === 'daily' || chosen === 'off' ? chosen : defaultDelivery(role, type);
}

export type OutgoingMail = {
  platformId: string | null;
  userId: string | null;
  to: string;
  kind: store.NewMail['kind'];
  message: Composed;
  /** The bodies hold a single-use link: sealed at rest, and replaced by a note once sent. */
  secret?: boolean;
  attachment?: store.Attachment | undefined;
};

export const SEALED_NOTE = 'This message held a single-use link; its text is not kept.';

/**
 * The mail outbox: the one way messages are sent. A message is a row written in the caller's transaction with its
 * send job, so a change and the message that tells of it commit together or not at all.
 */
export class MailOutbox {
  readonly #scheduler: MailScheduler;
  readonly #vault: CredentialsVault;
  readonly publicUrl: string;

  constructor(options: { scheduler: MailScheduler; vault: CredentialsVault; publicUrl: string }) {
    this.#scheduler = options.scheduler;
    this.#vault = options.vault;
    this.publicUrl = options.publicUrl;
  }

  async enqueue(tx: Kysely<Schema>, mails: readonly OutgoingMail[]): Promise<string[]> {
    const rows = mails.map((mail) => {
      const id = randomUUID();
      const seal = (body: string) => (mail.secret === true ? this.#vault.sealAnswer(`mail:${id}`, body) : body);
      return { id, platformId: mail.platformId, userId: mail.userId, to: mail.to, kind: mail.kind, subject: mail.message.subject, text: seal(mail.message.text), html: seal(mail.message.html), sealed: mail.secret === true, attachment: mail.attachment };
    });
    await store.insertMail(tx, rows);
    await this.#scheduler.scheduleSend(tx, rows.map((row) => row.id));
    return rows.map((row) => row.id);
  }

  /** A message's bodies as they are to be sent (opened when sealed). */
  bodiesOf(row: store.MailRow): { text: string; html: string } {
    if (!row.sealed) return { text: row.text_body, html: row.html_body };
    return { text: this.#vault.openAnswer(`mail:${row.id}`, row.text_body), html: this.#vault.openAnswer(`mail:${row.id}`, row.html_body) };
  }

  committed(): void {
    this.#scheduler.committed();
  }

  /**
   * The notifications of events being recorded (EventOutbox.record calls this in the same transaction): for each
   * platform user who wants the type, a message now or an item for their daily digest.
   */
  async notify(tx: Kysely<Schema>, events: readonly { id: string; type: string; timestamp: string; data: unknown; platformId: string }[]): Promise<void> {
    const notices = events.flatMap((event) => {
      const notice = noticeOf(event);
      return notice === null ? [] : [{ notice, platformId: event.platformId }];
    });
    if (notices.length === 0) return;
    const recipients = await store.recipientsOf(tx, [...new Set(notices.map((item) => item.platformId))]);
    const mails: OutgoingMail[] = [];
    const items: store.DigestItem[] = [];
    for (const { notice, platformId } of notices) {
      for (const user of recipients.get(platformId) ?? []) {
        const delivery = deliveryOf(user.preferences, notice.type, user.role);
        if (delivery === 'immediate') mails.push({ platformId, userId: user.id, to: user.email, kind: 'notification', message: notificationMessage(this.publicUrl, user, notice) });
        else if (delivery === 'daily') items.push({ id: randomUUID(), userId: user.id, eventId: notice.eventId, eventType: notice.type, summary: notice.summary, createdAt: notice.at });
      }
    }
    await store.insertDigestItems(tx, items);
    await this.enqueue(tx, mails);
  }

  /**
   * Writes the daily digests due at `now`: for each user, the items from before the start of their day (in their time
   * zone) in one message, grouped by type; the items are marked with it in the same transaction. Returns how many.
   */
  async composeDigests(db: Kysely<Schema>, now: Date, limit = 500): Promise<number> {
    const users = await store.usersWithWaitingItems(db, now, limit);
    let written = 0;
    for (const user of users) {
      const before = startOfLocalDay(now, user.time_zone);
      const composed = await db.transaction().execute(async (tx) => {
        const items = await store.claimWaitingItems(tx, user.id, before);
        if (items.length === 0) return false;
        const recipient: Recipient = { email: user.email, timeZone: user.time_zone, platformName: user.name };
        const notices: Notice[] = items.map((item) => ({ eventId: item.eventId, type: item.eventType as NotificationType, at: item.createdAt, summary: item.summary }));
        const [id] = await this.enqueue(tx, [{ platformId: user.platform_id, userId: user.id, to: user.email, kind: 'digest', message: digestMessage(this.publicUrl, recipient, notices) }]);
        await store.attachItems(tx, items.map((item) => item.id), id!);
        return true;
      });
      if (composed) written++;
    }
    if (written > 0) this.committed();
    return written;
  }
}

/** How far `zone`'s clock is ahead of UTC at `at`, in ms. */
function zoneOffsetMs(at: Date, zone: string): number {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' })
      .formatToParts(at)
      .map((part) => [part.type, part.value]),
  );
  return Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second)) - Math.floor(at.getTime() / 1000) * 1000;
}

/** The moment the day of `at` began in `zone` (UTC for a zone this runtime does not know). */
export function startOfLocalDay(at: Date, zone: string): Date {
  let name = zone;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
  } catch {
    name = 'UTC';
  }
  const local = new Date(at.getTime() + zoneOffsetMs(at, name));
  const midnight = Date.UTC(local.getUTCFullYear(), local.getUTCMonth(), local.getUTCDate());
  return new Date(midnight - zoneOffsetMs(new Date(midnight - zoneOffsetMs(at, name)), name));
}
