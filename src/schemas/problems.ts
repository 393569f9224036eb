import { Type, type Static } from 'typebox';
import { ERROR_TABLE, type ErrorCode } from '../errors.ts';
import { EXAMPLE_PLATFORM_ID, type Examples } from './common.ts';

export const FieldErrorSchema = Type.Object({
  path: Type.String({ description: 'JSON pointer to the field, e.g. /ebrcBulkGenDtos/3/irmDt' }),
  code: Type.String({ description: "A stable code; the authority's ERR code where it has one" }),
  message: Type.String(),
});

export const ProblemSchema = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.Unsafe<ErrorCode>({ type: 'string', enum: Object.keys(ERROR_TABLE) }),
    requestId: Type.String(),
    errors: Type.Optional(Type.Array(FieldErrorSchema)),
  },
  { $id: 'Problem', description: 'RFC 9457 problem details (application/problem+json)' },
);

export const ProblemRef = Type.Unsafe<Static<typeof ProblemSchema>>(Type.Ref('Problem'));

const STATUS_CODES_BY_STATUS = Object.entries(ERROR_TABLE).reduce<Record<number, string[]>>((byStatus, [code, { status }]) => {
  (byStatus[status] ??= []).push(code);
  return byStatus;
}, {});

/** What a problem of this code looks like, for the document's examples. */
export function problemExample(code: ErrorCode, detail: string, errors?: Static<typeof FieldErrorSchema>[]) {
  const { status, title } = ERROR_TABLE[code];
  return {
    type: `https://ebrc-gateway.dev/problems/${code}`,
    title,
    status,
    detail,
    code,
    requestId: 'b3f1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
    ...(errors ? { errors } : {}),
  };
}

/** A plausible detail for each status's example (its first code in the error table otherwise). */
const PROBLEM_EXAMPLES: Record<number, ReturnType<typeof problemExample>> = {
  400: problemExample('validation_failed', 'The request has an invalid field: /email must match format "email".', [
    { path: '/email', code: 'format', message: 'must match format "email"' },
  ]),
  401: problemExample('api_key_missing', 'Send your API key in the x-api-key header.'),
  404: problemExample('not_found', 'Platform customer was not found.'),
  429: problemExample('rate_limited', 'Too many requests for this API key; retry after the time in Retry-After.'),
  500: problemExample('internal_error', 'Something went wrong on our side; the request id identifies it for support.'),
};

function exampleProblemOf(status: number) {
  const known = PROBLEM_EXAMPLES[status];
  if (known) return known;
  const code = (STATUS_CODES_BY_STATUS[status] ?? [])[0] as ErrorCode | undefined;
  return code === undefined ? undefined : problemExample(code, `${ERROR_TABLE[code].title}.`);
}

/** The standard error responses of an authenticated operation, plus the ones it names, as problem documents. */
export function problems(...statuses: number[]) {
  const all = [...new Set([400, 401, 429, 500, 503, ...statuses])].sort();
  return Object.fromEntries(
    all.map((status) => [
      status,
      {
        // The admin token's codes are the admin API's alone (adminProblems).
        description: `Problem: ${(STATUS_CODES_BY_STATUS[status] ?? []).filter((code) => !code.startsWith('admin_')).map((code) => `\`${code}\``).join(', ')}`,
        content: { 'application/problem+json': { schema: ProblemRef, example: exampleProblemOf(status) } },
      },
    ]),
  ) as unknown as Record<number, typeof ProblemRef>;
}

/**
 * The error answers of an admin operation: 400, 401 (the admin token), 404 (an unknown id, or the admin API off) and
 * 500, plus the statuses it names. `named` gives a status named examples instead of the standard one, so that a request
 * example can be answered by its namesake (test/http/openapi-examples.test.ts).
 */
export function adminProblems(statuses: number[] = [], named: Record<number, Examples> = {}) {
  const all = [...new Set([400, 401, 404, 500, 503, ...statuses])].sort();
  const standard: Record<number, ReturnType<typeof problemExample>> = {
    401: problemExample('admin_token_missing', 'Send the admin token as Authorization: Bearer <token>.'),
    404: problemExample('not_found', `Platform ${EXAMPLE_PLATFORM_ID} was not found.`),
  };
  return Object.fromEntries(
    all.map((status) => {
      const codes = (STATUS_CODES_BY_STATUS[status] ?? []).filter((code) => status !== 401 || code.startsWith('admin_'));
      const example = standard[status] ?? exampleProblemOf(status);
      const media = named[status] ? { examples: named[status] } : { example };
      return [status, { description: `Problem: ${codes.map((code) => `\`${code}\``).join(', ')}`, content: { 'application/problem+json': { schema: ProblemRef, ...media } } }];
    }),
  ) as unknown as Record<number, typeof ProblemRef>;
}
