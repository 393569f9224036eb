import { sql, type Kysely } from 'kysely';
import type { Schema } from './schema.ts';

/**
 * The SQL of the web console's sign-in and sessions (migration 0013): a user found by e-mail (ignoring case, by the
 * unique index on lower(email)), its failed sign-in counter, and the sessions, stored by their token's SHA-256 only.
 * The rules (when an attempt is allowed, how long a session lasts) are src/services/console-sessions.ts's.
 */

export type SignInUserRow = {
  id: string;
  platformId: string;
  platformName: string;
  email: string;
  passwordHash: string;
  disabled: boolean;
  failedSignIns: number;
  lastFailedSignInAt: Date | null;
  twoFactorEnrolled: boolean;
};

/** The user with this e-mail, ignoring case; undefined when there is none. */
export async function findUserByEmail(db: Kysely<Schema>, email: string): Promise<SignInUserRow | undefined> {
  const row = await db
    .selectFrom('console_users')
    .innerJoin('platforms', 'platforms.id', 'console_users.platform_id')
    .select([
      'console_users.id',
      'console_users.platform_id',
      'platforms.name as platform_name',
      'console_users.email',
      'console_users.password_hash',
      'console_users.disabled',
      'console_users.failed_sign_ins',
      'console_users.last_failed_sign_in_at',
      'console_users.two_factor_enrolled_at',
    ])
    .where(sql<string>`lower(console_users.email)`, '=', sql<string>`lower(${email})`)
    .executeTakeFirst();
  return (
    row && {
      id: row.id,
      platformId: row.platform_id,
      platformName: row.platform_name,
      email: row.email,
      passwordHash: row.password_hash,
      disabled: row.disabled,
      failedSignIns: row.failed_sign_ins,
      lastFailedSignInAt: row.last_failed_sign_in_at,
      twoFactorEnrolled: row.two_factor_enrolled_at !== null,
    }
  );
}

/** A wrong password for the user, counted (a count older than `memoryMs` starts again at one). */
export async function recordSignInFailure(db: Kysely<Schema>, userId: string, at: Date, memoryMs: number): Promise<void> {
  await db
    .updateTable('console_users')
    .set({
      failed_sign_ins: sql`case when last_failed_sign_in_at > ${new Date(at.getTime() - memoryMs)} then failed_sign_ins + 1 else 1 end`,
      last_failed_sign_in_at: at,
    })
    .where('id', '=', userId)
    .execute();
}

/** A right password: the failures counted so far are forgotten. */
export async function clearSignInFailures(db: Kysely<Schema>, userId: string): Promise<void> {
  await db.updateTable('console_users').set({ failed_sign_ins: 0, last_failed_sign_in_at: null }).where('id', '=', userId).execute();
}

export async function insertSession(
  db: Kysely<Schema>,
  session: { tokenHash: Buffer; userId: string; expiresAt: Date; secondFactorPassed: boolean; at: Date },
): Promise<void> {
  await db
    .insertInto('console_sessions')
    .values({
      token_hash: session.tokenHash,
      user_id: session.userId,
      expires_at: session.expiresAt,
      second_factor_passed: session.secondFactorPassed,
      created_at: session.at,
      last_seen_at: session.at,
    })
    .execute();
}

export type SessionRow = {
  userId: string;
  email: string;
  platformId: string;
  platformName: string;
  role: string;
  disabled: boolean;
  expiresAt: Date;
  lastSeenAt: Date | null;
  secondFactorPassed: boolean;
  twoFactorEnrolled: boolean;
  requireTwoFactor: boolean;
};

/** The session of this token hash with its user and platform, whatever its state; undefined when there is none. */
export async function findSession(db: Kysely<Schema>, tokenHash: Buffer): Promise<SessionRow | undefined> {
  const row = await db
    .selectFrom('console_sessions')
    .innerJoin('console_users', 'console_users.id', 'console_sessions.user_id')
    .innerJoin('platforms', 'platforms.id', 'console_users.platform_id')
    .select([
      'console_users.id as user_id',
      'console_users.email',
      'console_users.platform_id',
      'platforms.name as platform_name',
      'platforms.require_two_factor',
      'console_users.role',
      'console_users.disabled',
      'console_users.two_factor_enrolled_at',
      'console_sessions.expires_at',
      'console_sessions.last_seen_at',
      'console_sessions.second_factor_passed',
    ])
    .where('console_sessions.token_hash', '=', tokenHash)
    .executeTakeFirst();
  return (
    row && {
      userId: row.user_id,
      email: row.email,
      platformId: row.platform_id,
      platformName: row.platform_name,
      role: row.role,
      disabled: row.disabled,
      expiresAt: row.expires_at,
      lastSeenAt: row.last_seen_at,
      secondFactorPassed: row.second_factor_passed,
      twoFactorEnrolled: row.two_factor_enrolled_at !== null,
      requireTwoFactor: row.require_two_factor,
    }
  );
}

export async function deleteSession(db: Kysely<Schema>, tokenHash: Buffer): Promise<void> {
  await db.deleteFrom('console_sessions').where('token_hash', '=', tokenHash).execute();
}

/** The session's second factor is passed (the code after the password, or an enrolment). */
export async function markSecondFactorPassed(db: Kysely<Schema>, tokenHash: Buffer): Promise<void> {
  await db.updateTable('console_sessions').set({ second_factor_passed: true }).where('token_hash', '=', tokenHash).execute();
}

/** Records that the session was used at `at`, when it was last recorded more than `everyMs` before (few writes). */
export async function touchSession(db: Kysely<Schema>, tokenHash: Buffer, at: Date, everyMs: number): Promise<void> {
  await db
    .updateTable('console_sessions')
    .set({ last_seen_at: at })
    .where('token_hash', '=', tokenHash)
    .where((row) => row.or([row('last_seen_at', 'is', null), row('last_seen_at', '<', new Date(at.getTime() - everyMs))]))
    .execute();
}

export type UserSessionRow = { tokenHash: Buffer; createdAt: Date; lastSeenAt: Date | null; expiresAt: Date; secondFactorPassed: boolean };

/** The user's sessions that have not expired by `now`, newest first (a user has few: each sign-in tidies the expired). */
export async function listSessionsOf(db: Kysely<Schema>, userId: string, now: Date, limit: number): Promise<UserSessionRow[]> {
  const rows = await db
    .selectFrom('console_sessions')
    .select(['token_hash', 'created_at', 'last_seen_at', 'expires_at', 'second_factor_passed'])
    .where('user_id', '=', userId)
    .where('expires_at', '>', now)
    .orderBy('created_at', 'desc')
    .limit(limit)
    .execute();
  return rows.map((row) => ({
    tokenHash: Buffer.from(row.token_hash),
    createdAt: row.created_at,
    lastSeenAt: row.last_seen_at,
    expiresAt: row.expires_at,
    secondFactorPassed: row.second_factor_passed,
  }));
}

/** Ends one of the user's sessions (only the user's); whether there was one. */
export async function deleteSessionOf(db: Kysely<Schema>, userId: string, tokenHash: Buffer): Promise<boolean> {
  const result = await db.deleteFrom('console_sessions').where('user_id', '=', userId).where('token_hash', '=', tokenHash).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Ends every session of the user but `keep`; how many ended. */
export async function deleteOtherSessionsOf(db: Kysely<Schema>, userId: string, keep: Buffer): Promise<number> {
  const result = await db.deleteFrom('console_sessions').where('user_id', '=', userId).where('token_hash', '<>', keep).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The user's sessions that have expired by `now` (kept tidy at each of its sign-ins). */
export async function deleteExpiredSessionsOf(db: Kysely<Schema>, userId: string, now: Date): Promise<void> {
  await db.deleteFrom('console_sessions').where('user_id', '=', userId).where('expires_at', '<=', now).execute();
}

/** Deletes up to `batch` sessions past their expiry (housekeeping: users who never come back); returns how many. */
export async function purgeExpiredSessions(db: Kysely<Schema>, batch = 1000): Promise<number> {
  const result = await db
    .deleteFrom('console_sessions')
    .where('token_hash', 'in', db.selectFrom('console_sessions').select('token_hash').where('expires_at', '<', new Date()).limit(batch))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
