import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newEventId } from '../../src/domain/events.ts';

test('event ids are "evt_" and 24 random bytes in base64url, none repeated across many draws of the random pool', () => {
  const ids = Array.from({ length: 5_000 }, () => newEventId());
  for (const id of ids) assert.match(id, /^evt_[A-Za-z0-9_-]{32}$/);
  assert.equal(new Set(ids).size, ids.length);
});
