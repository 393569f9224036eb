import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Authority } from '../../src/authority/authority.ts';
import { describeEachBackend, expectProblem, type Harness } from '../support/harness.ts';
import { cents, irmNow, money, lineFor, pushBody, sleep, usableIrms, verifiedCustomer, waitForFinal } from '../support/workflow.ts';

/*
 * The service reaches the sandbox program over the wire protocol, through its adapter. The sandbox misbehaves for
 * real at the HTTP boundary on a push whose billNo asks for it: SANDBOX-OUTAGE answers 503 (the adapter retries until
 * its deadline, then gives up as unavailable), SANDBOX-SLOW never answers, SANDBOX-LOST accepts the push and then
 * destroys the connection. Only the late delivery is injected, around the adapter: no HTTP answer can make a push
 * reach the authority after the caller gave up on it.
 */

// A short deadline so that the slow authority times out quickly; the poller settles what the push left open.
const FAULT_ENV = { RUN_POLLER: 'true', POLL_INTERVAL_SECONDS: '1', AUTHORITY_TIMEOUT_MS: '1000' };

/** A push with this billNo reaches the sandbox only after the deadline (1 s), as a slow network would deliver it. */
const LATE_BILL_NO = 'LATE-ARRIVAL';

function lateDelivering(adapter: Authority): Authority {
  return {
    ...adapter,
    async push(credentials, message, options) {
      if (!message.ebrcBulkGenDtos.some((line) => line.billNo === LATE_BILL_NO)) return adapter.push(credentials, message, options);
      await sleep(1_500);
      // Already on its way: the caller's abort no longer stops it.
      return adapter.push(credentials, message);
    },
  };
}

/** How many copies of the request the sandbox program holds, read from its own storage. */
async function authorityCopies(h: Harness, requestId: string): Promise<number> {
  const rows = await h.sandbox.database.db.selectFrom('authority_sandbox.requests').select('request_id').where('request_id', '=', requestId).execute();
  return rows.length;
}

async function reservedLines(h: Harness, requestId: string): Promise<number> {
  const rows = await h.database.db
    .selectFrom('genebrc_request_lines')
    .innerJoin('genebrc_requests', 'genebrc_requests.id', 'genebrc_request_lines.request_id')
    .select('genebrc_request_lines.serial_no')
    .where('genebrc_requests.request_id', '=', requestId)
    .where('genebrc_request_lines.reserved', '=', true)
    .execute();
  return rows.length;
}

describeEachBackend(
  'authority faults at push',
  (h) => {
    test('an outage (502) fails the request at once: the authority never had it, and its amount is back', async () => {
      const id = await verifiedCustomer(h, 'outage@example.com');
      const [irm] = await usableIrms(h, id, 1);
      const mapped = cents(irm.irmAvailableAmt) / 2n;
      const response = await h.request('POST', '/api/v1/genebrc/push-irm', {
        body: pushBody(id, [lineFor(irm, 1, money(mapped), { billNo: 'SANDBOX-OUTAGE' })]),
      });
      const problem = expectProblem(response, 502, 'authority_unavailable');

      const listed = await h.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: id } });
      assert.equal(listed.body.length, 1);
      const failed = listed.body[0];
      assert.ok(problem.detail.includes(failed.requestId), 'the problem names the request');
      assert.equal(failed.status, 'FAILED');
      assert.equal(failed.authorityAckId, null);
      assert.ok(failed.processedAt);
      assert.deepEqual(failed.errorDetails.errors.map((e: any) => e.code), ['authority_not_received']);
      assert.ok(failed.ebrcBulkGenStatusList.every((line: any) => line.status === 'FAILED' && line.ebrcNumber === null));
      const after = await irmNow(h, id, irm.irmNumber);
      assert.equal(cents(after.irmAvailableAmt), cents(irm.irmAvailableAmt), 'the reservation is released');
      assert.equal(after.irmStatus, 'fresh');
      assert.equal(await reservedLines(h, failed.requestId), 0);
      assert.equal(await authorityCopies(h, failed.requestId), 0, 'the authority never had it');

      const again = await h.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(id, [lineFor(irm, 1, money(mapped))]) });
      assert.equal(again.body.ackStatus, 'Validated', again.text);
    });

    test('a timeout (504) holds the request; reconciliation later fails it if the authority never got it, else processes it', async () => {
      const outcomes = await Promise.all(
        [
          { billNo: 'SANDBOX-SLOW', email: 'slow@example.com' },
          // Reaches the authority after the deadline: giving up on it at once would lose an accepted push.
          { billNo: LATE_BILL_NO, email: 'late@example.com' },
        ].map(async ({ billNo, email }) => {
          const id = await verifiedCustomer(h, email);
          const [irm] = await usableIrms(h, id, 1);
          const mapped = cents(irm.irmAvailableAmt) / 2n;
          const body = pushBody(id, [lineFor(irm, 1, money(mapped), { billNo })]);
          const headers = { 'idempotency-key': `held-${billNo}` };
          const response = await h.request('POST', '/api/v1/genebrc/push-irm', { body, headers });
          const problem = expectProblem(response, 504, 'authority_timeout');

          // The held request is the push's outcome: a retry with the same key replays it and pushes nothing new.
          const retry = await h.request('POST', '/api/v1/genebrc/push-irm', { body, headers });
          assert.equal(retry.status, 504);
          assert.equal(retry.headers['idempotent-replayed'], 'true');
          assert.equal(retry.body.detail, problem.detail);

          // The outcome is unknown, so the request is kept open with its amount reserved.
          const listed = await h.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: id } });
          assert.equal(listed.body.length, 1);
          const held = listed.body[0];
          assert.ok(problem.detail.includes(held.requestId), 'the problem names the request to follow');
          assert.equal(held.status, 'PENDING');
          assert.equal(held.authorityAckId, null);
          assert.equal(held.processedAt, null);
          assert.equal(cents((await irmNow(h, id, irm.irmNumber)).irmUtilizedAmt), mapped);

          const done = await waitForFinal(h, id, held.requestId, 30_000);
          return { id, irm, mapped, done, authorityCopies: await authorityCopies(h, held.requestId), reserved: await reservedLines(h, held.requestId) };
        }),
      );

      const [slow, late] = outcomes as [any, any];
      assert.equal(slow.done.status, 'FAILED', JSON.stringify(slow.done));
      assert.equal(slow.done.authorityAckId, null);
      assert.ok(slow.done.processedAt);
      assert.deepEqual(slow.done.errorDetails.errors.map((e: any) => e.code), ['authority_not_received']);
      assert.ok(slow.done.ebrcBulkGenStatusList.every((line: any) => line.status === 'FAILED' && line.ebrcNumber === null));
      const slowIrm = await irmNow(h, slow.id, slow.irm.irmNumber);
      assert.equal(cents(slowIrm.irmAvailableAmt), cents(slow.irm.irmAvailableAmt), 'the reservation is released');
      assert.equal(slowIrm.irmStatus, 'fresh');
      assert.equal(slow.reserved, 0);
      assert.equal(slow.authorityCopies, 0, 'the authority never had it');

      assert.equal(late.done.status, 'PROCESSED', JSON.stringify(late.done));
      assert.match(late.done.authorityAckId, /^ACK-/);
      assert.match(late.done.ebrcBulkGenStatusList[0].ebrcNumber, /^EBRC\d{18}$/);
      assert.equal(late.authorityCopies, 1);
      assert.equal(late.reserved, 0);
      assert.equal(cents((await irmNow(h, late.id, late.irm.irmNumber)).irmUtilizedAmt), late.mapped, 'the generated amount stays utilised');
    });

    test('a lost acknowledgement is reconciled by requestId: one request at the authority, processed once', async () => {
      const id = await verifiedCustomer(h, 'lost@example.com');
      const [a, b] = await usableIrms(h, id, 2);
      const response = await h.request('POST', '/api/v1/genebrc/push-irm', {
        body: pushBody(id, [
          lineFor(a, 1, 5.5, { billNo: 'SANDBOX-LOST' }),
          lineFor(b, 2, b.irmAvailableAmt, { billNo: 'SANDBOX-FAIL' }),
        ]),
      });
      let requestId: string;
      if (response.status === 200) {
        assert.equal(response.body.ackStatus, 'Validated', response.text);
        assert.match(response.body.authorityAckId, /^ACK-/);
        requestId = response.body.requestId;
      } else {
        // Reconciliation may have to wait: then the request turns PENDING with the authority's ack id by itself.
        expectProblem(response, 504, 'authority_timeout');
        const listed = await h.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: id } });
        requestId = listed.body[0].requestId;
      }

      const done = await waitForFinal(h, id, requestId);
      assert.equal(done.status, 'PARTIALLY_PROCESSED');
      assert.match(done.authorityAckId, /^ACK-/);
      if (response.status === 200) assert.equal(done.authorityAckId, response.body.authorityAckId);
      assert.equal(done.ebrcBulkGenStatusList[0].status, 'GENERATED');
      assert.match(done.ebrcBulkGenStatusList[0].ebrcNumber, /^EBRC\d{18}$/);
      assert.equal(done.ebrcBulkGenStatusList[1].status, 'FAILED');

      assert.equal(await authorityCopies(h, requestId), 1, 'no duplicate request at the authority');
      const listed = await h.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: id } });
      assert.equal(listed.body.length, 1, 'one request stored');
      assert.equal(cents((await irmNow(h, id, a.irmNumber)).irmUtilizedAmt), 550n);
      const bAfter = await irmNow(h, id, b.irmNumber);
      assert.equal(cents(bAfter.irmAvailableAmt), cents(b.irmAvailableAmt), 'the failed line gave its amount back');
      assert.equal(await reservedLines(h, requestId), 0);
    });
  },
  { env: FAULT_ENV, sandbox: { processingDelayMs: 300 }, authority: lateDelivering },
);
