import type { Kysely } from 'kysely';
import { isUuid } from './ids.ts';
import type { Schema } from './schema.ts';

/**
 * The SQL of console users' second factor (migration 0021): the sealed TOTP secret (pending until confirmed), the
 * last time step accepted, the wrong codes counted, and the recovery codes by their SHA-256. The rules are
 * src/services/two-factor.ts's.
 */

export type TwoFactorRow = {
  sealedSecret: string | null;
  enrolledAt: Date | null;
  lastStep: number | null;
  failedCodes: number;
  lastFailedCodeAt: Date | null;
};

export async function findTwoFactor(db: Kysely<Schema>, userId: string): Promise<TwoFactorRow | undefined> {
  if (!isUuid(userId)) return undefined;
  const row = await db
    .selectFrom('console_users')
    .select(['totp_secret', 'two_factor_enrolled_at', 'last_totp_step', 'failed_codes', 'last_failed_code_at'])
    .where('id', '=', userId)
    .executeTakeFirst();
  return (
    row && {
      sealedSecret: row.totp_secret,
      enrolledAt: row.two_factor_enrolled_at,
      lastStep: row.last_totp_step === null ? null : Number(row.last_totp_step),
      failedCodes: Number(row.failed_codes),
      lastFailedCodeAt: row.last_failed_code_at,
    }
  );
}

/** Keeps the secret of an enrolment under way (never over an enrolled one); whether it was kept. */
export async function setPendingSecret(db: Kysely<Schema>, userId: string, sealedSecret: string): Promise<boolean> {
  const result = await db
    .updateTable('console_users')
    .set({ totp_secret: sealedSecret })
    .where('id', '=', userId)
    .where('two_factor_enrolled_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Completes the enrolment of the pending secret: enrolled at `at`, its first code's step used, and these recovery
 * codes (hashes) in place of any before. False when it was no longer pending (another enrolment won).
 */
export async function completeEnrolment(db: Kysely<Schema>, userId: string, at: Date, step: number, codeHashes: Buffer[]): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const result = await tx
      .updateTable('console_users')
      .set({ two_factor_enrolled_at: at, last_totp_step: step, failed_codes: 0, last_failed_code_at: null, updated_at: at })
      .where('id', '=', userId)
      .where('two_factor_enrolled_at', 'is', null)
      .where('totp_secret', 'is not', null)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) return false;
    await tx.deleteFrom('console_recovery_codes').where('user_id', '=', userId).execute();
    await tx.insertInto('console_recovery_codes').values(codeHashes.map((hash) => ({ user_id: userId, code_hash: hash }))).execute();
    return true;
  });
}

/**
 * Counts one code attempt before it is checked, if the count is still `seen` (else another attempt came first: this
 * one is not counted and must be tried again). A count older than `memoryMs` starts again at one.
 */
export async function countCodeAttempt(db: Kysely<Schema>, userId: string, seen: number, at: Date, memoryMs: number): Promise<boolean> {
  const stale = new Date(at.getTime() - memoryMs);
  const result = await db
    .updateTable('console_users')
    .set((row) => ({
      failed_codes: row.case().when('last_failed_code_at', '>', stale).then(row('failed_codes', '+', 1)).else(1).end(),
      last_failed_code_at: at,
    }))
    .where('id', '=', userId)
    .where('failed_codes', '=', seen)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** A right TOTP code at `step`: the attempt is taken back and the step used, unless a later or equal one was (a replay). */
export async function acceptTotpStep(db: Kysely<Schema>, userId: string, step: number): Promise<boolean> {
  const result = await db
    .updateTable('console_users')
    .set({ last_totp_step: step, failed_codes: 0, last_failed_code_at: null })
    .where('id', '=', userId)
    .where((row) => row.or([row('last_totp_step', 'is', null), row('last_totp_step', '<', step)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Uses the recovery code with this hash, once: whether it was there unused. Clears the wrong codes when it was. */
export async function useRecoveryCode(db: Kysely<Schema>, userId: string, codeHash: Buffer, at: Date): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const used = await tx
      .updateTable('console_recovery_codes')
      .set({ used_at: at })
      .where('user_id', '=', userId)
      .where('code_hash', '=', codeHash)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    if (Number(used.numUpdatedRows) === 0) return false;
    await tx.updateTable('console_users').set({ failed_codes: 0, last_failed_code_at: null }).where('id', '=', userId).execute();
    return true;
  });
}

/** How many of the user's recovery codes are still unused (ten at most). */
export async function recoveryCodesLeft(db: Kysely<Schema>, userId: string): Promise<number> {
  const rows = await db.selectFrom('console_recovery_codes').select('code_hash').where('user_id', '=', userId).where('used_at', 'is', null).execute();
  return rows.length;
}
