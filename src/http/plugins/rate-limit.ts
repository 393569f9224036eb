import type { FastifyInstance } from 'fastify';
import { AppError } from '../../errors.ts';

type Bucket = { tokens: number; updatedAt: number };

/**
 * A token bucket per API key: `perSecond` tokens a second, holding at most `burst`. Announced with
 * the IETF draft's headers (draft-ietf-httpapi-ratelimit-headers): RateLimit-Policy names the
 * bucket (q = burst, w = seconds to refill it from empty); RateLimit says what is left (r) and when
 * the bucket is full again (t). Kept in memory: with several processes each holds its own buckets.
 */
export function registerRateLimit(app: FastifyInstance, options: { perSecond: number; burst: number }): void {
  const buckets = new Map<string, Bucket>();
  const refillSeconds = Math.ceil(options.burst / options.perSecond);
  const policy = `"per-key";q=${options.burst};w=${refillSeconds}`;

  const sweep = setInterval(() => {
    const idleSince = Date.now() - refillSeconds * 1000;
    for (const [key, bucket] of buckets) if (bucket.updatedAt < idleSince) buckets.delete(key);
  }, 60_000);
  sweep.unref();
  app.addHook('onClose', async () => clearInterval(sweep));

  app.addHook('onRequest', (request, reply, done) => {
    const now = Date.now();
    const key = request.principal.keyId;
    const bucket = buckets.get(key) ?? { tokens: options.burst, updatedAt: now };
    bucket.tokens = Math.min(options.burst, bucket.tokens + ((now - bucket.updatedAt) / 1000) * options.perSecond);
    bucket.updatedAt = now;
    buckets.set(key, bucket);
    reply.header('RateLimit-Policy', policy);
    if (bucket.tokens < 1) {
      const retryAfter = Math.max(1, Math.ceil((1 - bucket.tokens) / options.perSecond));
      reply.header('RateLimit', `"per-key";r=0;t=${retryAfter}`);
      return done(
        new AppError('rate_limited', `Too many requests for this API key; retry in ${retryAfter} s.`, {
          headers: { 'Retry-After': String(retryAfter) },
        }),
      );
    }
    bucket.tokens -= 1;
    const untilFull = Math.ceil((options.burst - bucket.tokens) / options.perSecond);
    reply.header('RateLimit', `"per-key";r=${Math.floor(bucket.tokens)};t=${untilFull}`);
    done();
  });
}
