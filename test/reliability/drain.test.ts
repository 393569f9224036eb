import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { gatewayApiKey, gatewayEnv, httpClient, startGateway, stopGateway, waitUntilReady, type Running } from '../support/gateway.ts';
import { backends, scratchDatabase, startTestSandbox } from '../support/harness.ts';
import { reportFigures } from '../support/reliability.ts';
import { firstRefresh, irmNow, lineFor, pushBody, sleep, usableIrms, verifiedCustomer, waitForFinal } from '../support/workflow.ts';

/**
 * A clean drain: `node src/main.ts` gets SIGTERM in the middle of a burst of pushes (the sandbox holds each push's
 * answer 3 s, so some are always in flight). Readiness turns 503 while they finish; new requests are refused with
 * 503 `shutting_down`; the process exits 0. Then, started again: every push acknowledged is there and completes, and
 * every refused push changed nothing.
 */

const WORKERS = 6;
const IRMS = 60;
const PUSH_ANSWER_DELAY_MS = 3_000;

type Outcome = { irm: any; sentAt: number; answeredAt: number; status: number | 'no answer'; body: any; headers: Record<string, string> };

for (const backend of backends()) {
  describe(`drain on SIGTERM [${backend}]`, () => {
    test('in-flight pushes finish, new requests get 503 shutting_down, readiness 503 first, exit 0; nothing lost or half-stored', async (t) => {
      const scratch = await scratchDatabase(backend);
      const sandbox = await startTestSandbox(scratch, { processingDelayMs: 200, pushAnswerDelayMs: PUSH_ANSWER_DELAY_MS });
      const env = gatewayEnv(scratch, sandbox.url, { SHUTDOWN_TIMEOUT_SECONDS: '60', RATE_LIMIT_PER_SECOND: '100000', RATE_LIMIT_BURST: '100000' });
      let gateway: Running | undefined;
      try {
        gateway = startGateway(env);
        const base = await waitUntilReady(gateway);
        const apiKey = await gatewayApiKey(gateway, scratch, 'Drain platform');
        const client = httpClient(base, apiKey, 60_000);
        const customerId = await verifiedCustomer(client, `drain-${backend}@example.com`);
        await firstRefresh(client, customerId);
        const irms = await usableIrms(client, customerId, IRMS);

        const outcomes: Outcome[] = [];
        const queue = [...irms];
        let refused = false;
        let invoice = 0;
        const workers = Array.from({ length: WORKERS }, async () => {
          while (!refused && queue.length > 0) {
            const irm = queue.shift()!;
            invoice += 1;
            const line = lineFor(irm, 1, 1, { sbCumInvoiceNumber: String(5_000 + invoice), billNo: `D${invoice}` });
            const sentAt = Date.now();
            try {
              const answer = await client.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(customerId, [line]) });
              outcomes.push({ irm, sentAt, answeredAt: Date.now(), status: answer.status, body: answer.body, headers: answer.headers as Record<string, string> });
              if (answer.status !== 200) refused = true;
            } catch {
              outcomes.push({ irm, sentAt, answeredAt: Date.now(), status: 'no answer', body: undefined, headers: {} });
              refused = true;
            }
          }
        });
        // Two rounds acknowledged, then SIGTERM while the third is held at the authority.
        while (outcomes.length < 2 * WORKERS) await sleep(50);
        await sleep(500);
        const sigtermAt = Date.now();
        gateway.child.kill('SIGTERM');

        // Readiness says 503 while the pushes in flight finish; a new request is refused as a problem document.
        const readiness: (number | 'no answer')[] = [];
        let refusedProblem: { status: number; body: any; headers: Record<string, unknown> } | undefined;
        for (let attempt = 0; attempt < 100; attempt++) {
          const ready = await fetch(`${base}/ready`).then((response) => response.status, () => 'no answer' as const);
          readiness.push(ready);
          if (ready !== 200) break;
          await sleep(20);
        }
        if (readiness.at(-1) === 503) {
          const health = await fetch(`${base}/health`).then((response) => response.status, () => 'no answer' as const);
          assert.ok(health === 200 || health === 'no answer', `/health while draining answered ${health}`);
          refusedProblem = await client.request('GET', '/api/v1/platform-customers').catch(() => undefined);
        }
        const [code, signal] = (await gateway.exited) as [number | null, string | null];
        const exitedAt = Date.now();
        await Promise.all(workers);
        const output = gateway.output();
        assert.equal(code, 0, `exit ${code} ${signal}: ${output.slice(-3_000)}`);
        assert.match(output, /"msg":"shutting down"/);
        assert.doesNotMatch(output, /cutting them off/);

        assert.equal(readiness.at(-1), 503, `readiness turned 503 before the listener closed: ${readiness.join(', ')}`);
        assert.ok(refusedProblem, 'a request during the drain was answered');
        assert.equal(refusedProblem.status, 503);
        assert.equal(refusedProblem.body.code, 'shutting_down');
        assert.equal(refusedProblem.body.status, 503);
        assert.equal(refusedProblem.body.requestId, refusedProblem.headers['x-request-id']);
        assert.match(String(refusedProblem.headers['content-type']), /^application\/problem\+json/);
        assert.equal(refusedProblem.headers['retry-after'], '2');
        assert.equal(refusedProblem.headers.connection, 'close');

        const acknowledged = outcomes.filter((outcome) => outcome.status === 200);
        const inFlight = acknowledged.filter((outcome) => outcome.sentAt < sigtermAt && outcome.answeredAt > sigtermAt);
        const refusals = outcomes.filter((outcome) => outcome.status === 503);
        for (const outcome of outcomes) {
          if (outcome.status === 200) assert.equal(outcome.body.ackStatus, 'Validated', JSON.stringify(outcome.body));
          else if (outcome.status === 503) assert.equal(outcome.body?.code, 'shutting_down', JSON.stringify(outcome.body));
          else if (outcome.status === 'no answer') assert.ok(outcome.sentAt > sigtermAt, 'only a push sent after SIGTERM may find the listener closed');
          else assert.fail(`a push answered ${outcome.status}: ${JSON.stringify(outcome.body)}`);
        }
        assert.ok(inFlight.length >= 1, 'pushes were in flight at SIGTERM and were answered after it');
        assert.ok(outcomes.filter((outcome) => outcome.sentAt < sigtermAt).every((outcome) => outcome.status === 200 || outcome.status === 503));

        // Started again on the same data: every acknowledged push is there and completes; every refused one changed nothing.
        gateway = startGateway(env);
        const again = httpClient(await waitUntilReady(gateway), apiKey, 60_000);
        for (const outcome of acknowledged) {
          const final = await waitForFinal(again, customerId, outcome.body.requestId, 60_000);
          assert.equal(final.status, 'PROCESSED', JSON.stringify(final));
        }
        for (const outcome of outcomes.filter((o) => o.status !== 200)) {
          const irm = await irmNow(again, customerId, outcome.irm.irmNumber);
          assert.equal(irm.irmAvailableAmt, outcome.irm.irmAvailableAmt, `refused push on ${outcome.irm.irmNumber} changed nothing`);
        }
        reportFigures(t, `drain [${backend}]`, {
          pushes: outcomes.length,
          acknowledged: acknowledged.length,
          inFlightAtSigterm: inFlight.length,
          refused503: refusals.length,
          noAnswer: outcomes.filter((outcome) => outcome.status === 'no answer').length,
          sigtermToExitMs: exitedAt - sigtermAt,
        });
      } finally {
        await stopGateway(gateway);
        await sandbox.close();
        await scratch.drop();
      }
    });
  });
}
