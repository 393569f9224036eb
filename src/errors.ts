import type { AuthorityError, AuthorityFailure } from './authority/authority.ts';

/** The most field problems one answer lists, so that a 400 stays small whatever the request. */
export const MAX_LISTED_ERRORS = 100;

/**
 * Every error code the API answers with (contract 1): its HTTP status and title, what it means and what to do. The one
 * table: the error handler renders from it, the OpenAPI document lists it, and docs/errors.md is generated from it
 * (`npm run docs:errors`).
 */
export const ERROR_TABLE = {
  validation_failed: {
    status: 400,
    title: 'The request is not valid',
    meaning: 'A field has the wrong type, is missing, unknown or out of range, is not in its format (dates YYYY-MM-DD, ids UUIDs, amounts JSON numbers with at most two decimals), fromDate is after toDate, or the body is not valid UTF-8 or holds a NUL character or an unpaired surrogate; a push line that breaks one of the authority\'s rules is named by its ERR code.',
    action: 'Read `errors`: each entry names the field by its JSON pointer (`path`), a stable `code` and a sentence saying what is expected. Fix those fields and send the request again; sending it unchanged fails the same way.',
  },
  webhook_url_not_allowed: {
    status: 400,
    title: 'Webhook URL not allowed',
    meaning: 'The webhook URL is not https:// (or http:// to a public host), or its host is or resolves to a loopback, private, link-local or internal address; `detail` says which.',
    action: 'Give a URL on a public host, over https. For a receiver on your own machine or network in development, start the service with WEBHOOK_ALLOW_PRIVATE_URLS=true.',
  },
  api_key_missing: {
    status: 401,
    title: 'API key missing',
    meaning: 'The request has no `x-api-key` header.',
    action: 'Send the platform\'s API key in the `x-api-key` header. An operator creates one with `npm run cli -- create-platform --name <name>` or `issue-key`.',
  },
  api_key_invalid: {
    status: 401,
    title: 'API key not valid',
    meaning: 'The `x-api-key` is not a key this service knows, or it was revoked.',
    action: 'Check that the whole key was sent (it is shown once, when issued). A revoked key stays refused: ask the operator for a new one (`npm run cli -- issue-key --platform <platformId>`).',
  },
  admin_token_missing: {
    status: 401,
    title: 'Admin token missing',
    meaning: 'A request to the admin API (`/admin/v1`) has no `Authorization: Bearer <token>` header.',
    action: 'Send the admin token as `Authorization: Bearer <token>`: ADMIN_TOKEN, or on the embedded default the token in the file the service names at start (`DATA_DIR/admin-token`).',
  },
  admin_token_invalid: {
    status: 401,
    title: 'Admin token not valid',
    meaning: 'The bearer token sent to the admin API (`/admin/v1`) is not the service\'s admin token.',
    action: 'Send the whole token: the service\'s ADMIN_TOKEN, or on the embedded default the content of `DATA_DIR/admin-token` (the service names the file at start).',
  },
  forbidden_for_role: {
    status: 403,
    title: 'Not allowed for your role',
    meaning: "The signed-in console user's role (owner, operator or viewer) is below what this page or form needs; `detail` names the role it needs.",
    action: "Ask an owner of your platform to give you the role it needs (the console's Users page), or to do it for you.",
  },
  not_found: {
    status: 404,
    title: 'Not found',
    meaning: 'No such path, or no such id for this platform: customers, requests, webhook endpoints and events of another platform are not found either.',
    action: 'Check the path and the id, and that the API key is the platform\'s that created the object.',
  },
  method_not_allowed: {
    status: 405,
    title: 'Method not allowed',
    meaning: 'The path exists but does not take this method (for example GET on /api/v1/genebrc/push-irm).',
    action: 'Use one of the methods the `Allow` header lists.',
  },
  customer_email_taken: {
    status: 409,
    title: 'Email already used by another customer',
    meaning: 'Another of this platform\'s customers has this email address.',
    action: 'Use that customer (find it with `GET /api/v1/platform-customers?search=<email>`) or give another email address.',
  },
  reconciliation_running: {
    status: 409,
    title: 'A reconciliation is running',
    meaning: 'A reconciliation of this customer is under way (on request or on the schedule); one runs at a time.',
    action: 'Follow it with `GET /api/v1/platform-customers/{id}/reconciliations`; ask again once it has finished.',
  },
  customer_not_verified: {
    status: 409,
    title: 'Customer not verified with the authority',
    meaning: 'The operation needs the customer\'s authority credentials checked first (IRMs, pushes and eBRCs are read at the authority as that customer).',
    action: 'Call `POST /api/v1/platform-customers/{id}/check-authority-credentials` with the customer\'s authority username and password, then retry.',
  },
  authority_api_credentials_missing: {
    status: 409,
    title: 'Authority API credential set missing',
    meaning: 'With AUTHORITY_MODE=dgft, a credentials check needs the customer\'s API credential set (client id, secret, keys) stored first.',
    action: 'Store the set with `PUT /api/v1/platform-customers/{id}/authority-api-credentials`, then check the credentials again.',
  },
  api_key_already_revoked: {
    status: 409,
    title: 'API key already revoked',
    meaning: 'The API key was revoked before (`detail` says when); revoking it again changes nothing.',
    action: 'Nothing to do: the key stays refused. Issue another with `POST /admin/v1/platforms/{id}/api-keys` if the platform needs one.',
  },
  console_user_email_taken: {
    status: 409,
    title: 'E-mail already used by a console user',
    meaning: 'A console user (of any platform) has this e-mail address, ignoring case: it is how users sign in.',
    action: 'Use that user (`GET /admin/v1/platforms/{id}/users`; enable it with `PATCH /admin/v1/users/{id}` if disabled) or give another e-mail address.',
  },
  idempotency_key_in_use: {
    status: 409,
    title: 'Idempotency key in use',
    meaning: 'A request with this Idempotency-Key is still running.',
    action: 'Wait a moment and retry with the same key and body: you then get that request\'s answer.',
  },
  webhook_endpoint_disabled: {
    status: 409,
    title: 'Webhook endpoint disabled',
    meaning: 'A test event or a redelivery was asked of a disabled webhook endpoint.',
    action: 'Enable the endpoint first (`PATCH /api/v1/webhook-endpoints/{id}` with `{"status": "enabled"}`), then retry.',
  },
  payload_too_large: {
    status: 413,
    title: 'Payload too large',
    meaning: 'The body is larger than 5 MiB (a 999-line push is far smaller); the connection is closed after the answer.',
    action: 'Send a smaller body: split a large push into pushes of at most 999 lines.',
  },
  unsupported_media_type: {
    status: 415,
    title: 'Unsupported media type',
    meaning: 'The body is not JSON.',
    action: 'Send JSON with `Content-Type: application/json`.',
  },
  authority_credentials_invalid: {
    status: 422,
    title: 'Authority credentials not valid',
    meaning: 'The authority refused the username and password, or they are another exporter\'s (another IEC) than the customer\'s.',
    action: 'Check the customer\'s authority username and password (and that they belong to the customer\'s IEC), then check them again.',
  },
  idempotency_key_reused: {
    status: 422,
    title: 'Idempotency key reused with another request',
    meaning: 'This Idempotency-Key was used in the last 24 hours with another method, path or body.',
    action: 'Use a new Idempotency-Key for a new request; reuse a key only to retry the very same request.',
  },
  rate_limited: {
    status: 429,
    title: 'Too many requests',
    meaning: 'This API key sent more requests than its rate allows (see the `RateLimit-Policy` header).',
    action: 'Wait for the seconds the `Retry-After` header gives, then retry; spread requests out.',
  },
  internal_error: {
    status: 500,
    title: 'Internal error',
    meaning: 'Something failed inside the service; nothing internal is shown.',
    action: 'Retry later (with the same Idempotency-Key for a POST). If it persists, give the operator the `requestId`: it finds the failure in the logs.',
  },
  database_unavailable: {
    status: 503,
    title: 'Database unavailable',
    meaning: 'The service cannot reach its database just now (a restart, a failover, an outage, or on the embedded database a full disk). Nothing of this request was stored half-way.',
    action: 'Retry after the seconds the `Retry-After` header gives (with the same Idempotency-Key for a POST: a push that reached the authority is answered with its acknowledgement, never sent twice).',
  },
  authority_unavailable: {
    status: 502,
    title: 'Authority unavailable',
    meaning: 'The authority is down: it answered 5xx or 429, or could not be reached, until the deadline.',
    action: 'Retry later with the same Idempotency-Key; nothing was done twice. A push already accepted carries on by itself.',
  },
  authority_misconfigured: {
    status: 502,
    title: "This service's connection to the authority is misconfigured",
    meaning: 'The authority could not read this service\'s side of the protocol (its ERR02-ERR06: envelope profile, keys, URLs), or its answer failed its signature check; logged as an error.',
    action: 'Nothing to change in the request: the operator must fix the authority settings (`detail` names the profile), then retry.',
  },
  authority_ip_not_whitelisted: {
    status: 502,
    title: "This service's address is not whitelisted at the authority",
    meaning: 'The authority answered 403: this service\'s outgoing address is not on its whitelist.',
    action: 'The operator must have the address (AUTHORITY_EGRESS_IP, named in `detail` when set) whitelisted at the authority; then retry.',
  },
  shutting_down: {
    status: 503,
    title: 'Shutting down',
    meaning: 'The process that received the request is stopping (a deploy or a restart): it finishes the requests it had already taken and takes no new one. Nothing of this request was done.',
    action: 'Retry after the seconds the `Retry-After` header gives (with the same Idempotency-Key for a POST): another process, or this one once restarted, answers.',
  },
  authority_timeout: {
    status: 504,
    title: 'Authority timed out',
    meaning: 'The authority did not answer within AUTHORITY_TIMEOUT_MS.',
    action: 'Retry later with the same Idempotency-Key; for a push, read its status first: it may have been received.',
  },
} as const satisfies Record<string, { status: number; title: string; meaning: string; action: string }>;

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
