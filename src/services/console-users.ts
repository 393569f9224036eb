import { randomUUID } from 'node:crypto';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import type { Kysely } from 'kysely';
import { AppError, notFound, type FieldError } from '../errors.ts';
import * as store from '../store/console-users.ts';
import { isUniqueViolation } from '../store/errors.ts';
import type { Schema } from '../store/schema.ts';
import { itemsPage, offsetOf, type PageRequest } from './pages.ts';
import { hashPassword, MIN_PASSWORD_LENGTH } from './passwords.ts';
import { requirePlatform } from './platforms.ts';
import { isRole, toRole, type ConsoleRole } from '../domain/console-roles.ts';
import { recordAudit, type AuditSource } from './audit.ts';

/** The longest password taken: a passphrase fits, and hashing stays cheap whatever is sent. */
export const MAX_PASSWORD_LENGTH = 1024;
export const MAX_EMAIL_LENGTH = 254;

/** A console user as the admin API and the console show it (contracts 10, 14): never the password, its hash or a secret. */
export type ConsoleUser = {
  id: string;
  email: string;
  platformId: string;
  role: ConsoleRole;
  disabled: boolean;
  twoFactor: { enrolled: boolean; enrolledAt: string | null };
  createdAt: string;
};

export function toConsoleUser(row: store.ShownConsoleUserRow): ConsoleUser {
  return {
    id: row.id,
    email: row.email,
    platformId: row.platform_id,
    role: toRole(row.role),
    disabled: row.disabled,
    twoFactor: { enrolled: row.two_factor_enrolled_at !== null, enrolledAt: row.two_factor_enrolled_at?.toISOString() ?? null },
    createdAt: row.created_at.toISOString(),
  };
}

/** What a change to a console user may set: its role, disabled, and `twoFactor: null` to reset its second factor. */
export type ConsoleUserChange = { role?: ConsoleRole; disabled?: boolean; twoFactor?: null };

/** Characters as JSON Schema counts them (code points), so that the schema's and this check agree. */
function characters(text: string): number {
  return [...text].length;
}

const EMAIL = fullFormats.email as RegExp;

/**
 * The rules of a new user's e-mail and password, worded as the HTTP schema's validation words them, for callers that
 * do not come through it (the CLI on the database).
 */
export function newUserProblems(input: { email: string; password: string; role?: string | undefined }): FieldError[] {
  const errors: FieldError[] = [];
  if (input.role !== undefined && !isRole(input.role)) errors.push({ path: '/role', code: 'invalid_value', message: 'role must be one of: owner, operator, viewer.' });
  if (!EMAIL.test(input.email)) errors.push({ path: '/email', code: 'invalid_format', message: 'email must be an email address (name@example.com).' });
  else if (characters(input.email) > MAX_EMAIL_LENGTH) errors.push({ path: '/email', code: 'invalid_length', message: `email must be at most ${MAX_EMAIL_LENGTH} characters long.` });
  const length = characters(input.password);
  if (length < MIN_PASSWORD_LENGTH) errors.push({ path: '/password', code: 'invalid_length', message: `password must be at least ${MIN_PASSWORD_LENGTH} characters long.` });
  else if (length > MAX_PASSWORD_LENGTH) errors.push({ path: '/password', code: 'invalid_length', message: `password must be at most ${MAX_PASSWORD_LENGTH} characters long.` });
  return errors;
}

function checkNewUser(input: { email: string; password: string; role?: string | undefined }): void {
  const errors = newUserProblems(input);
  if (errors.length === 0) return;
  const detail = errors.length === 1 ? `The request has an invalid field: ${errors[0]!.message}` : `The request has ${errors.length} invalid fields; see errors.`;
  throw new AppError('validation_failed', detail, { errors });
}

/**
 * A console user of the platform, with the password hashed (scrypt, src/services/passwords.ts). E-mail addresses are
 * unique across every platform, ignoring case (a user signs in with the e-mail alone): 409 `console_user_email_taken`.
 * Without a role, the platform's first user is its `owner` and the others are `operator`s.
 */
export async function createConsoleUser(
  db: Kysely<Schema>,
  platformId: string,
  input: { email: string; password: string; role?: ConsoleRole | undefined },
  source: AuditSource,
): Promise<ConsoleUser> {
  checkNewUser(input);
  const platform = await requirePlatform(db, platformId);
  const passwordHash = await hashPassword(input.password);
  try {
    const insert = async (tx: Kysely<Schema>) => {
      const inserted = await store.insertConsoleUser(tx, { id: randomUUID(), platformId: platform.id, email: input.email, passwordHash, role: input.role });
      await recordAudit(tx, source, { platformId: inserted.platform_id, action: 'console_user.create', target: { type: 'console_user', id: inserted.id } });
      return inserted;
    };
    // An invitation accepted makes its user inside its own transaction.
    const row = db.isTransaction ? await insert(db) : await db.transaction().execute(insert);
    return toConsoleUser(row);
  } catch (error) {
    if (isUniqueViolation(error, store.CONSOLE_USER_EMAIL_INDEX)) {
      throw new AppError('console_user_email_taken', `A console user with the e-mail ${input.email} already exists (e-mail addresses are unique, ignoring case).`, {
        errors: [{ path: '/email', code: 'console_user_email_taken', message: 'Another console user has this e-mail address.' }],
      });
    }
    throw error;
  }
}

export async function listConsoleUsers(db: Kysely<Schema>, platformId: string, query: PageRequest) {
  await requirePlatform(db, platformId);
  const { rows, total } = await store.listConsoleUsers(db, { platformId, offset: offsetOf(query), limit: query.limit });
  return itemsPage(rows.map(toConsoleUser), total, query);
}

/**
 * Disables or enables the user. Disabling ends its console sessions in the same transaction, so that it is signed out
 * at once, not when its session expires. Setting what is already set changes nothing and answers the user.
 */
export async function setConsoleUserDisabled(db: Kysely<Schema>, userId: string, disabled: boolean, source: AuditSource): Promise<ConsoleUser> {
  const row = await db.transaction().execute(async (tx) => {
    const user = await store.setConsoleUserDisabled(tx, userId, disabled, new Date());
    if (user && disabled) await store.deleteConsoleSessionsOfUser(tx, user.id);
    if (user) await recordAudit(tx, source, { platformId: user.platform_id, action: disabled ? 'console_user.disable' : 'console_user.enable', target: { type: 'console_user', id: user.id } });
    return user;
  });
  if (!row) throw notFound(`Console user ${userId}`);
  return toConsoleUser(row);
}

/** A console user by id, or 404. */
export async function requireConsoleUser(db: Kysely<Schema>, userId: string): Promise<ConsoleUser> {
  const row = await store.findConsoleUser(db, userId);
  if (!row) throw notFound(`Console user ${userId}`);
  return toConsoleUser(row);
}

/**
 * Changes a console user in one transaction: its role, whether it is disabled (disabling ends its sessions), and
 * `twoFactor: null` forgets its second factor (secret and recovery codes) and ends its sessions, so that its next
 * sign-in is by password and, when its platform requires it, a new enrolment. What is already set changes nothing.
 */
export async function updateConsoleUser(db: Kysely<Schema>, userId: string, change: ConsoleUserChange, source: AuditSource): Promise<ConsoleUser> {
  const row = await db.transaction().execute(async (tx) => {
    const now = new Date();
    let user = await store.findConsoleUser(tx, userId);
    const audit = (action: 'console_user.update' | 'console_user.disable' | 'console_user.enable' | 'console_user.two_factor_reset') =>
      user ? recordAudit(tx, source, { platformId: user.platform_id, action, target: { type: 'console_user', id: user.id } }) : undefined;
    if (user && change.role !== undefined) {
      user = await store.setConsoleUserRole(tx, user.id, change.role, now);
      await audit('console_user.update');
    }
    if (user && change.disabled !== undefined) {
      user = await store.setConsoleUserDisabled(tx, user.id, change.disabled, now);
      if (user && change.disabled) await store.deleteConsoleSessionsOfUser(tx, user.id);
      await audit(change.disabled ? 'console_user.disable' : 'console_user.enable');
    }
    if (user && change.twoFactor === null) {
      user = await store.resetTwoFactor(tx, user.id, now);
      if (user) await store.deleteConsoleSessionsOfUser(tx, user.id);
      await audit('console_user.two_factor_reset');
    }
    return user;
  });
  if (!row) throw notFound(`Console user ${userId}`);
  return toConsoleUser(row);
}
