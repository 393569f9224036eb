import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Authority } from '../../src/authority/authority.ts';
import { REDACTED_PATHS } from '../../src/http/app.ts';
import { backends, expectProblem, injectRequest, memoryLog, startHarness } from '../support/harness.ts';
import { firstRefresh, lineFor, pushBody, sleep, usableIrms, verifiedCustomer } from '../support/workflow.ts';

/**
 * The drain, in process: while a push is held at the authority, close() answers readiness 503 and refuses new
 * requests with the problem document, serves /health and /metrics; and SHUTDOWN_TIMEOUT_SECONDS bounds the wait.
 * (test/reliability/drain.test.ts sends SIGTERM to a real process during a burst of pushes.)
 */

for (const backend of backends()) {
  describe(`drain [${backend}]`, () => {
    test('while a push is in flight: /ready 503, /health and /metrics 200, new requests 503 shutting_down; the timeout bounds the wait', async () => {
      let reached: () => void = () => undefined;
      const pushReached = new Promise<void>((resolve) => (reached = resolve));
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => (release = resolve));
      let holding = false;
      const hold = (adapter: Authority): Authority => ({
        ...adapter,
        push: async (...args) => {
          if (holding) {
            reached();
            await held;
          }
          return adapter.push(...args);
        },
      });
      const log = memoryLog(REDACTED_PATHS);
      const h = await startHarness(backend, { env: { SHUTDOWN_TIMEOUT_SECONDS: '2' }, authority: hold, logger: log.logger });
      try {
        const customerId = await verifiedCustomer(h, `drain-${backend}@example.com`);
        await firstRefresh(h, customerId);
        const [irm] = await usableIrms(h, customerId, 1);
        holding = true;
        const push = h.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(customerId, [lineFor(irm, 1, 1)]) });
        await pushReached;

        const closeStarted = Date.now();
        const closing = h.service.close();
        const ready = await injectRequest(h.service, 'GET', '/ready');
        assert.equal(ready.status, 503);
        assert.deepEqual(ready.body, { status: 'unavailable' });
        assert.equal((await injectRequest(h.service, 'GET', '/health')).status, 200);
        assert.equal((await injectRequest(h.service, 'GET', '/metrics')).status, 200);
        const refused = await h.request('POST', '/api/v1/platform-customers/', { body: { name: 'Late', email: 'late@example.com', companyName: 'Late Exports' } });
        const problem = expectProblem(refused, 503, 'shutting_down');
        assert.equal(refused.headers['retry-after'], '2');
        assert.equal(refused.headers.connection, 'close');
        assert.match(problem.detail, /shutting down/);

        await closing;
        const waited = Date.now() - closeStarted;
        // 2 s for the request held at the authority, then the job queue's stop (at least 1 s), the database's close.
        assert.ok(waited >= 1_900 && waited < 15_000, `close took ${waited} ms`);
        assert.ok(log.lines.some((line) => line.includes('SHUTDOWN_TIMEOUT_SECONDS passed with requests in flight')), 'the cut is logged');
        release();
        await push.catch(() => undefined);
        await sleep(50);
      } finally {
        release();
        await h.stop();
      }
    });
  });
}
