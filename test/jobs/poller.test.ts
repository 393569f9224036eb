import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { AuthorityError, type Authority } from '../../src/authority/authority.ts';
import { describeEachBackend } from '../support/harness.ts';
import { cents, irmNow, lineFor, listedRequest, pushBody, usableIrms, verifiedCustomer, waitForFinal } from '../support/workflow.ts';

const POLLER_ENV = { RUN_POLLER: 'true', POLL_INTERVAL_SECONDS: '1' };

/** Requests pushed with this billNo stay pending at the authority for good, as a backlog there would keep them. */
const STUCK_BILL_NO = 'STUCK-AT-AUTHORITY';
const stuck = new Set<string>();
/** When the authority was asked about each request (by requestId). */
const asked = new Map<string, number[]>();
/** Status calls about requests pushed with this billNo fail at the authority (as while it is down). */
const AUTHORITY_DOWN_BILL_NO = 'AUTHORITY-DOWN';
/** Status calls about requests pushed with this billNo are refused (this service's address is not on the allow-list). */
const REFUSED_BILL_NO = 'AUTHORITY-REFUSED';
/** Status calls about requests pushed with this billNo throw what no authority failure is: a fault of the service. */
const FAULT_BILL_NO = 'SERVICE-FAULT';
const failing = new Map<string, string>();

/** The service's warnings and errors, to see how a failed poll is told. */
const logged: any[] = [];
const warningLog = pino({ level: 'warn' }, { write: (line: string) => void logged.push(JSON.parse(line)) }) as unknown as FastifyBaseLogger;

/** One sample of /metrics (the first line of that name and labels), or undefined when it is not there. */
async function metric(h: { request: (method: string, url: string, options?: { key: null }) => Promise<{ text: string }> }, name: string): Promise<number | undefined> {
  const text = (await h.request('GET', '/metrics', { key: null })).text;
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

/** The adapter to the sandbox (which processes a push 300 ms after it came), watched and with a backlog. */
function observedSandbox(sandbox: Authority): Authority {
  return {
    ...sandbox,
    async push(credentials, message, options) {
      const ack = await sandbox.push(credentials, message, options);
      if (message.ebrcBulkGenDtos.some((line) => line.billNo === STUCK_BILL_NO)) stuck.add(message.requestId);
      for (const billNo of [AUTHORITY_DOWN_BILL_NO, REFUSED_BILL_NO, FAULT_BILL_NO]) {
        if (message.ebrcBulkGenDtos.some((line) => line.billNo === billNo)) failing.set(message.requestId, billNo);
      }
      return ack;
    },
    async getStatus(credentials, requestId, options) {
      asked.set(requestId, [...(asked.get(requestId) ?? []), Date.now()]);
      if (failing.get(requestId) === AUTHORITY_DOWN_BILL_NO) throw new AuthorityError('unavailable', 'the authority answered 503', { httpStatus: 503 });
      if (failing.get(requestId) === REFUSED_BILL_NO) throw new AuthorityError('ip_not_whitelisted', 'the authority refused this address (ERR04)', { authorityCode: 'ERR04' });
      if (failing.get(requestId) === FAULT_BILL_NO) throw new TypeError('a fault of the service');
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

    test('a poll that fails is counted by cause and logged, and /metrics tells how many requests are open and since when', async () => {
      const id = await verifiedCustomer(h, 'poll-failures@example.com');
      const [a, b, c] = await usableIrms(h, id, 3);
      const failuresOf = (cause: string) => metric(h, `genebrc_poll_failures_total{cause="${cause}"}`);
      const causes = ['authority_unavailable', 'authority_refused', 'service'];
      // Every cause is told from the start, at 0 before its first failure, so that rate() works on it.
      const before = await Promise.all(causes.map(failuresOf));
      for (const value of before) assert.equal(typeof value, 'number');

      const down = await h.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(id, [lineFor(a, 1, 1, { billNo: AUTHORITY_DOWN_BILL_NO })]) });
      const refused = await h.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(id, [lineFor(b, 1, 1, { billNo: REFUSED_BILL_NO })]) });
      const fault = await h.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(id, [lineFor(c, 1, 1, { billNo: FAULT_BILL_NO })]) });
      const acks = [down, refused, fault];
      for (const ack of acks) assert.equal(ack.body.ackStatus, 'Validated', ack.text);

      // Each is polled (after the first poll's second) and fails; all stay open, and each is counted under its cause.
      const deadline = Date.now() + 20_000;
      for (;;) {
        const now = await Promise.all(causes.map(failuresOf));
        if (now.every((value, index) => value! > before[index]!)) break;
        assert.ok(Date.now() < deadline, `each cause counted within 20 s: ${JSON.stringify({ before, now })}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      for (const ack of acks) assert.equal((await listedRequest(h, id, ack.body.requestId)).status, 'PENDING');

      // The authority being down is a warning (it mends when the authority does); a refusal and a fault are errors.
      const internalIds = new Map<string, string>();
      for (const row of await h.database.db.selectFrom('genebrc_requests').select(['id', 'request_id']).where('platform_customer_id', '=', id).execute()) {
        internalIds.set(row.request_id, row.id);
      }
      const linesOf = (ack: { body: { requestId: string } }) =>
        logged.filter((line) => line.request === internalIds.get(ack.body.requestId) && line.msg === 'could not advance a request; will retry');
      const expected = [
        [down, 'authority_unavailable', 40],
        [refused, 'authority_refused', 50],
        [fault, 'service', 50],
      ] as const;
      for (const [ack, cause, level] of expected) {
        const lines = linesOf(ack);
        assert.ok(lines.length > 0 && lines.every((line) => line.cause === cause && line.level === level), `${cause}: ${JSON.stringify(lines)}`);
      }
      assert.equal(linesOf(fault)[0].err.message, 'a fault of the service');

      // Open, and the oldest open request is as old as the database says (after the 1 s the summary is kept).
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const { oldest } = await h.database.db
        .selectFrom('genebrc_requests')
        .select((eb) => eb.fn.min('created_at').as('oldest'))
        .where('status', 'in', ['SUBMITTING', 'PENDING'])
        .executeTakeFirstOrThrow();
      const readAt = Date.now();
      const age = (await metric(h, 'genebrc_oldest_open_request_age_seconds'))!;
      const expectedAge = (readAt - new Date(oldest as Date).getTime()) / 1000;
      assert.ok(Math.abs(age - expectedAge) < 1, `oldest open request ${age} s old, the database says ${expectedAge} s`);
      assert.ok((await metric(h, 'genebrc_open_requests'))! >= 3);
      // Once the authority answers again, the requests finish.
      for (const ack of acks) failing.delete(ack.body.requestId);
      for (const ack of acks) assert.equal((await waitForFinal(h, id, ack.body.requestId, 90_000)).status, 'PROCESSED');
    });
  },
  { env: POLLER_ENV, authority: observedSandbox, sandbox: { processingDelayMs: 300 }, logger: warningLog },
);
