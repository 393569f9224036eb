import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { insertEvents, purgeEventsBefore, type NewEventRow } from '../../src/store/events.ts';
import { describeEachBackend } from '../support/harness.ts';

const DAY_MS = 86_400_000;

describeEachBackend('The relay queue of events', (h) => {
  test('an event past its retention that the relay never took is purged with its queue row; a newer one stays queued', async () => {
    const event = (createdAt: Date): NewEventRow => ({
      id: `evt_${randomUUID().replaceAll('-', '')}`,
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
