import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { AppError, type FieldError } from '../../errors.ts';
import { deleteConsoleSessionsOfUser } from '../../store/console-users.ts';
import { findUserByEmail } from '../../store/console-sessions.ts';
import type { Schema } from '../../store/schema.ts';
import { createConsoleUser, MAX_PASSWORD_LENGTH, newUserProblems, type ConsoleUser } from '../console-users.ts';
import { hashPassword, MIN_PASSWORD_LENGTH } from '../passwords.ts';
import { invitationMessage, passwordResetMessage } from './messages.ts';
import { CONSOLE_ROLES, toRole, type ConsoleRole } from '../../domain/console-roles.ts';
import { recordAudit, type AuditSource } from '../audit.ts';
import type { MailOutbox } from './outbox.ts';

/**
 * Password resets and invitations by e-mail (contract 15). A link's token is 32 random bytes; only its SHA-256 is
 * stored. A reset link works once, for 30 minutes, and ends every session of its user; an invitation works once, for
 * 7 days, and makes the console user with the password chosen.
 */

export const RESET_MINUTES = 30;
export const INVITATION_DAYS = 7;
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

function newToken(): { token: string; hash: Buffer } {
  const token = randomBytes(32).toString('base64url');
  return { token, hash: hashOf(token) };
}

function hashOf(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

function passwordProblems(password: string): FieldError[] {
  const length = [...password].length;
  if (length < MIN_PASSWORD_LENGTH) return [{ path: '/password', code: 'invalid_length', message: `password must be at least ${MIN_PASSWORD_LENGTH} characters long.` }];
  if (length > MAX_PASSWORD_LENGTH) return [{ path: '/password', code: 'invalid_length', message: `password must be at most ${MAX_PASSWORD_LENGTH} characters long.` }];
  return [];
}

function refuse(errors: FieldError[]): never {
  throw new AppError('validation_failed', `The request has an invalid field: ${errors[0]!.message}`, { errors });
}

/**
 * Sends a reset link to the user with this address, if there is one that is not disabled; otherwise does nothing.
 * Either way the caller answers the same: nothing tells whether an address has a user.
 */
export async function requestPasswordReset(db: Kysely<Schema>, mail: MailOutbox, email: string, now = new Date()): Promise<void> {
  const address = email.trim();
  if (address.length === 0 || address.length > 254) return;
  await db.transaction().execute(async (tx) => {
    const user = await findUserByEmail(tx, address);
    if (user === undefined || user.disabled) return;
    const { token, hash } = newToken();
    const expiresAt = new Date(now.getTime() + RESET_MINUTES * 60_000);
    await tx.insertInto('password_reset_tokens').values({ token_hash: hash, user_id: user.id, expires_at: expiresAt }).execute();
    const zone = await tx.selectFrom('console_users').select('time_zone').where('id', '=', user.id).executeTakeFirstOrThrow();
    const link = `${mail.publicUrl}/console/reset/${token}`;
    await mail.enqueue(tx, [{
      platformId: user.platformId,
      userId: user.id,
      to: user.email,
      kind: 'password_reset',
      message: passwordResetMessage({ email: user.email, timeZone: zone.time_zone, platformName: user.platformName }, link, expiresAt),
      secret: true,
    }]);
  });
  mail.committed();
}

/** The user a reset link is for, while it is usable (unused, unexpired, its user enabled); else null. */
export async function resetLinkUser(db: Kysely<Schema>, token: string, now = new Date()): Promise<{ userId: string; email: string } | null> {
  if (!TOKEN_PATTERN.test(token)) return null;
  const row = await db
    .selectFrom('password_reset_tokens')
    .innerJoin('console_users', 'console_users.id', 'password_reset_tokens.user_id')
    .select(['console_users.id', 'console_users.email', 'console_users.disabled', 'password_reset_tokens.expires_at', 'password_reset_tokens.used_at'])
    .where('password_reset_tokens.token_hash', '=', hashOf(token))
    .executeTakeFirst();
  if (row === undefined || row.used_at !== null || row.expires_at <= now || row.disabled) return null;
  return { userId: row.id, email: row.email };
}

/**
 * Sets the password of a usable reset link's user, uses the link up (and every other reset link of the user), and
 * ends all the user's sessions, in one transaction. False when the link is not usable (then nothing changes).
 */
export async function completePasswordReset(db: Kysely<Schema>, token: string, password: string, source: AuditSource, now = new Date()): Promise<boolean> {
  const problems = passwordProblems(password);
  if (problems.length > 0) refuse(problems);
  if (!TOKEN_PATTERN.test(token)) return false;
  const passwordHash = await hashPassword(password);
  return db.transaction().execute(async (tx) => {
    const used = await tx
      .updateTable('password_reset_tokens')
      .set({ used_at: now })
      .where('token_hash', '=', hashOf(token))
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returning('user_id')
      .executeTakeFirst();
    if (used === undefined) return false;
    const user = await tx
      .updateTable('console_users')
      .set({ password_hash: passwordHash, failed_sign_ins: 0, last_failed_sign_in_at: null, updated_at: now })
      .where('id', '=', used.user_id)
      .where('disabled', '=', false)
      .returning(['id', 'email', 'platform_id'])
      .executeTakeFirst();
    if (user === undefined) throw new AppError('validation_failed', 'This console user is disabled: its password cannot be reset.');
    await recordAudit(tx, { ...source, actor: { type: 'console_user', id: user.id, label: user.email } }, {
      platformId: user.platform_id,
      action: 'console_user.password_reset',
      target: { type: 'console_user', id: user.id },
    });
    await tx.updateTable('password_reset_tokens').set({ used_at: now }).where('user_id', '=', used.user_id).where('used_at', 'is', null).execute();
    await deleteConsoleSessionsOfUser(tx, used.user_id);
    return true;
  });
}

export type Invitation = { id: string; email: string; role: ConsoleRole; createdAt: string; expiresAt: string; acceptedAt: string | null };

/**
 * Invites `email` to the platform's console with `role`: the invitation and its e-mail in one transaction. An address
 * that already has a console user is refused (409 console_user_email_taken), as the admin API refuses it.
 */
export async function inviteConsoleUser(
  db: Kysely<Schema>,
  mail: MailOutbox,
  input: { platformId: string; inviter: { id: string; email: string }; email: string; role: string },
  source: AuditSource,
  now = new Date(),
): Promise<Invitation> {
  const email = input.email.trim();
  const errors = newUserProblems({ email, password: 'x'.repeat(MIN_PASSWORD_LENGTH) });
  if (!(CONSOLE_ROLES as readonly string[]).includes(input.role)) errors.push({ path: '/role', code: 'invalid_value', message: 'role must be owner, operator or viewer.' });
  if (errors.length > 0) refuse(errors);
  const role = input.role as ConsoleRole;
  const invitation = await db.transaction().execute(async (tx) => {
    if ((await findUserByEmail(tx, email)) !== undefined) {
      throw new AppError('console_user_email_taken', `A console user with the e-mail ${email} already exists (e-mail addresses are unique, ignoring case).`, {
        errors: [{ path: '/email', code: 'console_user_email_taken', message: 'Another console user has this e-mail address.' }],
      });
    }
    const platform = await tx.selectFrom('platforms').select('name').where('id', '=', input.platformId).executeTakeFirstOrThrow();
    const { token, hash } = newToken();
    const expiresAt = new Date(now.getTime() + INVITATION_DAYS * 86_400_000);
    const row = await tx
      .insertInto('console_invitations')
      .values({ id: randomUUID(), token_hash: hash, platform_id: input.platformId, email, role, invited_by: input.inviter.id, expires_at: expiresAt })
      .returning(['id', 'email', 'role', 'created_at', 'expires_at', 'accepted_at'])
      .executeTakeFirstOrThrow();
    await recordAudit(tx, source, { platformId: input.platformId, action: 'console_user.invite', target: { type: 'console_invitation', id: row.id } });
    const link = `${mail.publicUrl}/console/invite/${token}`;
    await mail.enqueue(tx, [{
      platformId: input.platformId,
      userId: null,
      to: email,
      kind: 'invitation',
      message: invitationMessage({ platformName: platform.name, inviter: input.inviter.email, role, link, expiresAt }),
      secret: true,
    }]);
    return row;
  });
  mail.committed();
  return toInvitation(invitation);
}

function toInvitation(row: { id: string; email: string; role: ConsoleRole; created_at: Date; expires_at: Date; accepted_at: Date | null }): Invitation {
  return { id: row.id, email: row.email, role: row.role, createdAt: row.created_at.toISOString(), expiresAt: row.expires_at.toISOString(), acceptedAt: row.accepted_at?.toISOString() ?? null };
}

/** The platform's latest invitations, newest first. */
export async function listInvitations(db: Kysely<Schema>, platformId: string, limit = 50): Promise<Invitation[]> {
  const rows = await db
    .selectFrom('console_invitations')
    .select(['id', 'email', 'role', 'created_at', 'expires_at', 'accepted_at'])
    .where('platform_id', '=', platformId)
    .orderBy('created_at', 'desc')
    .limit(limit)
    .execute();
  return rows.map(toInvitation);
}

/** What an invitation link invites to, while it is usable (unaccepted, unexpired); else null. */
export async function invitationOfLink(db: Kysely<Schema>, token: string, now = new Date()): Promise<{ email: string; role: ConsoleRole; platformName: string } | null> {
  if (!TOKEN_PATTERN.test(token)) return null;
  const row = await db
    .selectFrom('console_invitations')
    .innerJoin('platforms', 'platforms.id', 'console_invitations.platform_id')
    .select(['console_invitations.email', 'console_invitations.role', 'console_invitations.expires_at', 'console_invitations.accepted_at', 'platforms.name'])
    .where('console_invitations.token_hash', '=', hashOf(token))
    .executeTakeFirst();
  if (row === undefined || row.accepted_at !== null || row.expires_at <= now) return null;
  return { email: row.email, role: row.role, platformName: row.name };
}

/**
 * Accepts a usable invitation: the console user is made (the existing creation path) with the password chosen, and
 * the invitation is used up, in one transaction, the user with the invited role; null when the link is not usable.
 */
export async function acceptInvitation(db: Kysely<Schema>, token: string, password: string, source: AuditSource, now = new Date()): Promise<ConsoleUser | null> {
  const problems = passwordProblems(password);
  if (problems.length > 0) refuse(problems);
  if (!TOKEN_PATTERN.test(token)) return null;
  return db.transaction().execute(async (tx) => {
    const invitation = await tx
      .selectFrom('console_invitations')
      .select(['id', 'platform_id', 'email', 'role'])
      .where('token_hash', '=', hashOf(token))
      .where('accepted_at', 'is', null)
      .where('expires_at', '>', now)
      .forUpdate()
      .executeTakeFirst();
    if (invitation === undefined) return null;
    const user = await createConsoleUser(tx, invitation.platform_id, { email: invitation.email, password, role: toRole(invitation.role) }, {
      ...source,
      actor: { type: 'console_user', id: null, label: invitation.email },
    });
    await tx.updateTable('console_invitations').set({ accepted_at: now, user_id: user.id }).where('id', '=', invitation.id).execute();
    return user;
  });
}

