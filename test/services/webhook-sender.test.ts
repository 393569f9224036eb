import { after, describe, test } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import dns from 'node:dns';
import type { LookupAddress } from 'node:dns';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, RequestListener, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendWebhook } from '../../src/services/webhook-sender.ts';
import type { WebhookRequest } from '../../src/services/webhook-sender.ts';
import { busyFor } from '../support/webhook-receiver.ts';

type Received = { method: string; url: string; headers: IncomingHttpHeaders; body: string };

type Receiver = { url: string; port: number; received: Received[]; close: () => Promise<void> };

const servers: Server[] = [];

/** A local receiver on 127.0.0.1 that records every request it gets, then answers with `handler`. */
async function receiver(handler: RequestListener): Promise<Receiver> {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      handler(request, response);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const close = async (): Promise<void> => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { url: `http://127.0.0.1:${port}/hooks/ebrc`, port, received, close };
}

after(() => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
});

const body = JSON.stringify({ id: 'evt_123', type: 'webhook.test', timestamp: '2025-01-01T00:00:00.000Z', platformCustomerId: null, data: { note: 'ok ✓' } });
const signature = { 'webhook-id': 'evt_123', 'webhook-timestamp': '1735689600', 'webhook-signature': 'v1,c2lnbmF0dXJl' };

function attempt(url: string, overrides: Partial<WebhookRequest> = {}): ReturnType<typeof sendWebhook> {
  return sendWebhook({ url, headers: signature, body, timeoutMs: 5_000, allowPrivate: true, ...overrides });
}

describe('sendWebhook', () => {
  test('a 2xx answer succeeds', async () => {
    const hook = await receiver((_request, response) => response.writeHead(204).end());
    const outcome = await attempt(hook.url);
    assert.deepEqual({ ...outcome, durationMs: 0 }, {
      succeeded: true,
      responseStatus: 204,
      responseBody: '',
      durationMs: 0,
      error: null,
      refused: false,
    });
    assert.ok(Number.isInteger(outcome.durationMs) && outcome.durationMs >= 0);
  });

  test('the request arrives as sent: POST, JSON, the webhook headers and the body', async () => {
    const hook = await receiver((_request, response) => response.writeHead(200, { 'content-type': 'text/plain' }).end('thanks'));
    const outcome = await attempt(hook.url);
    assert.equal(outcome.succeeded, true);
    assert.equal(outcome.responseBody, 'thanks');
    const [request] = hook.received;
    assert.ok(request !== undefined);
    assert.equal(request.method, 'POST');
    assert.equal(request.url, '/hooks/ebrc');
    assert.equal(request.body, body);
    assert.equal(request.headers['content-type'], 'application/json');
    assert.equal(request.headers['content-length'], String(Buffer.byteLength(body)));
    assert.equal(request.headers['user-agent'], 'ebrc-gateway-webhooks/1.0');
    assert.equal(request.headers['webhook-id'], 'evt_123');
    assert.equal(request.headers['webhook-timestamp'], '1735689600');
    assert.equal(request.headers['webhook-signature'], 'v1,c2lnbmF0dXJl');

    await attempt(hook.url, { userAgent: 'custom/2.0' });
    assert.equal(hook.received[1]?.headers['user-agent'], 'custom/2.0');
  });

  test('a 500 fails, keeping the first 1 KiB of its body', async () => {
    const answer = Array.from({ length: 5 * 1024 }, (_, i) => String.fromCharCode(97 + (i % 26))).join('');
    const hook = await receiver((_request, response) => response.writeHead(500).end(answer));
    const outcome = await attempt(hook.url);
    assert.equal(outcome.succeeded, false);
    assert.equal(outcome.refused, false);
    assert.equal(outcome.responseStatus, 500);
    assert.equal(outcome.responseBody, answer.slice(0, 1024));
    assert.match(outcome.error ?? '', /500/);
  });

  test('a multi-byte character cut at 1 KiB is dropped, not garbled', async () => {
    const answer = `${'x'.repeat(1023)}€€`; // the first € takes bytes 1024 to 1026
    const hook = await receiver((_request, response) => response.writeHead(400).end(answer));
    const outcome = await attempt(hook.url);
    assert.equal(outcome.responseBody, 'x'.repeat(1023));
  });

  test('a redirect fails and is not followed', async () => {
    const target = await receiver((_request, response) => response.writeHead(200).end());
    const hook = await receiver((_request, response) => response.writeHead(302, { location: target.url }).end('moved'));
    const outcome = await attempt(hook.url);
    assert.equal(outcome.succeeded, false);
    assert.equal(outcome.responseStatus, 302);
    assert.equal(outcome.error, `redirect to ${target.url} not followed`);
    assert.equal(hook.received.length, 1);
    assert.equal(target.received.length, 0);
  });

  test('a long redirect location is cut to 200 characters', async () => {
    const location = `https://example.com/${'a'.repeat(500)}`;
    const hook = await receiver((_request, response) => response.writeHead(307, { location }).end());
    const outcome = await attempt(hook.url);
    assert.equal(outcome.error, `redirect to ${location.slice(0, 200)} not followed`);
  });

  test('a receiver that never answers times out at the deadline', async () => {
    const hook = await receiver(() => {
      // Never answers.
    });
    const started = Date.now();
    const outcome = await attempt(hook.url, { timeoutMs: 300 });
    const took = Date.now() - started;
    assert.equal(outcome.succeeded, false);
    assert.equal(outcome.refused, false);
    assert.equal(outcome.responseStatus, null);
    assert.equal(outcome.responseBody, null);
    assert.equal(outcome.error, 'timed out after 300 ms');
    assert.ok(took >= 290 && took < 1_000, `took ${took} ms`);
    assert.ok(outcome.durationMs >= 290 && outcome.durationMs < 1_000);
  });

  test('an answer that came in time succeeds even when this process was too busy to read it before the deadline', async () => {
    // The receiver answers at once; then this process stalls (its event loop blocked, as by a long synchronous step or a
    // starved CPU) past the deadline. The answer has been waiting to be read: the receiver was not slow, we were.
    const hook = await receiver((_request, response) => {
      response.writeHead(200).end('ok', () => busyFor(800));
    });
    const outcome = await attempt(hook.url, { timeoutMs: 300 });
    assert.equal(outcome.error, null);
    assert.equal(outcome.succeeded, true);
    assert.equal(outcome.responseStatus, 200);
    assert.equal(outcome.responseBody, 'ok');
  });

  test('a stall of this process before the receiver had the request is not counted against the receiver', async () => {
    // The attempt starts, then this process stalls past the whole deadline before it could even connect; the receiver
    // answers well within the deadline once it has the request.
    const hook = await receiver((_request, response) => setTimeout(() => response.writeHead(200).end('ok'), 100));
    setTimeout(() => busyFor(800), 0);
    const outcome = await attempt(hook.url, { timeoutMs: 300 });
    assert.equal(outcome.error, null);
    assert.equal(outcome.succeeded, true);
    assert.equal(hook.received.length, 1);
  });

  test('a 2xx whose body streams forever succeeds promptly with at most 1 KiB', async () => {
    const hook = await receiver((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = 'y'.repeat(300);
      const timer = setInterval(() => response.write(chunk), 5);
      response.on('close', () => clearInterval(timer));
    });
    const started = Date.now();
    const outcome = await attempt(hook.url, { timeoutMs: 5_000 });
    assert.equal(outcome.succeeded, true);
    assert.equal(outcome.responseStatus, 200);
    assert.equal(outcome.responseBody, 'y'.repeat(1024));
    assert.ok(Date.now() - started < 1_000);
  });

  test('a 2xx whose status came in time but whose short body never ends succeeds at the deadline (any 2xx within the timeout)', async () => {
    const hook = await receiver((_request, response) => {
      response.writeHead(202, { 'content-type': 'text/plain' });
      response.write('accepted');
      // Never ends the body.
    });
    const outcome = await attempt(hook.url, { timeoutMs: 300 });
    assert.equal(outcome.succeeded, true);
    assert.equal(outcome.responseStatus, 202);
    assert.equal(outcome.responseBody, 'accepted');
    assert.equal(outcome.error, null);
  });

  test('a closed port fails as a refused connection', async () => {
    const hook = await receiver((_request, response) => response.end());
    await hook.close();
    const outcome = await attempt(hook.url);
    assert.equal(outcome.succeeded, false);
    assert.equal(outcome.refused, false);
    assert.equal(outcome.responseStatus, null);
    assert.equal(outcome.error, 'connection refused (ECONNREFUSED)');
  });

  test('a connection closed without an answer fails', async () => {
    const hook = await receiver((request) => request.socket.destroy());
    const outcome = await attempt(hook.url);
    assert.equal(outcome.succeeded, false);
    assert.equal(outcome.responseStatus, null);
    assert.match(outcome.error ?? '', /ECONNRESET/);
  });

  test('without allowPrivate, a loopback address is refused before connecting', async () => {
    const hook = await receiver((_request, response) => response.writeHead(204).end());
    for (const url of [hook.url, `http://localhost:${hook.port}/hooks`, `http://[::ffff:127.0.0.1]:${hook.port}/`, `http://2130706433:${hook.port}/`]) {
      const outcome = await attempt(url, { allowPrivate: false });
      assert.equal(outcome.succeeded, false, url);
      assert.equal(outcome.refused, true, url);
      assert.equal(outcome.responseStatus, null);
      assert.match(outcome.error ?? '', /internal/, url);
    }
    assert.equal(hook.received.length, 0);
  });

  // A fake dns.lookup stands in for DNS: "hooks.example.com" leads to the local receiver. The URL check lets the name
  // by (it does not resolve before connecting); the connection's lookup must catch it. Installed after the receiver
  // listens, since server.listen looks its host up too.
  function resolveHooksToLoopback(t: TestContext): void {
    t.mock.method(dns, 'lookup', ((hostname: string, _options: unknown, callback: (error: Error | null, addresses: LookupAddress[]) => void) => {
      assert.equal(hostname, 'hooks.example.com');
      process.nextTick(() => callback(null, [{ address: '127.0.0.1', family: 4 }]));
    }) as unknown as typeof dns.lookup);
  }

  test('without allowPrivate, a name resolving to a loopback address is refused at connection', async (t) => {
    const hook = await receiver((_request, response) => response.writeHead(204).end());
    resolveHooksToLoopback(t);
    const outcome = await attempt(`http://hooks.example.com:${hook.port}/hooks`, { allowPrivate: false });
    assert.equal(outcome.succeeded, false);
    assert.equal(outcome.refused, true);
    assert.equal(outcome.responseStatus, null);
    assert.match(outcome.error ?? '', /hooks\.example\.com resolves to 127\.0\.0\.1/);
    assert.equal(hook.received.length, 0);
  });

  test('the connection goes to the address the lookup checked', async (t) => {
    const hook = await receiver((_request, response) => response.writeHead(204).end());
    resolveHooksToLoopback(t);
    const outcome = await attempt(`http://hooks.example.com:${hook.port}/hooks`, { allowPrivate: true });
    assert.equal(outcome.succeeded, true);
    assert.equal(hook.received[0]?.headers.host, `hooks.example.com:${hook.port}`);
  });

  test('a URL that is not a webhook URL is refused without connecting', async () => {
    const outcome = await attempt('ftp://example.com/hook');
    assert.equal(outcome.refused, true);
    assert.match(outcome.error ?? '', /https:\/\//);
  });

  test('bad header values fail without throwing', async () => {
    const hook = await receiver((_request, response) => response.writeHead(204).end());
    const outcome = await attempt(hook.url, { headers: { ...signature, 'x-bad': 'a\r\nb' } });
    assert.equal(outcome.succeeded, false);
    assert.equal(outcome.refused, false);
    assert.ok(outcome.error !== null);
    assert.equal(hook.received.length, 0);
  });
});
