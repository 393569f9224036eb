/** How the client retries: attempts after the first, and the backoff when the answer gives no Retry-After. */
export type RetryOptions = {
  /** Retries after the first attempt (2 by default; 0 never retries). */
  retries: number;
  /** The first backoff; doubled on each retry, with full jitter (250 ms by default). */
  baseDelayMs: number;
  /** The longest backoff (8 s by default). */
  maxDelayMs: number;
  /** A Retry-After longer than this is not waited for: the answer is returned (thrown) as it is (60 s by default). */
  maxRetryAfterMs: number;
};

export const DEFAULT_RETRY: RetryOptions = { retries: 2, baseDelayMs: 250, maxDelayMs: 8_000, maxRetryAfterMs: 60_000 };

/** Whether an answer with this status may succeed when sent again. */
export function retryableStatus(status: number): boolean {
  return status === 429 || (status >= 500 && status !== 501 && status !== 505);
}

/**
 * Whether a request may be sent again: anything but a POST, and a POST only with its Idempotency-Key (the service
 * then replays the first answer instead of acting twice). A POST whose key the caller removed is sent once.
 */
export function mayRetry(request: Request): boolean {
  return request.method !== 'POST' || (request.headers.get('idempotency-key') ?? '') !== '';
}

/** Retry-After in milliseconds from now (delay-seconds or an HTTP date), or undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

function backoffMs(attempt: number, options: RetryOptions): number {
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** attempt);
  return Math.round(Math.random() * ceiling);
}

function sleep(ms: number, signal: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A fetch that sends a request again on 429, 5xx and network errors, waiting as Retry-After says (else an exponential
 * backoff), at most `retries` times; never for a POST without an Idempotency-Key. Each attempt sends the same
 * headers, the key included, so the service recognises the retry.
 */
export function retryingFetch(fetchImpl: (request: Request) => Promise<Response>, options: RetryOptions): (request: Request) => Promise<Response> {
  return async (request) => {
    if (options.retries <= 0 || !mayRetry(request)) return fetchImpl(request);
    // An unread copy to send again: each attempt reads its own body.
    const original = request.clone();
    for (let attempt = 0; ; attempt++) {
      const current = attempt === 0 ? request : original.clone();
      const last = attempt >= options.retries;
      let response: Response;
      try {
        response = await fetchImpl(current);
      } catch (error) {
        if (last || request.signal.aborted) throw error;
        await sleep(backoffMs(attempt, options), request.signal);
        continue;
      }
      if (last || !retryableStatus(response.status)) return response;
      const told = retryAfterMs(response.headers.get('retry-after'));
      if (told !== undefined && told > options.maxRetryAfterMs) return response;
      await response.body?.cancel().catch(() => undefined);
      await sleep(told ?? backoffMs(attempt, options), request.signal);
    }
  };
}
