import { test } from 'node:test';
import assert from 'node:assert/strict';
import { balanceAfterPull, irmStatusOf, isMappableIrm } from '../../src/domain/irm-status.ts';

const live = { cancelled: false };

test('status: nothing used is fresh, something used and left is partially_utilised, nothing left is utilised', () => {
  assert.equal(irmStatusOf({ ...live, availableCents: 156600n, utilisedCents: 0n }), 'fresh');
  assert.equal(irmStatusOf({ ...live, availableCents: 1n, utilisedCents: 156599n }), 'partially_utilised');
  assert.equal(irmStatusOf({ ...live, availableCents: 0n, utilisedCents: 156600n }), 'utilised');
});

test('status reads the balances only: an ORM amount below remitted minus utilised is still fresh', () => {
  // remitted 6400.00, ORM 400.00, available 6000.00, utilised 0.00 (the authority's own figures)
  assert.equal(irmStatusOf({ ...live, availableCents: 600000n, utilisedCents: 0n }), 'fresh');
  assert.equal(irmStatusOf({ ...live, availableCents: 0n, utilisedCents: 0n }), 'utilised', 'nothing available: nothing to map');
});

test('status: the authority\'s C is cancelled whatever the balances', () => {
  assert.equal(irmStatusOf({ cancelled: true, availableCents: 500n, utilisedCents: 0n }), 'cancelled');
});

test('balance after a pull: the authority\'s figures less what is held here and not yet acknowledged there', () => {
  assert.deepEqual(balanceAfterPull({ availableCents: 3445766n, utilisedCents: 10000n, cancelled: false, heldCents: 0n }), { availableCents: 3445766n, utilisedCents: 10000n });
  assert.deepEqual(balanceAfterPull({ availableCents: 3445766n, utilisedCents: 10000n, cancelled: false, heldCents: 5000n }), { availableCents: 3440766n, utilisedCents: 15000n });
  assert.deepEqual(balanceAfterPull({ availableCents: 100n, utilisedCents: 0n, cancelled: false, heldCents: 500n }), { availableCents: 0n, utilisedCents: 500n }, 'never below 0');
  assert.deepEqual(balanceAfterPull({ availableCents: 100n, utilisedCents: 7n, cancelled: true, heldCents: 0n }), { availableCents: 0n, utilisedCents: 7n }, 'cancelled: nothing available');
});

test('mappable: a balance, not cancelled, a valid purpose code other than P0101 and P0108', () => {
  const irm = { availableCents: 1n, purposeOfRemittance: 'P0103' };
  assert.equal(isMappableIrm(irm), true);
  assert.equal(isMappableIrm({ ...irm, cancelled: false }), true);
  assert.equal(isMappableIrm({ ...irm, purposeOfRemittance: 'P0802' }), true);
  assert.equal(isMappableIrm({ ...irm, cancelled: true }), false);
  assert.equal(isMappableIrm({ ...irm, availableCents: 0n }), false);
  assert.equal(isMappableIrm({ ...irm, purposeOfRemittance: 'P0101' }), false);
  assert.equal(isMappableIrm({ ...irm, purposeOfRemittance: 'P0108' }), false);
  assert.equal(isMappableIrm({ ...irm, purposeOfRemittance: 'P9999' }), false, 'not in the annexure');
});
