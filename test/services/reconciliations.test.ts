import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Authority } from '../../src/authority/authority.ts';
import { MAX_UNFINISHED_RUNS } from '../../src/jobs/poison.ts';
import { beginRun } from '../../src/store/job-runs.ts';
import { describeEachBackend, expectProblem, type Harness } from '../support/harness.ts';
import { amendIrmAtBank, cancelEbrcAtPortal, cancelIrmAtBank, eventsOf, portalEbrc } from '../support/outside.ts';
import { sleep, usableIrms, verifiedCustomer } from '../support/workflow.ts';

/**
 * Reconciliation runs (contract 13): on request (202, one at a time: 409 reconciliation_running), listed newest first
 * with what each changed, reconciliation.completed when one finishes; on the schedule, for the customers due, a
 * customer whose credentials were refused skipped with the reason.
 */

/** Holds the IRM pulls while `gate.closed`: a run can be caught while it runs. Counts the pulls. */
const gate = { closed: false, waiting: [] as (() => void)[], pulls: 0 };

function gatedPulls(adapter: Authority): Authority {
  return {
    ...adapter,
    async fetchIrms(credentials, query, options) {
      gate.pulls++;
      if (gate.closed) await new Promise<void>((resolve) => gate.waiting.push(resolve));
      return adapter.fetchIrms(credentials, query, options);
    },
  };
}

function openGate(): void {
  gate.closed = false;
  for (const resolve of gate.waiting.splice(0)) resolve();
}

const reconcile = (h: Harness, id: string) => h.request('POST', `/api/v1/platform-customers/${id}/reconcile`, { body: {} });
const runs = async (h: Harness, id: string) => {
  const answer = await h.request('GET', `/api/v1/platform-customers/${id}/reconciliations`);
  assert.equal(answer.status, 200, answer.text);
  return answer.body;
};

async function finished(h: Harness, id: string, runId: string): Promise<any> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const run = (await runs(h, id)).items.find((item: any) => item.id === runId);
    if (run.status !== 'running') return run;
    assert.ok(Date.now() < deadline, `run ${runId} still running`);
    await sleep(100);
  }
}

describeEachBackend(
  'Reconciliation runs',
  (h) => {
    test('on request: 202 running, 409 while it runs, then completed with what changed outside, and reconciliation.completed', async () => {
      const customer = await verifiedCustomer(h, 'reconcile@example.com');
      const [cancelled, amended, mapped] = await usableIrms(h, customer, 3);
      await cancelIrmAtBank(h, cancelled.irmNumber);
      await amendIrmAtBank(h, amended.irmNumber, { remitterName: 'Renamed Buyer Ltd' });
      const ebrc = await portalEbrc(h, mapped.irmNumber, 12.5);

      gate.closed = true;
      const started = await reconcile(h, customer);
      assert.equal(started.status, 202, started.text);
      assert.deepEqual([started.body.trigger, started.body.status, started.body.finishedAt], ['request', 'running', null]);
      expectProblem(await reconcile(h, customer), 409, 'reconciliation_running');
      openGate();

      const run = await finished(h, customer, started.body.id);
      assert.equal(run.status, 'completed', JSON.stringify(run));
      assert.deepEqual(
        [run.irmsUpdated, run.irmsCancelled, run.ebrcsDiscovered, run.ebrcsCancelled, run.error],
        [3, 1, 1, 0, null],
      );
      const [event] = await eventsOf(h, customer, 'reconciliation.completed');
      assert.deepEqual(event.data, run);

      await cancelEbrcAtPortal(h, ebrc.ebrcNumber);
      const again = await reconcile(h, customer);
      assert.equal(again.status, 202, again.text);
      const second = await finished(h, customer, again.body.id);
      assert.deepEqual([second.irmsUpdated, second.irmsCancelled, second.ebrcsDiscovered, second.ebrcsCancelled], [1, 0, 0, 1]);
      const listed = await runs(h, customer);
      assert.deepEqual(listed.items.map((item: any) => item.id), [again.body.id, started.body.id], 'newest first');
      assert.equal(listed.meta.totalItems, 2);
    });

    test('an unverified customer is 409, another platform\'s 404; a run the authority fails is failed with the reason', async () => {
      const created = await h.request('POST', '/api/v1/platform-customers/', { body: { name: 'U', email: 'unverified-reconcile@example.com', companyName: 'U' } });
      expectProblem(await reconcile(h, created.body.id), 409, 'customer_not_verified');
      const down = await verifiedCustomer(h, 'reconcile-down@example.com', 'outage.exporter');
      expectProblem(await h.request('POST', `/api/v1/platform-customers/${down}/reconcile`, { body: {}, key: h.platformB.apiKey }), 404, 'not_found');
      const started = await reconcile(h, down);
      const run = await finished(h, down, started.body.id);
      assert.equal(run.status, 'failed');
      assert.match(run.error, /unavailable|down/i);
    });

    test('the schedule runs the customers due, once an interval; a customer whose credentials were refused is skipped with the reason', async () => {
      const due = await verifiedCustomer(h, 'reconcile-due@example.com');
      const refused = await verifiedCustomer(h, 'reconcile-refused@example.com');
      const notYet = await verifiedCustomer(h, 'reconcile-later@example.com');
      const longAgo = new Date(Date.now() - 3 * 86_400_000);
      await h.database.db.updateTable('platform_customers').set({ authority_verified_at: longAgo }).where('id', 'in', [due, refused]).execute();
      await h.database.db.updateTable('platform_customers').set({ authority_credentials_status: 'invalid' }).where('id', '=', refused).execute();
      // Every other customer of this file is made not due: the test counts what one tick runs.
      await h.database.db.updateTable('platform_customers').set({ authority_verified_at: new Date() }).where('id', 'not in', [due, refused]).execute();

      assert.equal(await h.service.reconcileSchedule.runOnce(), 2);
      const [dueRun] = (await runs(h, due)).items;
      assert.deepEqual([dueRun.trigger, dueRun.status], ['schedule', 'completed']);
      const [refusedRun] = (await runs(h, refused)).items;
      assert.deepEqual([refusedRun.trigger, refusedRun.status], ['schedule', 'failed']);
      assert.match(refusedRun.error, /refused the customer's credentials/);
      assert.equal((await runs(h, notYet)).meta.totalItems, 0, 'verified just now: its point in the interval has not come');

      assert.equal(await h.service.reconcileSchedule.runOnce(), 0, 'not again within the interval');
    });

    test(`a customer whose runs were cut off ${MAX_UNFINISHED_RUNS} times is failed with the reason, not run by the schedule, until a request`, async () => {
      const customer = await verifiedCustomer(h, 'reconcile-poison@example.com');
      // Three runs that began and never ended: what three processes killed while reconciling the customer leave.
      for (let run = 0; run < MAX_UNFINISHED_RUNS; run++) await beginRun(h.database.db, 'reconciliation', customer);
      const due = { id: customer, platform_id: h.platformA.id };
      const pulls = gate.pulls;
      for (let tick = 0; tick < 2; tick++) await h.service.reconciliations.scheduled(due);
      const setAside = (await runs(h, customer)).items;
      assert.deepEqual(setAside.map((run: any) => [run.trigger, run.status]), [['schedule', 'failed'], ['schedule', 'failed']]);
      for (const run of setAside) assert.match(run.error, /cut off 3 times in a row.*request a reconciliation to try again/);
      assert.equal(gate.pulls, pulls, 'the authority was not called');

      const requested = await reconcile(h, customer);
      assert.equal(requested.status, 202, requested.text);
      assert.equal((await finished(h, customer, requested.body.id)).status, 'completed');
      await h.service.reconciliations.scheduled(due);
      const [scheduled] = (await runs(h, customer)).items;
      assert.deepEqual([scheduled.trigger, scheduled.status], ['schedule', 'completed'], 'after a request the schedule runs it again');
    });
  },
  { authority: gatedPulls, env: { RECONCILE_INTERVAL_SECONDS: '86400', AUTHORITY_TIMEOUT_MS: '3000' } },
);
