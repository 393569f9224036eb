import type { EbrcClient } from './client.ts';
import type { components } from './schema.d.ts';

/** A GenEBRC request's status as POST /api/v1/genebrc/status answers it. */
export type RequestStatus = components['schemas']['GenEbrcRequestStatus'];

/** The statuses a request never leaves. */
export const FINAL_STATUSES: readonly string[] = ['PROCESSED', 'PARTIALLY_PROCESSED', 'FAILED', 'ERRORED'];

export function isFinalStatus(status: string): boolean {
  return FINAL_STATUSES.includes(status);
}

/** The request was still not final when the wait ran out; `last` is the status last seen. */
export class WaitTimeoutError extends Error {
  override readonly name = 'WaitTimeoutError';
  readonly last: RequestStatus;
  constructor(last: RequestStatus, timeoutMs: number) {
    super(`request ${last.requestId} still ${last.status} after ${timeoutMs} ms`);
    this.last = last;
  }
}

export type WaitOptions = {
  /** Give up after this long (2 minutes by default). */
  timeoutMs?: number;
  /** Between two status calls (2 s by default). */
  intervalMs?: number;
  signal?: AbortSignal;
};

/**
 * Asks POST /api/v1/genebrc/status every `intervalMs` until the request is final (PROCESSED, PARTIALLY_PROCESSED,
 * FAILED, ERRORED) and returns that status, eBRC numbers included; throws WaitTimeoutError after `timeoutMs`.
 */
export async function waitForFinalStatus(
  client: EbrcClient,
  request: { platformCustomerId: string; requestId: string },
  options: WaitOptions = {},
): Promise<RequestStatus> {
  const timeoutMs = options.timeoutMs ?? 120_000;
  const intervalMs = options.intervalMs ?? 2_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    options.signal?.throwIfAborted();
    const { data } = await client.POST('/api/v1/genebrc/status', {
      body: { platformCustomerId: request.platformCustomerId, requestId: request.requestId },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const status = data as RequestStatus;
    if (isFinalStatus(status.status)) return status;
    if (Date.now() + intervalMs > deadline) throw new WaitTimeoutError(status, timeoutMs);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
