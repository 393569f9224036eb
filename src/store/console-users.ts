import type { Kysely, Selectable } from 'kysely';
import { isUuid } from './ids.ts';
import { readNewestFirst } from './paging.ts';
import { OPERATOR_ROWS_COUNTED_AT_MOST } from './platforms.ts';
import type { ConsoleUsersTable, Schema } from './schema.ts';

export type ConsoleUserRow = Selectable<ConsoleUsersTable>;

/** What a console user's answer shows: never the password hash nor the sign-in counters. */
const SHOWN_COLUMNS = ['id', 'platform_id', 'email', 'disabled', 'created_at', 'updated_at'] as const;
export type ShownConsoleUserRow = Pick<ConsoleUserRow, (typeof SHOWN_COLUMNS)[number]>;

/** The unique index on lower(email) (migration 0013): one console user per e-mail address, ignoring case. */
export const CONSOLE_USER_EMAIL_INDEX = 'console_users_email';

export async function insertConsoleUser(
  db: Kysely<Schema>,
  user: { id: string; platformId: string; email: string; passwordHash: string },
): Promise<ShownConsoleUserRow> {
  return db
    .insertInto('console_users')
    .values({ id: user.id, platform_id: user.platformId, email: user.email, password_hash: user.passwordHash })
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

/** Ends every console session of the user (its sign-ins stop working at once). */
export async function deleteConsoleSessionsOfUser(db: Kysely<Schema>, userId: string): Promise<number> {
  const result = await db.deleteFrom('console_sessions').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}
