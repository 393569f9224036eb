import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { postgresUrl, type TestResponse } from '../support/harness.ts';
import { assertLedgerConsistent, openRequestCount, statusFigures } from '../support/invariants.ts';
import { Random, reportFigures, runSeed, scaled } from '../support/reliability.ts';
import { startTwoServices, type ServiceName } from '../support/two-services.ts';
import { cents, lineFor, money, pushBody, sleep, usableIrms, verifiedCustomer } from '../support/workflow.ts';

/**
 * Two service instances (each its own pool, pg-boss and poller) on one PostgreSQL database, as contract 8 allows,
 * both talking to one sandbox authority program over the wire protocol, under N concurrent pushes split between them
 * against a handful of IRMs, each push mapping a share such that only a few fit: no IRM is ever mapped beyond its
 * amount, and no request is pushed or processed twice.
 */

const PUSHES = scaled(100, 1_000);
const SPREAD_MS = scaled(1_500, 4_000);
const IRM_COUNT = 4;
/** At most this many shares fit in an IRM. */
const SHARES_PER_IRM = 3n;
const SETTLE_TIMEOUT_MS = scaled(90_000, 300_000);

describe('two services on one PostgreSQL database under concurrent pushes', { skip: postgresUrl() ? false : 'no PostgreSQL for the tests' }, () => {
  test('no over-mapping, no request pushed or processed twice', async (t) => {
    const seed = runSeed();
    t.diagnostic(`seed ${seed}`);
    const random = new Random(seed);
    const pushes = new Map<string, number>();
    const statusCalls: Record<ServiceName, number> = { A: 0, B: 0 };
    const two = await startTwoServices((name, adapter) => ({
      ...adapter,
      push(credentials, message, options) {
        pushes.set(message.requestId, (pushes.get(message.requestId) ?? 0) + 1);
        return adapter.push(credentials, message, options);
      },
      getStatus(credentials, requestId, options) {
        statusCalls[name] += 1;
        return adapter.getStatus(credentials, requestId, options);
      },
    }));
    const { services, problems, via } = two;

    try {
      const customerId = await verifiedCustomer(via('A'), 'scale-out@example.com');
      const irms = await usableIrms(via('B'), customerId, IRM_COUNT);
      const plans = irms.map((irm) => {
        const total = cents(irm.irmAvailableAmt);
        const share = total / SHARES_PER_IRM;
        assert.ok(share >= SHARES_PER_IRM, `IRM ${irm.irmNumber} is large enough to share`);
        return { irm, total, share };
      });

      // PUSHES clients at once, half on each service, each starting at a random moment within SPREAD_MS: read the
      // IRM's available amount, push one share claiming it. Many read the same balance at once; one may win it, the
      // rest are refused; once fewer than a share is left, every push is refused.
      const bodies: { plan: (typeof plans)[number]; via: 'A' | 'B' }[] = [];
      const answers: TestResponse[] = [];
      let inFlight = 0;
      let peakInFlight = 0;
      const started = Date.now();
      await Promise.all(
        Array.from({ length: PUSHES }, async (_, index) => {
          const name = index % 2 === 0 ? ('A' as const) : ('B' as const);
          const plan = plans[index % plans.length]!;
          bodies[index] = { plan, via: name };
          await sleep(random.int(0, SPREAD_MS));
          const read = await via(name).request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: customerId, irmNumber: plan.irm.irmNumber }, body: {} });
          assert.equal(read.status, 200, read.text);
          const body = pushBody(customerId, [
            lineFor(plan.irm, 1, money(plan.share), {
              irmRemitAmtFCC: read.body.data[0].irmAvailableAmt,
              sbCumInvoiceNumber: String(100_000 + index),
              billNo: `SCALE${index}`,
            }),
          ]);
          peakInFlight = Math.max(peakInFlight, ++inFlight);
          answers[index] = await via(name).request('POST', '/api/v1/genebrc/push-irm', { body });
          inFlight -= 1;
        }),
      );
      const pushMs = Date.now() - started;

      const refusedCodes: Record<string, number> = {};
      const winsPerIrm = new Map<string, number>();
      for (const [index, answer] of answers.entries()) {
        assert.equal(answer.status, 200, `${answer.text}\n${problems.join('\n')}`);
        if (answer.body.ackStatus === 'Validated') {
          const irmNumber = bodies[index]!.plan.irm.irmNumber as string;
          winsPerIrm.set(irmNumber, (winsPerIrm.get(irmNumber) ?? 0) + 1);
        } else {
          assert.equal(answer.body.ackStatus, 'Failed');
          for (const error of answer.body.errorDetails) {
            assert.ok(['ERR23', 'ERR38'].includes(error.code), answer.text);
            refusedCodes[error.code] = (refusedCodes[error.code] ?? 0) + 1;
          }
        }
      }
      assert.equal(new Set(answers.map((answer) => answer.body.requestId)).size, PUSHES, 'one request per push');
      for (const { irm, total, share } of plans) {
        const wins = BigInt(winsPerIrm.get(irm.irmNumber) ?? 0);
        assert.ok(wins >= 1n, `IRM ${irm.irmNumber}: some push won it`);
        assert.ok(wins * share <= total, `IRM ${irm.irmNumber}: ${wins} shares of ${share} mapped out of ${total}`);
      }

      // Both pollers finish what both services acknowledged.
      const settleStarted = Date.now();
      while ((await openRequestCount(services.A.database)) > 0) {
        if (Date.now() - settleStarted > SETTLE_TIMEOUT_MS) assert.fail(`requests still open after ${SETTLE_TIMEOUT_MS} ms`);
        await sleep(250);
      }
      const settleMs = Date.now() - settleStarted;
      const acknowledged = answers
        .map((answer, index) => ({ answer, body: bodies[index]! }))
        .filter(({ answer }) => answer.body.ackStatus === 'Validated')
        .map(({ answer, body }) => ({
          requestId: answer.body.requestId as string,
          authorityAckId: answer.body.authorityAckId as string,
          lines: [{ serialNo: 1, irmNumber: body.plan.irm.irmNumber as string, mappedCents: body.plan.share }],
        }));
      const ledger = await assertLedgerConsistent(services.A.database, two.sandbox.database, { acknowledged, exactEbrcSequence: true });
      assert.deepEqual([...pushes].filter(([, n]) => n !== 1), [], 'each request reached the authority once');
      assert.equal(ledger.generatedLines, acknowledged.length, 'each acknowledged line became one eBRC');
      assert.deepEqual(problems.filter((line) => /"level":(50|60)/.test(line)), [], 'neither service logged an error');

      reportFigures(t, 'scale-out [postgres, 2 services]', {
        seed,
        pushes: PUSHES,
        'spread over ms': SPREAD_MS,
        'peak pushes in flight': peakInFlight,
        'IRMs mapped to capacity': plans.filter(({ irm }) => BigInt(winsPerIrm.get(irm.irmNumber) ?? 0) === SHARES_PER_IRM).length,
        'via A / via B': `${bodies.filter((b) => b.via === 'A').length} / ${bodies.filter((b) => b.via === 'B').length}`,
        IRMs: IRM_COUNT,
        'shares that fit per IRM': Number(SHARES_PER_IRM),
        'validated per IRM': [...winsPerIrm.values()].join(' '),
        'refused (ERR23/ERR38 errors)': statusFigures(refusedCodes),
        'over-mapped IRMs': 0,
        'requests pushed to the authority more than once': 0,
        'status calls by poller A / B': `${statusCalls.A} / ${statusCalls.B}`,
        'final statuses': statusFigures(ledger.byStatus),
        'eBRC numbers (one per acknowledged line)': ledger.generatedLines,
        'warnings logged': problems.length,
        'push ms': pushMs,
        'settle ms': settleMs,
      });
    } finally {
      await two.close();
    }
  });
});
