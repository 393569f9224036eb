import { sql, type Kysely, type Selectable } from 'kysely';
import { isUuid } from './ids.ts';
import { readNewestFirst } from './paging.ts';
import { OPERATOR_ROWS_COUNTED_AT_MOST } from './platforms.ts';
import type { ConsoleUsersTable, Schema } from './schema.ts';

export type ConsoleUserRow = Selectable<ConsoleUsersTable>;

/** What a console user's answer shows: never the password hash, the TOTP secret nor the sign-in counters. */
const SHOWN_COLUMNS = ['id', 'platform_id', 'email', 'role', 'disabled', 'two_factor_enrolled_at', 'created_at', 'updated_at'] as const;
export type ShownConsoleUserRow = Pick<ConsoleUserRow, (typeof SHOWN_COLUMNS)[number]>;

/** The unique index on lower(email) (migration 0013): one console user per e-mail address, ignoring case. */
export const CONSOLE_USER_EMAIL_INDEX = 'console_users_email';

export async function insertConsoleUser(
  db: Kysely<Schema>,
  user: { id: string; platformId: string; email: string; passwordHash: string; role: string | undefined },
): Promise<ShownConsoleUserRow> {
  // Without a role: the platform's first user is its owner, the others operators.
  const firstIsOwner = sql<string>`case when exists (select 1 from console_users where platform_id = ${user.platformId}) then 'operator' else 'owner' end`;
  return db
    .insertInto('console_users')
    .values({ id: user.id, platform_id: user.platformId, email: user.email, password_hash: user.passwordHash, role: user.role ?? firstIsOwner })
    .returning(SHOWN_COLUMNS)
    .executeTakeFirstOrThrow();
}

export async function findConsoleUser(db: Kysely<Schema>, id: string): Promise<ShownConsoleUserRow | undefined> {
  if (!isUuid(id)) return undefined;
  return db.selectFrom('console_users').select(SHOWN_COLUMNS).where('id', '=', id).executeTakeFirst();
}

/** A page of the platform's console users, newest first, and how many it has. */
export async function listConsoleUsers(
  db: Kysely<Schema>,
  query: { platformId: string; offset: number; limit: number },
): Promise<{ rows: ShownConsoleUserRow[]; total: number }> {
  const matching = db.selectFrom('console_users').where('platform_id', '=', query.platformId);
  return readNewestFirst(db, query, matching, (rows) => rows.select(SHOWN_COLUMNS), OPERATOR_ROWS_COUNTED_AT_MOST);
}

/** Sets the user's `disabled`; the user as it is now, or undefined when there is no such user. */
export async function setConsoleUserDisabled(db: Kysely<Schema>, id: string, disabled: boolean, at: Date): Promise<ShownConsoleUserRow | undefined> {
  if (!isUuid(id)) return undefined;
  const changed = await db
    .updateTable('console_users')
    .set({ disabled, updated_at: at })
    .where('id', '=', id)
    .where('disabled', '<>', disabled)
    .returning(SHOWN_COLUMNS)
    .executeTakeFirst();
  return changed ?? findConsoleUser(db, id);
}

/** Sets the user's role; the user as it is now, or undefined when there is no such user. */
export async function setConsoleUserRole(db: Kysely<Schema>, id: string, role: string, at: Date): Promise<ShownConsoleUserRow | undefined> {
  if (!isUuid(id)) return undefined;
  const changed = await db
    .updateTable('console_users')
    .set({ role, updated_at: at })
    .where('id', '=', id)
    .where('role', '<>', role)
    .returning(SHOWN_COLUMNS)
    .executeTakeFirst();
  return changed ?? findConsoleUser(db, id);
}

/** Forgets the user's second factor (secret, enrolment, recovery codes, wrong codes); the user, or undefined. */
export async function resetTwoFactor(db: Kysely<Schema>, id: string, at: Date): Promise<ShownConsoleUserRow | undefined> {
  if (!isUuid(id)) return undefined;
  await db.deleteFrom('console_recovery_codes').where('user_id', '=', id).execute();
  return db
    .updateTable('console_users')
    .set({ totp_secret: null, two_factor_enrolled_at: null, last_totp_step: null, failed_codes: 0, last_failed_code_at: null, updated_at: at })
    .where('id', '=', id)
    .returning(SHOWN_COLUMNS)
    .executeTakeFirst();
}

/** Ends every console session of the user (its sign-ins stop working at once). */
export async function deleteConsoleSessionsOfUser(db: Kysely<Schema>, userId: string): Promise<number> {
  const result = await db.deleteFrom('console_sessions').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}
