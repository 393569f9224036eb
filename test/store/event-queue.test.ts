import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { sql } from 'kysely';
import { newEventId } from '../../src/domain/events.ts';
import { insertCustomer } from '../../src/store/customers.ts';
import { insertEvents, purgeEventsBefore, type NewEventRow } from '../../src/store/events.ts';
import { describeEachBackend } from '../support/harness.ts';

const DAY_MS = 86_400_000;

describeEachBackend('The relay queue of events', (h) => {
  test('an event inserted by any statement is queued, as an older process writes it during a deploy (its insert knows no queue)', async () => {
    const id = newEventId();
    await h.database.db.transaction().execute(async (tx) => {
      await sql`insert into events (id, platform_id, type, data) values (${id}, ${h.platformA.id}::uuid, 'webhook.test', '{}')`.execute(tx);
      const queued = await tx.selectFrom('event_queue').select(['event_id', 'platform_id', 'type', 'endpoint_id']).where('event_id', '=', id).execute();
      assert.deepEqual(queued, [{ event_id: id, platform_id: h.platformA.id, type: 'webhook.test', endpoint_id: null }]);
    });
  });

  test('events whose platform or customer is missing, or whose customer is another platform’s, are refused with their statement', async () => {
    const customerId = randomUUID();
    await insertCustomer(h.database.db, { id: customerId, platformId: h.platformA.id, name: 'Owner', email: `owner-${customerId}@example.com`, type: 'customer', companyName: 'Co', address: null });
    const event = (platformId: string, platformCustomerId: string | null): NewEventRow => ({
      id: newEventId(), platformId, platformCustomerId, type: 'webhook.test', data: {}, endpointId: null, createdAt: new Date(),
    });
    for (const [label, wrong] of [
      ['a platform that does not exist', event(randomUUID(), null)],
      ['a customer that does not exist', event(h.platformA.id, randomUUID())],
      ['the customer under another platform', event(h.platformB.id, customerId)],
    ] as const) {
      const right = event(h.platformA.id, customerId);
      await assert.rejects(insertEvents(h.database.db, [right, wrong]), (error: { code?: string }) => error.code === '23503', label);
      const stored = await h.database.db.selectFrom('events').select('id').where('id', 'in', [right.id, wrong.id]).execute();
      assert.deepEqual(stored, [], `${label}: the statement's other event is not stored either`);
    }
    const right = event(h.platformA.id, customerId);
    await insertEvents(h.database.db, [right, event(h.platformB.id, null)]);
    assert.equal((await h.database.db.selectFrom('events').select('id').where('id', '=', right.id).execute()).length, 1);
  });

  test('an event deleted by any statement leaves the queue with it, as an older process purges it during a deploy', async () => {
    const id = newEventId();
    await h.database.db.transaction().execute(async (tx) => {
      await sql`insert into events (id, platform_id, type, data) values (${id}, ${h.platformA.id}::uuid, 'webhook.test', '{}')`.execute(tx);
      await sql`delete from events where id = ${id}`.execute(tx);
      const queued = await tx.selectFrom('event_queue').select('event_id').where('event_id', '=', id).execute();
      assert.deepEqual(queued, []);
    });
  });

  test('an event past its retention that the relay never took is purged with its queue row; a newer one stays queued', async () => {
    const event = (createdAt: Date): NewEventRow => ({
      id: newEventId(),
      platformId: h.platformA.id,
      platformCustomerId: null,
      type: 'webhook.test',
      data: {},
      endpointId: null,
      createdAt,
    });
    const expired = event(new Date(Date.now() - 100 * DAY_MS));
    const recent = event(new Date());
    // One transaction, so that the relay running beside the test cannot take either event first.
    await h.database.db.transaction().execute(async (tx) => {
      await insertEvents(tx, [expired, recent]);
      const queued = async () =>
        (await tx.selectFrom('event_queue').select('event_id').where('event_id', 'in', [expired.id, recent.id]).orderBy('seq').execute()).map((row) => row.event_id);
      assert.deepEqual(await queued(), [expired.id, recent.id], 'every event written is queued for the relay, in the order written');
      assert.equal(await purgeEventsBefore(tx, new Date(Date.now() - 50 * DAY_MS), 100), 1);
      assert.deepEqual(await queued(), [recent.id], 'the purged event left the queue with it: the relay will not route an event that is gone');
      const left = await tx.selectFrom('events').select('id').where('id', 'in', [expired.id, recent.id]).execute();
      assert.deepEqual(left.map((row) => row.id), [recent.id]);
    });
  });
});
