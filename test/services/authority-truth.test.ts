import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeEachBackend } from '../support/harness.ts';
import { amendIrmAtBank, bankIrm, cancelEbrcAtPortal, cancelIrmAtBank, eventsOf, expirePull, portalEbrc } from '../support/outside.ts';
import { cents, firstRefresh, irmNow, lineFor, money, pushBody, usableIrms, verifiedCustomer } from '../support/workflow.ts';

/**
 * The authority is the source of truth (contract 13): every pull updates every IRM it returns, in place; the
 * authority's figures are stored whatever relation they keep; cancelled and amended IRMs follow it; an amount refusal
 * pulls at once, so nothing wedges. Outside changes are made through the sandbox's portal and bank helpers.
 */

const PUSH = '/api/v1/genebrc/push-irm';
const TEMPLATE = (id: string) => `/api/v1/platform-customers/${id}/irm/template`;

describeEachBackend(
  'The authority is the source of truth',
  (h) => {
    test('two customers of one exporter: the other\'s push is refused once (ERR23), then its IRM shows the authority\'s amount and a push of it passes', async () => {
      const a = await verifiedCustomer(h, 'truth-a@example.com');
      const b = await verifiedCustomer(h, 'truth-b@example.com');
      const [irm] = await usableIrms(h, a, 1);
      await firstRefresh(h, b);
      const stale = await irmNow(h, b, irm.irmNumber);
      assert.equal(stale.irmAvailableAmt, irm.irmAvailableAmt);

      const byA = await h.request('POST', PUSH, { body: pushBody(a, [lineFor(irm, 1, 100)]) });
      assert.equal(byA.body.ackStatus, 'Validated', byA.text);
      const left = money(cents(irm.irmAvailableAmt) - 10_000n);

      const byB = await h.request('POST', PUSH, { body: pushBody(b, [lineFor(stale, 1, stale.irmAvailableAmt)]) });
      assert.equal(byB.body.ackStatus, 'Failed', byB.text);
      assert.ok(byB.body.errorDetails.some((detail: any) => detail.code === 'ERR23'), byB.text);

      // Within the reuse interval, without waiting: the refusal pulled B's IRMs before it answered.
      const followed = await irmNow(h, b, irm.irmNumber);
      assert.equal(followed.irmAvailableAmt, left);
      assert.equal(cents(followed.irmUtilizedAmt), cents(irm.irmUtilizedAmt) + 10_000n);
      assert.equal(followed.irmStatus, 'partially_utilised');
      const updated = (await eventsOf(h, b, 'irm.updated')).filter((event) => event.data.irmNumber === irm.irmNumber);
      assert.equal(updated.length, 1);
      assert.deepEqual(
        updated[0].data.changes.filter((change: any) => change.field === 'irmAvailableAmt'),
        [{ field: 'irmAvailableAmt', from: irm.irmAvailableAmt, to: left }],
      );

      const again = await h.request('POST', PUSH, { body: pushBody(b, [lineFor(followed, 1, 50)]) });
      assert.equal(again.body.ackStatus, 'Validated', again.text);

      // A's own push is in A's balances already: A's next pull finds nothing changed outside for that IRM but B's push.
      await expirePull(h, a);
      const forA = await irmNow(h, a, irm.irmNumber);
      assert.equal(forA.irmAvailableAmt, money(cents(irm.irmAvailableAmt) - 15_000n));
      const aUpdates = (await eventsOf(h, a, 'irm.updated')).filter((event) => event.data.irmNumber === irm.irmNumber);
      assert.equal(aUpdates.length, 1, 'one update: B\'s push of 50.00, not A\'s own');
      assert.deepEqual(
        aUpdates[0].data.changes.find((change: any) => change.field === 'irmAvailableAmt'),
        { field: 'irmAvailableAmt', from: money(cents(irm.irmAvailableAmt) - 10_000n), to: forA.irmAvailableAmt },
      );
    });

    test('an IRM whose figures break every assumed relation (an ORM amount) is stored as the authority says and fails no pull', async () => {
      const customer = await verifiedCustomer(h, 'truth-orm@example.com');
      await firstRefresh(h, customer);
      await bankIrm(h, {
        irmNumber: 'BANKORM0000000001',
        remittanceFCCAmount: '6400.00',
        ormAmountFCC: 400,
        irmAvailableAmt: 6000,
        irmUtilizedAmt: '0.00',
        purposeOfRemittance: 'P0103',
      });
      await expirePull(h, customer);
      const refreshed = await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: customer }, body: {} });
      assert.equal(refreshed.status, 200, refreshed.text);
      const irm = await irmNow(h, customer, 'BANKORM0000000001');
      assert.deepEqual(
        [irm.remittanceFCCAmount, irm.ormAmountFCC, irm.irmAvailableAmt, irm.irmUtilizedAmt, irm.irmStatus],
        [6400, 400, 6000, 0, 'fresh'],
      );
      const received = (await eventsOf(h, customer, 'irm.received')).filter((event) => event.data.irmNumber === 'BANKORM0000000001');
      assert.equal(received.length, 1);
    });

    test('an IRM cancelled by the bank is shown cancelled with nothing available, never offered, and a push naming it is refused locally (ERR18)', async () => {
      const customer = await verifiedCustomer(h, 'truth-cancel@example.com');
      const [irm] = await usableIrms(h, customer, 1);
      await cancelIrmAtBank(h, irm.irmNumber);
      await expirePull(h, customer);
      const cancelled = await irmNow(h, customer, irm.irmNumber);
      assert.equal(cancelled.irmStatus, 'cancelled');
      assert.equal(cancelled.irmAvailableAmt, 0);
      const [event] = (await eventsOf(h, customer, 'irm.updated')).filter((e) => e.data.irmNumber === irm.irmNumber);
      assert.deepEqual(event.data.changes, [
        { field: 'irmStatus', from: 'fresh', to: 'cancelled' },
        { field: 'irmAvailableAmt', from: irm.irmAvailableAmt, to: 0 },
      ]);

      const template = await h.service.app.inject({ method: 'GET', url: TEMPLATE(customer), query: { irmNumber: irm.irmNumber }, headers: { 'x-api-key': h.platformA.apiKey } });
      assert.equal(template.statusCode, 200);
      assert.equal(template.body.trim().split('\n').length, 1, 'the header row alone');

      const pushed = await h.request('POST', PUSH, { body: pushBody(customer, [lineFor(irm, 1, 10)]) });
      assert.equal(pushed.body.ackStatus, 'Failed', pushed.text);
      assert.equal(pushed.body.errorDetails[0].code, 'ERR18');
      assert.match(pushed.body.errorDetails[0].message, /cancelled/);
      assert.equal(pushed.body.authorityAckId, null);
    });

    test('an IRM amended by the bank shows its new values, with irm.updated naming what changed', async () => {
      const customer = await verifiedCustomer(h, 'truth-amend@example.com');
      const [irm] = await usableIrms(h, customer, 1);
      await amendIrmAtBank(h, irm.irmNumber, { remitterName: 'Amended Buyer GmbH', remitterCountry: 'DE' });
      await expirePull(h, customer);
      const amended = await irmNow(h, customer, irm.irmNumber);
      assert.equal(amended.remitterName, 'Amended Buyer GmbH');
      assert.equal(amended.irmStatus, 'fresh', 'amended (A) is still mappable');
      const [event] = (await eventsOf(h, customer, 'irm.updated')).filter((e) => e.data.irmNumber === irm.irmNumber);
      assert.deepEqual(event.data.changes, [
        { field: 'remitterName', from: irm.remitterName, to: 'Amended Buyer GmbH' },
        { field: 'remitterCountry', from: irm.remitterCountry, to: 'DE' },
      ]);
    });

    test('an eBRC made on the portal lowers the IRM at the next pull; cancelling it gives the amount back', async () => {
      const customer = await verifiedCustomer(h, 'truth-portal@example.com');
      const [irm] = await usableIrms(h, customer, 1);
      const ebrc = await portalEbrc(h, irm.irmNumber, '250.00');
      await expirePull(h, customer);
      const lowered = await irmNow(h, customer, irm.irmNumber);
      assert.equal(lowered.irmAvailableAmt, money(cents(irm.irmAvailableAmt) - 25_000n));
      assert.equal(lowered.irmStatus, 'partially_utilised');
      await cancelEbrcAtPortal(h, ebrc.ebrcNumber);
      await expirePull(h, customer);
      const back = await irmNow(h, customer, irm.irmNumber);
      assert.equal(back.irmAvailableAmt, irm.irmAvailableAmt);
      assert.equal(back.irmStatus, 'fresh');
      assert.equal((await eventsOf(h, customer, 'irm.updated')).filter((e) => e.data.irmNumber === irm.irmNumber).length, 2);
    });

    test('the eBRC register: an eBRC made on the portal is listed from elsewhere, one cancelled there is cancelled, each with ebrc.updated', async () => {
      const customer = await verifiedCustomer(h, 'truth-ebrcs@example.com');
      const [own, other] = await usableIrms(h, customer, 2);
      const pushed = await h.request('POST', PUSH, { body: pushBody(customer, [lineFor(own, 1, 30)]) });
      assert.equal(pushed.body.ackStatus, 'Validated', pushed.text);
      const status = await h.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: customer, requestId: pushed.body.requestId } });
      assert.equal(status.body.status, 'PROCESSED', status.text);
      const ownNumber = status.body.ebrcBulkGenStatusList[0].ebrcNumber;
      const portal = await portalEbrc(h, other.irmNumber, 40);

      const list = async () => {
        const answer = await h.request('GET', `/api/v1/platform-customers/${customer}/ebrcs`, { query: { limit: 100 } });
        assert.equal(answer.status, 200, answer.text);
        return new Map<string, any>(answer.body.data.map((ebrc: any) => [ebrc.ebrcNumber, ebrc]));
      };
      let listed = await list();
      assert.deepEqual(
        [listed.get(ownNumber)?.source, listed.get(ownNumber)?.status, listed.get(ownNumber)?.requestId],
        ['this_service', 'generated', pushed.body.requestId],
      );
      assert.deepEqual(
        [listed.get(portal.ebrcNumber)?.source, listed.get(portal.ebrcNumber)?.status, listed.get(portal.ebrcNumber)?.requestId, listed.get(portal.ebrcNumber)?.realisedValueFCC],
        ['elsewhere', 'generated', null, 40],
      );

      await cancelEbrcAtPortal(h, ownNumber);
      listed = await list();
      assert.equal(listed.get(ownNumber)?.status, 'cancelled');
      const updates = await eventsOf(h, customer, 'ebrc.updated');
      assert.deepEqual(
        updates.map((event) => [event.data.ebrcNumber, event.data.changes]).reverse(),
        [
          [portal.ebrcNumber, [{ field: 'status', from: null, to: 'generated' }]],
          [ownNumber, [{ field: 'status', from: 'generated', to: 'cancelled' }]],
        ],
      );
      assert.equal((await eventsOf(h, customer, 'ebrc.generated')).length, 1, 'its own eBRC was announced once, by ebrc.generated');
    });

    test('a pull leaves what this service holds and the authority has not acknowledged (a push held for reconciliation) reserved', async () => {
      const customer = await verifiedCustomer(h, 'truth-held@example.com');
      const [irm] = await usableIrms(h, customer, 1);
      const held = await h.request('POST', PUSH, { body: pushBody(customer, [lineFor(irm, 1, 75, { billNo: 'SANDBOX-SLOW' })]) });
      assert.equal(held.status, 504, held.text);
      await expirePull(h, customer);
      const after = await irmNow(h, customer, irm.irmNumber);
      assert.equal(after.irmAvailableAmt, money(cents(irm.irmAvailableAmt) - 7_500n), 'the authority\'s amount less the held 75.00');
      assert.equal(cents(after.irmUtilizedAmt), cents(irm.irmUtilizedAmt) + 7_500n);
      assert.equal((await eventsOf(h, customer, 'irm.updated')).filter((e) => e.data.irmNumber === irm.irmNumber).length, 0);
    });
  },
  { env: { AUTHORITY_TIMEOUT_MS: '3000' } },
);
