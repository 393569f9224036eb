import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { openDatabase } from '../../src/store/database.ts';
import { backends, type Backend } from '../support/harness.ts';
import { killRun } from '../support/kill-run.ts';
import { assertEventsMatchChanges, statusFigures } from '../support/invariants.ts';
import { PushStream } from '../support/push-stream.ts';
import { Random, reportFigures, scaled } from '../support/reliability.ts';
import { verifies, WebhookReceiver, type Behaviour } from '../support/webhook-receiver.ts';
import { firstRefresh, sleep, usableIrms, verifiedCustomer } from '../support/workflow.ts';

/**
 * At least once through SIGKILL (contract 9): `node src/main.ts`, with a webhook endpoint subscribed to "*" at a
 * receiver in this process, is killed at random moments of a stream of pushes and status polls (and of the thousands
 * of irm.received deliveries of the first refresh), then started again on the same data. The receiver answers most
 * deliveries at once, some late, and fails some with 500, so that retries are pending when the kills come. Once
 * everything has settled, checked in the service's database: every change has its event (and every event its change),
 * every request reached a final state with its final event, and every event of the platform reached the receiver,
 * answered 2xx at least once, signed with the endpoint's secret, carrying the event as stored.
 */

const KILLS = scaled(3, 10);
const WORKERS = 4;
const IRMS = scaled(40, 200);
const SETTLE_TIMEOUT_MS = scaled(180_000, 300_000);

const FINAL_EVENT: Readonly<Record<string, string>> = {
  FAILED: 'genebrc.request.failed',
  PROCESSED: 'genebrc.request.processed',
  PARTIALLY_PROCESSED: 'genebrc.request.partially_processed',
  ERRORED: 'genebrc.request.errored',
};

async function outboxKillRun(backend: Backend, t: TestContext): Promise<void> {
  const env = {
    AUTHORITY_TIMEOUT_MS: '2000',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    WEBHOOK_RETRY_SCHEDULE: '1,1,1,2,2,5',
    WEBHOOK_TIMEOUT_MS: '3000',
  };
  await killRun(backend, t, { platformName: 'Webhook kill platform', env }, async ({ seed, random, scratch, service, startedAt: started }) => {
    const answers = new Random(seed ^ 0x5bd1e995);
    // Every delivery is verified as it arrives (the signature's timestamp is checked against now, within 5 minutes).
    let secret = '';
    const signatureValid = new Map<number, boolean>();
    const receiver = await WebhookReceiver.start((request) => {
      signatureValid.set(request.index, secret !== '' && verifies(request, secret));
      const roll = answers.next();
      const behaviour: Behaviour = roll < 0.08 ? { status: 500, body: 'not now' } : roll < 0.25 ? { delayMs: answers.int(20, 400) } : {};
      return behaviour;
    });
    try {
      const client = service.client;

      // The endpoint comes first, so that every event of the platform is one it must receive.
      const endpoint = await client.request('POST', '/api/v1/webhook-endpoints', { body: { url: receiver.url(), enabledEvents: ['*'] } });
      assert.equal(endpoint.status, 201, endpoint.text);
      secret = endpoint.body.secret;

      const customerId = await verifiedCustomer(client, `webhook-kill-${backend}@example.com`);
      await firstRefresh(client, customerId);
      const stream = new PushStream(customerId, await usableIrms(client, customerId, IRMS), random, { maxLines: 3, failLineRate: 0.1 });

      let receivedAtKills = 0;
      const killsDuringStream = await service.pushThroughKills(stream, {
        kills: KILLS,
        workers: WORKERS,
        onKill: () => {
          receivedAtKills += receiver.requests.length;
        },
      });

      // No more kills: the poller settles every request, then the deliveries catch up with the events.
      const settleStarted = Date.now();
      const deadline = settleStarted + SETTLE_TIMEOUT_MS;
      for (;;) {
        const open = await client.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: customerId, status: 'PENDING', limit: 1 } });
        assert.equal(open.status, 200, open.text);
        if (open.headers['x-total-count'] === '0') break;
        if (Date.now() > deadline) assert.fail(`${open.headers['x-total-count']} requests still open after ${SETTLE_TIMEOUT_MS} ms`);
        await sleep(500);
      }
      const requestsSettledMs = Date.now() - settleStarted;
      const delivered = (): Set<string> =>
        new Set(receiver.requests.filter((request) => (request.behaviour.status ?? 200) < 300).map((request) => request.headers['webhook-id']!));
      let total = 0;
      for (;;) {
        const listed = await client.request('GET', '/api/v1/events', { query: { limit: 1 } });
        assert.equal(listed.status, 200, listed.text);
        total = listed.body.meta.totalItems;
        if (delivered().size >= total) break;
        if (Date.now() > deadline) assert.fail(`${total - delivered().size} of ${total} events not delivered ${SETTLE_TIMEOUT_MS} ms after the last start`);
        await sleep(500);
      }
      const settleMs = Date.now() - settleStarted;
      await service.stop();

      assert.deepEqual(stream.unexpected, [], 'every answer the client got was one the contract allows');
      const database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir });
      let figures: Record<string, number | string>;
      try {
        // No change without its event, no event without its change, whatever was killed when.
        const eventFigures = await assertEventsMatchChanges(database);
        const { platform_id: platformId } = await database.db
          .selectFrom('platform_customers')
          .select('platform_id')
          .where('id', '=', customerId)
          .executeTakeFirstOrThrow();
        const events = await database.db
          .selectFrom('events')
          .select(['id', 'type', 'created_at', 'platform_customer_id', 'data'])
          .where('platform_id', '=', platformId)
          .execute();
        const requests = await database.db.selectFrom('genebrc_requests').select(['request_id', 'status']).where('platform_id', '=', platformId).execute();

        // Every request is final, with its final event in the table.
        const byStatus: Record<string, number> = {};
        const finalEvents = new Map<string, string[]>();
        for (const event of events) {
          const requestId = (event.data as { requestId?: string }).requestId;
          if (requestId !== undefined && Object.values(FINAL_EVENT).includes(event.type)) finalEvents.set(requestId, [...(finalEvents.get(requestId) ?? []), event.type]);
        }
        for (const request of requests) {
          byStatus[request.status] = (byStatus[request.status] ?? 0) + 1;
          const expected = FINAL_EVENT[request.status];
          assert.ok(expected, `request ${request.request_id} is final (it is ${request.status})`);
          assert.deepEqual(finalEvents.get(request.request_id), [expected], `request ${request.request_id} (${request.status}) has its final event, once`);
        }

        // Every event of the platform reached the receiver, answered 2xx, signed with the endpoint's secret, as stored.
        const eventById = new Map(events.map((event) => [event.id, event]));
        const succeeded = delivered();
        const undelivered = events.filter((event) => !succeeded.has(event.id)).map((event) => `${event.id} (${event.type})`);
        assert.deepEqual(undelivered.slice(0, 20), [], `${undelivered.length} of ${events.length} events never delivered`);
        const strangers = [...receiver.webhookIds()].filter((id) => !eventById.has(id));
        assert.deepEqual(strangers, [], 'nothing was delivered that is not an event of the platform');
        const badSignatures = receiver.requests.filter((request) => signatureValid.get(request.index) !== true);
        assert.deepEqual(badSignatures.map((request) => request.headers['webhook-id']), [], 'every delivery verifies with the endpoint secret');
        for (const request of receiver.requests) {
          const body = JSON.parse(request.body);
          const stored = eventById.get(request.headers['webhook-id']!)!;
          assert.equal(body.id, stored.id);
          assert.equal(body.type, stored.type);
          assert.equal(body.timestamp, stored.created_at.toISOString());
          assert.equal(body.platformCustomerId, stored.platform_customer_id);
          assert.deepEqual(body.data, stored.data, `the body of ${stored.id} is the stored event`);
        }
        const attempts = await database.db
          .selectFrom('webhook_attempts')
          .select(['status'])
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .groupBy('status')
          .execute();
        const copies = new Map<string, number>();
        for (const request of receiver.requests) copies.set(request.headers['webhook-id']!, (copies.get(request.headers['webhook-id']!) ?? 0) + 1);
        figures = {
          'events (all delivered, each verified)': events.length,
          'events listed by the API at the end': total,
          'irm.received events': eventFigures.irmEvents,
          'ebrc.generated events': eventFigures.ebrcEvents,
          requests: requests.length,
          'final statuses': statusFigures(byStatus),
          'deliveries received': receiver.requests.length,
          'deliveries answered 500 (retried)': receiver.requests.filter((request) => request.behaviour.status === 500).length,
          'events received more than once': [...copies.values()].filter((n) => n > 1).length,
          'attempts by status': attempts.map((row) => `${row.status} ${row.n}`).join(', '),
        };
      } finally {
        await database.close();
      }

      const logs = service.logs();
      assert.ok(!logs.includes(secret), 'the endpoint secret is never logged');
      const errorLines = logs.split('\n').filter((line) => /"level":(50|60)/.test(line));
      assert.deepEqual(errorLines.filter((line) => /unhandled error/.test(line)), [], 'no request failed unexpectedly');

      reportFigures(t, `webhook outbox through kills [${backend}]`, {
        seed,
        'kills survived (SIGKILL during the stream and the deliveries)': killsDuringStream,
        'kills survived (SIGKILL during a restart)': service.killsDuringStart,
        'deliveries received before the kills (summed)': receivedAtKills,
        pushes: stream.counts.pushes,
        'pushes acknowledged Validated': stream.counts.validated,
        ...figures,
        'settle ms: requests final': requestsSettledMs,
        'settle ms: every event delivered': settleMs,
        'error log lines': errorLines.length,
        'run ms': Date.now() - started,
      });
    } finally {
      await receiver.close();
    }
  });
}

describe('SIGKILL at random moments while events are written and delivered', { concurrency: true }, () => {
  for (const backend of backends()) {
    test(`every change has its event and every event reaches the endpoint, signed, at least once [${backend}]`, (t) => outboxKillRun(backend, t));
  }
});
