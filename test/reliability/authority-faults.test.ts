import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { backends, startHarness } from '../support/harness.ts';
import { assertLedgerConsistent, openRequestCount, statusFigures } from '../support/invariants.ts';
import { PushStream } from '../support/push-stream.ts';
import { mapConcurrently, Random, reportFigures, runSeed, scaled } from '../support/reliability.ts';
import { firstRefresh, sleep, usableIrms, verifiedCustomer } from '../support/workflow.ts';
import { faultyAuthority, type FaultyAuthority } from './faulty-authority.ts';

/**
 * A stream of pushes and status polls through an authority that fails at random, from a seeded schedule injected
 * around the service's adapter (which reaches the sandbox program over the wire protocol): outages, calls that hang
 * past the deadline, slow answers, pushes that arrive after the deadline, and answers lost after the authority did
 * the work; and, beside that schedule, a few pushes that the sandbox program itself fails over HTTP. Targeted cases
 * of each fault are in test/services/authority-faults.test.ts; this is the same under a random mix, with the whole
 * ledger, ours and the sandbox's, checked at the end.
 */

const TIMEOUT_MS = 500;
const PUSHES = scaled(30, 300);
const CONCURRENCY = 4;
/** Lines whose billNo makes the sandbox program fail the push at the HTTP boundary (503, no answer, answer lost). */
const WIRE_FAULT_RATE = 0.05;
// A held request whose status asks keep meeting injected faults backs off up to a minute between asks (normally 30-60 s).
const SETTLE_TIMEOUT_MS = scaled(180_000, 300_000);

// The two backends run side by side: most of the time is spent waiting for the poller's backoff.
describe('authority faults under a stream of pushes', { concurrency: true }, () => {
  for (const backend of backends()) {
    test(`clients see only 200, 502 and 504; every request settles; nothing is duplicated or left reserved [${backend}]`, async (t) => {
      const seed = runSeed();
      t.diagnostic(`seed ${seed} (RELIABILITY_SEED=${seed} replays the schedule)`);
      let faulty: FaultyAuthority | undefined;
      const h = await startHarness(backend, {
        env: { RUN_POLLER: 'true', POLL_INTERVAL_SECONDS: '1', AUTHORITY_TIMEOUT_MS: String(TIMEOUT_MS) },
        sandbox: { processingDelayMs: 200 },
        authority: (adapter) => {
          faulty = faultyAuthority(adapter, {
            seed,
            timeoutMs: TIMEOUT_MS,
            push: { unavailable: 0.1, hang: 0.08, slow: 0.1, late: 0.06, dropped: 0.1 },
            getStatus: { unavailable: 0.12, hang: 0.05, slow: 0.1, dropped: 0.08 },
          });
          return faulty;
        },
      });
      try {
        const random = new Random(seed);
        const customerId = await verifiedCustomer(h, `faults-${backend}@example.com`);
        await firstRefresh(h, customerId);
        const irms = await usableIrms(h, customerId, scaled(40, 240));
        // Beside the injected schedule, a few lines make the sandbox itself fail the push over HTTP.
        const stream = new PushStream(customerId, irms, random, { maxLines: 2, failLineRate: 0.1, wireFaultRate: WIRE_FAULT_RATE });
        faulty!.arm();

        const started = Date.now();
        await mapConcurrently(Array.from({ length: PUSHES }, (_, i) => i), CONCURRENCY, async () => {
          if (!(await stream.pushOnce(h))) return;
          await stream.pollOnce(h);
        });
        const streamMs = Date.now() - started;

        // The poller keeps asking through the same faults until nothing is open.
        const settleStarted = Date.now();
        while ((await openRequestCount(h.database)) > 0) {
          if (Date.now() - settleStarted > SETTLE_TIMEOUT_MS) assert.fail(`${await openRequestCount(h.database)} requests still open after ${SETTLE_TIMEOUT_MS} ms`);
          await sleep(250);
        }
        const settleMs = Date.now() - settleStarted;
        faulty!.disarm();

        assert.deepEqual(stream.unexpected, [], 'a push answers 200, or 502/504 naming the held request; a status call always 200');
        assert.equal(stream.counts.noAnswer, 0);
        assert.equal(stream.counts.statusNoAnswer, 0);
        const ledger = await assertLedgerConsistent(h.database, h.sandbox.database, { acknowledged: stream.acknowledged, exactEbrcSequence: true });

        // No duplicate at the authority: the service pushed each request at most once, whatever the faults.
        const duplicated = [...faulty!.pushesByRequestId].filter(([, n]) => n > 1);
        assert.deepEqual(duplicated, [], 'no request pushed twice');
        // A 502/504 request ended FAILED (never received: amounts released, as the ledger shows) or was processed.
        const finals = await h.database.db.selectFrom('genebrc_requests').select(['request_id', 'status']).execute();
        const finalOf = new Map(finals.map((row) => [row.request_id, row.status]));
        const faultedOutcomes: Record<string, number> = {};
        for (const { requestId } of stream.faulted) {
          const status = finalOf.get(requestId);
          assert.ok(status !== undefined, `${requestId} named by a 502/504 is stored`);
          faultedOutcomes[status] = (faultedOutcomes[status] ?? 0) + 1;
        }
        assert.ok(PUSHES < 20 || stream.counts.unavailable + stream.counts.timeouts > 0, 'the schedule did inject faults the client saw');

        const injected = (method: string) => Object.entries(faulty!.injected[method] ?? {}).map(([k, v]) => `${k}=${v}`).join(' ');
        reportFigures(t, `authority faults [${backend}]`, {
          seed,
          pushes: stream.counts.pushes,
          validated: stream.counts.validated,
          'failed acknowledgements': stream.counts.failedAcks,
          '502 authority_unavailable': stream.counts.unavailable,
          '504 authority_timeout': stream.counts.timeouts,
          'status polls (all 200)': stream.counts.statusAnswered,
          'faults on push': injected('push'),
          'faults on getStatus': injected('getStatus'),
          'lines failing at the HTTP boundary (sandbox billNo)': statusFigures(stream.wireFaults),
          'failures of the adapter itself on push': statusFigures(faulty!.adapterFailures.push ?? {}),
          'failures of the adapter itself on getStatus': statusFigures(faulty!.adapterFailures.getStatus ?? {}),
          'outcome of the 502/504 requests': statusFigures(faultedOutcomes),
          'final statuses': statusFigures(ledger.byStatus),
          'lines generated': ledger.generatedLines,
          'requests at the authority (each once)': ledger.authorityRequests,
          'unexpected answers (5xx other than 502/504 included)': stream.unexpected.length,
          'stream ms': streamMs,
          'settle ms (poller, through the faults)': settleMs,
        });
      } finally {
        await h.stop();
      }
    });
  }
});
