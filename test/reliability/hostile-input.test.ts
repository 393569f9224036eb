import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { REDACTED_PATHS } from '../../src/http/app.ts';
import { backends, expectProblem, injectRaw, memoryLog, startHarness } from '../support/harness.ts';
import { authorityCredentialSecrets } from '../support/invariants.ts';
import { mapConcurrently, reportFigures, runSeed, scaled } from '../support/reliability.ts';
import { lineFor, pushBody, usableIrms, verifiedCustomer } from '../support/workflow.ts';
import { hostileRequest, type HostileRequest } from './hostile-requests.ts';

/**
 * Thousands of generated malformed requests across every route (see hostile-requests.ts), through the app as it
 * runs: none may answer 5xx, every refusal is an application/problem+json document with the status its code has,
 * the service stays ready, and no answer or log line of the whole run holds an API key, a password, a secret of an
 * authority API credential set or the key that encrypts the stored credentials.
 */

const REQUESTS = scaled(1_000, 10_000);
const CONCURRENCY = 4;

const WRONG_PASSWORD = 'Wrong#Fuzz-1';

function describeRequest(request: HostileRequest): string {
  const cut = (s: string) => (s.length > 300 ? `${s.slice(0, 300)}… (${s.length} characters)` : s);
  return `${request.kind}\n  ${request.method} ${cut(request.url)}\n  headers ${cut(JSON.stringify(request.headers))}\n  body ${cut(JSON.stringify(request.payload ?? null))}`;
}

for (const backend of backends()) {
  describe(`hostile input on every route [${backend}]`, () => {
    const encryptionKey = randomBytes(32).toString('base64');
    const log = memoryLog(REDACTED_PATHS);
    let h: Awaited<ReturnType<typeof startHarness>>;
    before(async () => {
      h = await startHarness(backend, { env: { ENCRYPTION_KEY: encryptionKey }, logger: log.logger });
    });
    after(async () => {
      await h?.stop();
    });

    test('inputs that once answered 500 or another shape than a problem are 400 problems', async () => {
      const customerId = await verifiedCustomer(h, `regressions-${backend}@example.com`);
      const [irm] = await usableIrms(h, customerId, 1);
      const raw = (method: string, url: string, payload?: string) =>
        injectRaw(h.service, method, url, { key: h.platformA.apiKey, ...(payload ? { payload } : {}) });
      const push = JSON.stringify(pushBody(customerId, [lineFor(irm, 1, 1)]));
      const infinite = expectProblem(await raw('POST', '/api/v1/genebrc/push-irm', push.replace('"recordResCount":1', '"recordResCount":1e999')), 400, 'validation_failed');
      assert.deepEqual(infinite.errors.map((e: any) => e.path), ['/recordResCount']);
      expectProblem(await raw('POST', '/api/v1/genebrc/push-irm', push.replace('"recordResCount":1', '"recordResCount":3000000000')), 400, 'validation_failed');
      for (const page of ['1e400', '100000000000000000000', '1000001']) {
        expectProblem(await raw('GET', `/api/v1/platform-customers?page=${page}`), 400, 'validation_failed');
        expectProblem(await raw('GET', `/api/v1/genebrc?platformCustomerId=${customerId}&page=${page}`), 400, 'validation_failed');
      }
      const nul = expectProblem(
        await h.request('POST', '/api/v1/platform-customers/', { body: { name: 'a\u0000b', email: `nul-${backend}@example.com`, companyName: 'C' } }),
        400,
        'validation_failed',
      );
      assert.deepEqual(nul.errors, [{ path: '/name', code: 'invalid_character', message: 'name must not contain the NUL character or an unpaired surrogate.' }]);
      expectProblem(await h.request('GET', '/api/v1/platform-customers', { query: { search: 'x\u0000' } }), 400, 'validation_failed');
      const surrogate = expectProblem(
        await raw('POST', '/api/v1/genebrc/push-irm', push.replace('"billNo":"B1"', '"billNo":"B\\ud800"')),
        400,
        'validation_failed',
      );
      assert.deepEqual(surrogate.errors.map((e: any) => [e.path, e.code]), [['/ebrcBulkGenDtos/0/billNo', 'invalid_character']]);
      for (const id of ['x'.repeat(150), 'x'.repeat(5_000), '%E0%A4%A', '%zz']) {
        expectProblem(await raw('GET', `/api/v1/platform-customers/${id}`), 400, 'validation_failed');
      }
      const listed = await h.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: customerId } });
      assert.deepEqual(listed.body, [], 'none of them stored anything');
    });

    test(`${REQUESTS} generated malformed requests: no 5xx, every refusal problem+json, the service healthy afterwards`, async (t) => {
      const seed = runSeed();
      t.diagnostic(`seed ${seed} (RELIABILITY_SEED=${seed} regenerates the same requests)`);
      const customerId = await verifiedCustomer(h, `hostile-${backend}@example.com`);
      const unverified = await h.request('POST', '/api/v1/platform-customers/', { body: { name: 'U', email: `unverified-${backend}@example.com`, companyName: 'U' } });
      const [a, b] = await usableIrms(h, customerId, 2);
      const template = pushBody(customerId, [lineFor(a, 1, 1.25), lineFor(b, 2, 2.5, { billNo: 'SANDBOX-FAIL' })]);
      const pushed = await h.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(customerId, [lineFor(a, 1, 0.5)]) });
      assert.equal(pushed.body?.ackStatus, 'Validated', pushed.text);
      const templates = {
        apiKey: h.platformA.apiKey,
        customerId,
        unverifiedCustomerId: unverified.body.id as string,
        requestId: pushed.body.requestId as string,
        pushBody: template,
      };

      const requests = fc.sample(hostileRequest(templates), { seed, numRuns: REQUESTS });
      const statuses: Record<string, number> = {};
      const failures: string[] = [];
      // The API credential sets the sandbox issues are secrets as much as the portal password is.
      const secrets = [h.platformA.apiKey, h.platformB.apiKey, 'Sandbox@123', WRONG_PASSWORD, encryptionKey, ...(await authorityCredentialSecrets(h.sandbox.database))];
      const acceptedByRoute: Record<string, number> = {};
      let biggest = 0;
      const started = Date.now();
      await mapConcurrently(requests, CONCURRENCY, async (request) => {
        biggest = Math.max(biggest, request.payload?.length ?? 0);
        let response;
        try {
          response = await h.service.app.inject({
            method: request.method as 'GET',
            url: request.url,
            headers: request.headers,
            ...(request.payload !== undefined ? { payload: request.payload } : {}),
          });
        } catch (error) {
          failures.push(`threw ${(error as Error).message}: ${describeRequest(request)}`);
          return;
        }
        const status = response.statusCode;
        statuses[status] = (statuses[status] ?? 0) + 1;
        const problem = (): string | undefined => {
          if (status >= 500) return `answered ${status}`;
          if (status < 400) return undefined;
          if (!String(response.headers['content-type']).startsWith('application/problem+json')) return `${status} is not problem+json`;
          // A HEAD answer has the headers of the GET answer and no body.
          if (request.method === 'HEAD') return response.body === '' ? undefined : `${status} HEAD answer with a body`;
          let body: any;
          try {
            body = JSON.parse(response.body);
          } catch {
            return `${status} with a body that is not JSON`;
          }
          if (body.status !== status || typeof body.code !== 'string' || typeof body.detail !== 'string' || body.requestId !== response.headers['x-request-id']) {
            return `${status} problem document incomplete`;
          }
          return undefined;
        };
        const wrong = problem();
        if (wrong) failures.push(`${wrong}: ${describeRequest(request)}\n  answer ${response.body.slice(0, 500)}`);
        if (status < 400) {
          const route = request.kind.split(';')[0]!;
          acceptedByRoute[route] = (acceptedByRoute[route] ?? 0) + 1;
        }
        const leaked = secrets.find((secret) => response.body.includes(secret));
        if (leaked) failures.push(`the answer holds a secret (${leaked.slice(0, 12)}…): ${describeRequest(request)}`);
      });
      const elapsedMs = Date.now() - started;

      assert.deepEqual(failures.slice(0, 10), [], `${failures.length} of ${REQUESTS} requests were answered wrongly`);
      for (const path of ['/health', '/ready']) {
        const after = await h.request('GET', path, { key: null });
        assert.equal(after.status, 200, `${path} after the run: ${after.text}`);
      }
      const list = await h.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: customerId } });
      assert.equal(list.status, 200, 'the API still answers');
      const leak = log.lines.find((line) => secrets.some((secret) => line.includes(secret)));
      assert.equal(leak, undefined, `a log line holds a secret: ${leak?.slice(0, 300)}`);
      assert.ok(log.lines.length >= REQUESTS, 'every request was logged');

      const fiveHundreds = Object.entries(statuses).filter(([status]) => Number(status) >= 500).reduce((n, [, count]) => n + count, 0);
      reportFigures(t, `hostile input [${backend}]`, {
        seed,
        'requests generated and sent': REQUESTS,
        'answers by status': Object.entries(statuses).map(([status, n]) => `${status}=${n}`).join(' '),
        '5xx answers': fiveHundreds,
        'refusals that were not problem+json': 0,
        'accepted (mutations that left the request valid), by route': Object.entries(acceptedByRoute).map(([route, n]) => `${route}=${n}`).join(', '),
        'largest body (characters)': biggest,
        'log lines scanned for secrets': log.lines.length,
        'secrets found in answers or logs': 0,
        'elapsed ms': elapsedMs,
      });
    });
  });
}
