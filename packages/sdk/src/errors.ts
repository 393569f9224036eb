import type { components } from './schema.d.ts';

/** An RFC 9457 problem document as the service answers it (application/problem+json). */
export type Problem = components['schemas']['Problem'];
/** The service's stable error codes (see docs/errors.md). */
export type ProblemCode = Problem['code'];
/** One field-level error of a problem (`errors[]`). */
export type ProblemFieldError = NonNullable<Problem['errors']>[number];

/**
 * Every answer that is not a success, thrown: `code`, `status`, `requestId`, `errors` and `detail` come from the
 * problem document. An answer that is not a problem (a proxy's 502 page, say) has code `unexpected_response`.
 */
export class EbrcApiError extends Error {
  override readonly name = 'EbrcApiError';
  readonly status: number;
  readonly code: ProblemCode | 'unexpected_response';
  /** The service's request id (the answer's X-Request-Id): quote it when asking for support. */
  readonly requestId: string | undefined;
  readonly errors: ProblemFieldError[];
  readonly detail: string;
  readonly title: string;
  readonly type: string;
  /** The problem document, when the answer was one. */
  readonly problem: Problem | undefined;
  readonly response: Response;

  constructor(response: Response, body: unknown) {
    const problem = isProblem(body) ? body : undefined;
    const detail = problem?.detail ?? (typeof body === 'string' && body ? body.slice(0, 500) : `HTTP ${response.status}`);
    super(`${response.status} ${problem?.code ?? 'unexpected_response'}: ${detail}`);
    this.status = response.status;
    this.code = problem?.code ?? 'unexpected_response';
    this.requestId = problem?.requestId ?? response.headers.get('x-request-id') ?? undefined;
    this.errors = problem?.errors ?? [];
    this.detail = detail;
    this.title = problem?.title ?? response.statusText;
    this.type = problem?.type ?? 'about:blank';
    this.problem = problem;
    this.response = response;
  }
}

function isProblem(body: unknown): body is Problem {
  if (typeof body !== 'object' || body === null) return false;
  const candidate = body as Record<string, unknown>;
  return typeof candidate.code === 'string' && typeof candidate.status === 'number';
}
