import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Authority } from '../../src/authority/authority.ts';
import { describeEachBackend } from '../support/harness.ts';
import { cents, irmNow, lineFor, listedRequest, pushBody, usableIrms, verifiedCustomer, waitForFinal } from '../support/workflow.ts';

const POLLER_ENV = { RUN_POLLER: 'true', POLL_INTERVAL_SECONDS: '1' };

/** Requests pushed with this billNo stay pending at the authority for good, as a backlog there would keep them. */
const STUCK_BILL_NO = 'STUCK-AT-AUTHORITY';
const stuck = new Set<string>();
/** When the authority was asked about each request (by requestId). */
const asked = new Map<string, number[]>();

/** The adapter to the sandbox (which processes a push 300 ms after it came), watched and with a backlog. */
function observedSandbox(sandbox: Authority): Authority {
  return {
    ...sandbox,
    async push(credentials, message, options) {
      const ack = await sandbox.push(credentials, message, options);
      if (message.ebrcBulkGenDtos.some((line) => line.billNo === STUCK_BILL_NO)) stuck.add(message.requestId);
      return ack;
    },
    async getStatus(credentials, requestId, options) {
      asked.set(requestId, [...(asked.get(requestId) ?? []), Date.now()]);
      const answer = await sandbox.getStatus(credentials, requestId, options);
      if (answer === null || !stuck.has(requestId)) return answer;
      return {
        ...answer,
        processingStatus: 'Pending',
        recordProCount: 0,
        recordFailCount: 0,
        records: answer.records.map((record) => ({ ...record, status: 'PENDING', ebrcNumber: null, ebrcDate: null })),
      };
    },
  };
}

describeEachBackend(
  'background poller',
  (h) => {
    test('moves pushed requests to PROCESSED, PARTIALLY_PROCESSED and ERRORED with nobody asking for status', async () => {
      const id = await verifiedCustomer(h, 'poller@example.com');
      const [a, b, c, d, e] = await usableIrms(h, id, 5);

      // Three requests: all lines good; one good and one failing; all failing.
      const good = await h.request('POST', '/api/v1/genebrc/push-irm', {
        body: pushBody(id, [lineFor(a, 1, a.irmAvailableAmt), lineFor(b, 2, 1.25)]),
      });
      const mixed = await h.request('POST', '/api/v1/genebrc/push-irm', {
        body: pushBody(id, [lineFor(c, 1, 10.5), lineFor(d, 2, d.irmAvailableAmt, { billNo: 'SANDBOX-FAIL' })]),
      });
      const failing = await h.request('POST', '/api/v1/genebrc/push-irm', {
        body: pushBody(id, [lineFor(e, 1, 2, { billNo: 'SANDBOX-FAIL' }), lineFor(e, 2, 3, { billNo: 'SANDBOX-FAIL' })]),
      });
      for (const ack of [good, mixed, failing]) {
        assert.equal(ack.status, 200, ack.text);
        assert.equal(ack.body.ackStatus, 'Validated', ack.text);
      }

      // While they are pending, the mapped amounts are utilised already.
      assert.equal((await irmNow(h, id, d.irmNumber)).irmStatus, 'utilised');
      assert.equal(cents((await irmNow(h, id, e.irmNumber)).irmUtilizedAmt), 500n);

      const [goodDone, mixedDone, failingDone] = await Promise.all(
        [good, mixed, failing].map((ack) => waitForFinal(h, id, ack.body.requestId)),
      );

      assert.equal(goodDone.status, 'PROCESSED');
      assert.ok(goodDone.processedAt);
      assert.equal(goodDone.ebrcBulkGenStatusList.length, 2);
      for (const line of goodDone.ebrcBulkGenStatusList) {
        assert.equal(line.status, 'GENERATED');
        assert.match(line.ebrcNumber, /^EBRC\d{18}$/);
        assert.match(line.ebrcDate, /^\d{4}-\d{2}-\d{2}$/);
      }
      assert.equal(mixedDone.status, 'PARTIALLY_PROCESSED');
      assert.deepEqual(mixedDone.ebrcBulkGenStatusList.map((line: any) => line.status), ['GENERATED', 'FAILED']);
      assert.equal(mixedDone.ebrcBulkGenStatusList[1].ebrcNumber, null);
      assert.equal(mixedDone.ebrcBulkGenStatusList[1].errorDetails[0].code, 'ERR40');
      assert.equal(failingDone.status, 'ERRORED');
      assert.ok(failingDone.ebrcBulkGenStatusList.every((line: any) => line.status === 'FAILED' && line.ebrcNumber === null));
      const numbers = [...goodDone.ebrcBulkGenStatusList, mixedDone.ebrcBulkGenStatusList[0]].map((line: any) => line.ebrcNumber);
      assert.equal(new Set(numbers).size, 3, 'every eBRC number is new');

      // The status call answers what the poller recorded, with the counts.
      const status = await h.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: id, requestId: mixed.body.requestId } });
      assert.equal(status.status, 200, status.text);
      assert.equal(status.body.status, 'PARTIALLY_PROCESSED');
      assert.equal(status.body.recordProCount, 1);
      assert.equal(status.body.recordFailCount, 1);
      assert.equal(status.body.processedAt, mixedDone.processedAt);

      // Generated amounts stay utilised; failed lines gave theirs back.
      const aAfter = await irmNow(h, id, a.irmNumber);
      assert.equal(aAfter.irmStatus, 'utilised');
      assert.equal(aAfter.irmAvailableAmt, 0);
      assert.equal(cents((await irmNow(h, id, b.irmNumber)).irmUtilizedAmt), 125n);
      assert.equal(cents((await irmNow(h, id, c.irmNumber)).irmUtilizedAmt), 1050n);
      const dAfter = await irmNow(h, id, d.irmNumber);
      assert.equal(dAfter.irmStatus, 'fresh');
      assert.equal(cents(dAfter.irmAvailableAmt), cents(d.irmAvailableAmt));
      const eAfter = await irmNow(h, id, e.irmNumber);
      assert.equal(eAfter.irmStatus, 'fresh');
      assert.equal(cents(eAfter.irmUtilizedAmt), 0n);
      assert.equal(cents(eAfter.irmAvailableAmt), cents(e.irmAvailableAmt));

      // Nothing is left holding a reservation.
      const held = await h.database.db.selectFrom('genebrc_request_lines').select(['request_id', 'serial_no']).where('reserved', '=', true).execute();
      assert.deepEqual(held, []);
    });

    test('a request the authority keeps pending does not hold back the others the poller picked up with it', async () => {
      const id = await verifiedCustomer(h, 'backlog@example.com');
      const irms = await usableIrms(h, id, 5);
      // Four that will stay pending, then one that the authority processes as usual; all due for their first poll together.
      const stuckAcks = await Promise.all(
        irms.slice(0, 4).map((irm) => h.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(id, [lineFor(irm, 1, 1, { billNo: STUCK_BILL_NO })]) })),
      );
      const ready = await h.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(id, [lineFor(irms[4], 1, 1)]) });
      for (const ack of [...stuckAcks, ready]) assert.equal(ack.body.ackStatus, 'Validated', ack.text);

      const done = await waitForFinal(h, id, ready.body.requestId);
      assert.equal(done.status, 'PROCESSED');
      // Processed on the poll that first looked at it: before any of the pending ones came up for a second look.
      const finishedAt = Date.parse(done.processedAt);
      for (const ack of stuckAcks) {
        const times = asked.get(ack.body.requestId) ?? [];
        assert.ok(times.filter((at) => at <= finishedAt).length <= 1, `a pending request was polled ${times.length} times before the ready one was done`);
      }
      for (const ack of stuckAcks) assert.equal((await listedRequest(h, id, ack.body.requestId)).status, 'PENDING');
    });
  },
  { env: POLLER_ENV, authority: observedSandbox, sandbox: { processingDelayMs: 300 } },
);
