import assert from 'node:assert/strict';
import { SYSTEM_SOURCE } from '../../src/services/audit.ts';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { SandboxProgram } from '../../sandbox/program.ts';
import { loadConfig } from '../../src/config.ts';
import { createService, type Service } from '../../src/service.ts';
import { createPlatform } from '../../src/services/platforms.ts';
import { backends, injectRequest, scratchDatabase, startTestSandbox, type TestResponse } from '../support/harness.ts';
import { privatePostgresUnavailable, startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres.ts';
import { lineFor, pushBody, usableIrms, verifiedCustomer } from '../support/workflow.ts';

/**
 * Contract 17 as a client sees it, in one process on a PostgreSQL server of the test's own that the test stops: every
 * answer while the database cannot be reached is 503 database_unavailable with Retry-After (the API, the admin API,
 * hooks that read the database before any route runs), the console shows a page of its own, /ready is 503 and
 * /health 200; and a push the authority accepted just before the database went away is answered, on a retry with its
 * key, with the authority's acknowledgement, never sent twice.
 */

const ADMIN_TOKEN = randomBytes(32).toString('base64url');
/** One for every service on the test's database. */
const ENCRYPTION_KEY = randomBytes(32).toString('base64');
const unavailable = await privatePostgresUnavailable();

describe('while the database cannot be reached [postgres, a server of the test\'s own]', { skip: unavailable ?? false, concurrency: false }, () => {
  let server: PrivatePostgres;
  let sandboxScratch: Awaited<ReturnType<typeof scratchDatabase>>;
  let sandbox: SandboxProgram;
  let service: Service;
  let dataDir: string;
  let apiKey: string;
  const pushed = new Map<string, number>();
  let stopAfterNextPush = false;
  let stopBeforeNextPush = false;
  let failBeforeNextPush = false;
  let slowStatusMs = 0;

  async function request(
    method: string,
    url: string,
    options: { body?: unknown; query?: Record<string, string | number>; headers?: Record<string, string> } = {},
  ): Promise<TestResponse & { ms: number }> {
    const started = Date.now();
    const response = await injectRequest(service, method, url, { ...options, key: apiKey });
    return { ...response, ms: Date.now() - started };
  }
  const requester = { request };

  function assertUnavailable(response: TestResponse & { ms: number }, what: string): void {
    assert.equal(response.status, 503, `${what}: ${response.text}`);
    assert.match(String(response.headers['content-type']), /^application\/problem\+json/, what);
    assert.equal(response.body.code, 'database_unavailable', what);
    assert.equal(response.headers['retry-after'], '2', what);
    // Never "nothing was stored": a push may have been stored, even accepted by the authority, before the database went.
    assert.match(response.body.detail, /same Idempotency-Key/, what);
    assert.doesNotMatch(response.body.detail, /nothing .*stored/i, what);
    assert.equal(response.body.requestId, response.headers['x-request-id'], what);
    assert.ok(!/ECONN|57P0|statusCode|127\.0\.0\.1|:\d{4,5}\b|\bat \S+ \(/.test(response.text), `${what}: no driver code, address or stack: ${response.text}`);
    assert.ok(response.ms < 3_000, `${what}: answered in ${response.ms} ms`);
  }

  before(async () => {
    server = await startPrivatePostgres();
    sandboxScratch = await scratchDatabase(backends().includes('postgres') ? 'postgres' : 'embedded');
    sandbox = await startTestSandbox(sandboxScratch);
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-db-unavailable-'));
    const config = loadConfig({
      DATA_DIR: dataDir,
      DATABASE_URL: server.url,
      ENCRYPTION_KEY,
      ADMIN_TOKEN,
      AUTHORITY_URL: sandbox.url,
      RUN_POLLER: 'false',
      LOG_LEVEL: 'silent',
      // Every request reads its API key from the database.
      API_KEY_CACHE_SECONDS: '0',
    });
    service = await createService({
      config,
      logger: false,
      authority: (adapter) => ({
        ...adapter,
        async push(credentials, message, options) {
          if (failBeforeNextPush) {
            failBeforeNextPush = false;
            // Stored and reserved, never sent: the connection broke as the service read what it needs to send it.
            throw Object.assign(new Error('Connection terminated unexpectedly'), { name: 'Error' });
          }
          if (stopBeforeNextPush) {
            stopBeforeNextPush = false;
            // Stored and reserved, never sent: the database goes as the service reads what it needs to send it.
            await server.stop('fast');
            throw Object.assign(new Error('Connection terminated unexpectedly'), { name: 'Error' });
          }
          const ack = await adapter.push(credentials, message, options);
          pushed.set(message.requestId, (pushed.get(message.requestId) ?? 0) + 1);
          if (stopAfterNextPush) {
            stopAfterNextPush = false;
            // Accepted by the authority; the database goes before the service records the acknowledgement.
            await server.stop('fast');
          }
          return ack;
        },
        async getStatus(credentials, requestId, options) {
          if (slowStatusMs > 0) await new Promise((resolve) => setTimeout(resolve, slowStatusMs));
          return adapter.getStatus(credentials, requestId, options);
        },
      }),
    });
    apiKey = (await createPlatform(service.database.db, 'Database faults', SYSTEM_SOURCE)).apiKey;
  });

  after(async () => {
    try {
      await service?.close();
      await sandbox?.close();
      await sandboxScratch?.drop();
    } finally {
      await server?.destroy();
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('every answer is 503 database_unavailable with Retry-After, within 3 s; the console says so; /ready 503, /health 200', async () => {
    const customerId = await verifiedCustomer(requester, 'down@example.com');
    await server.stop('fast');
    try {
      assertUnavailable(await request('GET', '/api/v1/platform-customers'), 'a read (its API key checked in the database)');
      assertUnavailable(
        await request('POST', '/api/v1/platform-customers', { body: { name: 'X', email: 'x@example.com', companyName: 'X' }, headers: { 'idempotency-key': randomUUID() } }),
        'a keyed create (its Idempotency-Key claimed in the database)',
      );
      assertUnavailable(
        await request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: customerId, requestId: 'EBRCGW-NONE' } }),
        'a status call',
      );
      const admin = await service.app.inject({ method: 'GET', url: '/admin/v1/platforms', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      assertUnavailable({ status: admin.statusCode, headers: admin.headers, body: JSON.parse(admin.body), text: admin.body, ms: 0 }, 'the admin API');

      const page = await service.app.inject({ method: 'GET', url: '/console/customers', headers: { cookie: `ebrc_console_session=${randomBytes(32).toString('base64url')}` } });
      assert.equal(page.statusCode, 503, page.body);
      assert.match(String(page.headers['content-type']), /^text\/html/);
      assert.equal(page.headers['retry-after'], '2');
      assert.match(page.body, /The database is unavailable/);
      assert.doesNotMatch(page.body, /nothing was changed/);
      assert.doesNotMatch(page.body, /ECONN|127\.0\.0\.1/);

      assert.equal((await request('GET', '/ready')).status, 503);
      assert.equal((await request('GET', '/health')).status, 200);
    } finally {
      await server.start();
    }
    const again = await request('GET', '/api/v1/platform-customers');
    assert.equal(again.status, 200, again.text);
    assert.equal((await request('GET', '/ready')).status, 200);
  });

  test('a push the authority accepted just before the database went away: the retry with its key gets the acknowledgement, sent once', async () => {
    const customerId = await verifiedCustomer(requester, 'accepted@example.com');
    const [irm] = await usableIrms(requester, customerId, 1);
    const body = pushBody(customerId, [lineFor(irm, 1, 1)]);
    const key = randomUUID();
    stopAfterNextPush = true;
    const first = await request('POST', '/api/v1/genebrc/push-irm', { body, headers: { 'idempotency-key': key } });
    assertUnavailable(first, 'the push whose acknowledgement could not be recorded');
    await server.start();

    const retry = await request('POST', '/api/v1/genebrc/push-irm', { body, headers: { 'idempotency-key': key } });
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.body.ackStatus, 'Validated');
    assert.ok(retry.body.authorityAckId);
    assert.equal(pushed.get(retry.body.requestId), 1, 'the authority received the push once');
    assert.equal([...pushed.values()].reduce((sum, n) => sum + n, 0), 1, 'and no other push');

    // The acknowledgement is kept for the key: a further retry replays it.
    const replayed = await request('POST', '/api/v1/genebrc/push-irm', { body, headers: { 'idempotency-key': key } });
    assert.equal(replayed.status, 200);
    assert.equal(replayed.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replayed.body, retry.body);
    const status = await request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: customerId, requestId: retry.body.requestId } });
    assert.equal(status.status, 200, status.text);
    assert.equal(status.body.authorityAckId, retry.body.authorityAckId);
  });

  test('a push stored but never sent when the database went away: the retry finds no record at the authority and sends it, once', async () => {
    const customerId = await verifiedCustomer(requester, 'never-sent@example.com');
    const [irm] = await usableIrms(requester, customerId, 1);
    const body = pushBody(customerId, [lineFor(irm, 1, 1)]);
    const key = randomUUID();
    const before = new Map(pushed);
    stopBeforeNextPush = true;
    const first = await request('POST', '/api/v1/genebrc/push-irm', { body, headers: { 'idempotency-key': key } });
    assertUnavailable(first, 'the push that was stored but not sent');
    await server.start();

    const retries = await Promise.all([1, 2].map(() => request('POST', '/api/v1/genebrc/push-irm', { body, headers: { 'idempotency-key': key } })));
    const answered = retries.find((retry) => retry.status === 200);
    assert.ok(answered, retries.map((retry) => retry.text).join('\n'));
    assert.equal(answered.body.ackStatus, 'Validated', answered.text);
    for (const retry of retries) {
      // Two retries at once: one carries the push on, the other waits for it (409) or replays its answer.
      assert.ok(retry.status === 200 ? retry.text === answered.text : retry.body.code === 'idempotency_key_in_use', retry.text);
    }
    const sent = [...pushed].filter(([requestId, count]) => (before.get(requestId) ?? 0) !== count);
    assert.deepEqual(sent, [[answered.body.requestId, 1]], 'one push reached the authority, once');
    const listed = await request('GET', '/api/v1/genebrc', { query: { platformCustomerId: customerId } });
    assert.deepEqual(
      (listed.body as { requestId: string; status: string }[]).map((row) => [row.requestId, row.status]),
      [[answered.body.requestId, 'PENDING']],
      'the push is stored once: the request the first run stored, sent by the retry',
    );
    const again = await request('POST', '/api/v1/genebrc/push-irm', { body, headers: { 'idempotency-key': key } });
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.text, answered.text);
  });

  test('a retry whose status call took the send window: the stored push is not sent, so it can never reach the authority after the poller failed it', async () => {
    const customerId = await verifiedCustomer(requester, 'slow-status@example.com');
    const [irm] = await usableIrms(requester, customerId, 1);
    const body = pushBody(customerId, [lineFor(irm, 1, 1)]);
    const key = randomUUID();
    const before = [...pushed.values()].reduce((sum, n) => sum + n, 0);
    failBeforeNextPush = true;
    const first = await request('POST', '/api/v1/genebrc/push-irm', { body, headers: { 'idempotency-key': key } });
    assertUnavailable(first, 'the push that was stored but not sent');

    // The window to send is one authority call (10 s) and a second short of the submit grace time (15 s) after the
    // request was stored: 4 s. The authority's "no record" comes 4.5 s after the retry asked, past that window.
    slowStatusMs = 4_500;
    let retry: TestResponse & { ms: number };
    try {
      retry = await request('POST', '/api/v1/genebrc/push-irm', { body, headers: { 'idempotency-key': key } });
    } finally {
      slowStatusMs = 0;
    }
    assert.equal(retry.status, 409, retry.text);
    assert.equal(retry.body.code, 'idempotency_key_in_use');
    assert.equal([...pushed.values()].reduce((sum, n) => sum + n, 0), before, 'nothing was sent to the authority');
  });

  test('a keyed retry while connections hang (no refusal): 503 within 3 s, even with a key release still pending', async () => {
    // The service reaches the database through a proxy that can turn into a black hole: connections accepted, never
    // answered, as in a network partition, where each attempt waits out the 2 s connection timeout.
    const sockets = new Set<net.Socket>();
    let blackHole = false;
    const track = (socket: net.Socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    };
    const proxy = net.createServer((socket) => {
      track(socket);
      if (blackHole) return;
      const upstream = net.connect(server.port, '127.0.0.1');
      track(upstream);
      upstream.on('close', () => socket.destroy());
      socket.on('close', () => upstream.destroy());
      socket.pipe(upstream).pipe(socket);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const partitionDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-db-partition-'));
    const proxied = new URL(server.url);
    proxied.port = String((proxy.address() as net.AddressInfo).port);
    let partitioned: Service | undefined;
    let partitionPushes = 0;
    try {
      partitioned = await createService({
        config: loadConfig({
          DATA_DIR: partitionDataDir,
          DATABASE_URL: proxied.toString(),
          ENCRYPTION_KEY,
          AUTHORITY_URL: sandbox.url,
          RUN_POLLER: 'false',
          LOG_LEVEL: 'silent',
          API_KEY_CACHE_SECONDS: '60',
        }),
        logger: false,
        authority: (adapter) => ({
          ...adapter,
          async push(credentials, message, options) {
            const ack = await adapter.push(credentials, message, options);
            partitionPushes += 1;
            // Accepted by the authority; the network to the database goes before the acknowledgement is recorded.
            blackHole = true;
            for (const socket of sockets) socket.destroy();
            // The pool has seen its connections close: recording the acknowledgement waits for a new one.
            await new Promise((resolve) => setTimeout(resolve, 100));
            return ack;
          },
        }),
      });
      const service = partitioned;
      const key = (await createPlatform(service.database.db, 'Partition', SYSTEM_SOURCE)).apiKey;
      const partitionedRequest = async (method: string, url: string, options: { body?: unknown; headers?: Record<string, string> } = {}) => {
        const started = Date.now();
        const response = await injectRequest(service, method, url, { ...options, key });
        return { ...response, ms: Date.now() - started };
      };
      const customerId = await verifiedCustomer({ request: partitionedRequest }, 'partition@example.com');
      const [irm] = await usableIrms({ request: partitionedRequest }, customerId, 1);
      const body = pushBody(customerId, [lineFor(irm, 1, 1)]);
      const idempotencyKey = randomUUID();
      const first = await partitionedRequest('POST', '/api/v1/genebrc/push-irm', { body, headers: { 'idempotency-key': idempotencyKey } });
      // One wait for a connection (recording the acknowledgement), not a second one for releasing the key.
      assertUnavailable(first, 'a push whose acknowledgement could not be recorded during a partition');
      // Its key is released later, by the process. A retry (its API key cached) also waits for one connection at most.
      const retry = await partitionedRequest('POST', '/api/v1/genebrc/push-irm', { body, headers: { 'idempotency-key': idempotencyKey } });
      assertUnavailable(retry, 'a keyed retry during a partition');

      blackHole = false;
      const healed = await partitionedRequest('POST', '/api/v1/genebrc/push-irm', { body, headers: { 'idempotency-key': idempotencyKey } });
      assert.equal(healed.status, 200, healed.text);
      assert.equal(healed.body.ackStatus, 'Validated');
      assert.equal(partitionPushes, 1, 'the authority received the push once');
    } finally {
      blackHole = false;
      for (const socket of sockets) socket.destroy();
      await partitioned?.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => proxy.close(resolve));
      fs.rmSync(partitionDataDir, { recursive: true, force: true });
    }
  });
});
