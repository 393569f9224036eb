import assert from 'node:assert/strict';
import { SYSTEM_SOURCE } from '../../src/services/audit.ts';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { REDACTED_PATHS } from '../../src/http/app.ts';
import { createService, type Service } from '../../src/service.ts';
import { createPlatform } from '../../src/services/platforms.ts';
import type { SandboxProgram } from '../../sandbox/program.ts';
import { backends, describeEachBackend, expectProblem, memoryLog, scratchDatabase, startTestSandbox, type TestResponse } from '../support/harness.ts';
import { issueCredentials } from '../sandbox/support.ts';
import { firstRefresh, verifiedCustomer } from '../support/workflow.ts';

/** Every operation of the interface, as the OpenAPI document must list it. */
const OPERATIONS: [method: string, path: string][] = [
  ['post', '/api/v1/irm/refresh'],
  ['get', '/api/v1/genebrc'],
  ['post', '/api/v1/genebrc/push-irm'],
  ['post', '/api/v1/genebrc/status'],
  ['get', '/api/v1/platform-customers'],
  ['get', '/api/v1/platform-customers/{id}'],
  ['post', '/api/v1/platform-customers/'],
  ['post', '/api/v1/platform-customers/{id}/check-authority-credentials'],
  ['put', '/api/v1/platform-customers/{id}/authority-api-credentials'],
  ['get', '/api/v1/platform-customers/{id}/ebrcs'],
  ['get', '/api/v1/platform-customers/{id}/ebrcs/{ebrcNumber}/certificate.pdf'],
];

describeEachBackend('operations', (h) => {
  test('/health and /ready answer 200 without a key', async () => {
    const health = await h.request('GET', '/health', { key: null });
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, { status: 'ok' });
    const ready = await h.request('GET', '/ready', { key: null });
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body, { status: 'ready' });
  });

  test('GET / is a small page pointing to /docs, /console and /health, without a key; it is not in the API document', async () => {
    const home = await h.request('GET', '/', { key: null });
    assert.equal(home.status, 200);
    assert.match(String(home.headers['content-type']), /^text\/html; charset=utf-8/);
    for (const target of ['/docs', '/console', '/health', '/openapi.json']) assert.ok(home.text.includes(`href="${target}"`), target);
    assert.match(String(home.headers['content-security-policy']), /default-src 'none'/);
    assert.equal((await h.request('HEAD', '/', { key: null })).status, 200);
    const document = await h.request('GET', '/openapi.json', { key: null });
    assert.equal(document.body.paths['/'], undefined);
    // Another method on / is the usual 405, and an unknown path still the usual 404 problem.
    expectProblem(await h.request('POST', '/', { key: null, body: {} }), 405, 'method_not_allowed');
  });

  test('/metrics is Prometheus text counting requests by route, with unknown URLs under one label', async () => {
    await h.request('GET', '/api/v1/platform-customers');
    await h.request('GET', '/api/v1/platform-customers');
    await h.request('GET', '/api/v1/no-such-thing-1234');
    const metrics = await h.request('GET', '/metrics', { key: null });
    assert.equal(metrics.status, 200);
    assert.match(String(metrics.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    assert.match(metrics.text, /^# TYPE http_requests_total counter$/m);
    const line = metrics.text.split('\n').find((l) => l.startsWith('http_requests_total{') && l.includes('route="/api/v1/platform-customers"') && l.includes('status="200"'));
    assert.ok(line, metrics.text.slice(0, 2000));
    assert.ok(Number(line.split(' ').at(-1)) >= 2);
    assert.match(metrics.text, /http_requests_total\{[^}]*route="unmatched"[^}]*status="404"/);
    assert.doesNotMatch(metrics.text, /no-such-thing-1234/, 'a URL nobody routes must not become a label');
    assert.match(metrics.text, /^http_request_duration_seconds_bucket\{/m);
  });

  test('/metrics times the authority calls by operation and outcome', async () => {
    const countOf = (text: string, operation: string) =>
      Number(text.split('\n').find((l) => l.startsWith('authority_call_duration_seconds_count{') && l.includes(`operation="${operation}"`) && l.includes('outcome="ok"'))?.split(' ').at(-1) ?? 0);
    const before = (await h.request('GET', '/metrics', { key: null })).text;
    const customerId = await verifiedCustomer(h, `metrics-${h.backend}@example.com`);
    await firstRefresh(h, customerId);
    const after = (await h.request('GET', '/metrics', { key: null })).text;
    assert.equal(countOf(after, 'checkCredentials') - countOf(before, 'checkCredentials'), 1, 'the credential check');
    assert.equal(countOf(after, 'fetchIrms') - countOf(before, 'fetchIrms'), 1, 'the first refresh pulls once');
    assert.match(after, /^authority_call_duration_seconds_bucket\{[^}]*operation="fetchIrms"/m);
  });

  test('/openapi.json is OpenAPI 3.1 and lists every operation, each needing the API key', async () => {
    const response = await h.request('GET', '/openapi.json', { key: null });
    assert.equal(response.status, 200);
    const doc = response.body;
    assert.match(doc.openapi, /^3\.1\.\d+$/);
    assert.deepEqual(doc.components.securitySchemes.apiKey, { type: 'apiKey', in: 'header', name: 'x-api-key' });
    for (const [method, path] of OPERATIONS) {
      const operation = doc.paths[path]?.[method];
      assert.ok(operation, `${method.toUpperCase()} ${path} is missing; paths are ${Object.keys(doc.paths).join(', ')}`);
      assert.deepEqual(operation.security, [{ apiKey: [] }], `${method.toUpperCase()} ${path} must require the API key`);
      assert.ok(operation.summary, `${method.toUpperCase()} ${path} has no summary`);
      for (const [status, answer] of Object.entries(operation.responses as Record<string, { description: string }>)) {
        assert.notEqual(answer.description, 'Default Response', `${method.toUpperCase()} ${path} ${status} says what it answers`);
      }
    }
    // The create operation keeps the interface's trailing slash and is not listed a second time without it.
    assert.equal(doc.paths['/api/v1/platform-customers']?.post, undefined);
    assert.equal(doc.paths['/health']?.get?.security, undefined, '/health needs no key');
    // Every reference resolves, or the interactive reference breaks.
    const refs = new Set<string>();
    JSON.stringify(doc, (key, value) => {
      if (key === '$ref') refs.add(value as string);
      return value;
    });
    for (const ref of refs) {
      const target = ref.replace(/^#\//, '').split('/').reduce((node: any, part) => node?.[part], doc);
      assert.ok(target, `unresolved ${ref}`);
    }
  });

  test('/docs answers with an HTML page', async () => {
    let response = await h.request('GET', '/docs', { key: null });
    if (response.status >= 300 && response.status < 400) {
      response = await h.request('GET', new URL(String(response.headers.location), 'http://localhost/docs').pathname, { key: null });
    }
    assert.equal(response.status, 200);
    assert.match(String(response.headers['content-type']), /^text\/html/);
    assert.match(response.text, /<html/i);
    // Its own scripts and styles only, and never in a frame (clickjacking).
    const policy = String(response.headers['content-security-policy']);
    assert.match(policy, /frame-ancestors 'none'/);
    assert.match(policy, /default-src 'self'/);
    assert.match(policy, /script-src 'self'/);
    assert.doesNotMatch(policy, /unsafe-inline|unsafe-eval|upgrade-insecure-requests/);
  });

  test('x-request-id: a sane incoming one is kept, anything else is replaced, and problems carry it', async () => {
    const kept = await h.request('GET', '/health', { key: null, headers: { 'x-request-id': 'abc-123' } });
    assert.equal(kept.headers['x-request-id'], 'abc-123');

    const generated = await h.request('GET', '/health', { key: null });
    assert.match(String(generated.headers['x-request-id']), /^[A-Za-z0-9._:-]{8,128}$/);

    for (const insane of ['has spaces in it', 'x'.repeat(300), 'semi;colon', '<script>']) {
      const response = await h.request('GET', '/api/v1/platform-customers', { key: null, headers: { 'x-request-id': insane } });
      const problem = expectProblem(response, 401, 'api_key_missing');
      assert.notEqual(response.headers['x-request-id'], insane);
      assert.match(String(response.headers['x-request-id']), /^[A-Za-z0-9._:-]{8,128}$/);
      assert.equal(problem.requestId, response.headers['x-request-id']);
    }
    const echoed = await h.request('GET', '/api/v1/platform-customers/00000000-0000-4000-8000-000000000000', { headers: { 'x-request-id': 'trace.42:a_b' } });
    assert.equal(expectProblem(echoed, 404, 'not_found').requestId, 'trace.42:a_b');
  });

  test('two requests never share a generated request id', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 5; i++) ids.add(String((await h.request('GET', '/health', { key: null })).headers['x-request-id']));
    assert.equal(ids.size, 5);
  });

  test('an unknown route under /api/v1 is a 404 problem', async () => {
    const problem = expectProblem(await h.request('GET', '/api/v1/platform-customer'), 404, 'not_found');
    assert.match(problem.detail, /GET \/api\/v1\/platform-customer\b/);
    expectProblem(await h.request('DELETE', '/api/v1/platform-customers/00000000-0000-4000-8000-000000000000/nothing'), 404, 'not_found');
    expectProblem(await h.request('GET', '/nothing-here', { key: null }), 404, 'not_found');
  });
});

/**
 * A service with a tight rate limit (1/s, burst 3), a route that fails unexpectedly, and a logger
 * that records every line at the most verbose level.
 */
for (const backend of backends()) {
  describe(`operations under a tight rate limit, with every log line kept [${backend}]`, () => {
    let service: Service;
    let sandbox: SandboxProgram;
    let drop: () => Promise<void>;
    const log = memoryLog(REDACTED_PATHS);
    const keys: { a: string; b: string; c: string } = { a: '', b: '', c: '' };

    const request = async (method: string, url: string, apiKey: string | null, body?: object): Promise<TestResponse> => {
      const response = await service.app.inject({
        method: method as 'GET',
        url,
        headers: apiKey === null ? {} : { 'x-api-key': apiKey },
        ...(body ? { payload: body } : {}),
      });
      let parsed: unknown;
      try {
        parsed = JSON.parse(response.body);
      } catch {
        parsed = undefined;
      }
      return { status: response.statusCode, headers: response.headers, body: parsed, text: response.body };
    };

    before(async () => {
      const scratch = await scratchDatabase(backend);
      drop = scratch.drop;
      sandbox = await startTestSandbox(scratch);
      const config = loadConfig({
        DATA_DIR: scratch.dataDir,
        ...(scratch.databaseUrl ? { DATABASE_URL: scratch.databaseUrl } : {}),
        AUTHORITY_URL: sandbox.url,
        RATE_LIMIT_PER_SECOND: '1',
        RATE_LIMIT_BURST: '3',
        RUN_POLLER: 'false',
      });
      service = await createService({ config, logger: log.logger });
      // Stands for any bug: an error nobody expected, whose message holds internals.
      service.app.get('/test-only/explode', async () => {
        throw new Error('connect ECONNREFUSED 10.20.30.40:5432 (user ebrc_admin, at /srv/ebrc/src/store/irms.ts:88)');
      });
      for (const name of ['a', 'b', 'c'] as const) keys[name] = (await createPlatform(service.database.db, `Platform ${name}`, SYSTEM_SOURCE)).apiKey;
    });
    after(async () => {
      await service?.close();
      await sandbox?.close();
      await drop?.();
    });

    test('after the burst a key gets 429 rate_limited with Retry-After and the RateLimit headers; other keys are unaffected', async () => {
      const started = Date.now();
      const first = await request('GET', '/api/v1/platform-customers', keys.a);
      assert.equal(first.status, 200);
      assert.equal(first.headers['ratelimit-policy'], '"per-key";q=3;w=3');
      assert.match(String(first.headers.ratelimit), /^"per-key";r=2;t=\d+$/);
      // The burst of 3, plus whatever refilled (1 a second) if this machine is slow.
      let answered = 1;
      let limited = first;
      while (answered < 20) {
        limited = await request('GET', '/api/v1/platform-customers', keys.a);
        if (limited.status !== 200) break;
        answered += 1;
      }
      const elapsedSeconds = (Date.now() - started) / 1000;
      assert.ok(answered >= 3 && answered <= 3 + Math.ceil(elapsedSeconds), `${answered} requests passed in ${elapsedSeconds} s`);
      const problem = expectProblem(limited, 429, 'rate_limited');
      assert.match(problem.detail, /retry/i);
      const retryAfter = Number(limited.headers['retry-after']);
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 3, `Retry-After ${limited.headers['retry-after']}`);
      assert.equal(limited.headers['ratelimit-policy'], '"per-key";q=3;w=3');
      assert.match(String(limited.headers.ratelimit), /^"per-key";r=0;t=\d+$/);

      const other = await request('GET', '/api/v1/platform-customers', keys.b);
      assert.equal(other.status, 200, 'another platform’s key has its own allowance');
      assert.match(String(other.headers.ratelimit), /^"per-key";r=2;/);

      // Requests without a valid key are refused before they can use up anyone's allowance.
      expectProblem(await request('GET', '/api/v1/platform-customers', null), 401, 'api_key_missing');
    });

    test('an unexpected error is a 500 internal_error that leaks nothing', async () => {
      const response = await request('GET', '/test-only/explode', null);
      const problem = expectProblem(response, 500, 'internal_error');
      for (const internal of ['ECONNREFUSED', '10.20.30.40', 'ebrc_admin', 'irms.ts', '/srv/', 'at ']) {
        assert.ok(!response.text.includes(internal), `the body leaks "${internal}": ${response.text}`);
      }
      assert.match(problem.detail, /request id/);
      assert.ok(
        log.lines.some((line) => line.includes(problem.requestId) && line.includes('ECONNREFUSED')),
        'the cause is logged with the request id, for the operator',
      );
    });

    test('no log line holds an API key or a password, even at trace level', async () => {
      const key = keys.c;
      const created = await request('POST', '/api/v1/platform-customers/', key, { name: 'Log Test', email: 'log@example.com', companyName: 'Log Test Ltd' });
      assert.equal(created.status, 201);
      const url = `/api/v1/platform-customers/${created.body.id}/check-authority-credentials`;
      const valid = await request('POST', url, key, { authorityUsername: 'demo.exporter', authorityPassword: 'Sandbox@123' });
      assert.equal(valid.status, 200, valid.text);
      const invalid = await request('POST', url, key, { authorityUsername: 'demo.exporter', authorityPassword: 'Wrong#Pass-991' });
      expectProblem(invalid, 422, 'authority_credentials_invalid');
      // Refused (over the limit by now, or else for the unknown field): the refusal is logged too.
      const refused = await request('POST', url, key, { authorityUsername: 'demo.exporter', authorityPassword: 'Sandbox@123', password: 'Other$Secret-77' });
      assert.ok([400, 429].includes(refused.status), refused.text);
      assert.ok(!refused.text.includes('Other$Secret-77') && !refused.text.includes('Sandbox@123'));
      // A well-formed key that does not exist.
      const unknownKey = 'ebrc_test_9xQ7wZg8kLmN2pQrStUvWxYzAbCdEf';
      expectProblem(await request('GET', '/api/v1/platform-customers', unknownKey), 401, 'api_key_invalid');

      for (const response of [valid, invalid]) {
        assert.ok(!response.text.includes('Sandbox@123') && !response.text.includes('Wrong#Pass-991'), 'no password in a response');
      }
      const everything = log.lines.join('\n');
      assert.ok(log.lines.length >= 20, 'the logger did record the requests');
      assert.ok(everything.includes('check-authority-credentials'), 'the credential checks were logged');
      // Nor any secret of the API credential set the sandbox issued at the check.
      const issued = await issueCredentials(sandbox.url, 'demo.exporter');
      for (const response of [valid, invalid]) {
        assert.ok(!response.text.includes(issued.clientSecret) && !response.text.includes(issued.apiKey), 'no secret of the set in a response');
      }
      for (const secret of [keys.a, keys.b, key, unknownKey, 'Sandbox@123', 'Wrong#Pass-991', 'Other$Secret-77', issued.clientSecret, issued.apiKey]) {
        const leak = log.lines.find((line) => line.includes(secret));
        assert.equal(leak, undefined, `a log line holds a secret: ${leak}`);
      }
      // Not even the random part of a key.
      for (const secret of [keys.a, keys.b, key]) assert.ok(!everything.includes(secret.slice(-16)));
    });

    test('a field problem never repeats a password it was sent', async () => {
      const created = await request('POST', '/api/v1/platform-customers/', keys.b, { name: 'Echo', email: 'echo@example.com', companyName: 'Echo Ltd' });
      assert.equal(created.status, 201);
      const response = await request('POST', `/api/v1/platform-customers/${created.body.id}/check-authority-credentials`, keys.b, {
        authorityUsername: 'demo.exporter',
        authorityPassword: 12345678,
        password: 'Leaky%Secret-55',
      });
      const problem = expectProblem(response, 400, 'validation_failed');
      assert.deepEqual(problem.errors.map((e: { path: string }) => e.path).sort(), ['/authorityPassword', '/password']);
      assert.ok(!response.text.includes('Leaky%Secret-55'));
      assert.ok(!response.text.includes('12345678'));
      assert.ok(!log.lines.some((line) => line.includes('Leaky%Secret-55')));
    });
  });
}
