import { test } from 'node:test';
import assert from 'node:assert/strict';
import { irmStatusFor, isMappableIrm } from '../../src/domain/irm-status.ts';

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
