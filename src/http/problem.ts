import type { FastifyReply, FastifyRequest } from 'fastify';
import { ERROR_TABLE, MAX_LISTED_ERRORS, type ErrorCode, type FieldError } from '../errors.ts';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

export type Problem = {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  requestId: string;
  errors?: FieldError[];
};

function problemType(code: ErrorCode): string {
  return `https://ebrc-gateway.dev/problems/${code}`;
}

/**
 * `errorCount` is how many field problems there are in all, when `errors` holds only the first of them; `errors` lists
 * at most MAX_LISTED_ERRORS, and the detail then says how many more there are.
 */
function buildProblem(request: FastifyRequest, code: ErrorCode, detail: string, errors?: FieldError[], errorCount = errors?.length ?? 0): Problem {
  const { status, title } = ERROR_TABLE[code];
  const listed = errors?.slice(0, MAX_LISTED_ERRORS);
  const unlisted = errorCount - (listed?.length ?? 0);
  return {
    type: problemType(code),
    title,
    status,
    detail: listed && unlisted > 0 ? `${detail} Only the first ${listed.length} are listed; ${unlisted} more are not.` : detail,
    code,
    requestId: request.id,
    ...(listed ? { errors: listed } : {}),
  };
}

/** Answers with an RFC 9457 problem document; the one way this service reports an error. */
export function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  code: ErrorCode,
  detail: string,
  extra: { errors?: FieldError[] | undefined; errorCount?: number | undefined; headers?: Record<string, string> | undefined } = {},
): FastifyReply {
  const problem = buildProblem(request, code, detail, extra.errors, extra.errorCount);
  if (extra.headers) reply.headers(extra.headers);
  return reply.code(problem.status).type(PROBLEM_CONTENT_TYPE).serializer(JSON.stringify).send(problem);
}
