import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { StoredRequestStatus } from '../../src/domain/request-state.ts';
import {
  LINE_STATUSES,
  REQUEST_STATUSES,
  assertTransition,
  canTransition,
  finalStatusFor,
  isFinal,
} from '../../src/domain/request-state.ts';

const ALL: StoredRequestStatus[] = ['SUBMITTING', ...REQUEST_STATUSES];
const FINALS: StoredRequestStatus[] = ['FAILED', 'PROCESSED', 'PARTIALLY_PROCESSED', 'ERRORED'];

test('clients see five statuses and lines three', () => {
  assert.deepEqual(REQUEST_STATUSES, ['FAILED', 'PENDING', 'PROCESSED', 'PARTIALLY_PROCESSED', 'ERRORED']);
  assert.ok(!(REQUEST_STATUSES as readonly string[]).includes('SUBMITTING'));
  assert.deepEqual(LINE_STATUSES, ['PENDING', 'GENERATED', 'FAILED']);
});

describe('canTransition', () => {
  test('allows exactly the documented transitions', () => {
    const allowed = ALL.flatMap((from) => ALL.filter((to) => canTransition(from, to)).map((to) => `${from}->${to}`));
    assert.deepEqual(allowed, [
      'SUBMITTING->FAILED',
      'SUBMITTING->PENDING',
      'PENDING->PROCESSED',
      'PENDING->PARTIALLY_PROCESSED',
      'PENDING->ERRORED',
    ]);
  });

  test('final states go nowhere, not even to themselves', () => {
    for (const from of FINALS) for (const to of ALL) assert.equal(canTransition(from, to), false, `${from}->${to}`);
  });
});

test('isFinal', () => {
  for (const s of FINALS) assert.equal(isFinal(s), true, s);
  assert.equal(isFinal('SUBMITTING'), false);
  assert.equal(isFinal('PENDING'), false);
});

test('assertTransition throws naming both states', () => {
  assert.doesNotThrow(() => assertTransition('SUBMITTING', 'PENDING'));
  assert.throws(() => assertTransition('PROCESSED', 'PENDING'), /PROCESSED.*PENDING/);
  assert.throws(() => assertTransition('SUBMITTING', 'PROCESSED'), /SUBMITTING.*PROCESSED/);
});

describe('finalStatusFor', () => {
  test('every line generated: PROCESSED', () => {
    assert.equal(finalStatusFor(['GENERATED', 'GENERATED']), 'PROCESSED');
  });

  test('some lines generated: PARTIALLY_PROCESSED', () => {
    assert.equal(finalStatusFor(['GENERATED', 'FAILED']), 'PARTIALLY_PROCESSED');
  });

  test('no line generated: ERRORED', () => {
    assert.equal(finalStatusFor(['FAILED', 'FAILED']), 'ERRORED');
  });

  test('throws while a line is pending, or without lines', () => {
    assert.throws(() => finalStatusFor(['GENERATED', 'PENDING']), /PENDING/);
    assert.throws(() => finalStatusFor([]), /without lines/);
  });
});
