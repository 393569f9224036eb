import type { IncomingMessage } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import FindMyWay, { type Config, type HTTPMethod, type HTTPVersion } from 'find-my-way';
import { AuthorityError } from '../authority/authority.ts';
import { AppError, authorityProblem } from '../errors.ts';
import type { DatabaseAvailability } from '../store/availability.ts';
import { sendProblem } from './problem.ts';

/** How long a client is asked to wait before retrying when the database is unavailable. */
export const DATABASE_RETRY_AFTER_SECONDS = 2;


/** How much of a body above the limit is read and thrown away, at most, before the 413 (see discardBody). */
const DISCARDED_AT_MOST = { bytes: 64 * 1024 * 1024, ms: 10_000 };

/**
 * Reads and throws away what is left of a request body, up to `bytes` or `ms`, whichever comes first. A connection
 * closed with the client's bytes still unread is reset, and a client still sending then loses the answer before it
 * reads it.
 */
function discardBody(body: IncomingMessage, atMost: { bytes: number; ms: number }): Promise<void> {
  return new Promise((resolve) => {
    let received = 0;
    const stop = (): void => {
      clearTimeout(timer);
      body.off('data', count).off('end', stop).off('close', stop).off('error', stop);
      resolve();
    };
    const count = (chunk: Buffer): void => {
      received += chunk.length;
      if (received > atMost.bytes) stop();
    };
    const timer = setTimeout(stop, atMost.ms);
    body.on('data', count).once('end', stop).once('close', stop).once('error', stop);
    body.resume();
  });
}

/**
 * The one error handler: every failure leaves as a problem document from the one error table. `routerOptions` are
 * the app's own, so that a path is found as the app's router finds it.
 */
export function registerErrorHandling(app: FastifyInstance, routerOptions: Config<HTTPVersion.V1>, availability: DatabaseAvailability): void {
  // Every route's methods by path, to tell a path that takes other methods (405) from one that does not exist (404).
  const routes = FindMyWay(routerOptions);
  const methods = new Set<HTTPMethod>();
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat() as HTTPMethod[]) {
      methods.add(method);
      routes.on(method, route.url, () => undefined);
    }
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof AppError) {
      request.failureOnRetry = error.onRetry;
      return sendProblem(request, reply, error.code, error.message, { errors: error.errors, errorCount: error.errorCount, headers: error.headers });
    }
    if (error instanceof AuthorityError) {
      const problem = authorityProblem(error);
      const logged = { failure: error.failure, authorityCode: error.authorityCode, httpStatus: error.httpStatus, profile: error.profile, reason: error.message };
      // Our side of the protocol is wrong: every call fails until an operator acts, so it is logged as an error.
      if (error.failure === 'misconfigured' || error.failure === 'ip_not_whitelisted') request.log.error(logged, 'the authority refused our side of the protocol');
      else request.log.warn(logged, 'authority call failed');
      return sendProblem(request, reply, problem.code, problem.detail);
    }
    switch (error.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        // Answered once the rest is read (bounded), then the connection is closed: see discardBody.
        reply.header('connection', 'close');
        return discardBody(request.raw, DISCARDED_AT_MOST).then(() => {
          sendProblem(request, reply, 'payload_too_large', 'The body is larger than the 5 MiB this API takes.');
        });
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return sendProblem(request, reply, 'unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.');
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return sendProblem(request, reply, 'validation_failed', 'The body is empty; send a JSON object.', {
          errors: [{ path: '', code: 'invalid_json', message: 'The body is empty.' }],
        });
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return sendProblem(request, reply, 'validation_failed', 'The body is not valid JSON.', {
          errors: [{ path: '', code: 'invalid_json', message: 'The body is not valid JSON.' }],
        });
    }
    if (error instanceof SyntaxError || (error.statusCode === 400 && error.code?.startsWith('FST_ERR_CTP'))) {
      return sendProblem(request, reply, 'validation_failed', 'The body is not valid JSON.', {
        errors: [{ path: '', code: 'invalid_json', message: 'The body is not valid JSON.' }],
      });
    }
    // Before the status checks: a driver's error may carry a statusCode of its own.
    if (availability.failed('api', error, { message: 'the database is unavailable; answered 503', fields: { reqId: request.id } })) {
      return sendDatabaseUnavailable(request, reply);
    }
    if (error.statusCode === 404) return sendProblem(request, reply, 'not_found', 'No such resource.');
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      return sendProblem(request, reply, 'validation_failed', 'The request could not be read.');
    }
    request.log.error({ err: error }, 'unhandled error');
    return sendProblem(request, reply, 'internal_error', 'Something went wrong on our side; the request id identifies it for support.');
  });

  // Runs without /api/v1's hooks, as for any unknown path, so a wrong method is answered before the API key is checked:
  // it is knowable without one, and tells no more than the OpenAPI document does.
  app.setNotFoundHandler((request, reply) => {
    const fullPath = request.url.split('?')[0] ?? '';
    const path = fullPath.slice(0, 200);
    const allowed = [...methods].filter((method) => routes.find(method, fullPath) !== null).sort();
    if (allowed.length === 0) return sendProblem(request, reply, 'not_found', `There is no ${request.method} ${path}.`);
    const allow = allowed.join(', ');
    return sendProblem(request, reply, 'method_not_allowed', `${request.method} is not allowed on ${path}; it takes ${allow}.`, {
      headers: { allow },
    });
  });
}

/** 503 database_unavailable with Retry-After: the answer to every request while the database cannot be reached. */
export function sendDatabaseUnavailable(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendProblem(request, reply, 'database_unavailable', 'The service cannot reach its database just now. Retry in a few seconds with the same Idempotency-Key: whatever this request had stored is then carried on or answered, never done twice.', {
    headers: { 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) },
  });
}
