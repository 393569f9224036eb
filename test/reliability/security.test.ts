import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { REDACTED_PATHS } from '../../src/http/app.ts';
import { CredentialsVault } from '../../src/services/credentials-vault.ts';
import { KeyRing } from '../../src/services/server-key.ts';
import { issueApiKey } from '../../src/services/platforms.ts';
import { revokeApiKey } from '../../src/store/platforms.ts';
import { backends, expectProblem, memoryLog, startHarness, type Harness, type InjectOptions, type TestResponse } from '../support/harness.ts';
import { authorityCredentialSecrets } from '../support/invariants.ts';
import { reportFigures } from '../support/reliability.ts';
import { lineFor, pushBody, sleep, usableIrms, verifiedCustomer } from '../support/workflow.ts';

/**
 * Security: one platform never reaches another's data, a revoked key stops within the promised time, no secret
 * reaches a log line or an error body, stored credentials need the key, the limits on input hold, and so does the
 * rate limit under a burst. (test/http/workflow.test.ts has the first cross-platform checks; these are the rest.)
 */

const KEY_CACHE_SECONDS = 2;
const WRONG_PASSWORDS = ['Wrong#Pass-991', 'Outage@502'];

for (const backend of backends()) {
  describe(`security [${backend}]`, () => {
    const encryptionKey = randomBytes(32).toString('base64');
    const log = memoryLog(REDACTED_PATHS);
    const bodies: string[] = [];
    let started: (Harness & { stop(): Promise<void> }) | undefined;
    const secrets: string[] = ['Sandbox@123', ...WRONG_PASSWORDS, encryptionKey];
    const figures: Record<string, number | string> = {};

    /** Every answer's body is kept, to look for secrets at the end. */
    const call = async (method: string, url: string, options: InjectOptions = {}): Promise<TestResponse> => {
      const response = await started!.request(method, url, options);
      bodies.push(response.text);
      return response;
    };
    const asA = { request: call };
    const asB = { request: (method: string, url: string, options: InjectOptions = {}) => call(method, url, { ...options, key: started!.platformB.apiKey }) };

    before(async () => {
      started = await startHarness(backend, {
        env: { ENCRYPTION_KEY: encryptionKey, API_KEY_CACHE_SECONDS: String(KEY_CACHE_SECONDS), LOG_LEVEL: 'trace' },
        logger: log.logger,
      });
      // The API credential sets the sandbox issues at a check are secrets as much as the portal password is.
      secrets.push(started.platformA.apiKey, started.platformB.apiKey, ...(await authorityCredentialSecrets(started.sandbox.database)));
    });
    after(async () => {
      await started?.stop();
    });

    test('another platform’s ids answer 404 on every route, exactly like ids that do not exist', async () => {
      const h = started!;
      const ownA = await verifiedCustomer(asA, `a-${backend}@example.com`);
      const ownB = await verifiedCustomer(asB, `b-${backend}@example.com`);
      const [irmA] = await usableIrms(asA, ownA, 1);
      const pushedA = await call('POST', '/api/v1/genebrc/push-irm', { body: pushBody(ownA, [lineFor(irmA, 1, 1)]) });
      assert.equal(pushedA.body.ackStatus, 'Validated', pushedA.text);
      const requestA = pushedA.body.requestId as string;
      const nobody = '00000000-0000-4000-8000-000000000000';

      // Each route, with B's key: A's ids and ids of nothing answer the same.
      const probes: [string, (customer: string, request: string) => Promise<TestResponse>][] = [
        ['GET customer', (customer) => asB.request('GET', `/api/v1/platform-customers/${customer}`)],
        ['check credentials', (customer) => asB.request('POST', `/api/v1/platform-customers/${customer}/check-authority-credentials`, { body: { authorityUsername: 'demo.exporter', authorityPassword: 'Sandbox@123' } })],
        ['refresh IRMs', (customer) => asB.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: customer }, body: {} })],
        ['push', (customer) => asB.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(customer, [lineFor(irmA, 1, 1)]) })],
        ['status', (customer, request) => asB.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: customer, requestId: request } })],
        ['list requests', (customer) => asB.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: customer } })],
      ];
      for (const [name, probe] of probes) {
        const theirs = expectProblem(await probe(ownA, requestA), 404, 'not_found');
        const nothing = expectProblem(await probe(nobody, requestA), 404, 'not_found');
        assert.equal(theirs.detail.replace(ownA, nobody), nothing.detail, `${name}: another platform's customer reads like no customer`);
      }
      // With B's own customer: A's request is not found, and not listed.
      expectProblem(await asB.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: ownB, requestId: requestA } }), 404, 'not_found');
      const filtered = await asB.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: ownB, requestId: requestA } });
      assert.equal(filtered.status, 200);
      assert.deepEqual(filtered.body, []);
      // B's customer list never shows A's customers, whatever the search.
      const search = await asB.request('GET', '/api/v1/platform-customers', { query: { search: `a-${backend}`, limit: 100 } });
      assert.equal(search.status, 200);
      assert.equal(search.body.meta.totalItems, 0);
      const all = await asB.request('GET', '/api/v1/platform-customers', { query: { limit: 100 } });
      assert.deepEqual(all.body.items.map((c: any) => c.id), [ownB]);
      // A's IRM is A's: B's customer (same authority account) gets its own copy, with its own balances.
      const theirCopy = await asB.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: ownB, irmNumber: irmA.irmNumber }, body: {} });
      assert.equal(theirCopy.body.data[0].platformCustomerId, ownB);
      assert.notEqual(theirCopy.body.data[0].id, irmA.id);
      // And the reverse: A cannot see B's customer.
      expectProblem(await asA.request('GET', `/api/v1/platform-customers/${ownB}`), 404, 'not_found');
      figures['routes tried with another platform’s ids (all 404)'] = probes.length + 3;
      void h;
    });

    test(`a revoked key is refused within API_KEY_CACHE_SECONDS (${KEY_CACHE_SECONDS} s), on every request after`, async () => {
      const h = started!;
      const issued = await issueApiKey(h.database.db, h.platformA.id);
      secrets.push(issued.apiKey);
      assert.equal((await call('GET', '/api/v1/platform-customers', { key: issued.apiKey })).status, 200, 'the new key works (and is cached)');
      await revokeApiKey(h.database.db, issued.key.id);
      const revokedAt = Date.now();
      // The promise: no request sent more than API_KEY_CACHE_SECONDS after the revocation is accepted.
      let lastAcceptedAfterMs = 0;
      let refusedAfterMs = -1;
      while (Date.now() - revokedAt < (KEY_CACHE_SECONDS + 3) * 1000) {
        const sentAfterMs = Date.now() - revokedAt;
        const response = await call('GET', '/api/v1/platform-customers', { key: issued.apiKey });
        if (response.status === 401) {
          expectProblem(response, 401, 'api_key_invalid');
          refusedAfterMs = sentAfterMs;
          break;
        }
        assert.equal(response.status, 200);
        lastAcceptedAfterMs = sentAfterMs;
        await sleep(50);
      }
      assert.ok(refusedAfterMs >= 0, 'the revoked key was refused');
      assert.ok(lastAcceptedAfterMs <= KEY_CACHE_SECONDS * 1000, `a request sent ${lastAcceptedAfterMs} ms after the revocation was accepted`);
      for (let i = 0; i < 5; i++) expectProblem(await call('GET', '/api/v1/platform-customers', { key: issued.apiKey }), 401, 'api_key_invalid');
      assert.equal((await call('GET', '/api/v1/platform-customers')).status, 200, 'the platform’s other key still works');
      figures['revoked key: last accepted / first refused, ms after the revocation (cache 2000 ms, a request every 50 ms)'] = `${lastAcceptedAfterMs} / ${refusedAfterMs}`;
    });

    test('stored credentials open only with the encryption key, and only for their customer', async () => {
      const h = started!;
      const customer = await verifiedCustomer(asA, `vault-${backend}@example.com`);
      const other = await verifiedCustomer(asA, `vault-other-${backend}@example.com`);
      const rows = await h.database.db
        .selectFrom('platform_customers')
        .select(['id', 'authority_credentials', 'authority_api_credentials'])
        .where('id', 'in', [customer, other])
        .execute();
      const row = rows.find((candidate) => candidate.id === customer)!;
      // Two things are stored: the portal login of the check, and the API credential set the sandbox issued for it.
      const sealed = row.authority_credentials!;
      const sealedSet = row.authority_api_credentials!;
      for (const plain of ['Sandbox@123', Buffer.from('Sandbox@123').toString('base64'), Buffer.from('"password":"Sandbox@123"').toString('base64')]) {
        assert.ok(!sealed.includes(plain), 'the stored form does not show the password');
      }
      const setSecrets = await authorityCredentialSecrets(h.sandbox.database);
      for (const secret of setSecrets) assert.ok(!sealedSet.includes(secret), 'the stored form does not show the credential set’s secrets');
      const right = new CredentialsVault(KeyRing.of(Buffer.from(encryptionKey, 'base64')));
      const wrong = new CredentialsVault(KeyRing.of(randomBytes(32)));
      assert.deepEqual(right.open(customer, sealed), { username: 'demo.exporter', password: 'Sandbox@123' });
      const openedSet = right.openApiCredentials(customer, sealedSet);
      assert.ok(setSecrets.includes(openedSet.clientSecret) && setSecrets.includes(openedSet.apiKey), 'the stored set is the one the sandbox issued');
      assert.throws(() => wrong.open(customer, sealed), /ENCRYPTION_KEY/, 'another key cannot open it, and says so');
      assert.throws(() => wrong.openApiCredentials(customer, sealedSet), /ENCRYPTION_KEY/, 'nor the credential set');
      assert.throws(() => right.open(other, sealed), 'sealed for one customer, it does not open for another');
      assert.throws(() => right.openApiCredentials(other, sealedSet), 'nor does the credential set');
      assert.throws(() => right.open(customer, sealedSet), 'the set does not open as a login (each is bound to what it holds)');
      for (const [what, value, open] of [
        ['login', sealed, (text: string) => right.open(customer, text)],
        ['credential set', sealedSet, (text: string) => right.openApiCredentials(customer, text)],
      ] as const) {
        const [version, payload] = value.split(':');
        const tampered = Buffer.from(payload!, 'base64');
        tampered[tampered.length - 1]! ^= 1;
        assert.throws(() => open(`${version}:${tampered.toString('base64')}`), `a changed byte of the ${what} is detected`);
      }
      // Copied onto another customer in the database, they are useless there: the service cannot use them.
      await h.database.db
        .updateTable('platform_customers')
        .set({ authority_credentials: sealed, authority_api_credentials: sealedSet })
        .where('id', '=', other)
        .execute();
      const [irm] = await usableIrms(asA, customer, 1);
      const requestsBefore = await h.sandbox.database.db.selectFrom('authority_sandbox.requests').select('request_id').execute();
      const stolen = await call('POST', '/api/v1/genebrc/push-irm', { body: pushBody(other, [lineFor(irm, 1, 1)]) });
      // They cannot be opened: the service's fault as far as the client knows (500, nothing internal shown), and
      // nothing reaches the authority under another customer's credentials.
      expectProblem(stolen, 500, 'internal_error');
      assert.ok(!stolen.text.includes('decrypt') && !stolen.text.includes('auth'), stolen.text);
      const requestsAfter = await h.sandbox.database.db.selectFrom('authority_sandbox.requests').select('request_id').execute();
      assert.equal(requestsAfter.length, requestsBefore.length, 'no push reached the authority');
      figures['credentials opened with a wrong key or for another customer'] = 0;
    });

    test('limits: 5 MiB bodies, 999 lines, deep JSON, big headers; the service survives each', async () => {
      const h = started!;
      const customer = await verifiedCustomer(asA, `limits-${backend}@example.com`);
      const [irm] = await usableIrms(asA, customer, 1);
      const inject = async (payload: string, url = '/api/v1/genebrc/push-irm') => {
        const response = await h.service.app.inject({ method: 'POST', url, headers: { 'x-api-key': h.platformA.apiKey, 'content-type': 'application/json' }, payload });
        bodies.push(response.body);
        let body: any;
        try {
          body = JSON.parse(response.body);
        } catch {
          body = undefined;
        }
        return { status: response.statusCode, headers: response.headers, body, text: response.body };
      };

      // A body above 5 MiB: 413 before it is parsed.
      const tooBig = JSON.stringify(pushBody(customer, [lineFor(irm, 1, 1, { billNo: 'x'.repeat(5 * 1024 * 1024) })]));
      expectProblem(await inject(tooBig), 413, 'payload_too_large');
      // 999 lines fit in far less; 1,000 lines are refused by count.
      const lines = Array.from({ length: 1_000 }, (_, index) => lineFor(irm, index + 1, 0.01));
      const thousand = expectProblem(await call('POST', '/api/v1/genebrc/push-irm', { body: pushBody(customer, lines) }), 400, 'validation_failed');
      assert.ok(thousand.errors.some((e: any) => e.path === '/ebrcBulkGenDtos' && e.code === 'invalid_length'), JSON.stringify(thousand.errors));
      const ninetyNine = JSON.stringify(pushBody(customer, lines.slice(0, 999)));
      assert.ok(ninetyNine.length < 1024 * 1024, `a 999-line push is ${ninetyNine.length} bytes`);

      // Nesting: 10,000 deep in a field, at the root, and as deep as 5 MiB allows.
      const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
      const deepField = JSON.stringify(pushBody(customer, [lineFor(irm, 1, 1)])).replace('"irmNumber":', `"irmNumber":${nested(10_000)},"x":`);
      expectProblem(await inject(deepField), 400, 'validation_failed');
      expectProblem(await inject(nested(10_000)), 400, 'validation_failed');
      const objects = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
      expectProblem(await inject(objects(10_000)), 400, 'validation_failed');
      expectProblem(await inject(nested(2_500_000)), 400, 'validation_failed');
      expectProblem(await inject(objects(800_000)), 400, 'validation_failed');
      assert.equal((await call('GET', '/ready', { key: null })).status, 200, 'ready after the deep ones');

      // Headers: Node refuses a header block above its limit (16 KiB) with a bare 431 before the app sees it;
      // below it, an absurd key is an ordinary 401 problem.
      const huge = 'k'.repeat(10 * 1024);
      expectProblem(await call('GET', '/api/v1/platform-customers', { key: huge }), 401, 'api_key_invalid');
      await h.service.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = h.service.app.server.address() as AddressInfo;
      const oversized = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = http.request({ host: '127.0.0.1', port, path: '/api/v1/platform-customers', headers: { 'x-api-key': h.platformA.apiKey, 'x-filler': 'f'.repeat(20 * 1024) } }, (response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => (body += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        });
        request.on('error', reject);
        request.end();
      });
      assert.equal(oversized.status, 431, 'Request Header Fields Too Large');
      assert.ok(!oversized.body.includes(h.platformA.apiKey));
      const afterwards = await fetch(`http://127.0.0.1:${port}/ready`);
      assert.equal(afterwards.status, 200, 'the server still answers over the network');
      figures['limits checked'] = '413 above 5 MiB; 400 for 1,000 lines; 400 for JSON 10,000 / 800,000 / 2,500,000 deep; 431 (Node, no body) above 16 KiB of headers';
    });

    test('no API key, password, credential set secret or encryption key in any log line or answer of the whole run', () => {
      assert.ok(log.lines.length > 50, `the run was logged (${log.lines.length} lines)`);
      for (const secret of secrets) {
        const leak = log.lines.find((line) => line.includes(secret));
        assert.equal(leak, undefined, `a log line holds a secret: ${leak?.slice(0, 300)}`);
        const told = bodies.find((body) => body.includes(secret));
        assert.equal(told, undefined, `an answer holds a secret: ${told?.slice(0, 300)}`);
      }
      figures['log lines scanned'] = log.lines.length;
      figures['answers scanned'] = bodies.length;
      figures['secrets found'] = 0;
    });

    test('figures', (t) => reportFigures(t, `security [${backend}]`, figures));
  });

  describe(`the rate limit under a burst [${backend}]`, () => {
    test('300 concurrent requests against a burst of 100: at most the burst (and its refill) pass, the rest are 429', async (t) => {
      const h = await startHarness(backend, { env: { RATE_LIMIT_PER_SECOND: '10', RATE_LIMIT_BURST: '100' } });
      try {
        const startedAt = Date.now();
        const answers = await Promise.all(Array.from({ length: 300 }, () => h.request('GET', '/api/v1/platform-customers')));
        const seconds = (Date.now() - startedAt) / 1000;
        const passed = answers.filter((answer) => answer.status === 200).length;
        const limited = answers.filter((answer) => answer.status === 429);
        assert.equal(passed + limited.length, 300, 'every answer is 200 or 429');
        assert.ok(passed >= 100 && passed <= 100 + Math.ceil(seconds * 10) + 1, `${passed} passed in ${seconds} s`);
        for (const answer of limited) {
          expectProblem(answer, 429, 'rate_limited');
          assert.ok(Number(answer.headers['retry-after']) >= 1, 'Retry-After');
        }
        // Another platform is not held back by the first one's burst.
        assert.equal((await h.request('GET', '/api/v1/platform-customers', { key: h.platformB.apiKey })).status, 200);
        reportFigures(t, `rate limit [${backend}]`, { 'burst sent': 300, 'passed (burst 100, 10/s)': passed, '429 with Retry-After': limited.length, 'seconds': seconds.toFixed(2) });
      } finally {
        await h.stop();
      }
    });
  });
}
