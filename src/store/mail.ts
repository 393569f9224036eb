import { toRole, type ConsoleRole } from '../domain/console-roles.ts';
import { sql, type Kysely, type Selectable } from 'kysely';
import { readSweep, type SweepPosition, type Swept } from './paging.ts';
import type { MailOutboxTable, Schema } from './schema.ts';

/** The SQL of e-mail (migration 0023): the mail outbox, preferences, digest items, reset tokens and invitations. */

export type MailRow = Selectable<MailOutboxTable>;
export type NewMail = {
  id: string;
  platformId: string | null;
  userId: string | null;
  to: string;
  kind: MailRow['kind'];
  subject: string;
  text: string;
  html: string;
  sealed: boolean;
  attachment?: Attachment | undefined;
};

/** A file a message carries (the monthly report's register). */
export type Attachment = { fileName: string; contentType: string; content: Buffer };

export async function insertMail(db: Kysely<Schema>, mails: readonly NewMail[]): Promise<void> {
  if (mails.length === 0) return;
  await db
    .insertInto('mail_outbox')
    .values(mails.map((mail) => ({
      id: mail.id,
      platform_id: mail.platformId,
      user_id: mail.userId,
      to_address: mail.to,
      kind: mail.kind,
      subject: mail.subject,
      text_body: mail.text,
      html_body: mail.html,
      sealed: mail.sealed,
      attachment_name: mail.attachment?.fileName ?? null,
      attachment_type: mail.attachment?.contentType ?? null,
      attachment: mail.attachment?.content ?? null,
    })))
    .execute();
}

export async function findMail(db: Kysely<Schema>, id: string): Promise<MailRow | undefined> {
  return db.selectFrom('mail_outbox').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The message locked for its sender's transaction, or undefined when another holds it. */
export async function lockMail(db: Kysely<Schema>, id: string): Promise<MailRow | undefined> {
  return db.selectFrom('mail_outbox').selectAll().where('id', '=', id).forUpdate().skipLocked().executeTakeFirst();
}

export async function markSent(db: Kysely<Schema>, id: string, at: Date, sealedReplacement: { text: string; html: string } | null): Promise<void> {
  await db
    .updateTable('mail_outbox')
    .set({
      status: 'sent',
      sent_at: at,
      attempts: sql`attempts + 1`,
      last_error: null,
      ...(sealedReplacement === null ? {} : { text_body: sealedReplacement.text, html_body: sealedReplacement.html }),
    })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .execute();
}

/** An attempt that did not succeed, counted with its reason; the last of `maxAttempts` fails the message for good. */
export async function markAttemptFailed(db: Kysely<Schema>, id: string, error: string, maxAttempts: number): Promise<{ attempts: number; failed: boolean }> {
  const row = await db
    .updateTable('mail_outbox')
    .set({ attempts: sql`attempts + 1`, last_error: error, status: sql`case when attempts + 1 >= ${maxAttempts} then 'failed' else status end` })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .returning(['attempts', 'status'])
    .executeTakeFirst();
  return { attempts: Number(row?.attempts ?? 0), failed: row?.status === 'failed' };
}

/**
 * Pending messages oldest first, after `after` (from the oldest without it), with their attempts so far: those a start
 * and the recovery sweep make sure have a job. A sweep goes on where the last one stopped.
 */
export async function pendingMail(db: Kysely<Schema>, limit: number, after?: SweepPosition): Promise<Swept<{ id: string; attempts: number }>> {
  const pending = db.selectFrom('mail_outbox').select(['id', 'attempts']).where('status', '=', sql.lit('pending'));
  const { rows, next } = await readSweep(pending, 'created_at', limit, after);
  return { rows: rows.map((row) => ({ id: row.id, attempts: Number(row.attempts) })), next };
}

export type ListedMail = Pick<MailRow, 'id' | 'to_address' | 'kind' | 'subject' | 'status' | 'attempts' | 'last_error' | 'created_at' | 'sent_at'>;

/** A page of the platform's messages, newest first (at most `limit + 1` rows read: the caller knows if there are more). */
export async function listMail(db: Kysely<Schema>, platformId: string, offset: number, limit: number): Promise<ListedMail[]> {
  return db
    .selectFrom('mail_outbox')
    .select(['id', 'to_address', 'kind', 'subject', 'status', 'attempts', 'last_error', 'created_at', 'sent_at'])
    .where('platform_id', '=', platformId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .offset(offset)
    .limit(limit + 1)
    .execute();
}

export async function findMailOfPlatform(db: Kysely<Schema>, platformId: string, id: string): Promise<MailRow | undefined> {
  return db.selectFrom('mail_outbox').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

/** A platform's users who may receive mail, with their choices (no row for a type: the role's default). */
export type Recipient = { id: string; email: string; role: ConsoleRole; timeZone: string; platformName: string; preferences: Record<string, string> };

export async function recipientsOf(db: Kysely<Schema>, platformIds: readonly string[]): Promise<Map<string, Recipient[]>> {
  const byPlatform = new Map<string, Recipient[]>();
  if (platformIds.length === 0) return byPlatform;
  const rows = await db
    .selectFrom('console_users')
    .innerJoin('platforms', 'platforms.id', 'console_users.platform_id')
    .leftJoin('mail_preferences', 'mail_preferences.user_id', 'console_users.id')
    .select(['console_users.id', 'console_users.email', 'console_users.role', 'console_users.time_zone', 'console_users.platform_id', 'platforms.name', 'mail_preferences.event_type', 'mail_preferences.delivery'])
    .where('console_users.platform_id', 'in', platformIds)
    .where('console_users.disabled', '=', false)
    .orderBy('console_users.created_at')
    .execute();
  const users = new Map<string, Recipient & { platformId: string }>();
  for (const row of rows) {
    let user = users.get(row.id);
    if (user === undefined) {
      user = { id: row.id, email: row.email, role: toRole(row.role), timeZone: row.time_zone, platformName: row.name, preferences: {}, platformId: row.platform_id };
      users.set(row.id, user);
      byPlatform.set(row.platform_id, [...(byPlatform.get(row.platform_id) ?? []), user]);
    }
    if (row.event_type !== null && row.delivery !== null) user.preferences[row.event_type] = row.delivery;
  }
  return byPlatform;
}

export async function preferencesOf(db: Kysely<Schema>, userId: string): Promise<Record<string, string>> {
  const rows = await db.selectFrom('mail_preferences').select(['event_type', 'delivery']).where('user_id', '=', userId).execute();
  return Object.fromEntries(rows.map((row) => [row.event_type, row.delivery]));
}

export async function savePreferences(db: Kysely<Schema>, userId: string, choices: Record<string, 'immediate' | 'daily' | 'off'>, timeZone: string, monthlyReport?: boolean): Promise<void> {
  await db.deleteFrom('mail_preferences').where('user_id', '=', userId).execute();
  const rows = Object.entries(choices).map(([eventType, delivery]) => ({ user_id: userId, event_type: eventType, delivery }));
  if (rows.length > 0) await db.insertInto('mail_preferences').values(rows).execute();
  await db.updateTable('console_users').set({ time_zone: timeZone, ...(monthlyReport === undefined ? {} : { monthly_report: monthlyReport }) }).where('id', '=', userId).execute();
}

export type DigestItem = { id: string; userId: string; eventId: string; eventType: string; summary: string; createdAt: Date };

export async function insertDigestItems(db: Kysely<Schema>, items: readonly DigestItem[]): Promise<void> {
  if (items.length === 0) return;
  await db
    .insertInto('mail_digest_items')
    .values(items.map((item) => ({ id: item.id, user_id: item.userId, event_id: item.eventId, event_type: item.eventType, summary: item.summary, created_at: item.createdAt })))
    .execute();
}

/** Users (not disabled: a disabled user's items wait) with items waiting from before `before`, with who they are. */
export async function usersWithWaitingItems(db: Kysely<Schema>, before: Date, limit: number) {
  return db
    .selectFrom('mail_digest_items')
    .innerJoin('console_users', 'console_users.id', 'mail_digest_items.user_id')
    .innerJoin('platforms', 'platforms.id', 'console_users.platform_id')
    .select(['console_users.id', 'console_users.email', 'console_users.role', 'console_users.time_zone', 'console_users.platform_id', 'platforms.name'])
    .where('mail_digest_items.message_id', 'is', null)
    .where('console_users.disabled', '=', false)
    .where('mail_digest_items.created_at', '<', before)
    .groupBy(['console_users.id', 'console_users.email', 'console_users.time_zone', 'console_users.platform_id', 'platforms.name'])
    .limit(limit)
    .execute();
}

/** The user's waiting items from before `before`, locked (a digest run beside this one skips them). */
export async function claimWaitingItems(db: Kysely<Schema>, userId: string, before: Date): Promise<DigestItem[]> {
  const rows = await db
    .selectFrom('mail_digest_items')
    .selectAll()
    .where('user_id', '=', userId)
    .where('message_id', 'is', null)
    .where('created_at', '<', before)
    .orderBy('created_at')
    .forUpdate()
    .skipLocked()
    .execute();
  return rows.map((row) => ({ id: row.id, userId: row.user_id, eventId: row.event_id, eventType: row.event_type, summary: row.summary, createdAt: row.created_at }));
}

export async function attachItems(db: Kysely<Schema>, itemIds: readonly string[], messageId: string): Promise<void> {
  if (itemIds.length === 0) return;
  await db.updateTable('mail_digest_items').set({ message_id: messageId }).where('id', 'in', itemIds).execute();
}

/** The row's attachment, if it has one (pg gives a Buffer, PGlite a Uint8Array). */
export function attachmentOf(row: MailRow): Attachment | undefined {
  if (row.attachment === null || row.attachment_name === null) return undefined;
  return { fileName: row.attachment_name, contentType: row.attachment_type ?? 'application/octet-stream', content: Buffer.from(row.attachment) };
}

/** The enabled users who chose the monthly report and have no message yet for `month` (YYYY-MM-01), by platform. */
export async function monthlyReportRecipients(db: Kysely<Schema>, month: string, limit: number) {
  return db
    .selectFrom('console_users')
    .innerJoin('platforms', 'platforms.id', 'console_users.platform_id')
    .leftJoin('monthly_report_mails', (join) => join.onRef('monthly_report_mails.user_id', '=', 'console_users.id').on('monthly_report_mails.month', '=', month))
    .select(['console_users.id', 'console_users.email', 'console_users.time_zone', 'console_users.platform_id', 'platforms.name'])
    .where('console_users.monthly_report', '=', true)
    .where('console_users.disabled', '=', false)
    .where('monthly_report_mails.user_id', 'is', null)
    .orderBy('console_users.platform_id')
    .orderBy('console_users.id')
    .limit(limit)
    .execute();
}

/** Claims the user's monthly message for `month`: false when one is already written (or being written beside this one). */
export async function claimMonthlyReport(db: Kysely<Schema>, userId: string, month: string): Promise<boolean> {
  const row = await db
    .insertInto('monthly_report_mails')
    .values({ user_id: userId, month })
    .onConflict((conflict) => conflict.columns(['user_id', 'month']).doNothing())
    .returning('user_id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function recordMonthlyReportMail(db: Kysely<Schema>, userId: string, month: string, mailId: string): Promise<void> {
  await db.updateTable('monthly_report_mails').set({ mail_id: mailId }).where('user_id', '=', userId).where('month', '=', month).execute();
}

export async function monthlyReportChoice(db: Kysely<Schema>, userId: string): Promise<boolean> {
  const row = await db.selectFrom('console_users').select('monthly_report').where('id', '=', userId).executeTakeFirst();
  return row?.monthly_report === true;
}
