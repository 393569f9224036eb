/**
 * Every error code the API answers with (contract 1), its HTTP status and title. The one table:
 * the error handler renders from it, the OpenAPI document and docs/errors.md list it.
 */
export const ERROR_TABLE = {
  validation_failed: { status: 400, title: 'The request is not valid' },
  api_key_missing: { status: 401, title: 'API key missing' },
  api_key_invalid: { status: 401, title: 'API key not valid' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  customer_email_taken: { status: 409, title: 'Email already used by another customer' },
  customer_not_verified: { status: 409, title: 'Customer not verified with the authority' },
  idempotency_key_in_use: { status: 409, title: 'Idempotency key in use' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  authority_credentials_invalid: { status: 422, title: 'Authority credentials not valid' },
  idempotency_key_reused: { status: 422, title: 'Idempotency key reused with another request' },
  rate_limited: { status: 429, title: 'Too many requests' },
  internal_error: { status: 500, title: 'Internal error' },
  authority_unavailable: { status: 502, title: 'Authority unavailable' },
  authority_timeout: { status: 504, title: 'Authority timed out' },
} as const;

export type ErrorCode = keyof typeof ERROR_TABLE;

/** A problem with one field: a JSON pointer into the request, a stable code and a sentence. */
export type FieldError = { path: string; code: string; message: string };

/** An error that the API answers as an RFC 9457 problem with the given code. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly errors: FieldError[] | undefined;
  /** How many field problems there are in all, when `errors` holds only the first of them. */
  readonly errorCount: number | undefined;
  readonly headers: Record<string, string> | undefined;
  /**
   * What a retry with the same Idempotency-Key gets after this 5xx: `replay`, this answer again (it is the request's
   * outcome, such as a push held for reconciliation); `run_again`, a fresh run (what the request committed was undone).
   * Unset: a fresh run only if the request committed nothing.
   */
  readonly onRetry: 'replay' | 'run_again' | undefined;
  constructor(
    code: ErrorCode,
    detail: string,
    extra: { errors?: FieldError[]; errorCount?: number; headers?: Record<string, string>; onRetry?: 'replay' | 'run_again' } = {},
  ) {
    super(detail);
    this.name = 'AppError';
    this.code = code;
    this.errors = extra.errors;
    this.errorCount = extra.errorCount;
    this.headers = extra.headers;
    this.onRetry = extra.onRetry;
  }
}

export function notFound(what: string): AppError {
  return new AppError('not_found', `${what} was not found.`);
}
