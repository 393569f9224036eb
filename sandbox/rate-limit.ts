/**
 * A token bucket per client: each holds up to `burst` calls and refills at `ratePerSecond`. A call that finds its
 * bucket empty is refused with the whole seconds until the next call would be admitted (for Retry-After).
 */
export type RateLimiter = {
  /** Null when the call is admitted; else the seconds to wait. */
  take(client: string): number | null;
};

export function createRateLimiter(options: { ratePerSecond: number; burst: number; now?: () => number }): RateLimiter {
  const now = options.now ?? Date.now;
  const buckets = new Map<string, { tokens: number; updatedAt: number }>();
  return {
    take(client) {
      const at = now();
      const bucket = buckets.get(client) ?? { tokens: options.burst, updatedAt: at };
      bucket.tokens = Math.min(options.burst, bucket.tokens + ((at - bucket.updatedAt) / 1000) * options.ratePerSecond);
      bucket.updatedAt = at;
      buckets.set(client, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return null;
      }
      return Math.max(1, Math.ceil((1 - bucket.tokens) / options.ratePerSecond));
    },
  };
}
