/**
 * The events of every change (contract 9), driven through the HTTP API as an integrator would and read straight from
 * the `events` table: each change writes its events once, with the data the API shows for what changed at that
 * moment, for its own platform and customer only. The sandbox processes a push a minute after receiving it, on its own
 * clock, which the tests move on when the authority is to have processed what it holds.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { toEvent } from '../../src/services/outbox.ts';
import { describeEachBackend, expectProblem, type Harness } from '../support/harness.ts';
import { assertEventsMatchChanges } from '../support/invariants.ts';
import { PASSWORD, postJson } from '../sandbox/support.ts';
import { firstRefresh, lineFor, pushBody, usableIrms, verifiedCustomer } from '../support/workflow.ts';

const SAMPLE = JSON.parse(fs.readFileSync(new URL('../../docs/examples/public-sample-push.json', import.meta.url), 'utf8'));

const PROCESSING_DELAY_MS = 60_000;
/** The sandbox's clock; the service keeps the real one. */
const sandboxClock = { offsetMs: 0 };

const REQUEST_EVENT = /^genebrc\.request\./;

type EventRow = { seq: number; id: string; type: string; platform_id: string; platform_customer_id: string | null; data: any; created_at: Date };

describeEachBackend(
  'events of every change',
  (h: Harness) => {
    let main: Promise<{ customerId: string; irms: any[] }> | undefined;
    let nextIrm = 0;

    /** platform A's demo customer, refreshed, with IRMs to map. */
    const mainCustomer = () =>
      (main ??= (async () => {
        const customerId = await verifiedCustomer(h, 'events-main@example.com');
        await firstRefresh(h, customerId);
        return { customerId, irms: await usableIrms(h, customerId, 40) };
      })());

    async function freshIrms(count: number): Promise<any[]> {
      const { irms } = await mainCustomer();
      const taken = irms.slice(nextIrm, nextIrm + count);
      nextIrm += count;
      assert.equal(taken.length, count, 'enough fresh IRMs');
      return taken;
    }

    /** Where the event log stands now: events written later have a higher seq. */
    async function mark(): Promise<number> {
      const row = await h.database.db.selectFrom('events').select((eb) => eb.fn.max('seq').as('seq')).executeTakeFirst();
      return Number(row?.seq ?? 0);
    }

    /** Events written after `since` (a mark), oldest first; of one customer when given. */
    async function eventsSince(since: number, customerId?: string): Promise<EventRow[]> {
      let query = h.database.db
        .selectFrom('events')
        .select(['seq', 'id', 'type', 'platform_id', 'platform_customer_id', 'data', 'created_at'])
        .where('seq', '>', since)
        .orderBy('seq');
      if (customerId !== undefined) query = query.where('platform_customer_id', '=', customerId);
      return (await query.execute()) as EventRow[];
    }

    const allEventsOf = (customerId: string) => eventsSince(0, customerId);

    async function statusAnswer(customerId: string, requestId: string, key = h.platformA.apiKey): Promise<any> {
      const answer = await h.request('POST', '/api/v1/genebrc/status', { key, body: { platformCustomerId: customerId, requestId } });
      assert.equal(answer.status, 200, answer.text);
      return answer.body;
    }

    async function customerNow(customerId: string, key = h.platformA.apiKey): Promise<any> {
      const answer = await h.request('GET', `/api/v1/platform-customers/${customerId}`, { key });
      assert.equal(answer.status, 200, answer.text);
      return answer.body;
    }

    /** The eBRCs as GET …/ebrcs shows them, by number. */
    async function ebrcsShown(customerId: string): Promise<Map<string, any>> {
      const shown = new Map<string, any>();
      for (let page = 1; ; page++) {
        const answer = await h.request('GET', `/api/v1/platform-customers/${customerId}/ebrcs`, { query: { limit: 100, page } });
        assert.equal(answer.status, 200, answer.text);
        for (const ebrc of answer.body.data) shown.set(ebrc.ebrcNumber, ebrc);
        if (page >= answer.body.meta.totalPages) return shown;
      }
    }

    /** The request event's envelope: its platform, its customer, and an evt_ id. */
    function assertOwned(event: EventRow, platformId: string, customerId: string): void {
      assert.match(event.id, /^evt_[A-Za-z0-9_-]{32}$/, `event id ${event.id}`);
      assert.equal(event.platform_id, platformId, `${event.type}: the platform`);
      assert.equal(event.platform_customer_id, customerId, `${event.type}: platformCustomerId is set`);
    }

    /** Pushes and answers the acknowledgement (200); the request's requestId. */
    async function push(customerId: string, lines: Record<string, unknown>[], key = h.platformA.apiKey): Promise<any> {
      const ack = await h.request('POST', '/api/v1/genebrc/push-irm', { key, body: pushBody(customerId, lines) });
      assert.equal(ack.status, 200, ack.text);
      return ack.body;
    }

    /** The authority processes whatever it holds (its clock passes the processing delay). */
    function authorityProcesses(): void {
      sandboxClock.offsetMs += PROCESSING_DELAY_MS + 1_000;
    }

    /**
     * An accepted push: its one acknowledged event, whose data is the status answer while PENDING; then, once the
     * authority has processed it and `settle` has moved it (a status call or an advance), its one final event with
     * the status answer as data, and one ebrc.generated per eBRC with the eBRC as GET …/ebrcs shows it.
     */
    async function acceptedThenFinal(
      lines: Record<string, unknown>[],
      expected: { status: string; generated: number },
      settle: (requestId: string) => Promise<void>,
    ): Promise<void> {
      const { customerId } = await mainCustomer();
      const before = await mark();
      const ack = await push(customerId, lines);
      assert.equal(ack.ackStatus, 'Validated', JSON.stringify(ack));
      const acknowledged = await eventsSince(before);
      assert.deepEqual(acknowledged.map((event) => event.type), ['genebrc.request.acknowledged'], 'one event for the acknowledgement');
      assertOwned(acknowledged[0]!, h.platformA.id, customerId);
      const pending = await statusAnswer(customerId, ack.requestId);
      assert.equal(pending.status, 'PENDING');
      assert.deepEqual(acknowledged[0]!.data, pending, 'the acknowledged event carries the status answer');
      assert.equal(acknowledged[0]!.data.authorityAckId, ack.authorityAckId);
      assert.deepEqual(await eventsSince(before), acknowledged, 'asking the status of a PENDING request writes nothing');

      authorityProcesses();
      const settling = await mark();
      await settle(ack.requestId);
      const final = await statusAnswer(customerId, ack.requestId);
      assert.equal(final.status, expected.status, JSON.stringify(final));
      const events = await eventsSince(settling);
      const type = `genebrc.request.${expected.status.toLowerCase()}`;
      assert.deepEqual(events.map((event) => event.type), [type, ...Array(expected.generated).fill('ebrc.generated')]);
      for (const event of events) assertOwned(event, h.platformA.id, customerId);
      assert.deepEqual(events[0]!.data, final, `the ${type} event carries the status answer`);

      const generatedLines = final.ebrcBulkGenStatusList.filter((line: any) => line.status === 'GENERATED');
      assert.equal(generatedLines.length, expected.generated);
      assert.deepEqual(events.slice(1).map((event) => event.data.ebrcNumber).sort(), generatedLines.map((line: any) => line.ebrcNumber).sort(), 'one per eBRC');
      const shown = await ebrcsShown(customerId);
      for (const event of events.slice(1)) {
        const ebrc = shown.get(event.data.ebrcNumber);
        assert.ok(ebrc, `eBRC ${event.data.ebrcNumber} is listed`);
        assert.deepEqual(event.data, ebrc, `ebrc.generated ${event.data.ebrcNumber} carries the eBRC as GET …/ebrcs shows it`);
        assert.equal(event.data.requestId, ack.requestId);
      }
      // Final is final: asking again writes nothing. (The eBRC list above may have found eBRCs made elsewhere for this
      // IEC, each with its ebrc.updated: those are the register's, not this request's.)
      const asked = await mark();
      await statusAnswer(customerId, ack.requestId);
      assert.equal((await h.service.progress.advance((await requestRow(customerId, ack.requestId)).id)), expected.status);
      assert.deepEqual(await eventsSince(asked), [], 'nothing more once final');
    }

    async function requestRow(customerId: string, requestId: string) {
      return h.database.db
        .selectFrom('genebrc_requests')
        .selectAll()
        .where('platform_customer_id', '=', customerId)
        .where('request_id', '=', requestId)
        .executeTakeFirstOrThrow();
    }

    const byStatusCall = (customerId: () => Promise<{ customerId: string }>) => async (requestId: string) => {
      await statusAnswer((await customerId()).customerId, requestId);
    };
    const byAdvance = async (requestId: string) => {
      const { customerId } = await mainCustomer();
      await h.service.progress.advance((await requestRow(customerId, requestId)).id);
    };

    test('a credential check that verifies: one platform_customer.verified with the customer; a second check, none', async () => {
      const created = await h.request('POST', '/api/v1/platform-customers/', { body: { name: 'V', email: 'events-verify@example.com', companyName: 'V Ltd' } });
      assert.equal(created.status, 201, created.text);
      const id = created.body.id;
      assert.deepEqual(await allEventsOf(id), [], 'creating a customer is no event');
      const url = `/api/v1/platform-customers/${id}/check-authority-credentials`;
      expectProblem(await h.request('POST', url, { body: { authorityUsername: 'demo.exporter', authorityPassword: 'wrong' } }), 422, 'authority_credentials_invalid');
      assert.deepEqual(await allEventsOf(id), [], 'a refused check is no event');

      const checked = await h.request('POST', url, { body: { authorityUsername: 'demo.exporter', authorityPassword: PASSWORD } });
      assert.equal(checked.status, 200, checked.text);
      const events = await allEventsOf(id);
      assert.deepEqual(events.map((event) => event.type), ['platform_customer.verified']);
      assertOwned(events[0]!, h.platformA.id, id);
      const shown = await customerNow(id);
      assert.equal(shown.authorityCredentialsStatus, 'valid');
      assert.deepEqual(events[0]!.data, shown, 'the event carries the customer as GET shows it');
      assert.deepEqual(events[0]!.data, checked.body, 'and as the check answered');

      const again = await h.request('POST', url, { body: { authorityUsername: 'demo.exporter', authorityPassword: PASSWORD } });
      assert.equal(again.status, 200, again.text);
      assert.deepEqual(await allEventsOf(id), events, 'an already verified customer is no new event');
    });

    test('the first refresh: one irm.received per IRM, with the IRM as the refresh shows it; a second refresh: none', async () => {
      const id = await verifiedCustomer(h, 'events-irms@example.com', 'services.exporter');
      const before = await mark();
      await firstRefresh(h, id);
      const stored = await h.database.db.selectFrom('irms').select(['id', 'irm_number']).where('platform_customer_id', '=', id).execute();
      assert.ok(stored.length > 100, `${stored.length} IRMs`);
      const events = (await eventsSince(before, id)).filter((event) => event.type === 'irm.received');
      assert.deepEqual(await eventsSince(before, id), events, 'a refresh writes irm.received only');
      assert.equal(events.length, stored.length, 'one irm.received per IRM stored');
      assert.deepEqual(new Set(events.map((event) => event.data.id)), new Set(stored.map((irm) => irm.id)), 'each IRM once');
      for (const event of events) assertOwned(event, h.platformA.id, id);
      // The data is the IRM as the refresh shows it (until a later pull touches it).
      const page = await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: id, limit: 100 }, body: {} });
      assert.equal(page.status, 200, page.text);
      const byId = new Map(events.map((event) => [event.data.id, event.data]));
      for (const irm of page.body.data) assert.deepEqual(byId.get(irm.id), irm, `irm.received of ${irm.irmNumber}`);

      // A second pull (the refresh interval forced past): the IRMs are known, so no event, unless the authority has
      // issued new ones since, each with its one event.
      const pulledAt = (await h.database.db.selectFrom('platform_customers').select('irms_pulled_at').where('id', '=', id).executeTakeFirstOrThrow()).irms_pulled_at;
      assert.ok(pulledAt);
      await h.database.db.updateTable('platform_customers').set({ irms_pulled_at: new Date(pulledAt.getTime() - 86_400_000) }).where('id', '=', id).execute();
      const second = await mark();
      const again = await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: id }, body: {} });
      assert.equal(again.status, 200, again.text);
      const repulled = (await h.database.db.selectFrom('platform_customers').select('irms_pulled_at').where('id', '=', id).executeTakeFirstOrThrow()).irms_pulled_at;
      assert.ok(repulled && repulled.getTime() > pulledAt.getTime(), 'the second refresh pulled again');
      const storedNow = await h.database.db.selectFrom('irms').select('id').where('platform_customer_id', '=', id).execute();
      const newEvents = await eventsSince(second, id);
      assert.equal(newEvents.length, storedNow.length - stored.length, 'no irm.received for an IRM seen before');
      assert.ok(newEvents.every((event) => event.type === 'irm.received' && !byId.has(event.data.id)));
    });

    test('a push refused by the rules: one genebrc.request.failed with the status answer, nothing else', async () => {
      const { customerId } = await mainCustomer();
      const before = await mark();
      const ack = await h.request('POST', '/api/v1/genebrc/push-irm', { body: { ...SAMPLE, platformCustomerId: customerId } });
      assert.equal(ack.status, 200, ack.text);
      assert.equal(ack.body.ackStatus, 'Failed');
      const events = await eventsSince(before);
      assert.deepEqual(events.map((event) => event.type), ['genebrc.request.failed']);
      assertOwned(events[0]!, h.platformA.id, customerId);
      const answer = await statusAnswer(customerId, ack.body.requestId);
      assert.deepEqual(events[0]!.data, answer);
      assert.equal(answer.status, 'FAILED');
      assert.ok(answer.errorDetails.some((detail: any) => detail.code === 'ERR18'), JSON.stringify(answer.errorDetails));
      assert.deepEqual(await eventsSince(before), events, 'asking its status writes nothing');

      // A push that breaks the rules against an IRM already mapped (ERR23) is refused the same way.
      const [irm] = await freshIrms(1);
      const first = await push(customerId, [lineFor(irm, 1, 1)]);
      assert.equal(first.ackStatus, 'Validated');
      const beforeSecond = await mark();
      const second = await push(customerId, [lineFor(irm, 1, 1)]);
      assert.equal(second.ackStatus, 'Failed');
      const refused = await eventsSince(beforeSecond);
      assert.deepEqual(refused.map((event) => event.type), ['genebrc.request.failed']);
      assert.deepEqual(refused[0]!.data, await statusAnswer(customerId, second.requestId));
      assert.deepEqual(refused[0]!.data.errorDetails.map((detail: any) => detail.code), ['ERR23']);
    });

    test('an accepted push: genebrc.request.acknowledged, then genebrc.request.processed and one ebrc.generated per eBRC', async () => {
      const [a, b, c] = await freshIrms(3);
      await acceptedThenFinal([lineFor(a, 1, 10.5), lineFor(b, 2, 2.25), lineFor(c, 3, 99.99)], { status: 'PROCESSED', generated: 3 }, byStatusCall(mainCustomer));
    });

    test('partially processed (moved by the poller’s advance) and errored (moved by a status call)', async () => {
      const [a, b, c, d] = await freshIrms(4);
      await acceptedThenFinal(
        [lineFor(a, 1, 4.5), lineFor(b, 2, 1.25, { billNo: 'SANDBOX-FAIL' })],
        { status: 'PARTIALLY_PROCESSED', generated: 1 },
        byAdvance,
      );
      await acceptedThenFinal(
        [lineFor(c, 1, 3, { billNo: 'SANDBOX-FAIL' }), lineFor(d, 2, 6, { billNo: 'SANDBOX-FAIL' })],
        { status: 'ERRORED', generated: 0 },
        byStatusCall(mainCustomer),
      );
    });

    test('a push the authority never received (it answers 503): one genebrc.request.failed with authority_not_received', async () => {
      const { customerId } = await mainCustomer();
      const [irm] = await freshIrms(1);
      const before = await mark();
      const answer = await h.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(customerId, [lineFor(irm, 1, 4.75, { billNo: 'SANDBOX-OUTAGE' })]) });
      expectProblem(answer, 502, 'authority_unavailable');
      const events = await eventsSince(before);
      assert.deepEqual(events.map((event) => event.type), ['genebrc.request.failed'], 'never acknowledged, failed once');
      assertOwned(events[0]!, h.platformA.id, customerId);
      assert.deepEqual(events[0]!.data.errorDetails.map((detail: any) => detail.code), ['authority_not_received']);
      const status = await statusAnswer(customerId, events[0]!.data.requestId);
      assert.deepEqual(events[0]!.data, status);
      assert.deepEqual(status.ebrcBulkGenStatusList.map((line: any) => line.status), ['FAILED']);
      assert.equal(status.authorityAckId, null);
    });

    test('the authority refusing a stored set later: platform_customer.credentials_invalid once; verified again after a good check', async () => {
      // Another account than the main customer's, so that neither maps an IRM the other means to.
      const id = await verifiedCustomer(h, 'events-refused@example.com', 'services.exporter');
      await firstRefresh(h, id);
      const [irm] = await usableIrms(h, id, 1);
      const ack = await push(id, [lineFor(irm, 1, 2)]);
      assert.equal(ack.ackStatus, 'Validated', JSON.stringify(ack));
      assert.deepEqual((await allEventsOf(id)).map((event) => event.type).filter((type) => !type.startsWith('irm.')), [
        'platform_customer.verified',
        'genebrc.request.acknowledged',
      ]);

      // The exporter stores a set whose secret the authority does not know.
      const file = await postJson(`${h.sandbox.url}/sandbox/issueApiCredentials`, { username: 'services.exporter', password: PASSWORD });
      assert.equal(file.status, 200, JSON.stringify(file.body));
      const put = await h.request('PUT', `/api/v1/platform-customers/${id}/authority-api-credentials`, { body: { ...file.body, client_secret: `${file.body.client_secret}-mistyped` } });
      assert.equal(put.status, 200, put.text);
      const before = await mark();
      assert.deepEqual(await eventsSince(before, id), [], 'storing a set is no event');

      // Background work on the accepted request asks the authority with it: refused, the customer marked invalid.
      const asked = await statusAnswer(id, ack.requestId);
      assert.equal(asked.status, 'PENDING', 'the status call answers what is known');
      const refused = await eventsSince(before, id);
      assert.deepEqual(refused.map((event) => event.type), ['platform_customer.credentials_invalid']);
      assertOwned(refused[0]!, h.platformA.id, id);
      const shown = await customerNow(id);
      assert.equal(shown.authorityCredentialsStatus, 'invalid');
      assert.deepEqual(refused[0]!.data, shown, 'the event carries the customer as GET shows it');

      // Refused again, by the background work or anything else: no second event.
      await statusAnswer(id, ack.requestId);
      await h.service.progress.advance((await requestRow(id, ack.requestId)).id).catch(() => undefined);
      expectProblem(await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: id }, body: {} }), 409, 'customer_not_verified');
      expectProblem(await h.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(id, [lineFor(irm, 1, 1)]) }), 409, 'customer_not_verified');
      assert.deepEqual(await eventsSince(before, id), refused, 'credentials_invalid once');

      // A check that succeeds makes it verified again, with its event; the request then goes on.
      const checked = await h.request('POST', `/api/v1/platform-customers/${id}/check-authority-credentials`, {
        body: { authorityUsername: 'services.exporter', authorityPassword: PASSWORD },
      });
      assert.equal(checked.status, 200, checked.text);
      const reverified = await eventsSince(refused[0]!.seq, id);
      assert.deepEqual(reverified.map((event) => event.type), ['platform_customer.verified']);
      assert.deepEqual(reverified[0]!.data, await customerNow(id));
      authorityProcesses();
      assert.equal((await statusAnswer(id, ack.requestId)).status, 'PROCESSED');
      assert.deepEqual((await eventsSince(refused[0]!.seq, id)).map((event) => event.type), ['platform_customer.verified', 'genebrc.request.processed', 'ebrc.generated']);
    });

    test("another platform's changes carry its own ids, never platform A's", async () => {
      const { customerId: aCustomer } = await mainCustomer();
      const b = { key: h.platformB.apiKey };
      const before = await mark();
      const created = await h.request('POST', '/api/v1/platform-customers/', { ...b, body: { name: 'B', email: 'events-b@example.com', companyName: 'B Ltd' } });
      assert.equal(created.status, 201, created.text);
      const bCustomer = created.body.id;
      const checked = await h.request('POST', `/api/v1/platform-customers/${bCustomer}/check-authority-credentials`, {
        ...b,
        // An account of its own: its pushes map no IRM that platform A's customers mean to.
        body: { authorityUsername: 'bulk.exporter', authorityPassword: PASSWORD },
      });
      assert.equal(checked.status, 200, checked.text);
      await firstRefresh({ request: (method, url, options = {}) => h.request(method, url, { ...options, ...b }) }, bCustomer);
      const [irm, other] = await usableIrms({ request: (method, url, options = {}) => h.request(method, url, { ...options, ...b }) }, bCustomer, 2);
      const accepted = await push(bCustomer, [lineFor(irm, 1, 5), lineFor(other, 2, 1, { billNo: 'SANDBOX-FAIL' })], h.platformB.apiKey);
      assert.equal(accepted.ackStatus, 'Validated', JSON.stringify(accepted));
      const refused = await h.request('POST', '/api/v1/genebrc/push-irm', { ...b, body: { ...SAMPLE, platformCustomerId: bCustomer } });
      assert.equal(refused.body.ackStatus, 'Failed', refused.text);
      authorityProcesses();
      assert.equal((await statusAnswer(bCustomer, accepted.requestId, h.platformB.apiKey)).status, 'PARTIALLY_PROCESSED');

      const events = await eventsSince(before);
      const types = new Set(events.map((event) => event.type));
      for (const type of ['platform_customer.verified', 'irm.received', 'genebrc.request.acknowledged', 'genebrc.request.failed', 'genebrc.request.partially_processed', 'ebrc.generated']) {
        assert.ok(types.has(type), `platform B's ${type}`);
      }
      for (const event of events) {
        assert.equal(event.platform_id, h.platformB.id, `${event.type} ${event.id} is platform B's`);
        assert.equal(event.platform_customer_id, bCustomer, `${event.type} ${event.id} is B's customer's`);
      }
      // And nothing of platform A's names B's customer, nor the other way round.
      const crossed = await h.database.db
        .selectFrom('events')
        .innerJoin('platform_customers', 'platform_customers.id', 'events.platform_customer_id')
        .select(['events.id', 'events.type'])
        .whereRef('platform_customers.platform_id', '<>', 'events.platform_id')
        .execute();
      assert.deepEqual(crossed, [], "no event carries another platform's customer");
      const ofA = await h.database.db.selectFrom('events').select('id').where('platform_id', '=', h.platformA.id).where('platform_customer_id', '=', bCustomer).execute();
      assert.deepEqual(ofA, []);
      const aEventsWithB = await h.database.db.selectFrom('events').select('id').where('platform_id', '=', h.platformB.id).where('platform_customer_id', '=', aCustomer).execute();
      assert.deepEqual(aEventsWithB, []);
    });

    test('a mixed workload at once: no change without its event, no event without its change', async () => {
      const { customerId } = await mainCustomer();
      const irms = await freshIrms(10);
      const line = (index: number, amount: number, billNo?: string) => lineFor(irms[index], 1, amount, billNo ? { billNo } : {});
      const pushes = [
        [line(0, 1)],
        // Two lines of two invoices: clubbed into one eBRC (one invoice), their IRMs would have to share a currency and a
        // bank, which the customer's IRMs next in line need not.
        [line(1, 2), { ...line(2, 3), serialNo: 2, sbCumInvoiceNumber: '1002' }],
        [line(3, 1, 'SANDBOX-FAIL')],
        [line(4, 2), { ...line(5, 1, 'SANDBOX-FAIL'), serialNo: 2, sbCumInvoiceNumber: '1002' }],
        [line(6, 1, 'SANDBOX-OUTAGE')],
        [line(7, 1)],
        [line(7, 1)], // the same IRM at once: one of the two loses the race (ERR23 or ERR38), or both pass the authority's checks in turn
        [line(8, 5)],
      ];
      const before = await mark();
      const answers = await Promise.all(pushes.map((lines) => h.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(customerId, lines) })));
      for (const answer of answers) assert.ok(answer.status === 200 || answer.status === 502, answer.text);
      const sample = await h.request('POST', '/api/v1/genebrc/push-irm', { body: { ...SAMPLE, platformCustomerId: customerId } });
      assert.equal(sample.body.ackStatus, 'Failed');
      // Some PENDING, some FAILED: the events match.
      const midway = await assertEventsMatchChanges(h.database);
      assert.ok(midway.requests >= 10, JSON.stringify(midway));

      authorityProcesses();
      const open = await h.database.db.selectFrom('genebrc_requests').select('id').where('status', 'in', ['PENDING', 'SUBMITTING']).execute();
      // Two movers per request, at once, as two pollers would.
      await Promise.all(open.flatMap(({ id }) => [h.service.progress.advance(id), h.service.progress.advance(id)]));
      const stillOpen = await h.database.db.selectFrom('genebrc_requests').select(['request_id', 'status']).where('status', '=', 'PENDING').execute();
      assert.deepEqual(stillOpen, [], 'everything the authority accepted is final');
      const figures = await assertEventsMatchChanges(h.database);
      assert.ok(figures.ebrcEvents > midway.ebrcEvents, JSON.stringify(figures));
      const written = await eventsSince(before, customerId);
      assert.ok(written.some((event) => event.type === 'genebrc.request.partially_processed'));
      assert.ok(written.some((event) => event.type === 'genebrc.request.errored'));
    });

    test('every event: an evt_ id of its own, an ISO 8601 UTC timestamp, a type of the catalogue', async () => {
      await mainCustomer();
      const rows = await h.database.db.selectFrom('events').select(['id', 'type', 'created_at', 'platform_customer_id', 'data']).execute();
      assert.ok(rows.length > 1_000, `${rows.length} events`);
      assert.equal(new Set(rows.map((row) => row.id)).size, rows.length, 'ids are unique');
      const known = new Set(['genebrc.request.acknowledged', 'genebrc.request.failed', 'genebrc.request.processed', 'genebrc.request.partially_processed', 'genebrc.request.errored', 'platform_customer.verified', 'platform_customer.credentials_invalid', 'irm.received', 'irm.updated', 'ebrc.generated', 'ebrc.updated', 'reconciliation.completed']);
      for (const row of rows) {
        const event = toEvent(row);
        assert.match(event.id, /^evt_[A-Za-z0-9_-]{32}$/);
        assert.match(event.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, 'ISO 8601 in UTC');
        assert.equal(new Date(event.timestamp).toISOString(), event.timestamp);
        assert.ok(Math.abs(Date.now() - Date.parse(event.timestamp)) < 10 * 60_000, 'written during this run, by the service clock');
        assert.ok(known.has(event.type), event.type);
        assert.ok(event.platformCustomerId, `${event.type} has its customer`);
        if (REQUEST_EVENT.test(event.type)) assert.equal(typeof (event.data as any).requestId, 'string');
      }
      await assertEventsMatchChanges(h.database);
    });

    test('the check itself notices an event without its change and a change without its event', async () => {
      const { customerId } = await mainCustomer();
      await assertEventsMatchChanges(h.database);
      const processed = await h.database.db
        .selectFrom('genebrc_requests')
        .select(['id', 'request_id'])
        .where('platform_customer_id', '=', customerId)
        .where('status', '=', 'PROCESSED')
        .executeTakeFirstOrThrow();
      const ofRequest = (await allEventsOf(customerId)).filter((event) => event.data.requestId === processed.request_id);
      const final = ofRequest.find((event) => event.type === 'genebrc.request.processed')!;
      const ebrc = ofRequest.find((event) => event.type === 'ebrc.generated')!;
      const db = h.database.db;
      const restore = async (event: EventRow) => {
        await db.insertInto('events').values({ id: event.id, platform_id: event.platform_id, platform_customer_id: event.platform_customer_id, type: event.type, data: JSON.stringify(event.data), created_at: event.created_at }).execute();
      };
      // A second final event: an event without its change.
      await db.insertInto('events').values({ id: `evt_${'x'.repeat(32)}`, platform_id: h.platformA.id, platform_customer_id: customerId, type: final.type, data: JSON.stringify(final.data) }).execute();
      await assert.rejects(assertEventsMatchChanges(h.database), /its events/);
      await db.deleteFrom('events').where('id', '=', `evt_${'x'.repeat(32)}`).execute();
      // The final event gone: a change without its event.
      await db.deleteFrom('events').where('id', '=', final.id).execute();
      await assert.rejects(assertEventsMatchChanges(h.database), /its events/);
      await restore(final);
      // An eBRC without its event, and an event of an eBRC never generated.
      await db.deleteFrom('events').where('id', '=', ebrc.id).execute();
      await assert.rejects(assertEventsMatchChanges(h.database), /one ebrc\.generated per eBRC/);
      await restore(ebrc);
      // An IRM without its irm.received.
      const irmEvent = (await allEventsOf(customerId)).find((event) => event.type === 'irm.received')!;
      await db.deleteFrom('events').where('id', '=', irmEvent.id).execute();
      await assert.rejects(assertEventsMatchChanges(h.database), /have no irm\.received/);
      await restore(irmEvent);
      await assertEventsMatchChanges(h.database);
    });

    test(
      'two checks of an unverified customer at once: it becomes verified once, with one platform_customer.verified',
      async () => {
        for (let round = 0; round < 2; round++) {
          const created = await h.request('POST', '/api/v1/platform-customers/', { body: { name: 'Twice', email: `events-twice-${round}@example.com`, companyName: 'Twice Ltd' } });
          assert.equal(created.status, 201, created.text);
          const url = `/api/v1/platform-customers/${created.body.id}/check-authority-credentials`;
          const answers = await Promise.all([0, 1].map(() => h.request('POST', url, { body: { authorityUsername: 'demo.exporter', authorityPassword: PASSWORD } })));
          assert.deepEqual(answers.map((answer) => answer.status), [200, 200]);
          const events = await allEventsOf(created.body.id);
          assert.deepEqual(events.map((event) => event.type), ['platform_customer.verified'], 'verified once, one event');
        }
        await assertEventsMatchChanges(h.database);
      },
    );
  },
  {
    env: { AUTHORITY_TIMEOUT_MS: '3000' },
    sandbox: { processingDelayMs: PROCESSING_DELAY_MS },
    sandboxNow: () => new Date(Date.now() + sandboxClock.offsetMs),
  },
);
