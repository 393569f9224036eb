import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createClient, EbrcApiError, retryAfterMs } from '@ebrc-gateway/sdk';
import { liveService } from './live.ts';

let live: Awaited<ReturnType<typeof liveService>>;
before(async () => {
  live = await liveService();
});
after(async () => {
  await live?.stop();
});

type Sent = { method: string; url: string; key: string | null };

/** A fetch to the live service that records every attempt and can replace an answer (after the service got it). */
function recordingFetch(replace: (attempt: number, sent: Sent) => Response | 'network' | undefined) {
  const sent: Sent[] = [];
  const fetch = async (request: Request): Promise<Response> => {
    const entry = { method: request.method, url: request.url, key: request.headers.get('idempotency-key') };
    sent.push(entry);
    const answer = await globalThis.fetch(request);
    const replaced = replace(sent.length, entry);
    if (replaced === 'network') throw new TypeError('fetch failed');
    if (replaced === undefined) return answer;
    await answer.body?.cancel();
    return replaced;
  };
  return { sent, fetch };
}

test('a POST gets an Idempotency-Key; a 503 with Retry-After: 0 is retried with the same key and the service replays', async () => {
  const { sent, fetch } = recordingFetch((attempt) => (attempt === 1 ? new Response('busy', { status: 503, headers: { 'retry-after': '0' } }) : undefined));
  const client = createClient({ baseUrl: live.baseUrl, apiKey: live.platformA.apiKey, fetch });
  const { data, response } = await client.POST('/api/v1/platform-customers/', { body: { name: 'Retry', email: 'retry@example.com', companyName: 'Retry' } });
  assert.equal(sent.length, 2);
  assert.match(sent[0]!.key ?? '', /^[0-9a-f-]{36}$/);
  assert.equal(sent[1]!.key, sent[0]!.key);
  // The first attempt reached the service and created the customer: the second is its replay, not a second customer.
  assert.equal(response.status, 201);
  assert.equal(response.headers.get('idempotent-replayed'), 'true');
  const { data: page } = await client.GET('/api/v1/platform-customers', { params: { query: { page: 1, limit: 100, search: 'retry@example.com' } } });
  assert.deepEqual(page.items.map((customer) => customer.id), [data.id]);
});

test('each POST gets its own key; a key the caller gives is sent as given', async () => {
  const { sent, fetch } = recordingFetch(() => undefined);
  const client = createClient({ baseUrl: live.baseUrl, apiKey: live.platformA.apiKey, fetch });
  await client.POST('/api/v1/platform-customers/', { body: { name: 'K1', email: 'k1@example.com', companyName: 'K' } });
  await client.POST('/api/v1/platform-customers/', { body: { name: 'K2', email: 'k2@example.com', companyName: 'K' } });
  await client.POST('/api/v1/platform-customers/', { body: { name: 'K3', email: 'k3@example.com', companyName: 'K' }, headers: { 'Idempotency-Key': 'my-own-key-3' } });
  await client.GET('/api/v1/platform-customers', { params: { query: { page: 1, limit: 1 } } });
  assert.notEqual(sent[0]!.key, sent[1]!.key);
  assert.equal(sent[2]!.key, 'my-own-key-3');
  assert.equal(sent[3]!.key, null, 'a GET carries no key');
});

test('a POST whose key the caller removed is never retried', async () => {
  let attempts = 0;
  const client = createClient({
    baseUrl: live.baseUrl,
    apiKey: live.platformA.apiKey,
    retries: 3,
    fetch: async (request) => {
      attempts++;
      assert.equal(request.headers.get('idempotency-key'), null);
      return new Response('busy', { status: 503, headers: { 'retry-after': '0' } });
    },
  });
  await assert.rejects(
    client.POST('/api/v1/platform-customers/', { body: { name: 'N', email: 'n@example.com', companyName: 'N' }, headers: { 'Idempotency-Key': null } }),
    (error: unknown) => error instanceof EbrcApiError && error.status === 503 && error.code === 'unexpected_response',
  );
  assert.equal(attempts, 1);

  // Nor after a network error.
  attempts = 0;
  const failing = createClient({
    baseUrl: live.baseUrl,
    apiKey: live.platformA.apiKey,
    fetch: async () => {
      attempts++;
      throw new TypeError('fetch failed');
    },
  });
  await assert.rejects(failing.POST('/api/v1/platform-customers/', { body: { name: 'N', email: 'n@example.com', companyName: 'N' }, headers: { 'idempotency-key': null } }), TypeError);
  assert.equal(attempts, 1);
});

test('GETs are retried on 429 (Retry-After as an HTTP date) and network errors, up to `retries`, then the answer is thrown', async () => {
  const { sent, fetch } = recordingFetch((attempt) =>
    attempt === 1
      ? new Response(JSON.stringify({ type: 'about:blank', title: 'Too Many Requests', status: 429, detail: 'slow down', code: 'rate_limited', requestId: 'r1' }), {
          status: 429,
          headers: { 'content-type': 'application/problem+json', 'retry-after': new Date(Date.now() - 1000).toUTCString() },
        })
      : attempt === 2
        ? 'network'
        : undefined,
  );
  const client = createClient({ baseUrl: live.baseUrl, apiKey: live.platformA.apiKey, fetch, retries: { retries: 2, baseDelayMs: 1 } });
  const { data } = await client.GET('/api/v1/events', { params: { query: { page: 1, limit: 1 } } });
  assert.equal(sent.length, 3);
  assert.ok(data.meta);

  let attempts = 0;
  const limited = createClient({
    baseUrl: live.baseUrl,
    apiKey: live.platformA.apiKey,
    retries: 1,
    fetch: async () => {
      attempts++;
      return new Response(JSON.stringify({ type: 'about:blank', title: 'Too Many Requests', status: 429, detail: 'slow down', code: 'rate_limited', requestId: `r${attempts}` }), {
        status: 429,
        headers: { 'content-type': 'application/problem+json', 'retry-after': '0' },
      });
    },
  });
  await assert.rejects(limited.GET('/api/v1/events', { params: { query: { page: 1, limit: 1 } } }), (error: unknown) => {
    assert.ok(error instanceof EbrcApiError);
    assert.equal(error.code, 'rate_limited');
    assert.equal(error.requestId, 'r2');
    return true;
  });
  assert.equal(attempts, 2);

  // A Retry-After longer than the client will wait is not waited for.
  attempts = 0;
  const patient = createClient({
    baseUrl: live.baseUrl,
    apiKey: live.platformA.apiKey,
    fetch: async () => {
      attempts++;
      return new Response('later', { status: 503, headers: { 'retry-after': '3600' } });
    },
  });
  await assert.rejects(patient.GET('/api/v1/events', { params: { query: { page: 1, limit: 1 } } }), (error: unknown) => error instanceof EbrcApiError && error.status === 503);
  assert.equal(attempts, 1);
});

test('retryAfterMs reads delay-seconds and HTTP dates', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(retryAfterMs('0', now), 0);
  assert.equal(retryAfterMs('7', now), 7000);
  assert.equal(retryAfterMs('Thu, 01 Jan 2026 00:00:30 GMT', now), 30_000);
  assert.equal(retryAfterMs('Wed, 31 Dec 2025 23:00:00 GMT', now), 0);
  assert.equal(retryAfterMs('soon', now), undefined);
  assert.equal(retryAfterMs(null, now), undefined);
});
