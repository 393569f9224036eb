/**
 * One access token per credential set, renewed before it expires. Concurrent callers share one token request, and
 * callers refused with the same token share one renewal. A token request runs under its own deadline, so a caller
 * that gives up does not fail the others waiting on it.
 */
import { createHash } from 'node:crypto';
import type { CredentialSet } from '../protocol/credentials.ts';
import { WireFailure } from './wire-failure.ts';

export type IssuedToken = { accessToken: string; expiresInSeconds: number };

type CachedToken = { accessToken: string; renewAt: number; expiresAt: number };

type Slot = { cached: CachedToken | null; pending: Promise<CachedToken> | null };

export type TokenCache = {
  /** A token that is not due for renewal, requesting one if needed. */
  current(credentials: CredentialSet, signal: AbortSignal): Promise<string>;
  /** A token other than `refused` (which the authority answered with HTTP 401). */
  renewAfterRefusal(credentials: CredentialSet, refused: string, signal: AbortSignal): Promise<string>;
};

export function createTokenCache(options: {
  requestToken: (credentials: CredentialSet) => Promise<IssuedToken>;
  /** How long before its expiry a token is renewed; at most half its lifetime. */
  renewalMarginMs: number;
  now: () => number;
}): TokenCache {
  const slots = new Map<string, Slot>();

  function slotOf(credentials: CredentialSet): Slot {
    const key = cacheKey(credentials);
    let slot = slots.get(key);
    if (slot === undefined) {
      forgetExpired();
      slot = { cached: null, pending: null };
      slots.set(key, slot);
    }
    return slot;
  }

  function forgetExpired(): void {
    const now = options.now();
    for (const [key, slot] of slots) {
      if (slot.pending === null && (slot.cached === null || slot.cached.expiresAt <= now)) slots.delete(key);
    }
  }

  function request(slot: Slot, credentials: CredentialSet): Promise<CachedToken> {
    if (slot.pending !== null) return slot.pending;
    const requestedAt = options.now();
    const pending = options.requestToken(credentials).then((issued) => {
      const lifetimeMs = issued.expiresInSeconds * 1000;
      const cached = {
        accessToken: issued.accessToken,
        renewAt: requestedAt + lifetimeMs - Math.min(options.renewalMarginMs, lifetimeMs / 2),
        expiresAt: requestedAt + lifetimeMs,
      };
      slot.cached = cached;
      return cached;
    });
    slot.pending = pending;
    const settle = () => {
      slot.pending = null;
    };
    pending.then(settle, settle);
    return pending;
  }

  async function waitFor(token: Promise<CachedToken>, signal: AbortSignal): Promise<string> {
    if (signal.aborted) throw deadlineWhileWaiting();
    const { promise: aborted, reject } = Promise.withResolvers<never>();
    const onAbort = () => reject(deadlineWhileWaiting());
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      return (await Promise.race([token, aborted])).accessToken;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  function isFresh(cached: CachedToken | null): cached is CachedToken {
    return cached !== null && options.now() < cached.renewAt;
  }

  return {
    current(credentials, signal) {
      const slot = slotOf(credentials);
      if (isFresh(slot.cached)) return Promise.resolve(slot.cached.accessToken);
      return waitFor(request(slot, credentials), signal);
    },
    renewAfterRefusal(credentials, refused, signal) {
      const slot = slotOf(credentials);
      if (slot.pending === null && isFresh(slot.cached) && slot.cached.accessToken !== refused) {
        return Promise.resolve(slot.cached.accessToken);
      }
      if (slot.cached?.accessToken === refused) slot.cached = null;
      return waitFor(request(slot, credentials), signal);
    },
  };
}

/** The set's identity for its token: a changed secret or API key is another set. */
function cacheKey(credentials: CredentialSet): string {
  return createHash('sha256')
    .update(JSON.stringify([credentials.clientId, credentials.clientSecret, credentials.apiKey]))
    .digest('base64');
}

function deadlineWhileWaiting(): WireFailure {
  return new WireFailure('timeout', 'getAccessToken', 'The call reached its deadline while waiting for an access token.');
}
