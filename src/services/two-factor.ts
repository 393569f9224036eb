import { createHash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { Secret, TOTP } from 'otpauth';
import QRCode from 'qrcode';
import type { Schema } from '../store/schema.ts';
import * as store from '../store/two-factor.ts';
import type { CredentialsVault } from './credentials-vault.ts';
import { retryDelaySeconds } from './console-sessions.ts';

/**
 * Two-factor sign-in to the console (contract 14): TOTP (RFC 6238: SHA-1, 6 digits, 30-second steps, as every
 * authenticator app reads them), one step either side accepted for clocks that drift, each step good once.
 *
 * - Enrolment: a secret (160 bits) is made and kept sealed (the credentials vault, AES-256-GCM bound to the user) as
 *   pending; the page shows it as a QR code (an SVG drawn here) and as text. A right code from it completes the
 *   enrolment and makes ten recovery codes, shown that once and kept as SHA-256 only (each is 50 random bits: no
 *   slow hash needed), each good for one sign-in.
 * - Wrong codes are counted on the user before each is checked (a concurrent attempt that finds the count changed is
 *   refused without a check), and slowed as wrong passwords are: after FREE_CODE_FAILURES, 30 s doubling to 15 minutes.
 */

export const RECOVERY_CODE_COUNT = 10;
/** Wrong codes before attempts must wait. */
export const FREE_CODE_FAILURES = 5;
const FAILURE_MEMORY_MS = 24 * 60 * 60 * 1000;
const PERIOD_SECONDS = 30;
const ISSUER = 'ebrc-gateway';
/** Recovery codes: 10 characters of this alphabet (no 0/o, 1/l/i), shown as two groups of five. */
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';
const RECOVERY_PATTERN = /^[a-z2-9]{10}$/;

export type Enrolment = { secret: string; otpauthUri: string; qrSvg: string };

export type CodeCheck =
  | { outcome: 'passed'; by: 'totp' }
  | { outcome: 'passed'; by: 'recovery_code'; recoveryCodesLeft: number }
  | { outcome: 'wrong' }
  | { outcome: 'slowed'; retryAfterSeconds: number };

function totpOf(secret: string, label: string): TOTP {
  return new TOTP({ issuer: ISSUER, label, algorithm: 'SHA1', digits: 6, period: PERIOD_SECONDS, secret: Secret.fromBase32(secret) });
}

function hashRecoveryCode(code: string): Buffer {
  return createHash('sha256').update(code).digest();
}

/** A recovery code as typed: case, spaces and dashes do not matter. */
function normalRecoveryCode(typed: string): string {
  return typed.toLowerCase().replace(/[\s-]/g, '');
}

function newRecoveryCode(): string {
  const bytes = randomBytes(10);
  let code = '';
  for (const byte of bytes) code += RECOVERY_ALPHABET[byte % RECOVERY_ALPHABET.length];
  return `${code.slice(0, 5)}-${code.slice(5)}`;
}

function secondsToWait(failures: number, lastAt: Date | null, now: Date): number {
  if (lastAt === null || failures === 0) return 0;
  const since = now.getTime() - lastAt.getTime();
  if (since >= FAILURE_MEMORY_MS) return 0;
  return Math.max(0, Math.ceil(retryDelaySeconds(failures, FREE_CODE_FAILURES) - since / 1000));
}

export class TwoFactor {
  readonly #db: Kysely<Schema>;
  readonly #vault: CredentialsVault;
  readonly #now: () => Date;

  constructor(options: { db: Kysely<Schema>; vault: CredentialsVault; now?: () => Date }) {
    this.#db = options.db;
    this.#vault = options.vault;
    this.#now = options.now ?? (() => new Date());
  }

  async #state(userId: string): Promise<store.TwoFactorRow> {
    const row = await store.findTwoFactor(this.#db, userId);
    if (row === undefined) throw new Error(`console user ${userId} not found`);
    return row;
  }

  /** The pending enrolment of the user (made now if there is none): its secret as text, URI and QR code; null when enrolled. */
  async startEnrolment(userId: string, email: string): Promise<Enrolment | null> {
    const state = await this.#state(userId);
    if (state.enrolledAt !== null) return null;
    let secret = state.sealedSecret === null ? null : this.#vault.openTotpSecret(userId, state.sealedSecret);
    if (secret === null) {
      secret = new Secret({ size: 20 }).base32;
      await store.setPendingSecret(this.#db, userId, this.#vault.sealTotpSecret(userId, secret));
    }
    const otpauthUri = totpOf(secret, email).toString();
    const qrSvg = await QRCode.toString(otpauthUri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
    return { secret, otpauthUri, qrSvg };
  }

  /**
   * Confirms the pending enrolment with a code from it: the recovery codes (shown this once) when right; else wrong,
   * slowed, or already enrolled (in another window, say).
   */
  async confirmEnrolment(
    userId: string,
    code: string,
  ): Promise<{ outcome: 'enrolled'; recoveryCodes: string[] } | { outcome: 'wrong' | 'already' } | { outcome: 'slowed'; retryAfterSeconds: number }> {
    const now = this.#now();
    const state = await this.#state(userId);
    if (state.enrolledAt !== null) return { outcome: 'already' };
    if (state.sealedSecret === null) return { outcome: 'wrong' };
    const counted = await this.#count(userId, state, now);
    if (counted !== null) return counted;
    const step = this.#stepOf(this.#vault.openTotpSecret(userId, state.sealedSecret), code, now);
    if (step === null) return { outcome: 'wrong' };
    const recoveryCodes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    const done = await store.completeEnrolment(this.#db, userId, now, step, recoveryCodes.map((one) => hashRecoveryCode(normalRecoveryCode(one))));
    if (!done) return { outcome: 'already' };
    return { outcome: 'enrolled', recoveryCodes };
  }

  /** Checks a sign-in's second factor: a TOTP code (6 digits) or an unused recovery code. */
  async check(userId: string, typed: string): Promise<CodeCheck> {
    const now = this.#now();
    const state = await this.#state(userId);
    if (state.enrolledAt === null || state.sealedSecret === null) return { outcome: 'wrong' };
    const counted = await this.#count(userId, state, now);
    if (counted !== null) return counted;
    const code = typed.trim().replace(/\s/g, '');
    if (/^\d{6}$/.test(code)) {
      const step = this.#stepOf(this.#vault.openTotpSecret(userId, state.sealedSecret), code, now);
      if (step !== null && (await store.acceptTotpStep(this.#db, userId, step))) return { outcome: 'passed', by: 'totp' };
      return { outcome: 'wrong' };
    }
    const recovery = normalRecoveryCode(code);
    if (RECOVERY_PATTERN.test(recovery) && (await store.useRecoveryCode(this.#db, userId, hashRecoveryCode(recovery), now))) {
      return { outcome: 'passed', by: 'recovery_code', recoveryCodesLeft: await store.recoveryCodesLeft(this.#db, userId) };
    }
    return { outcome: 'wrong' };
  }

  /** Counts this attempt before its check; an answer when it may not be checked (slowed, or raced by another). */
  async #count(userId: string, state: store.TwoFactorRow, now: Date): Promise<{ outcome: 'slowed'; retryAfterSeconds: number } | null> {
    const wait = secondsToWait(state.failedCodes, state.lastFailedCodeAt, now);
    if (wait > 0) return { outcome: 'slowed', retryAfterSeconds: wait };
    if (!(await store.countCodeAttempt(this.#db, userId, state.failedCodes, now, FAILURE_MEMORY_MS))) return { outcome: 'slowed', retryAfterSeconds: 1 };
    return null;
  }

  /** The time step of a right code at `now` (one step either side), or null. */
  #stepOf(secret: string, code: string, now: Date): number | null {
    if (!/^\d{6}$/.test(code.trim())) return null;
    const delta = totpOf(secret, '').validate({ token: code.trim(), timestamp: now.getTime(), window: 1 });
    if (delta === null) return null;
    return Math.floor(now.getTime() / 1000 / PERIOD_SECONDS) + delta;
  }
}
