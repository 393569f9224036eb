import type { FastifyReply, FastifyRequest } from 'fastify';
import { ERROR_TABLE, type ErrorCode, type FieldError } from '../errors.ts';

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

export function problemType(code: ErrorCode): string {
  return `https://ebrc-gateway.dev/problems/${code}`;
}

export function buildProblem(request: FastifyRequest, code: ErrorCode, detail: string, errors?: FieldError[]): Problem {
  const { status, title } = ERROR_TABLE[code];
  return { type: problemType(code), title, status, detail, code, requestId: request.id, ...(errors ? { errors } : {}) };
}

/** Answers with an RFC 9457 problem document; the one way this service reports an error. */
export function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  code: ErrorCode,
  detail: string,
  extra: { errors?: FieldError[] | undefined; headers?: Record<string, string> | undefined } = {},
): FastifyReply {
  const problem = buildProblem(request, code, detail, extra.errors);
  if (extra.headers) reply.headers(extra.headers);
  return reply.code(problem.status).type(PROBLEM_CONTENT_TYPE).serializer(JSON.stringify).send(problem);
}
