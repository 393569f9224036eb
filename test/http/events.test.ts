import assert from 'node:assert/strict';
import { SYSTEM_SOURCE } from '../../src/services/audit.ts';
import { test } from 'node:test';
import { EventOutbox, type NewEvent } from '../../src/services/outbox.ts';
import { createPlatform } from '../../src/services/platforms.ts';
import { insertEvents } from '../../src/store/events.ts';
import { newEventId, type EventType } from '../../src/domain/events.ts';
import { describeEachBackend, expectProblem, type Harness } from '../support/harness.ts';

const EVENTS = '/api/v1/events';

let made = 0;

/** A platform of its own, so that a test's counts are its own. */
async function freshPlatform(h: Harness): Promise<{ id: string; apiKey: string }> {
  const created = await createPlatform(h.database.db, `Events ${++made}`, SYSTEM_SOURCE);
  return { id: created.platform.id, apiKey: created.apiKey };
}

async function createCustomer(h: Harness, apiKey: string, name: string): Promise<string> {
  const response = await h.request('POST', '/api/v1/platform-customers/', {
    key: apiKey,
    body: { name, email: `${name.toLowerCase().replace(/\W/g, '')}.${Date.now()}.${++made}@events.example`, companyName: `${name} Ltd` },
  });
  assert.equal(response.status, 201, response.text);
  return response.body.id;
}

async function record(h: Harness, events: NewEvent[]) {
  return new EventOutbox().record(h.database.db, events);
}

/** Events written as the outbox writes them, at a chosen time (for the date filters). */
async function recordAt(h: Harness, createdAt: string, platformId: string, type: EventType, platformCustomerId: string | null = null) {
  const id = newEventId();
  await insertEvents(h.database.db, [{ id, platformId, platformCustomerId, type, data: { at: createdAt }, endpointId: null, createdAt: new Date(createdAt) }]);
  return id;
}

function newestFirst(a: { timestamp: string; id: string }, b: { timestamp: string; id: string }): number {
  if (a.timestamp !== b.timestamp) return a.timestamp < b.timestamp ? 1 : -1;
  return a.id < b.id ? 1 : -1;
}

describeEachBackend('events', (h) => {
  test('list: the platform\'s events newest first in the customers\' envelope, every page a slice of the whole', async () => {
    const platform = await freshPlatform(h);
    const customer = await createCustomer(h, platform.apiKey, 'Lister');
    const first = await record(h, [
      { platformId: platform.id, platformCustomerId: customer, type: 'platform_customer.verified', data: { id: customer } },
    ]);
    // One statement's events share their timestamp: they are ordered by id.
    const batch = await record(h, [
      { platformId: platform.id, platformCustomerId: customer, type: 'ebrc.generated', data: { n: 1 } },
      { platformId: platform.id, platformCustomerId: customer, type: 'ebrc.generated', data: { n: 2 } },
      { platformId: platform.id, platformCustomerId: customer, type: 'ebrc.generated', data: { n: 3 } },
      { platformId: platform.id, platformCustomerId: null, type: 'webhook.test', data: { message: 'hello' } },
    ]);
    const last = await record(h, [{ platformId: platform.id, platformCustomerId: customer, type: 'irm.received', data: { irmNumber: 'IRM1' } }]);
    const all = await h.request('GET', EVENTS, { key: platform.apiKey, query: { limit: 100 } });
    assert.equal(all.status, 200, all.text);
    assert.equal(all.body.meta.totalItems, 6);
    assert.deepEqual(all.body.meta, { totalItems: 6, itemsPerPage: 100, totalPages: 1, currentPage: 1 });
    const items = all.body.items;
    assert.deepEqual(items, [...items].sort(newestFirst));
    assert.equal(items[0].id, last[0]!.id);
    assert.equal(items[5].id, first[0]!.id);
    assert.deepEqual(new Set(items.slice(1, 5).map((e: { id: string }) => e.id)), new Set(batch.map((e) => e.id)));
    assert.deepEqual(items[0], { id: last[0]!.id, type: 'irm.received', timestamp: last[0]!.timestamp, platformCustomerId: customer, data: { irmNumber: 'IRM1' } });
    const test = items.find((e: { type: string }) => e.type === 'webhook.test');
    assert.equal(test.platformCustomerId, null);

    const pages = [];
    for (let page = 1; page <= 3; page++) {
      const response = await h.request('GET', EVENTS, { key: platform.apiKey, query: { page, limit: 2 } });
      assert.deepEqual(response.body.meta, { totalItems: 6, itemsPerPage: 2, totalPages: 3, currentPage: page });
      pages.push(...response.body.items);
    }
    assert.deepEqual(pages, items);
    const byFour = await h.request('GET', EVENTS, { key: platform.apiKey, query: { page: 2, limit: 4 } });
    assert.deepEqual(byFour.body.items, items.slice(4));
    const beyond = await h.request('GET', EVENTS, { key: platform.apiKey, query: { page: 4, limit: 2 } });
    assert.deepEqual(beyond.body.items, []);
    assert.equal(beyond.body.meta.totalItems, 6);
    const defaults = await h.request('GET', EVENTS, { key: platform.apiKey });
    assert.equal(defaults.body.meta.itemsPerPage, 10);
    assert.equal(defaults.body.meta.currentPage, 1);
  });

  test('get shows one event; another platform\'s, a missing or a malformed id is 404', async () => {
    const [event] = await record(h, [{ platformId: h.platformA.id, platformCustomerId: null, type: 'webhook.test', data: { hello: 'world', nested: { a: [1, 2] } } }]);
    const shown = await h.request('GET', `${EVENTS}/${event!.id}`);
    assert.equal(shown.status, 200);
    assert.ok(shown.body.timestamp.endsWith('Z'));
    assert.deepEqual(shown.body, event);
    const foreign = expectProblem(await h.request('GET', `${EVENTS}/${event!.id}`, { key: h.platformB.apiKey }), 404, 'not_found');
    const missing = expectProblem(await h.request('GET', `${EVENTS}/evt_${'A'.repeat(32)}`, { key: h.platformB.apiKey }), 404, 'not_found');
    assert.equal(foreign.title, missing.title);
    assert.equal(foreign.detail.replace(event!.id, 'X'), missing.detail.replace(`evt_${'A'.repeat(32)}`, 'X'));
    expectProblem(await h.request('GET', `${EVENTS}/not-an-event`), 404, 'not_found');
    expectProblem(await h.request('GET', `${EVENTS}/${'x'.repeat(101)}`), 400, 'validation_failed');
  });

  test('type filter: only that type, with its own total; an unknown type is 400', async () => {
    const platform = await freshPlatform(h);
    await record(h, [
      { platformId: platform.id, platformCustomerId: null, type: 'webhook.test', data: {} },
      { platformId: platform.id, platformCustomerId: null, type: 'webhook.test', data: {} },
    ]);
    const customer = await createCustomer(h, platform.apiKey, 'Typed');
    await record(h, [{ platformId: platform.id, platformCustomerId: customer, type: 'ebrc.generated', data: {} }]);
    const tests = await h.request('GET', EVENTS, { key: platform.apiKey, query: { type: 'webhook.test' } });
    assert.equal(tests.body.meta.totalItems, 2);
    assert.deepEqual(tests.body.items.map((e: { type: string }) => e.type), ['webhook.test', 'webhook.test']);
    const ebrcs = await h.request('GET', EVENTS, { key: platform.apiKey, query: { type: 'ebrc.generated' } });
    assert.equal(ebrcs.body.meta.totalItems, 1);
    const none = await h.request('GET', EVENTS, { key: platform.apiKey, query: { type: 'irm.received' } });
    assert.deepEqual(none.body, { items: [], meta: { totalItems: 0, itemsPerPage: 10, totalPages: 0, currentPage: 1 } });
    const unknown = expectProblem(await h.request('GET', EVENTS, { key: platform.apiKey, query: { type: 'ebrc.created' } }), 400, 'validation_failed');
    assert.equal(unknown.errors[0].path, '/type');
    assert.match(unknown.errors[0].message, /ebrc\.generated/);
  });

  test('platformCustomerId filter: that customer\'s events alone; another platform\'s customer or an unknown one is 404', async () => {
    const platform = await freshPlatform(h);
    const alice = await createCustomer(h, platform.apiKey, 'Alice');
    const bob = await createCustomer(h, platform.apiKey, 'Bob');
    await record(h, [
      { platformId: platform.id, platformCustomerId: alice, type: 'ebrc.generated', data: {} },
      { platformId: platform.id, platformCustomerId: alice, type: 'irm.received', data: {} },
      { platformId: platform.id, platformCustomerId: bob, type: 'ebrc.generated', data: {} },
      { platformId: platform.id, platformCustomerId: null, type: 'webhook.test', data: {} },
    ]);
    const ofAlice = await h.request('GET', EVENTS, { key: platform.apiKey, query: { platformCustomerId: alice } });
    assert.equal(ofAlice.body.meta.totalItems, 2);
    assert.ok(ofAlice.body.items.every((e: { platformCustomerId: string }) => e.platformCustomerId === alice));
    // The id spelled in capitals is the same customer, with the same total.
    const upper = await h.request('GET', EVENTS, { key: platform.apiKey, query: { platformCustomerId: alice.toUpperCase() } });
    assert.equal(upper.body.meta.totalItems, 2);
    assert.deepEqual(upper.body.items, ofAlice.body.items);
    const both = await h.request('GET', EVENTS, { key: platform.apiKey, query: { platformCustomerId: alice, type: 'ebrc.generated' } });
    assert.equal(both.body.meta.totalItems, 1);
    assert.equal(both.body.items.length, 1);

    const foreignCustomer = await createCustomer(h, h.platformB.apiKey, 'Foreign');
    const foreign = expectProblem(await h.request('GET', EVENTS, { key: platform.apiKey, query: { platformCustomerId: foreignCustomer } }), 404, 'not_found');
    const missing = expectProblem(
      await h.request('GET', EVENTS, { key: platform.apiKey, query: { platformCustomerId: '00000000-0000-4000-8000-000000000000' } }),
      404,
      'not_found',
    );
    assert.equal(foreign.title, missing.title);
    expectProblem(await h.request('GET', EVENTS, { key: platform.apiKey, query: { platformCustomerId: 'not-a-uuid' } }), 404, 'not_found');
  });

  test('fromDate and toDate are UTC days, inclusive; fromDate after toDate or a bad date is 400', async () => {
    const platform = await freshPlatform(h);
    const customer = await createCustomer(h, platform.apiKey, 'Dated');
    const before = await recordAt(h, '2025-03-09T23:59:59.999Z', platform.id, 'ebrc.generated', customer);
    const startOfDay = await recordAt(h, '2025-03-10T00:00:00.000Z', platform.id, 'ebrc.generated', customer);
    const endOfDay = await recordAt(h, '2025-03-10T23:59:59.999Z', platform.id, 'webhook.test');
    const nextDay = await recordAt(h, '2025-03-11T12:00:00.000Z', platform.id, 'ebrc.generated', customer);
    const ids = async (query: Record<string, string>) => {
      const response = await h.request('GET', EVENTS, { key: platform.apiKey, query: { limit: 100, ...query } });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.meta.totalItems, response.body.items.length, JSON.stringify(query));
      return response.body.items.map((e: { id: string }) => e.id);
    };
    assert.deepEqual(await ids({ fromDate: '2025-03-10', toDate: '2025-03-10' }), [endOfDay, startOfDay]);
    assert.deepEqual(await ids({ fromDate: '2025-03-10' }), [nextDay, endOfDay, startOfDay]);
    assert.deepEqual(await ids({ toDate: '2025-03-10' }), [endOfDay, startOfDay, before]);
    assert.deepEqual(await ids({ fromDate: '2025-03-10', toDate: '2025-03-11', type: 'ebrc.generated' }), [nextDay, startOfDay]);
    assert.deepEqual(await ids({ toDate: '2025-03-10', platformCustomerId: customer }), [startOfDay, before]);
    assert.deepEqual(await ids({ fromDate: '2025-03-12' }), []);
    const range = expectProblem(await h.request('GET', EVENTS, { key: platform.apiKey, query: { fromDate: '2025-03-11', toDate: '2025-03-10' } }), 400, 'validation_failed');
    assert.equal(range.errors[0].path, '/fromDate');
    for (const fromDate of ['2025-3-10', '10-03-2025', '2025-02-30', 'yesterday']) {
      const problem = expectProblem(await h.request('GET', EVENTS, { key: platform.apiKey, query: { fromDate } }), 400, 'validation_failed');
      assert.equal(problem.errors[0].path, '/fromDate');
    }
  });

  test('page and limit outside their range, or an unknown parameter, are 400', async () => {
    for (const query of [{ page: 0 }, { limit: 0 }, { limit: 101 }, { page: 'abc' }, { limit: '1.5' }, { typ: 'webhook.test' }]) {
      const problem = expectProblem(await h.request('GET', EVENTS, { query: query as unknown as Record<string, string> }), 400, 'validation_failed');
      assert.equal(problem.errors[0].path, `/${Object.keys(query)[0]}`);
    }
  });

  test('security: a platform never lists another\'s events', async () => {
    const mine = await freshPlatform(h);
    const theirs = await freshPlatform(h);
    await record(h, [{ platformId: theirs.id, platformCustomerId: null, type: 'webhook.test', data: { secret: 'theirs' } }]);
    const listed = await h.request('GET', EVENTS, { key: mine.apiKey, query: { limit: 100 } });
    assert.deepEqual(listed.body, { items: [], meta: { totalItems: 0, itemsPerPage: 100, totalPages: 0, currentPage: 1 } });
    const typed = await h.request('GET', EVENTS, { key: mine.apiKey, query: { type: 'webhook.test' } });
    assert.equal(typed.body.meta.totalItems, 0);
  });

  test('security: without a key, or with a wrong one, 401', async () => {
    expectProblem(await h.request('GET', EVENTS, { key: null }), 401, 'api_key_missing');
    expectProblem(await h.request('GET', `${EVENTS}/evt_x`, { key: null }), 401, 'api_key_missing');
    expectProblem(await h.request('GET', EVENTS, { key: 'ebrc_test_3yQ9wZg8kLmN2pQrStUvWxYzAbCd' }), 401, 'api_key_invalid');
    expectProblem(await h.request('GET', `${EVENTS}/evt_x`, { key: 'ebrc_test_3yQ9wZg8kLmN2pQrStUvWxYzAbCd' }), 401, 'api_key_invalid');
  });

  test('the OpenAPI document describes the operations under the Events tag', async () => {
    const document = (await h.request('GET', '/openapi.json', { key: null })).body;
    assert.ok(document.tags.some((tag: { name: string }) => tag.name === 'Events'));
    assert.ok(document.paths['/api/v1/events']);
    assert.ok(document.paths['/api/v1/events/{id}']);
    assert.ok(document.components.schemas.Event);
  });
});
