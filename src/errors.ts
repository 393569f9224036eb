import type { AuthorityError, AuthorityFailure } from './authority/authority.ts';

/**
 * Every error code the API answers with (contract 1), its HTTP status and title. The one table:
 * the error handler renders from it, the OpenAPI document and docs/errors.md list it.
 */
export const ERROR_TABLE = {
  validation_failed: { status: 400, title: 'The request is not valid' },
  webhook_url_not_allowed: { status: 400, title: 'Webhook URL not allowed' },
  api_key_missing: { status: 401, title: 'API key missing' },
  api_key_invalid: { status: 401, title: 'API key not valid' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  customer_email_taken: { status: 409, title: 'Email already used by another customer' },
  customer_not_verified: { status: 409, title: 'Customer not verified with the authority' },
  authority_api_credentials_missing: { status: 409, title: 'Authority API credential set missing' },
  idempotency_key_in_use: { status: 409, title: 'Idempotency key in use' },
  webhook_endpoint_disabled: { status: 409, title: 'Webhook endpoint disabled' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  authority_credentials_invalid: { status: 422, title: 'Authority credentials not valid' },
  idempotency_key_reused: { status: 422, title: 'Idempotency key reused with another request' },
  rate_limited: { status: 429, title: 'Too many requests' },
  internal_error: { status: 500, title: 'Internal error' },
  authority_unavailable: { status: 502, title: 'Authority unavailable' },
  authority_misconfigured: { status: 502, title: "This service's connection to the authority is misconfigured" },
  authority_ip_not_whitelisted: { status: 502, title: "This service's address is not whitelisted at the authority" },
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

/**
 * How each authority failure is answered: its code in ERROR_TABLE, and what to do about it. The rows of the one
 * error table that the authority's failures map to, kept beside it.
 */
const AUTHORITY_FAILURE_PROBLEMS: Readonly<Record<AuthorityFailure, { code: ErrorCode; detail: (error: AuthorityError) => string }>> = {
  credentials_invalid: { code: 'authority_credentials_invalid', detail: () => 'The authority did not accept these credentials.' },
  credentials_expired: {
    code: 'authority_credentials_invalid',
    detail: () => 'These credentials have expired at the authority; the exporter must renew them.',
  },
  ip_not_whitelisted: {
    code: 'authority_ip_not_whitelisted',
    detail: (error) =>
      error.egressIp === null
        ? "The authority refused this service's address (HTTP 403): the address it calls from must be whitelisted at the authority (set AUTHORITY_EGRESS_IP to have it named here)."
        : `The authority refused this service's address (HTTP 403): whitelist ${error.egressIp} at the authority (API Consumer Settings > Add IP).`,
  },
  misconfigured: {
    code: 'authority_misconfigured',
    detail: (error) =>
      `The authority could not read our side of the protocol${error.authorityCode === null ? '' : ` (${error.authorityCode})`}` +
      `${error.profile === null ? '' : ` with envelope profile ${error.profile}`}: an operator must check the credential set, its envelope profile and the authority's URLs.`,
  },
  unavailable: { code: 'authority_unavailable', detail: () => 'The authority is unavailable; try again later.' },
  timeout: { code: 'authority_timeout', detail: () => 'The authority did not answer in time; try again later.' },
};

/** The problem an authority failure is answered with: its code in the table, and what to do about it. */
export function authorityProblem(error: AuthorityError): { code: ErrorCode; detail: string } {
  const problem = AUTHORITY_FAILURE_PROBLEMS[error.failure];
  return { code: problem.code, detail: problem.detail(error) };
}
