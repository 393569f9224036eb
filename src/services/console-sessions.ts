import { createHash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import * as store from '../store/console-sessions.ts';
import type { Schema } from '../store/schema.ts';
import { DECOY_PASSWORD_HASH, verifyPassword } from './passwords.ts';
import { toRole, type ConsoleRole } from '../domain/console-roles.ts';

/**
 * Signing in to the web console, and its sessions (contract 10).
 *
 * - A session is a random 256-bit token in an HttpOnly cookie; only its SHA-256 is stored, with an absolute expiry
 *   `sessionHours` after the sign-in (no sliding). Sign-out deletes it; a disabled user's sessions stop at once (every
 *   request reads the user's `disabled` with the session).
 * - Repeated failures are slowed per e-mail address and client together, and per client: after FREE_FAILURES wrong
 *   passwords for an address from one client (FREE_FAILURES_PER_CLIENT from one client, any addresses), that client's
 *   next attempt must wait, 30 s and then twice as long after each further failure, at most 15 minutes
 *   (`retryDelaySeconds`). Whoever guesses is slowed; the user, signing in from their own client, never is: knowing a
 *   user's e-mail address no longer lets anyone keep them out (issue 23). An attempt that must wait is answered at
 *   once and is not counted; failures are forgotten 24 hours after the last one, and a right password clears its
 *   address's and takes its own attempt back from its client's.
 * - Each attempt is counted before its password is checked (in memory, before anything is awaited), so concurrent
 *   guesses cannot slip past the limit. The counts are this process's.
 * - The user is told: wrong passwords for a known address are also counted on the user, and the sign-in that follows
 *   reports how many there were since the last one (`failedAttemptsSince`), which the console shows.
 * - Nothing tells whether an e-mail address has a user: an unknown address is checked against a decoy hash (as
 *   slow as a real check) and slowed the same way, its failures counted in this process's memory.
 */

/** Wrong passwords for one e-mail address before attempts must wait. */
export const FREE_FAILURES = 5;
/** Wrong passwords from one client address (any e-mail) before its attempts must wait. */
export const FREE_FAILURES_PER_CLIENT = 20;
const FIRST_DELAY_SECONDS = 30;
const MAX_DELAY_SECONDS = 15 * 60;
/** Failures are forgotten this long after the last one. */
const FAILURE_MEMORY_MS = 24 * 60 * 60 * 1000;
/** The most addresses (client or unknown e-mail) counted in memory; the least recently failed are forgotten first. */
const MEMORY_ENTRIES = 10_000;
/** Longer passwords and e-mail addresses are refused without a check (and without hashing megabytes). */
const MAX_PASSWORD_LENGTH = 1_024;
const MAX_EMAIL_LENGTH = 254;
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** How long an attempt must wait after `failures` failures in a row, free ones included: 0, or 30 s doubling to 15 min. */
export function retryDelaySeconds(failures: number, freeFailures: number = FREE_FAILURES): number {
  if (failures < freeFailures) return 0;
  return Math.min(MAX_DELAY_SECONDS, FIRST_DELAY_SECONDS * 2 ** Math.min(failures - freeFailures, 10));
}

/** Seconds still to wait before another attempt, given the failures and when the last one was; 0 when none. */
function secondsToWait(failures: number, lastAt: Date | null, now: Date, freeFailures: number): number {
  if (lastAt === null || failures === 0) return 0;
  const since = now.getTime() - lastAt.getTime();
  if (since >= FAILURE_MEMORY_MS) return 0;
  return Math.max(0, Math.ceil(retryDelaySeconds(failures, freeFailures) - since / 1000));
}

/** The failures still remembered: none once 24 hours have passed since the last. */
function remembered(failures: number, lastAt: Date | null, now: Date): number {
  return lastAt !== null && now.getTime() - lastAt.getTime() < FAILURE_MEMORY_MS ? failures : 0;
}

/** Failure counters held in this process's memory, bounded (the least recently counted are dropped first). */
class FailureCounters {
  readonly #entries = new Map<string, { failures: number; lastAt: Date }>();

  get(key: string, now: Date): { failures: number; lastAt: Date | null } {
    const entry = this.#entries.get(key);
    if (entry === undefined) return { failures: 0, lastAt: null };
    return { failures: remembered(entry.failures, entry.lastAt, now), lastAt: entry.lastAt };
  }

  count(key: string, now: Date): void {
    const failures = this.get(key, now).failures + 1;
    this.#entries.delete(key);
    this.#entries.set(key, { failures, lastAt: now });
    if (this.#entries.size > MEMORY_ENTRIES) this.#entries.delete(this.#entries.keys().next().value!);
  }

  /** Takes one counted attempt back (it was not a failure). */
  uncount(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    if (entry.failures <= 1) this.#entries.delete(key);
    else entry.failures -= 1;
  }

  clear(key: string): void {
    this.#entries.delete(key);
  }
}

export type ConsoleSession = {
  /** The session's own id (the hex SHA-256 of its token), to name it among the user's sessions. */
  sessionId: string;
  userId: string;
  email: string;
  platformId: string;
  platformName: string;
  role: ConsoleRole;
  expiresAt: Date;
  /** False while the user, enrolled in two factors, has given the password but not yet the code. */
  secondFactorPassed: boolean;
  twoFactorEnrolled: boolean;
  /** The platform requires a second factor of every user: one not enrolled must enrol before anything else. */
  requireTwoFactor: boolean;
};

/** One of a user's sessions, as their sessions page lists it. */
export type OwnSession = { id: string; createdAt: Date; lastSeenAt: Date | null; expiresAt: Date; current: boolean };

/** A session's last use is written at most this often. */
const LAST_SEEN_EVERY_MS = 60_000;
/** The most sessions a user's page lists. */
const OWN_SESSIONS_SHOWN = 100;
const SESSION_ID_PATTERN = /^[0-9a-f]{64}$/;

export type SignInResult =
  /** `failedAttemptsSince`: wrong passwords for this address (from anywhere) since its last sign-in, in the last 24 h. */
  | { outcome: 'signed_in'; token: string; session: ConsoleSession; failedAttemptsSince: number }
  /** Wrong e-mail or password (which of the two is never told). */
  | { outcome: 'refused' }
  /** The right password of a user an operator disabled. */
  | { outcome: 'disabled' }
  /** Too many failures for this address or from this client: try again after `retryAfterSeconds`. */
  | { outcome: 'slowed'; retryAfterSeconds: number };

export type ConsoleSessionsOptions = {
  db: Kysely<Schema>;
  sessionHours: number;
  now?: () => Date;
};

function tokenHash(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

export class ConsoleSessions {
  readonly #db: Kysely<Schema>;
  readonly #sessionMs: number;
  readonly #now: () => Date;
  readonly #clients = new FailureCounters();
  readonly #pairs = new FailureCounters();

  constructor(options: ConsoleSessionsOptions) {
    this.#db = options.db;
    this.#sessionMs = options.sessionHours * 60 * 60 * 1000;
    this.#now = options.now ?? (() => new Date());
  }

  /** Checks an e-mail and password from `client` (its address) and, when right, opens a session. */
  async signIn(emailGiven: string, password: string, client: string): Promise<SignInResult> {
    const email = emailGiven.trim();
    const now = this.#now();
    const clientKey = `client:${client}`;
    const fromClient = this.#clients.get(clientKey, now);
    const clientWait = secondsToWait(fromClient.failures, fromClient.lastAt, now, FREE_FAILURES_PER_CLIENT);
    if (clientWait > 0) return { outcome: 'slowed', retryAfterSeconds: clientWait };

    const emailKey = email.slice(0, MAX_EMAIL_LENGTH).toLowerCase();
    const pairKey = `${clientKey}|email:${emailKey}`;
    const pair = this.#pairs.get(pairKey, now);
    const wait = secondsToWait(pair.failures, pair.lastAt, now, FREE_FAILURES);
    if (wait > 0) return { outcome: 'slowed', retryAfterSeconds: wait };
    // Counted before anything is awaited: concurrent guesses from one client cannot slip past the limit.
    this.#pairs.count(pairKey, now);
    this.#clients.count(clientKey, now);

    const plausible = email.length > 0 && email.length <= MAX_EMAIL_LENGTH && password.length <= MAX_PASSWORD_LENGTH;
    const user = plausible ? await store.findUserByEmail(this.#db, email) : undefined;
    // Always one scrypt check, so that an unknown address takes as long as a wrong password.
    const right = await verifyPassword(plausible ? password : '', user?.passwordHash ?? DECOY_PASSWORD_HASH);
    if (user === undefined || !right || !plausible) {
      if (user !== undefined) await store.recordSignInFailure(this.#db, user.id, now, FAILURE_MEMORY_MS);
      return { outcome: 'refused' };
    }

    const failedAttemptsSince = remembered(user.failedSignIns, user.lastFailedSignInAt, now);
    await store.clearSignInFailures(this.#db, user.id);
    this.#pairs.clear(pairKey);
    this.#clients.uncount(clientKey);
    if (user.disabled) return { outcome: 'disabled' };
    const token = randomBytes(32).toString('base64url');
    const expiresAt = new Date(now.getTime() + this.#sessionMs);
    await store.deleteExpiredSessionsOf(this.#db, user.id, now);
    // An enrolled user's session is pending until the code: every console route but the code's refuses it.
    const hash = tokenHash(token);
    await store.insertSession(this.#db, { tokenHash: hash, userId: user.id, expiresAt, secondFactorPassed: !user.twoFactorEnrolled, at: now });
    const session = await this.resolve(token);
    if (session === null) throw new Error('a session just opened was not found');
    return { outcome: 'signed_in', token, session, failedAttemptsSince };
  }

  /** The session of a cookie's token, or null: unknown, expired (then deleted), or its user disabled. */
  async resolve(token: string | undefined): Promise<ConsoleSession | null> {
    if (token === undefined || !TOKEN_PATTERN.test(token)) return null;
    const hash = tokenHash(token);
    const row = await store.findSession(this.#db, hash);
    if (row === undefined || row.disabled) return null;
    const now = this.#now();
    if (row.expiresAt.getTime() <= now.getTime()) {
      await store.deleteSession(this.#db, hash);
      return null;
    }
    if (row.lastSeenAt === null || now.getTime() - row.lastSeenAt.getTime() > LAST_SEEN_EVERY_MS) await store.touchSession(this.#db, hash, now, LAST_SEEN_EVERY_MS);
    return {
      sessionId: hash.toString('hex'),
      userId: row.userId,
      email: row.email,
      platformId: row.platformId,
      platformName: row.platformName,
      role: toRole(row.role),
      expiresAt: row.expiresAt,
      secondFactorPassed: row.secondFactorPassed,
      twoFactorEnrolled: row.twoFactorEnrolled,
      requireTwoFactor: row.requireTwoFactor,
    };
  }

  /** The session of this token has passed its second factor (a right code, or an enrolment just confirmed). */
  async passSecondFactor(token: string | undefined): Promise<void> {
    if (token === undefined || !TOKEN_PATTERN.test(token)) return;
    await store.markSecondFactorPassed(this.#db, tokenHash(token));
  }

  /** The user's sessions still open, newest first, the one of `current` (a session id) marked. */
  async listOwn(userId: string, current: string): Promise<OwnSession[]> {
    const rows = await store.listSessionsOf(this.#db, userId, this.#now(), OWN_SESSIONS_SHOWN);
    return rows.map((row) => {
      const id = row.tokenHash.toString('hex');
      return { id, createdAt: row.createdAt, lastSeenAt: row.lastSeenAt, expiresAt: row.expiresAt, current: id === current };
    });
  }

  /** Ends one of the user's own sessions by its id; whether there was one (another user's is never ended). */
  async endOwn(userId: string, sessionId: string): Promise<boolean> {
    if (!SESSION_ID_PATTERN.test(sessionId)) return false;
    return store.deleteSessionOf(this.#db, userId, Buffer.from(sessionId, 'hex'));
  }

  /** Ends every session of the user but `current` (a session id); how many ended. */
  async endOthers(userId: string, current: string): Promise<number> {
    return store.deleteOtherSessionsOf(this.#db, userId, Buffer.from(current, 'hex'));
  }

  /** Ends the session of this token (nothing when there is none). */
  async signOut(token: string | undefined): Promise<void> {
    if (token === undefined || !TOKEN_PATTERN.test(token)) return;
    await store.deleteSession(this.#db, tokenHash(token));
  }
}
