import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { configure } from 'safe-stable-stringify';
import { AppError } from '../../errors.ts';
import type { CommitLink } from '../../services/context.ts';
import { SEALED_ANSWER_PREFIX, type CredentialsVault } from '../../services/credentials-vault.ts';
import type { KeyRing, ServerKey } from '../../services/server-key.ts';
import { isDatabaseUnavailable, type DatabaseAvailability } from '../../store/availability.ts';
import { claimKey, completeFromResource, completeKey, linkResource, releaseKey, takeOverReleasedKey, type Claim } from '../../store/idempotency.ts';
import type { Schema } from '../../store/schema.ts';
import { PROBLEM_CONTENT_TYPE } from '../problem.ts';
import { SECRET_FIELD_NAMES } from '../secret-fields.ts';

/**
 * The answer a route rebuilds from what a request's work committed; null while that is not known yet. `first.ended`:
 * the first request answered (a 5xx) and released its key, so nothing of it is still under way, and this retry now
 * holds the key: it may carry the work on (a push is then sent, once; PushService.resume).
 */
export type ReplayFromResource = (
  platformId: string,
  resourceId: string,
  first: { ended: boolean },
) => Promise<{ statusCode: number; body: unknown } | null>;

declare module 'fastify' {
  interface FastifyRequest {
    idempotencyClaim: Claim | null;
    /** What a retry gets after this request's 5xx answer (AppError.onRetry). */
    failureOnRetry: 'replay' | 'run_again' | undefined;
  }
  interface FastifyContextConfig {
    /** How a retry of this route is answered when the first request committed its work but kept no answer (a crash). */
    replayFromResource?: ReplayFromResource;
    /**
     * The route's answer holds a secret (a webhook signing secret): the answer kept for replay is stored sealed
     * (AES-256-GCM with the credentials vault's key) and opened when it is replayed.
     */
    answerHoldsSecret?: boolean;
  }
}

const MAX_KEY_LENGTH = 255;
const KEEP_HOURS = 24;
const ABANDON_AFTER_SECONDS = 120;
/** Keys a 5xx answer could not release (the database was down) are released again this often until it works. */
const RELEASE_RETRY_MS = 1_000;
const MAX_UNRELEASED = 10_000;
const SECRET_FIELDS: ReadonlySet<string> = new Set(SECRET_FIELD_NAMES);

// Keys sorted at every level: the same JSON with its keys in another order is the same request.
const canonicalJson = configure({ deterministic: true, circularValue: Error, bigint: false });

/**
 * The keyed fingerprint of a request: HMAC-SHA256, under a key derived from the server's secret, of its route, path
 * and query parameters and body in canonical form, with every secret field replaced by its own keyed digest. Without
 * the server's secret, a stored fingerprint cannot be tested against guesses; with it, no secret is in the text.
 */
export function requestFingerprint(
  key: ServerKey,
  request: { method: string; route: string; params: unknown; query: unknown; body: unknown },
): string {
  const text = canonicalJson(
    { method: request.method, route: request.route, params: request.params ?? null, query: request.query ?? null, body: request.body ?? null },
    (field, value) => (SECRET_FIELDS.has(field) && typeof value === 'string' ? `secret:${key.fingerprint(`secret\u0000${value}`)}` : value),
  );
  return key.fingerprint(text ?? 'null');
}

/** An answer as it is stored: sealed, bound to its platform and key (a sealed answer moved to another row does not open). */
function sealAnswer(vault: CredentialsVault, claim: { platformId: string; key: string }, answer: string): string {
  return `${SEALED_ANSWER_PREFIX}${vault.sealAnswer(`${claim.platformId}\u0000${claim.key}`, answer)}`;
}

/** A stored answer as it is replayed: a sealed one opened, any other (JSON text) as it is. */
function openAnswer(vault: CredentialsVault, claim: { platformId: string; key: string }, stored: string): string {
  if (!stored.startsWith(SEALED_ANSWER_PREFIX)) return stored;
  return vault.openAnswer(`${claim.platformId}\u0000${claim.key}`, stored.slice(SEALED_ANSWER_PREFIX.length));
}

/** The link a service calls inside the transaction that commits a request's work (see CommitLink). */
export function commitLinkOf(request: FastifyRequest): CommitLink | undefined {
  const claim = request.idempotencyClaim;
  if (claim === null) return undefined;
  return async (tx, resourceId) => {
    if (!(await linkResource(tx, claim, resourceId))) {
      throw new AppError('idempotency_key_in_use', 'Another request with this Idempotency-Key took it over; this one was not carried out.');
    }
  };
}

/**
 * Idempotency-Key on every POST (contract 5): the first answer is kept for 24 h and replayed for a retry with the
 * same key and request. The work a key guards records what it committed in its own transaction (commitLinkOf), so a
 * key is never the cause of a second execution of committed work: a retry after a crash that lost the answer is
 * answered from what was committed (the route's replayFromResource). Server failures (5xx) before anything committed
 * are not kept, so a retry runs again, unless the failure is itself the outcome (a push held for reconciliation).
 */
export function registerIdempotency(
  app: FastifyInstance,
  options: { db: Kysely<Schema>; ring: KeyRing; vault: CredentialsVault; availability: DatabaseAvailability },
): void {
  const { db, ring, vault, availability } = options;
  const releases = new PendingReleases(db, availability);
  app.addHook('onClose', async () => releases.close());
  const stored = (request: FastifyRequest, claim: { platformId: string; key: string }, answer: string): string =>
    request.routeOptions.config.answerHoldsSecret ? sealAnswer(vault, claim, answer) : answer;
  app.decorateRequest('idempotencyClaim', null);
  app.decorateRequest('failureOnRetry', undefined);

  // On POST routes only: the other routes do not pay for these hooks.
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.includes('POST')) return;
    route.preHandler = [...hooksOf(route.preHandler), claim];
    route.onSend = [...hooksOf(route.onSend), complete];
  });

  async function claim(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const header = request.headers['idempotency-key'];
    if (header === undefined) return;
    const key = Array.isArray(header) ? header[0] ?? '' : header;
    if (key.length === 0 || key.length > MAX_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(key)) {
      throw new AppError('validation_failed', `Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} visible ASCII characters.`, {
        errors: [{ path: '/headers/idempotency-key', code: 'invalid_format', message: 'Idempotency-Key must be 1 to 255 visible ASCII characters.' }],
      });
    }
    const platformId = request.principal.platformId;
    const fingerprinted = {
      method: request.method,
      route: request.routeOptions.url ?? request.url,
      params: request.params,
      query: request.query,
      body: request.body,
    };
    const fingerprint = requestFingerprint(ring.current, fingerprinted);
    const held: Claim = { platformId, key, claimId: randomUUID() };
    // A key this process's 5xx answer could not release while the database was down is released first. Still down:
    // answered 503 now, not after the claim's own wait for a connection too (two waits would pass the 3 s of contract 17).
    await releases.flush();
    const existing = await claimKey(db, { ...held, fingerprint, keepHours: KEEP_HOURS, abandonAfterSeconds: ABANDON_AFTER_SECONDS });
    if (existing === null) {
      request.idempotencyClaim = held;
      return;
    }
    // A key claimed before the current key of the ring was made current was fingerprinted with an older key of it.
    if (existing.fingerprint !== fingerprint && !ring.keys.slice(1).some((older) => requestFingerprint(older, fingerprinted) === existing.fingerprint)) {
      throw new AppError('idempotency_key_reused', 'This Idempotency-Key was used with another request; use a new key for a new request.');
    }
    if (existing.state === 'done') return replay(reply, existing.statusCode ?? 200, openAnswer(vault, held, existing.responseBody ?? ''));
    const rebuild = request.routeOptions.config.replayFromResource;
    // A key released by its first request's 5xx answer is taken by one retry alone, which may carry the work on; it is
    // released again, or completed, with this retry's answer.
    const ended = existing.released && (await takeOverReleasedKey(db, held));
    if (ended) request.idempotencyClaim = held;
    const rebuilt = existing.resourceId !== null && rebuild ? await rebuild(platformId, existing.resourceId, { ended }) : null;
    if (rebuilt === null && ended) {
      // Not to be carried on yet: the key goes back to released, not to a kept 409.
      request.idempotencyClaim = null;
      await releases.release(held, { evenIfCommitted: false });
    }
    if (rebuilt === null) {
      throw new AppError('idempotency_key_in_use', 'A request with this Idempotency-Key is still running; retry when it has finished.');
    }
    const answer = { statusCode: rebuilt.statusCode, responseBody: JSON.stringify(rebuilt.body) };
    await completeFromResource(
      db,
      { platformId, key, resourceId: existing.resourceId! },
      { statusCode: answer.statusCode, responseBody: stored(request, held, answer.responseBody) },
    );
    return replay(reply, answer.statusCode, answer.responseBody);
  }

  // Never throws: a failure here would replace the answer with Fastify's own error body. A key left running is answered
  // from what its work committed, or released by PendingReleases once the database is back.
  async function complete(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
    const held = request.idempotencyClaim;
    if (held === null) return payload;
    request.idempotencyClaim = null;
    if (reply.statusCode >= 500 && request.failureOnRetry !== 'replay') {
      await releases.release(held, { evenIfCommitted: request.failureOnRetry === 'run_again' });
      return payload;
    }
    try {
      await completeKey(db, held, { statusCode: reply.statusCode, responseBody: stored(request, held, String(payload)) });
    } catch (error) {
      if (!availability.failed('idempotency', error, { message: 'could not keep the answer of an Idempotency-Key; a retry answers from what was committed' })) {
        request.log.error({ err: error }, 'could not keep the answer of an Idempotency-Key');
      }
    }
    return payload;
  }
}

/**
 * The keys whose 5xx answers could not release them (the database was down when the answer was sent), released again
 * every RELEASE_RETRY_MS and before any claim of this process, so that a retry never waits out a lease after the answer.
 */
class PendingReleases {
  readonly #db: Kysely<Schema>;
  readonly #availability: DatabaseAvailability;
  readonly #pending = new Map<string, { claim: Claim; evenIfCommitted: boolean }>();
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;

  constructor(db: Kysely<Schema>, availability: DatabaseAvailability) {
    this.#db = db;
    this.#availability = availability;
  }

  async release(claim: Claim, options: { evenIfCommitted: boolean }): Promise<void> {
    // During an outage the answer is not held back by a second wait for a connection (contract 17's 3 s): the key is
    // released by the next flush (a second from now, or before this process's next claim).
    if (!this.#availability.reachable) return this.#later(claim, options);
    try {
      await releaseKey(this.#db, claim, options);
    } catch (error) {
      this.#availability.failed('idempotency', error, { message: 'could not release an Idempotency-Key after a 5xx answer; will try again' });
      this.#later(claim, options);
    }
  }

  #later(claim: Claim, options: { evenIfCommitted: boolean }): void {
    if (this.#pending.size < MAX_UNRELEASED) this.#pending.set(`${claim.platformId}\u0000${claim.key}`, { claim, ...options });
    this.#timer ??= setInterval(() => void this.flush().catch(() => undefined), RELEASE_RETRY_MS).unref();
  }

  /**
   * Releases the pending keys; throws while the database is still down. A key whose release fails otherwise is given
   * up (it is freed after its lease, as after a crash) rather than tried for ever.
   */
  flush(): Promise<void> {
    if (this.#pending.size === 0) return Promise.resolve();
    this.#flushing ??= (async () => {
      try {
        for (const [id, { claim, evenIfCommitted }] of this.#pending) {
          try {
            await releaseKey(this.#db, claim, { evenIfCommitted });
          } catch (error) {
            if (isDatabaseUnavailable(error)) throw error;
          }
          this.#pending.delete(id);
        }
        clearInterval(this.#timer);
        this.#timer = undefined;
      } finally {
        this.#flushing = undefined;
      }
    })();
    return this.#flushing;
  }

  close(): void {
    clearInterval(this.#timer);
  }
}

function replay(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply
    .code(status)
    .header('idempotent-replayed', 'true')
    .type(status >= 400 ? PROBLEM_CONTENT_TYPE : 'application/json; charset=utf-8')
    .serializer((payload: unknown) => payload as string)
    .send(body);
}

function hooksOf<T>(hooks: T | T[] | undefined): T[] {
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
}
