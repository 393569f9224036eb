import type { FastifyError, FastifyInstance } from 'fastify';
import { AuthorityError } from '../authority/authority.ts';
import { AppError } from '../errors.ts';
import { sendProblem } from './problem.ts';
import { toFieldErrors } from './validation.ts';

const AUTHORITY_FAILURES = {
  credentials_invalid: ['authority_credentials_invalid', 'The authority did not accept these credentials.'],
  credentials_expired: ['authority_credentials_invalid', 'These credentials have expired at the authority; the exporter must renew them.'],
  unavailable: ['authority_unavailable', 'The authority is unavailable; try again later.'],
  timeout: ['authority_timeout', 'The authority did not answer in time; try again later.'],
} as const;

/** The one error handler: every failure leaves as a problem document from the one error table. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof AppError) {
      if (error.replayable) request.replayableFailure = true;
      return sendProblem(request, reply, error.code, error.message, { errors: error.errors, headers: error.headers });
    }
    if (error instanceof AuthorityError) {
      const [code, detail] = AUTHORITY_FAILURES[error.failure];
      request.log.warn({ failure: error.failure }, 'authority call failed');
      return sendProblem(request, reply, code, detail);
    }
    if (error.validation) {
      const errors = toFieldErrors(error.validation as never, error.validationContext ?? 'body');
      const count = errors.length;
      return sendProblem(
        request,
        reply,
        'validation_failed',
        count === 1 ? `The request has an invalid field: ${errors[0]!.message}` : `The request has ${count} invalid fields; see errors.`,
        { errors },
      );
    }
    switch (error.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return sendProblem(request, reply, 'payload_too_large', 'The body is larger than the 5 MiB this API takes.');
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
    if (error.statusCode === 404) return sendProblem(request, reply, 'not_found', 'No such resource.');
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      return sendProblem(request, reply, 'validation_failed', 'The request could not be read.');
    }
    request.log.error({ err: error }, 'unhandled error');
    return sendProblem(request, reply, 'internal_error', 'Something went wrong on our side; the request id identifies it for support.');
  });

  app.setNotFoundHandler((request, reply) =>
    sendProblem(request, reply, 'not_found', `There is no ${request.method} ${(request.url.split('?')[0] ?? '').slice(0, 200)}.`),
  );
}
