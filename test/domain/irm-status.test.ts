import { test } from 'node:test';
import assert from 'node:assert/strict';
import { irmStatusFor } from '../../src/domain/irm-status.ts';

test('nothing used: fresh', () => {
  assert.equal(irmStatusFor(156600n, 156600n), 'fresh');
});

test('some used: partially_utilised', () => {
  assert.equal(irmStatusFor(156600n, 156599n), 'partially_utilised');
  assert.equal(irmStatusFor(156600n, 1n), 'partially_utilised');
});

test('all used: utilised', () => {
  assert.equal(irmStatusFor(156600n, 0n), 'utilised');
});

test('an available amount outside 0 to the amount is a bug', () => {
  assert.throws(() => irmStatusFor(100n, 101n), RangeError);
  assert.throws(() => irmStatusFor(100n, -1n), RangeError);
});
