/**
 * One POST of JSON to the authority, and the retry loop around it: 429, 5xx, a failed connection and an attempt that
 * times out are tried again with backoff (or after Retry-After) until the call's deadline; everything else is final.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { OperationName } from '../protocol/messages.ts';
import { WireFailure } from './wire-failure.ts';

export type RetryPolicy = {
  /** The whole call, every attempt and pause included. */
  deadlineMs: number;
  /** One HTTP exchange. */
  attemptTimeoutMs: number;
  /** The pause before the first retry; it doubles for each later one, up to maxBackoffMs. */
  firstBackoffMs: number;
  maxBackoffMs: number;
};

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  deadlineMs: 30_000,
  attemptTimeoutMs: 10_000,
  firstBackoffMs: 250,
  maxBackoffMs: 4_000,
};

export type HttpAnswer = {
  status: number;
  /** The parsed JSON body, or undefined when the body is not JSON. */
  body: unknown;
  /** Milliseconds the authority asked us to wait (Retry-After), if it did. */
  retryAfterMs: number | null;
};

/** A failure that another attempt may not meet. */
export class TransientFailure extends Error {
  readonly reason: 'unavailable' | 'timeout';
  readonly retryAfterMs: number | null;
  constructor(reason: 'unavailable' | 'timeout', message: string, retryAfterMs: number | null = null) {
    super(message);
    this.name = 'TransientFailure';
    this.reason = reason;
    this.retryAfterMs = retryAfterMs;
  }
}

/** The deadline of one call to an operation: its signal aborts when the deadline passes or the caller gives up. */
export type CallScope = { operation: OperationName; signal: AbortSignal; deadlineAt: number; policy: RetryPolicy };

export function openCallScope(operation: OperationName, policy: RetryPolicy, callerSignal: AbortSignal | undefined): CallScope {
  const deadline = AbortSignal.timeout(policy.deadlineMs);
  return {
    operation,
    signal: callerSignal === undefined ? deadline : AbortSignal.any([deadline, callerSignal]),
    deadlineAt: Date.now() + policy.deadlineMs,
    policy,
  };
}

function deadlinePassed(scope: CallScope): WireFailure {
  return new WireFailure('timeout', scope.operation, `The call to ${scope.operation} did not finish within its deadline.`);
}

/**
 * Posts `json`, a body's JSON text. Fails with TransientFailure when the connection fails or the attempt times out,
 * and with WireFailure('timeout') once the call's deadline has passed; any HTTP answer is returned as it is.
 */
export async function postJson(url: string, headers: Record<string, string>, json: string, scope: CallScope): Promise<HttpAnswer> {
  const attemptSignal = AbortSignal.any([scope.signal, AbortSignal.timeout(scope.policy.attemptTimeoutMs)]);
  try {
    // A plain object keeps the header names' case on the wire.
    const response = await fetch(url, { method: 'POST', headers, body: json, signal: attemptSignal });
    const text = await response.text();
    return { status: response.status, body: parseJsonOrUndefined(text), retryAfterMs: retryAfterMs(response.headers.get('retry-after')) };
  } catch (error) {
    if (scope.signal.aborted) throw deadlinePassed(scope);
    if (attemptSignal.aborted) {
      throw new TransientFailure('timeout', `${scope.operation} did not answer within ${scope.policy.attemptTimeoutMs} ms.`);
    }
    throw new TransientFailure('unavailable', `${scope.operation} could not be reached: ${describeConnectionError(error)}.`);
  }
}

/**
 * Runs `attempt` until it settles for good, retrying transient failures within the scope's deadline. When the deadline
 * passes after the authority answered it was unavailable, the call fails as unavailable: that is what it was.
 */
export async function withRetries<T>(scope: CallScope, attempt: () => Promise<T>): Promise<T> {
  let last: TransientFailure | undefined;
  const gaveUp = (): WireFailure =>
    last?.reason === 'unavailable'
      ? new WireFailure('unavailable', scope.operation, `${last.message} Gave up at the deadline.`)
      : deadlinePassed(scope);
  for (let retry = 1; ; retry++) {
    try {
      return await attempt();
    } catch (error) {
      if (error instanceof WireFailure && error.failure === 'timeout' && scope.signal.aborted) throw gaveUp();
      if (!(error instanceof TransientFailure)) throw error;
      last = error;
    }
    const pauseMs = last.retryAfterMs ?? backoffMs(scope.policy, retry);
    if (Date.now() + pauseMs >= scope.deadlineAt) {
      throw new WireFailure(last.reason, scope.operation, `${last.message} Gave up: no time left for another attempt.`);
    }
    try {
      await sleep(pauseMs, undefined, { signal: scope.signal });
    } catch {
      throw gaveUp();
    }
  }
}

/** Exponential backoff with equal jitter: between half and all of firstBackoffMs * 2^(retry-1), capped. */
function backoffMs(policy: RetryPolicy, retry: number): number {
  const ceiling = Math.min(policy.maxBackoffMs, policy.firstBackoffMs * 2 ** (retry - 1));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** Retry-After as seconds or as an HTTP date. */
function retryAfterMs(header: string | null): number | null {
  if (header === null) return null;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

function parseJsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function describeConnectionError(error: unknown): string {
  const cause = error instanceof Error ? error.cause : undefined;
  if (typeof cause === 'object' && cause !== null && 'code' in cause) return String(cause.code);
  return error instanceof Error ? error.message : String(error);
}
