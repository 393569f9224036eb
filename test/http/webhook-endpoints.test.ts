import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { REDACTED_PATHS } from '../../src/http/app.ts';
import { CredentialsVault } from '../../src/services/credentials-vault.ts';
import { EventOutbox } from '../../src/services/outbox.ts';
import { loadKeyRing } from '../../src/services/server-key.ts';
import { describeEachBackend, expectProblem, type Harness } from '../support/harness.ts';

const BASE = '/api/v1/webhook-endpoints';
const MISSING_ID = '00000000-0000-4000-8000-000000000000';
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;

// A receiver that accepts everything, so that whatever the delivery worker sends meanwhile succeeds quietly.
let receiver: http.Server;
let receiverUrl = '';
before(async () => {
  receiver = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(204).end());
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
});
after(async () => {
  receiver.closeAllConnections();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

async function createEndpoint(h: Harness, body: Record<string, unknown> = {}, key?: string) {
  const response = await h.request('POST', BASE, {
    ...(key ? { key } : {}),
    body: { url: receiverUrl, enabledEvents: ['ebrc.generated'], ...body },
  });
  assert.equal(response.status, 201, response.text);
  return response.body;
}

/** The service's vault, from its key (ENCRYPTION_KEY or the data folder's key file). */
function vaultOf(h: Harness): CredentialsVault {
  return new CredentialsVault(loadKeyRing(h.config));
}

async function storedEndpoint(h: Harness, id: string) {
  return h.database.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

describeEachBackend(
  'webhook endpoints',
  (h) => {
    test('create answers 201 with the endpoint and its secret, shown this once and stored sealed', async () => {
      const response = await h.request('POST', BASE, {
        body: { url: receiverUrl, description: 'Our receiver', enabledEvents: ['genebrc.request.processed', 'ebrc.generated'] },
      });
      assert.equal(response.status, 201, response.text);
      const created = response.body;
      assert.deepEqual(Object.keys(created).sort(), ['createdAt', 'description', 'enabledEvents', 'id', 'secret', 'status', 'url']);
      assert.match(created.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.equal(created.url, receiverUrl);
      assert.equal(created.description, 'Our receiver');
      assert.deepEqual(created.enabledEvents, ['genebrc.request.processed', 'ebrc.generated']);
      assert.equal(created.status, 'enabled');
      assert.match(created.secret, SECRET);
      assert.equal(Buffer.from(created.secret.slice('whsec_'.length), 'base64').length, 32);
      assert.ok(created.createdAt.endsWith('Z'));
      assert.equal(response.headers['cache-control'], 'no-store');

      const stored = await storedEndpoint(h, created.id);
      assert.equal(stored.platform_id, h.platformA.id);
      assert.ok(!stored.secret.includes(created.secret.slice(6)), 'the secret is not stored in plaintext');
      assert.equal(vaultOf(h).openWebhookSecret(created.id, stored.secret), created.secret);

      const fetched = await h.request('GET', `${BASE}/${created.id}`);
      assert.equal(fetched.status, 200);
      assert.deepEqual(fetched.body, {
        id: created.id,
        url: receiverUrl,
        description: 'Our receiver',
        enabledEvents: ['genebrc.request.processed', 'ebrc.generated'],
        status: 'enabled',
        disabledReason: null,
        createdAt: created.createdAt,
        updatedAt: fetched.body.updatedAt,
      });
      assert.ok(!fetched.text.includes('whsec_'), 'never shown again');
    });

    test('description is optional; duplicates are dropped; "*" beside other types means every type', async () => {
      const plain = await createEndpoint(h, { enabledEvents: ['irm.received', 'irm.received', 'ebrc.generated'] });
      assert.equal(plain.description, null);
      assert.deepEqual(plain.enabledEvents, ['irm.received', 'ebrc.generated']);
      const star = await createEndpoint(h, { enabledEvents: ['irm.received', '*', 'ebrc.generated'] });
      assert.deepEqual(star.enabledEvents, ['*']);
      const stored = await storedEndpoint(h, star.id);
      assert.deepEqual(stored.enabled_events, ['*']);
    });

    test('an unknown event type is 400 unknown_event_type at its index, naming the known types, and nothing is stored', async () => {
      const before = await h.request('GET', BASE, { query: { limit: 100 } });
      const response = await h.request('POST', BASE, {
        body: { url: receiverUrl, enabledEvents: ['ebrc.generated', 'ebrc.created', 'irm.recieved'] },
      });
      const problem = expectProblem(response, 400, 'validation_failed');
      assert.deepEqual(problem.errors.map((e: { path: string; code: string }) => [e.path, e.code]), [
        ['/enabledEvents/1', 'unknown_event_type'],
        ['/enabledEvents/2', 'unknown_event_type'],
      ]);
      assert.match(problem.errors[0].message, /ebrc\.generated/);
      assert.match(problem.errors[0].message, /webhook\.test/);
      const after = await h.request('GET', BASE, { query: { limit: 100 } });
      assert.equal(after.body.meta.totalItems, before.body.meta.totalItems);
    });

    test('bad bodies are 400 with the field named', async () => {
      const cases: [Record<string, unknown>, string, string][] = [
        [{ url: receiverUrl, enabledEvents: [] }, '/enabledEvents', 'invalid_length'],
        [{ url: receiverUrl, enabledEvents: Array.from({ length: 21 }, () => 'ebrc.generated') }, '/enabledEvents', 'invalid_length'],
        [{ url: receiverUrl }, '/enabledEvents', 'required'],
        [{ enabledEvents: ['*'] }, '/url', 'required'],
        [{ url: `https://example.com/${'x'.repeat(2040)}`, enabledEvents: ['*'] }, '/url', 'invalid_length'],
        [{ url: 'not a url', enabledEvents: ['*'] }, '/url', 'invalid_format'],
        [{ url: receiverUrl, enabledEvents: ['*'], description: 'd'.repeat(501) }, '/description', 'invalid_length'],
        [{ url: receiverUrl, enabledEvents: ['*'], description: 42 }, '/description', 'invalid_type'],
        [{ url: receiverUrl, enabledEvents: 'ebrc.generated' }, '/enabledEvents', 'invalid_type'],
        [{ url: receiverUrl, enabledEvents: ['*'], enabledEvent: ['*'] }, '/enabledEvent', 'unknown_field'],
      ];
      for (const [body, path, code] of cases) {
        const problem = expectProblem(await h.request('POST', BASE, { body }), 400, 'validation_failed');
        const error = problem.errors.find((e: { path: string }) => e.path === path);
        assert.ok(error, `${JSON.stringify(body).slice(0, 100)}: no error at ${path} in ${JSON.stringify(problem.errors)}`);
        assert.equal(error.code, code, JSON.stringify(body).slice(0, 100));
      }
      // A description may be null, and is then none.
      const nullDescription = await createEndpoint(h, { description: null });
      assert.equal(nullDescription.description, null);
    });

    test('list: the customers\' envelope, newest first, paged; another platform sees none of them', async () => {
      const made: string[] = [];
      for (let i = 0; i < 3; i++) made.push((await createEndpoint(h, { description: `list ${i}` })).id);
      const all = await h.request('GET', BASE, { query: { limit: 100 } });
      assert.equal(all.status, 200);
      const total = all.body.meta.totalItems;
      assert.ok(total >= 3);
      assert.equal(all.body.items.length, total);
      assert.deepEqual(all.body.items.slice(0, 3).map((e: { id: string }) => e.id), [...made].reverse(), 'newest first');
      for (const item of all.body.items) assert.ok(!('secret' in item));
      const sorted = [...all.body.items].sort((a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1));
      assert.deepEqual(all.body.items, sorted);

      // Every page, from either end, is the matching slice of the whole list.
      const pages = [];
      for (let page = 1; page <= Math.ceil(total / 2); page++) {
        const response = await h.request('GET', BASE, { query: { page, limit: 2 } });
        assert.deepEqual(response.body.meta, { totalItems: total, itemsPerPage: 2, totalPages: Math.ceil(total / 2), currentPage: page });
        pages.push(...response.body.items);
      }
      assert.deepEqual(pages, all.body.items);
      const beyond = await h.request('GET', BASE, { query: { page: 99, limit: 2 } });
      assert.deepEqual(beyond.body.items, []);
      assert.equal(beyond.body.meta.totalItems, total);

      const other = await h.request('GET', BASE, { key: h.platformB.apiKey, query: { limit: 100 } });
      for (const id of made) assert.ok(!other.body.items.some((e: { id: string }) => e.id === id));

      for (const query of [{ page: 0 }, { limit: 0 }, { limit: 101 }, { page: 'x' }, { size: 1 }]) {
        expectProblem(await h.request('GET', BASE, { query: query as unknown as Record<string, string> }), 400, 'validation_failed');
      }
    });

    test('PATCH changes the fields sent, and status enables or disables with the reason', async () => {
      const endpoint = await createEndpoint(h, { description: 'before' });
      const before = await storedEndpoint(h, endpoint.id);
      const changed = await h.request('PATCH', `${BASE}/${endpoint.id}`, {
        body: { url: `${receiverUrl}/v2`, description: 'after', enabledEvents: ['webhook.test', 'webhook.test', 'irm.received'] },
      });
      assert.equal(changed.status, 200, changed.text);
      assert.equal(changed.body.url, `${receiverUrl}/v2`);
      assert.equal(changed.body.description, 'after');
      assert.deepEqual(changed.body.enabledEvents, ['webhook.test', 'irm.received']);
      assert.equal(changed.body.status, 'enabled');
      assert.ok(changed.body.updatedAt >= endpoint.createdAt);
      assert.ok(!('secret' in changed.body));
      const after = await storedEndpoint(h, endpoint.id);
      assert.equal(after.secret, before.secret, 'the secret stays');

      const cleared = await h.request('PATCH', `${BASE}/${endpoint.id}`, { body: { description: null } });
      assert.equal(cleared.body.description, null);
      assert.equal(cleared.body.url, `${receiverUrl}/v2`, 'fields not sent stay');

      const disabled = await h.request('PATCH', `${BASE}/${endpoint.id}`, { body: { status: 'disabled' } });
      assert.equal(disabled.body.status, 'disabled');
      assert.equal(disabled.body.disabledReason, 'disabled by the platform');
      assert.deepEqual((await h.request('GET', `${BASE}/${endpoint.id}`)).body, disabled.body);

      // Enabling clears the reason and the failure clock (as after the worker disabled it).
      await h.database.db
        .updateTable('webhook_endpoints')
        .set({ failing_since: new Date(Date.now() - 6 * 86_400_000), disabled_reason: 'every delivery failed for 5 days' })
        .where('id', '=', endpoint.id)
        .execute();
      const enabled = await h.request('PATCH', `${BASE}/${endpoint.id}`, { body: { status: 'enabled' } });
      assert.equal(enabled.body.status, 'enabled');
      assert.equal(enabled.body.disabledReason, null);
      const stored = await storedEndpoint(h, endpoint.id);
      assert.equal(stored.failing_since, null);
      assert.equal(stored.disabled_reason, null);
    });

    test('PATCH refuses an empty change, an unknown type, a bad status or field, and changes nothing then', async () => {
      const endpoint = await createEndpoint(h);
      const empty = expectProblem(await h.request('PATCH', `${BASE}/${endpoint.id}`, { body: {} }), 400, 'validation_failed');
      assert.match(empty.detail, /at least one/);
      const unknown = expectProblem(await h.request('PATCH', `${BASE}/${endpoint.id}`, { body: { enabledEvents: ['nope'] } }), 400, 'validation_failed');
      assert.equal(unknown.errors[0].path, '/enabledEvents/0');
      assert.equal(unknown.errors[0].code, 'unknown_event_type');
      const status = expectProblem(await h.request('PATCH', `${BASE}/${endpoint.id}`, { body: { status: 'paused' } }), 400, 'validation_failed');
      assert.equal(status.errors[0].path, '/status');
      expectProblem(await h.request('PATCH', `${BASE}/${endpoint.id}`, { body: { secret: 'whsec_x' } }), 400, 'validation_failed');
      expectProblem(await h.request('PATCH', `${BASE}/${endpoint.id}`, { body: { enabledEvents: [] } }), 400, 'validation_failed');
      const shown = await h.request('GET', `${BASE}/${endpoint.id}`);
      assert.deepEqual(shown.body.enabledEvents, ['ebrc.generated']);
      expectProblem(await h.request('PATCH', `${BASE}/${MISSING_ID}`, { body: { description: 'x' } }), 404, 'not_found');
    });

    test('DELETE answers 204, and the endpoint and its delivery log are gone', async () => {
      const endpoint = await createEndpoint(h);
      const sent = await h.request('POST', `${BASE}/${endpoint.id}/test`);
      assert.equal(sent.status, 202);
      const redelivered = await h.request('POST', `${BASE}/${endpoint.id}/redeliver`, { body: { eventId: sent.body.id } });
      assert.equal(redelivered.status, 202);
      const deleted = await h.request('DELETE', `${BASE}/${endpoint.id}`);
      assert.equal(deleted.status, 204);
      assert.equal(deleted.text, '');
      expectProblem(await h.request('GET', `${BASE}/${endpoint.id}`), 404, 'not_found');
      expectProblem(await h.request('DELETE', `${BASE}/${endpoint.id}`), 404, 'not_found');
      const attempts = await h.database.db.selectFrom('webhook_attempts').select('id').where('endpoint_id', '=', endpoint.id).execute();
      assert.deepEqual(attempts, []);
      // The event itself stays (events are the platform's, kept 30 days).
      assert.equal((await h.request('GET', `/api/v1/events/${sent.body.id}`)).status, 200);
    });

    test('rotate-secret answers a new secret; the old one keeps signing for 24 h; a second rotation drops the oldest', async () => {
      const endpoint = await createEndpoint(h);
      const first = await h.request('POST', `${BASE}/${endpoint.id}/rotate-secret`);
      assert.equal(first.status, 200, first.text);
      assert.deepEqual(Object.keys(first.body), ['secret']);
      assert.match(first.body.secret, SECRET);
      assert.notEqual(first.body.secret, endpoint.secret);
      assert.equal(first.headers['cache-control'], 'no-store');
      const vault = vaultOf(h);
      let stored = await storedEndpoint(h, endpoint.id);
      assert.equal(vault.openWebhookSecret(endpoint.id, stored.secret), first.body.secret);
      assert.equal(vault.openWebhookSecret(endpoint.id, stored.previous_secret!), endpoint.secret);
      const overlap = stored.previous_secret_expires_at!.getTime() - Date.now();
      assert.ok(overlap > 23.9 * 3_600_000 && overlap <= 24 * 3_600_000 + 60_000, `overlap ${overlap} ms`);

      const second = await h.request('POST', `${BASE}/${endpoint.id}/rotate-secret`, { body: {} });
      assert.equal(second.status, 200);
      stored = await storedEndpoint(h, endpoint.id);
      assert.equal(vault.openWebhookSecret(endpoint.id, stored.secret), second.body.secret);
      assert.equal(vault.openWebhookSecret(endpoint.id, stored.previous_secret!), first.body.secret, 'the oldest is dropped');

      expectProblem(await h.request('POST', `${BASE}/${endpoint.id}/rotate-secret`, { body: { secret: 'mine' } }), 400, 'validation_failed');
      expectProblem(await h.request('POST', `${BASE}/${MISSING_ID}/rotate-secret`), 404, 'not_found');
    });

    test('an upper-case spelling of the id is the same endpoint, and its rotated secret opens with the stored id', async () => {
      const endpoint = await createEndpoint(h);
      const upper = endpoint.id.toUpperCase();
      assert.equal((await h.request('GET', `${BASE}/${upper}`)).body.id, endpoint.id);
      const rotated = await h.request('POST', `${BASE}/${upper}/rotate-secret`);
      const stored = await storedEndpoint(h, endpoint.id);
      assert.equal(vaultOf(h).openWebhookSecret(endpoint.id, stored.secret), rotated.body.secret);
    });

    test('test sends a webhook.test event to this endpoint alone: 202 with the event; 409 when disabled', async () => {
      const endpoint = await createEndpoint(h);
      const response = await h.request('POST', `${BASE}/${endpoint.id}/test`);
      assert.equal(response.status, 202, response.text);
      const event = response.body;
      assert.deepEqual(Object.keys(event).sort(), ['data', 'id', 'platformCustomerId', 'timestamp', 'type']);
      assert.match(event.id, /^evt_[A-Za-z0-9_-]{32}$/);
      assert.equal(event.type, 'webhook.test');
      assert.equal(event.platformCustomerId, null);
      assert.ok(event.timestamp.endsWith('Z'));
      assert.equal(event.data.endpointId, endpoint.id);
      assert.equal(event.data.url, receiverUrl);
      assert.equal(typeof event.data.message, 'string');
      const stored = await h.database.db.selectFrom('events').selectAll().where('id', '=', event.id).executeTakeFirstOrThrow();
      assert.equal(stored.platform_id, h.platformA.id);
      assert.equal(stored.endpoint_id, endpoint.id);
      const shown = await h.request('GET', `/api/v1/events/${event.id}`);
      assert.deepEqual(shown.body, event);

      await h.request('PATCH', `${BASE}/${endpoint.id}`, { body: { status: 'disabled' } });
      const refused = expectProblem(await h.request('POST', `${BASE}/${endpoint.id}/test`, { body: {} }), 409, 'webhook_endpoint_disabled');
      assert.match(refused.detail, /disabled/);
      expectProblem(await h.request('POST', `${BASE}/${endpoint.id}/test`, { body: { message: 'hi' } }), 400, 'validation_failed');
    });

    test('deliveries: the log of attempts, newest first, in the customers\' envelope; redeliver adds one', async () => {
      const endpoint = await createEndpoint(h);
      const empty = await h.request('GET', `${BASE}/${endpoint.id}/deliveries`);
      assert.equal(empty.status, 200);
      assert.deepEqual(empty.body, { items: [], meta: { totalItems: 0, itemsPerPage: 10, totalPages: 0, currentPage: 1 } });

      const [event] = await new EventOutbox().record(h.database.db, [
        { platformId: h.platformA.id, platformCustomerId: null, type: 'webhook.test', data: { note: 'recorded by the test' }, endpointId: MISSING_ID },
      ]);
      const first = await h.request('POST', `${BASE}/${endpoint.id}/redeliver`, { body: { eventId: event!.id } });
      assert.equal(first.status, 202, first.text);
      const attempt = first.body;
      assert.deepEqual(Object.keys(attempt).sort(), [
        'attempt', 'createdAt', 'durationMs', 'error', 'eventId', 'eventType', 'id', 'nextAttemptAt', 'responseBody', 'responseStatus', 'status',
      ]);
      assert.match(attempt.id, /^[0-9a-f-]{36}$/);
      assert.equal(attempt.eventId, event!.id);
      assert.equal(attempt.eventType, 'webhook.test');
      assert.equal(attempt.attempt, 1);
      assert.equal(attempt.status, 'pending');
      const second = await h.request('POST', `${BASE}/${endpoint.id}/redeliver`, { body: { eventId: event!.id } });
      assert.equal(second.body.attempt, 2, 'a redelivery is the next attempt of the event at this endpoint');

      const log = await h.request('GET', `${BASE}/${endpoint.id}/deliveries`, { query: { limit: 100 } });
      assert.equal(log.status, 200);
      assert.equal(log.body.meta.totalItems, log.body.items.length);
      assert.deepEqual(log.body.items.map((row: { id: string }) => row.id).slice(0, 2), [second.body.id, attempt.id], 'newest first');
      const page2 = await h.request('GET', `${BASE}/${endpoint.id}/deliveries`, { query: { page: 2, limit: 1 } });
      assert.equal(page2.body.items[0].id, attempt.id);
      assert.deepEqual(page2.body.meta, { totalItems: 2, itemsPerPage: 1, totalPages: 2, currentPage: 2 });
      const beyond = await h.request('GET', `${BASE}/${endpoint.id}/deliveries`, { query: { page: 5 } });
      assert.deepEqual(beyond.body.items, []);
      assert.equal(beyond.body.meta.totalItems, 2);
      expectProblem(await h.request('GET', `${BASE}/${endpoint.id}/deliveries`, { query: { limit: 500 } }), 400, 'validation_failed');
      expectProblem(await h.request('GET', `${BASE}/${MISSING_ID}/deliveries`), 404, 'not_found');
    });

    test('redeliver: the event must be the platform\'s, the endpoint enabled, the body an eventId', async () => {
      const endpoint = await createEndpoint(h);
      const [foreignEvent] = await new EventOutbox().record(h.database.db, [
        { platformId: h.platformB.id, platformCustomerId: null, type: 'webhook.test', data: {} },
      ]);
      const foreign = expectProblem(await h.request('POST', `${BASE}/${endpoint.id}/redeliver`, { body: { eventId: foreignEvent!.id } }), 404, 'not_found');
      const missing = expectProblem(await h.request('POST', `${BASE}/${endpoint.id}/redeliver`, { body: { eventId: 'evt_nothing' } }), 404, 'not_found');
      assert.equal(foreign.title, missing.title);
      expectProblem(await h.request('POST', `${BASE}/${endpoint.id}/redeliver`, { body: {} }), 400, 'validation_failed');
      expectProblem(await h.request('POST', `${BASE}/${endpoint.id}/redeliver`, { body: { eventId: '' } }), 400, 'validation_failed');
      expectProblem(await h.request('POST', `${BASE}/${endpoint.id}/redeliver`), 400, 'validation_failed');

      const [event] = await new EventOutbox().record(h.database.db, [
        { platformId: h.platformA.id, platformCustomerId: null, type: 'webhook.test', data: {} },
      ]);
      await h.request('PATCH', `${BASE}/${endpoint.id}`, { body: { status: 'disabled' } });
      expectProblem(await h.request('POST', `${BASE}/${endpoint.id}/redeliver`, { body: { eventId: event!.id } }), 409, 'webhook_endpoint_disabled');
      const log = await h.request('GET', `${BASE}/${endpoint.id}/deliveries`);
      assert.equal(log.body.meta.totalItems, 0, 'nothing was scheduled');
    });

    test('Idempotency-Key: a retried create or rotation replays its answer, and the kept answer holds no plaintext secret', async () => {
      const body = { url: receiverUrl, enabledEvents: ['*'], description: 'idempotent' };
      const headers = { 'idempotency-key': `create-${Date.now()}` };
      const first = await h.request('POST', BASE, { body, headers });
      const again = await h.request('POST', BASE, { body, headers });
      assert.equal(first.status, 201);
      assert.equal(again.status, 201);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(again.text, first.text);
      const kept = await h.database.db
        .selectFrom('idempotency_keys')
        .select(['response_body', 'resource_id'])
        .where('platform_id', '=', h.platformA.id)
        .where('key', '=', headers['idempotency-key'])
        .executeTakeFirstOrThrow();
      assert.match(kept.response_body!, /^sealed:v2:default:/);
      assert.ok(!kept.response_body!.includes(first.body.secret));
      assert.ok(!kept.response_body!.includes(first.body.secret.slice(6)));
      assert.equal(kept.resource_id, first.body.id, 'the key is linked to the endpoint it created');
      const list = await h.request('GET', BASE, { query: { limit: 100 } });
      assert.equal(list.body.items.filter((e: { description: string }) => e.description === 'idempotent').length, 1);

      const rotateHeaders = { 'idempotency-key': `rotate-${Date.now()}` };
      const rotated = await h.request('POST', `${BASE}/${first.body.id}/rotate-secret`, { headers: rotateHeaders });
      const rotatedAgain = await h.request('POST', `${BASE}/${first.body.id}/rotate-secret`, { headers: rotateHeaders });
      assert.equal(rotatedAgain.headers['idempotent-replayed'], 'true');
      assert.equal(rotatedAgain.body.secret, rotated.body.secret);
      const rotatedKept = await h.database.db
        .selectFrom('idempotency_keys')
        .select('response_body')
        .where('platform_id', '=', h.platformA.id)
        .where('key', '=', rotateHeaders['idempotency-key'])
        .executeTakeFirstOrThrow();
      assert.ok(!rotatedKept.response_body!.includes(rotated.body.secret));
      // Another platform cannot read it back with the same key: keys are per platform.
      expectProblem(
        await h.request('POST', `${BASE}/${first.body.id}/rotate-secret`, { key: h.platformB.apiKey, headers: rotateHeaders }),
        404,
        'not_found',
      );

      // A route whose answer holds no secret keeps its answer as before, in plain JSON.
      const testHeaders = { 'idempotency-key': `test-${Date.now()}` };
      const sent = await h.request('POST', `${BASE}/${first.body.id}/test`, { headers: testHeaders });
      const sentAgain = await h.request('POST', `${BASE}/${first.body.id}/test`, { headers: testHeaders });
      assert.equal(sentAgain.headers['idempotent-replayed'], 'true');
      assert.equal(sentAgain.body.id, sent.body.id, 'one test event, not two');
      const testKept = await h.database.db
        .selectFrom('idempotency_keys')
        .select('response_body')
        .where('platform_id', '=', h.platformA.id)
        .where('key', '=', testHeaders['idempotency-key'])
        .executeTakeFirstOrThrow();
      assert.equal(testKept.response_body, sent.text);
    });

    test('a create whose answer was lost is answered from what it committed, sealed all the same', async () => {
      const headers = { 'idempotency-key': `lost-${Date.now()}` };
      const first = await h.request('POST', BASE, { body: { url: receiverUrl, enabledEvents: ['*'] }, headers });
      // As if the process had stopped between the commit and keeping the answer.
      await h.database.db
        .updateTable('idempotency_keys')
        .set({ state: 'running', status_code: null, response_body: null })
        .where('platform_id', '=', h.platformA.id)
        .where('key', '=', headers['idempotency-key'])
        .execute();
      const again = await h.request('POST', BASE, { body: { url: receiverUrl, enabledEvents: ['*'] }, headers });
      assert.equal(again.status, 201);
      assert.equal(again.body.id, first.body.id);
      assert.equal(again.body.secret, first.body.secret);
      const kept = await h.database.db
        .selectFrom('idempotency_keys')
        .select('response_body')
        .where('platform_id', '=', h.platformA.id)
        .where('key', '=', headers['idempotency-key'])
        .executeTakeFirstOrThrow();
      assert.match(kept.response_body!, /^sealed:v2:default:/);
      const third = await h.request('POST', BASE, { body: { url: receiverUrl, enabledEvents: ['*'] }, headers });
      assert.equal(third.body.secret, first.body.secret);
    });

    test('secrets are redacted from log lines', () => {
      assert.ok(REDACTED_PATHS.includes('*.secret'));
    });

    test('security: another platform\'s endpoint is answered like a missing one on every operation', async () => {
      const endpoint = await createEndpoint(h);
      const [event] = await new EventOutbox().record(h.database.db, [
        { platformId: h.platformB.id, platformCustomerId: null, type: 'webhook.test', data: {} },
      ]);
      const key = h.platformB.apiKey;
      const calls: [string, string, unknown?][] = [
        ['GET', `${BASE}/${endpoint.id}`],
        ['PATCH', `${BASE}/${endpoint.id}`, { status: 'disabled' }],
        ['DELETE', `${BASE}/${endpoint.id}`],
        ['POST', `${BASE}/${endpoint.id}/rotate-secret`],
        ['POST', `${BASE}/${endpoint.id}/test`],
        ['GET', `${BASE}/${endpoint.id}/deliveries`],
        ['POST', `${BASE}/${endpoint.id}/redeliver`, { eventId: event!.id }],
      ];
      for (const [method, url, body] of calls) {
        const foreign = expectProblem(await h.request(method, url, { key, ...(body ? { body } : {}) }), 404, 'not_found');
        const missing = expectProblem(
          await h.request(method, url.replace(endpoint.id, MISSING_ID), { key, ...(body ? { body } : {}) }),
          404,
          'not_found',
        );
        assert.equal(foreign.detail.replace(endpoint.id, MISSING_ID), missing.detail, `${method} ${url}`);
        expectProblem(await h.request(method, url.replace(endpoint.id, 'not-a-uuid'), { key, ...(body ? { body } : {}) }), 404, 'not_found');
      }
      const untouched = await storedEndpoint(h, endpoint.id);
      assert.equal(untouched.status, 'enabled');
      const log = await h.request('GET', `${BASE}/${endpoint.id}/deliveries`);
      assert.ok(!log.body.items.some((row: { eventId: string }) => row.eventId === event!.id));
    });

    test('security: without a key, or with a wrong one, every operation is 401', async () => {
      const endpoint = await createEndpoint(h);
      const calls: [string, string, unknown?][] = [
        ['POST', BASE, { url: receiverUrl, enabledEvents: ['*'] }],
        ['GET', BASE],
        ['GET', `${BASE}/${endpoint.id}`],
        ['PATCH', `${BASE}/${endpoint.id}`, { status: 'disabled' }],
        ['DELETE', `${BASE}/${endpoint.id}`],
        ['POST', `${BASE}/${endpoint.id}/rotate-secret`],
        ['POST', `${BASE}/${endpoint.id}/test`],
        ['GET', `${BASE}/${endpoint.id}/deliveries`],
        ['POST', `${BASE}/${endpoint.id}/redeliver`, { eventId: 'evt_x' }],
      ];
      for (const [method, url, body] of calls) {
        expectProblem(await h.request(method, url, { key: null, ...(body ? { body } : {}) }), 401, 'api_key_missing');
        expectProblem(await h.request(method, url, { key: 'ebrc_test_3yQ9wZg8kLmN2pQrStUvWxYzAbCd', ...(body ? { body } : {}) }), 401, 'api_key_invalid');
      }
      assert.equal((await storedEndpoint(h, endpoint.id)).status, 'enabled');
    });

    test('the OpenAPI document describes the operations under the Webhooks tag', async () => {
      const response = await h.request('GET', '/openapi.json', { key: null });
      const document = response.body;
      assert.ok(document.tags.some((tag: { name: string }) => tag.name === 'Webhooks'));
      for (const path of ['/api/v1/webhook-endpoints', '/api/v1/webhook-endpoints/{id}', '/api/v1/webhook-endpoints/{id}/rotate-secret',
        '/api/v1/webhook-endpoints/{id}/test', '/api/v1/webhook-endpoints/{id}/deliveries', '/api/v1/webhook-endpoints/{id}/redeliver']) {
        assert.ok(document.paths[path], path);
      }
      assert.ok(document.components.schemas.WebhookEndpoint);
    });
  },
  { env: { WEBHOOK_ALLOW_PRIVATE_URLS: 'true' } },
);

describeEachBackend('webhook endpoint URLs', (h) => {
  const refused = [
    'http://127.0.0.1/hooks',
    'http://127.0.0.1:8080/hooks',
    'http://localhost/hooks',
    'https://localhost:3000/hooks',
    'http://[::1]/hooks',
    'http://10.1.2.3/hooks',
    'http://169.254.169.254/latest/meta-data',
    'http://2130706433/hooks',
    'ftp://1.1.1.1/hooks',
    'https://user:pass@1.1.1.1/hooks',
  ];

  test('loopback, private, link-local and non-http URLs are refused with 400 webhook_url_not_allowed, and nothing is stored', async () => {
    const before = await h.request('GET', BASE, { query: { limit: 100 } });
    for (const url of refused) {
      const problem = expectProblem(await h.request('POST', BASE, { body: { url, enabledEvents: ['*'] } }), 400, 'webhook_url_not_allowed');
      assert.equal(problem.errors.length, 1, url);
      assert.equal(problem.errors[0].path, '/url');
      assert.equal(problem.errors[0].code, 'webhook_url_not_allowed');
      assert.equal(problem.errors[0].message, problem.detail);
      assert.ok(problem.detail.length > 10);
      // A local receiver is what a newcomer tries first: the refusal names the setting that allows it; a URL that is
      // wrong whatever the setting does not.
      const internalHost = !url.startsWith('ftp:') && !url.includes('user:pass');
      assert.equal(problem.detail.includes('WEBHOOK_ALLOW_PRIVATE_URLS=true'), internalHost, `${url}: ${problem.detail}`);
    }
    const after = await h.request('GET', BASE, { query: { limit: 100 } });
    assert.equal(after.body.meta.totalItems, before.body.meta.totalItems);
  });

  test('a public address is taken, and a PATCH to an internal one is refused, leaving the URL as it was', async () => {
    const created = await h.request('POST', BASE, { body: { url: 'https://1.1.1.1/hooks', enabledEvents: ['*'] } });
    assert.equal(created.status, 201, created.text);
    const plainHttp = await h.request('POST', BASE, { body: { url: 'http://1.1.1.1/hooks', enabledEvents: ['*'] } });
    assert.equal(plainHttp.status, 201, 'http:// is allowed for a public host');
    const id = created.body.id;
    const refusedChange = expectProblem(
      await h.request('PATCH', `${BASE}/${id}`, { body: { url: 'http://localhost:9000/x', description: 'changed' } }),
      400,
      'webhook_url_not_allowed',
    );
    assert.equal(refusedChange.errors[0].path, '/url');
    const shown = await h.request('GET', `${BASE}/${id}`);
    assert.equal(shown.body.url, 'https://1.1.1.1/hooks');
    assert.equal(shown.body.description, null, 'nothing of the refused change was stored');
  });
});
