import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { AppError } from '../../errors.ts';
import { claimKey, completeKey, releaseKey } from '../../store/idempotency.ts';
import type { Schema } from '../../store/schema.ts';
import { PROBLEM_CONTENT_TYPE } from '../problem.ts';

declare module 'fastify' {
  interface FastifyRequest {
    idempotencyKey: string | null;
    /** Set for a 5xx answer that must be replayed all the same (see AppError.replayable). */
    replayableFailure: boolean;
  }
}

const MAX_KEY_LENGTH = 255;
const KEEP_HOURS = 24;
const ABANDON_AFTER_SECONDS = 120;

function fingerprint(request: FastifyRequest): string {
  return createHash('sha256')
    .update(`${request.method} ${request.url}\n${JSON.stringify(request.body ?? null)}`)
    .digest('hex');
}

/**
 * Idempotency-Key on every POST (contract 5): the first answer is kept for 24 h and replayed for a
 * retry with the same key and body. Server failures (5xx) are not kept, so a retry runs again,
 * unless the failure is itself the outcome (a push held for reconciliation).
 */
export function registerIdempotency(app: FastifyInstance, db: Kysely<Schema>): void {
  app.decorateRequest('idempotencyKey', null);
  app.decorateRequest('replayableFailure', false);

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
    const print = fingerprint(request);
    const existing = await claimKey(db, { platformId, key, fingerprint: print, keepHours: KEEP_HOURS, abandonAfterSeconds: ABANDON_AFTER_SECONDS });
    if (existing === null) {
      request.idempotencyKey = key;
      return;
    }
    if (existing.fingerprint !== print) {
      throw new AppError('idempotency_key_reused', 'This Idempotency-Key was used with another request; use a new key for a new request.');
    }
    if (existing.state === 'running') {
      throw new AppError('idempotency_key_in_use', 'A request with this Idempotency-Key is still running; retry when it has finished.');
    }
    const status = existing.statusCode ?? 200;
    return reply
      .code(status)
      .header('idempotent-replayed', 'true')
      .type(status >= 400 ? PROBLEM_CONTENT_TYPE : 'application/json; charset=utf-8')
      .serializer((payload: unknown) => payload as string)
      .send(existing.responseBody ?? '');
  }

  async function complete(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
    const key = request.idempotencyKey;
    if (key === null) return payload;
    request.idempotencyKey = null;
    const platformId = request.principal.platformId;
    if (reply.statusCode >= 500 && !request.replayableFailure) {
      await releaseKey(db, platformId, key);
    } else {
      await completeKey(db, { platformId, key, statusCode: reply.statusCode, responseBody: String(payload) });
    }
    return payload;
  }
}

function hooksOf<T>(hooks: T | T[] | undefined): T[] {
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
}
