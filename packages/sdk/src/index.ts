/**
 * @ebrc-gateway/sdk: a typed client for the ebrc-gateway API.
 * Types: src/schema.d.ts, generated from openapi.json by openapi-typescript (npm run sdk:generate at the root).
 */
export { createClient, type ClientOptions, type EbrcClient, type Method, type Success } from './client.ts';
export { EbrcApiError, type Problem, type ProblemCode, type ProblemFieldError } from './errors.ts';
export { DEFAULT_RETRY, retryAfterMs, type RetryOptions } from './retry.ts';
export {
  listItems,
  listIrms,
  listRequests,
  nextLink,
  type Irm,
  type IrmFilters,
  type ItemOf,
  type ItemsListParams,
  type ItemsListPath,
  type PageOptions,
  type RequestFilters,
  type RequestRecord,
} from './pagination.ts';
export { verifyWebhook, WebhookVerificationError, type VerifyOptions, type WebhookEvent, type WebhookHeaders, type WebhookVerificationReason } from './webhooks.ts';
export { FINAL_STATUSES, isFinalStatus, waitForFinalStatus, WaitTimeoutError, type RequestStatus, type WaitOptions } from './wait.ts';
export type { components, paths, webhooks } from './schema.d.ts';
