import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { openDatabase } from '../../src/store/database.ts';
import { backends, type Backend } from '../support/harness.ts';
import { killRun } from '../support/kill-run.ts';
import { assertLedgerConsistent, authorityCredentialSecrets, statusFigures } from '../support/invariants.ts';
import { PushStream } from '../support/push-stream.ts';
import { reportFigures, scaled } from '../support/reliability.ts';
import { firstRefresh, sleep, usableIrms, verifiedCustomer } from '../support/workflow.ts';

/**
 * `node src/main.ts` killed with SIGKILL at random moments of a stream of pushes and status polls, then started
 * again on the same data, over and over; then left to run with its poller until nothing is open. The sandbox authority
 * program it talks to runs in this process and is never killed. Checked directly in the service's database and the
 * sandbox's storage afterwards: every push acknowledged to the client is there with all its lines and was processed;
 * every request reached a final state; every IRM adds up, here and at the authority; each eBRC number was drawn once.
 */

const KILLS = scaled(2, 25);
const WORKERS = 4;
const IRMS = scaled(60, 400);
const SETTLE_TIMEOUT_MS = scaled(180_000, 300_000);

async function crashRun(backend: Backend, t: TestContext): Promise<void> {
  const options = { platformName: 'Crash platform', env: { AUTHORITY_TIMEOUT_MS: '2000' } };
  await killRun(backend, t, options, async ({ seed, random, scratch, sandbox, env, service }) => {
    const client = service.client;
    const customerId = await verifiedCustomer(client, `crash-${backend}@example.com`);
    await firstRefresh(client, customerId);
    const stream = new PushStream(customerId, await usableIrms(client, customerId, IRMS), random, { maxLines: 3, failLineRate: 0.1 });

    const killsDuringStream = await service.pushThroughKills(stream, { kills: KILLS, workers: WORKERS });

    // No more kills: the poller alone brings every open request to a final state.
    const settleStarted = Date.now();
    for (;;) {
      const open = await client.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: customerId, status: 'PENDING', limit: 1 } });
      assert.equal(open.status, 200, open.text);
      if (open.headers['x-total-count'] === '0') break;
      if (Date.now() - settleStarted > SETTLE_TIMEOUT_MS) assert.fail(`${open.headers['x-total-count']} requests still open after ${SETTLE_TIMEOUT_MS} ms`);
      await sleep(500);
    }
    const settleMs = Date.now() - settleStarted;
    await service.stop();

    assert.deepEqual(stream.unexpected, [], 'every answer the client got was one the contract allows');
    const database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir });
    // The authority never crashed, so its eBRC sequence has no gap: exactly one number per generated line.
    const ledger = await assertLedgerConsistent(database, sandbox.database, { acknowledged: stream.acknowledged, exactEbrcSequence: true })
      .then(async (figures) => {
        // Each push has its own invoice numbers: a push stored twice (a retry that ran committed work again) shows here.
        const twice = await database.executor.executeSql(
          'select sb_cum_invoice_number from genebrc_request_lines group by sb_cum_invoice_number having count(distinct request_id) > 1',
        );
        assert.deepEqual((twice as { rows: unknown[] }).rows, [], 'no push is stored twice');
        return figures;
      })
      .finally(() => database.close());

    // The logs of every start: no secret, and no error the service did not expect.
    const logs = service.logs();
    assert.ok(!logs.includes('Sandbox@123'), 'no authority password in any log');
    for (const secret of await authorityCredentialSecrets(sandbox.database)) assert.ok(!logs.includes(secret), 'no secret of an API credential set in any log');
    if (env.ENCRYPTION_KEY) assert.ok(!logs.includes(env.ENCRYPTION_KEY), 'no encryption key in any log');
    const afterFirst = service.outputs.slice(1).join('\n');
    assert.ok(!afterFirst.includes(service.apiKey), 'the API key is printed once, at the first start, and never logged');
    const errorLines = logs.split('\n').filter((line) => /"level":(50|60)/.test(line));
    assert.deepEqual(errorLines.filter((line) => /unhandled error/.test(line)), [], 'no request failed unexpectedly');

    reportFigures(t, `crashes [${backend}]`, {
      seed,
      'kills survived (SIGKILL during the stream)': killsDuringStream,
      'kills survived (SIGKILL during a restart, before or just after it was ready)': service.killsDuringStart,
      'restart ms (median)': service.restartMs.sort((a, b) => a - b)[Math.floor(service.restartMs.length / 2)] ?? 0,
      pushes: stream.counts.pushes,
      'pushes acknowledged Validated': stream.counts.validated,
      'lines acknowledged': stream.counts.linesAcknowledged,
      'acknowledged pushes retried after the kill with their key, answered as the first time': stream.counts.acknowledgementsReplayed,
      'pushes without an answer (killed in flight)': stream.counts.noAnswer,
      'their retries with the same Idempotency-Key: answered from the first run': stream.counts.retriesReplayed,
      'their retries: run afresh (the first never committed)': stream.counts.retriesRun,
      'their retries: still held by the first run (409)': stream.counts.retriesHeld,
      'failed acknowledgements': stream.counts.failedAcks,
      '502/504 answers': stream.counts.unavailable + stream.counts.timeouts,
      'status polls answered': stream.counts.statusAnswered,
      '5xx answers (502/504 excepted)': stream.counts.serverErrors,
      'final statuses': statusFigures(ledger.byStatus),
      'lines generated (each eBRC once)': ledger.generatedLines,
      'IRMs whose ledger was checked': ledger.irmsChecked,
      'acknowledged requests lost': 0,
      'settle ms after the last start (poller only)': settleMs,
      'error log lines': errorLines.length,
    });
  });
}

describe('SIGKILL at random moments of a stream of pushes', { concurrency: true }, () => {
  for (const backend of backends()) {
    test(`nothing acknowledged is lost, everything settles, every IRM adds up [${backend}]`, (t) => crashRun(backend, t));
  }
});
