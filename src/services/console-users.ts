import { randomUUID } from 'node:crypto';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import type { Kysely } from 'kysely';
import { AppError, notFound, type FieldError } from '../errors.ts';
import * as store from '../store/console-users.ts';
import { isUniqueViolation } from '../store/errors.ts';
import type { Schema } from '../store/schema.ts';
import { recordAudit, type AuditSource } from './audit.ts';
import { itemsPage, offsetOf, type PageRequest } from './pages.ts';
import { hashPassword, MIN_PASSWORD_LENGTH } from './passwords.ts';
import { requirePlatform } from './platforms.ts';

/** The longest password taken: a passphrase fits, and hashing stays cheap whatever is sent. */
export const MAX_PASSWORD_LENGTH = 1024;
export const MAX_EMAIL_LENGTH = 254;

/** A console user as the admin API shows it (contract 10): never the password or its hash. */
export type ConsoleUser = { id: string; email: string; platformId: string; disabled: boolean; createdAt: string };

export function toConsoleUser(row: store.ShownConsoleUserRow): ConsoleUser {
  return { id: row.id, email: row.email, platformId: row.platform_id, disabled: row.disabled, createdAt: row.created_at.toISOString() };
}

/** Characters as JSON Schema counts them (code points), so that the schema's and this check agree. */
function characters(text: string): number {
  return [...text].length;
}

const EMAIL = fullFormats.email as RegExp;

/**
 * The rules of a new user's e-mail and password, worded as the HTTP schema's validation words them, for callers that
 * do not come through it (the CLI on the database).
 */
export function newUserProblems(input: { email: string; password: string }): FieldError[] {
  const errors: FieldError[] = [];
  if (!EMAIL.test(input.email)) errors.push({ path: '/email', code: 'invalid_format', message: 'email must be an email address (name@example.com).' });
  else if (characters(input.email) > MAX_EMAIL_LENGTH) errors.push({ path: '/email', code: 'invalid_length', message: `email must be at most ${MAX_EMAIL_LENGTH} characters long.` });
  const length = characters(input.password);
  if (length < MIN_PASSWORD_LENGTH) errors.push({ path: '/password', code: 'invalid_length', message: `password must be at least ${MIN_PASSWORD_LENGTH} characters long.` });
  else if (length > MAX_PASSWORD_LENGTH) errors.push({ path: '/password', code: 'invalid_length', message: `password must be at most ${MAX_PASSWORD_LENGTH} characters long.` });
  return errors;
}

function checkNewUser(input: { email: string; password: string }): void {
  const errors = newUserProblems(input);
  if (errors.length === 0) return;
  const detail = errors.length === 1 ? `The request has an invalid field: ${errors[0]!.message}` : `The request has ${errors.length} invalid fields; see errors.`;
  throw new AppError('validation_failed', detail, { errors });
}

/**
 * A console user of the platform, with the password hashed (scrypt, src/services/passwords.ts). E-mail addresses are
 * unique across every platform, ignoring case (a user signs in with the e-mail alone): 409 `console_user_email_taken`.
 */
export async function createConsoleUser(
  db: Kysely<Schema>,
  platformId: string,
  input: { email: string; password: string },
  source: AuditSource,
): Promise<ConsoleUser> {
  checkNewUser(input);
  const platform = await requirePlatform(db, platformId);
  const passwordHash = await hashPassword(input.password);
  try {
    const row = await db.transaction().execute(async (tx) => {
      const inserted = await store.insertConsoleUser(tx, { id: randomUUID(), platformId: platform.id, email: input.email, passwordHash });
      await recordAudit(tx, source, { platformId: inserted.platform_id, action: 'console_user.create', target: { type: 'console_user', id: inserted.id } });
      return inserted;
    });
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
    if (user) {
      const action = disabled ? 'console_user.disable' : 'console_user.enable';
      await recordAudit(tx, source, { platformId: user.platform_id, action, target: { type: 'console_user', id: user.id } });
    }
    return user;
  });
  if (!row) throw notFound(`Console user ${userId}`);
  return toConsoleUser(row);
}
