import createOpenApiClient from 'openapi-fetch';
import type { Client, FetchOptions, FetchResponse, HeadersOptions } from 'openapi-fetch';
import type { HttpMethod, MediaType, PathsWithMethod, RequiredKeysOf } from 'openapi-typescript-helpers';
import { EbrcApiError } from './errors.ts';
import { DEFAULT_RETRY, retryingFetch, type RetryOptions } from './retry.ts';
import type { paths } from './schema.d.ts';

export type ClientOptions = {
  /** Where the service is, e.g. http://localhost:3000 (no /api/v1: the paths carry it). */
  baseUrl: string;
  /** The platform's API key, sent as x-api-key. */
  apiKey: string;
  /** Retries after the first attempt (a number), or the whole policy; 2 retries by default, 0 for none. */
  retries?: number | Partial<RetryOptions>;
  /** The fetch to use (globalThis.fetch by default): for tests, proxies, instrumentation. */
  fetch?: (request: Request) => Promise<Response>;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
};

type MaybeOptionalInit<PathItem, Method extends keyof PathItem> =
  RequiredKeysOf<FetchOptions<PathItem[Method]>> extends never ? FetchOptions<PathItem[Method]> | undefined : FetchOptions<PathItem[Method]>;
type InitParam<Init> = RequiredKeysOf<Init> extends never ? [(Init & { [key: string]: unknown })?] : [Init & { [key: string]: unknown }];

/** A call's success: problems are thrown (EbrcApiError), so `data` is the typed answer. */
export type Success<Response> = Exclude<Response, { error: unknown }>;

/** One HTTP method of the API, typed by path from the OpenAPI document. */
export type Method<M extends HttpMethod> = <Path extends PathsWithMethod<paths, M>, Init extends MaybeOptionalInit<paths[Path], M>>(
  url: Path,
  ...init: InitParam<Init>
) => Promise<Success<FetchResponse<paths[Path][M] & Record<string | number, any>, Init, MediaType>>>;

export type EbrcClient = {
  GET: Method<'get'>;
  POST: Method<'post'>;
  PUT: Method<'put'>;
  PATCH: Method<'patch'>;
  DELETE: Method<'delete'>;
  /** The underlying openapi-fetch client (no automatic key, problems not thrown; retries still apply). */
  raw: Client<paths>;
};

/** Whether the caller's headers name an Idempotency-Key (a value, or null to send none). */
function namesIdempotencyKey(headers: HeadersOptions | undefined): boolean {
  if (headers === undefined) return false;
  if (headers instanceof Headers) return headers.has('idempotency-key');
  if (Array.isArray(headers)) return headers.some(([name]) => name?.toLowerCase() === 'idempotency-key');
  return Object.keys(headers).some((name) => name.toLowerCase() === 'idempotency-key');
}

/** The init with an Idempotency-Key added, unless the caller gave one or removed it (`'Idempotency-Key': null`). */
function withIdempotencyKey(init: FetchOptions<unknown> | undefined): FetchOptions<unknown> {
  const options = init ?? {};
  if (namesIdempotencyKey(options.headers)) return options;
  const key = crypto.randomUUID();
  const headers = options.headers;
  if (headers instanceof Headers) {
    const copy = new Headers(headers);
    copy.set('Idempotency-Key', key);
    return { ...options, headers: copy };
  }
  if (Array.isArray(headers)) return { ...options, headers: [...headers, ['Idempotency-Key', key]] };
  return { ...options, headers: { ...headers, 'Idempotency-Key': key } };
}

/**
 * A client for the ebrc-gateway API. Every operation is typed by its path (`client.GET('/api/v1/events')`); every
 * POST carries an Idempotency-Key (a new UUID unless you give one, or pass `'Idempotency-Key': null` for none);
 * 429, 5xx and network failures are retried as Retry-After says, a POST only with its key; answers that are not a
 * success are thrown as EbrcApiError.
 */
export function createClient(options: ClientOptions): EbrcClient {
  const retry: RetryOptions = typeof options.retries === 'number'
    ? { ...DEFAULT_RETRY, retries: options.retries }
    : { ...DEFAULT_RETRY, ...options.retries };
  const baseFetch = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const raw = createOpenApiClient<paths>({
    baseUrl: options.baseUrl,
    headers: { ...options.headers, 'x-api-key': options.apiKey },
    fetch: retryingFetch(baseFetch, retry),
  });
  const request = raw.request as unknown as (method: string, url: string, init?: FetchOptions<unknown>) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
  const call = (method: HttpMethod) => async (url: string, init?: FetchOptions<unknown>) => {
    const result = await request(method, url, method === 'post' ? withIdempotencyKey(init) : init);
    if (!result.response.ok) throw new EbrcApiError(result.response, result.error);
    return result;
  };
  return {
    GET: call('get') as unknown as Method<'get'>,
    POST: call('post') as unknown as Method<'post'>,
    PUT: call('put') as unknown as Method<'put'>,
    PATCH: call('patch') as unknown as Method<'patch'>,
    DELETE: call('delete') as unknown as Method<'delete'>,
    raw,
  };
}
