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

describe('the state machine over every pair of stored statuses', () => {
  const ALLOWED = new Set(['SUBMITTING->PENDING', 'SUBMITTING->FAILED', 'PENDING->PROCESSED', 'PENDING->PARTIALLY_PROCESSED', 'PENDING->ERRORED']);

  test('there are six stored statuses: SUBMITTING and the five clients see', () => {
    assert.equal(ALL.length, 6);
    assert.equal(new Set(ALL).size, 6);
  });

  for (const from of ALL) {
    for (const to of ALL) {
      const pair = `${from}->${to}`;
      if (ALLOWED.has(pair)) {
        test(`${pair} is allowed: canTransition holds and assertTransition passes`, () => {
          assert.equal(canTransition(from, to), true);
          assert.doesNotThrow(() => assertTransition(from, to));
        });
      } else {
        test(`${pair} is refused: canTransition is false and assertTransition throws naming both`, () => {
          assert.equal(canTransition(from, to), false);
          assert.throws(
            () => assertTransition(from, to),
            (error: unknown) => error instanceof Error && error.message.includes(from) && error.message.includes(to),
          );
        });
      }
    }
  }

  test('no status moves to itself, and nothing moves back to SUBMITTING', () => {
    for (const s of ALL) assert.equal(canTransition(s, s), false, `${s}->${s}`);
    for (const s of ALL) assert.equal(canTransition(s, 'SUBMITTING'), false, `${s}->SUBMITTING`);
  });

  test('isFinal holds exactly for the statuses nothing leaves', () => {
    for (const s of ALL) {
      const leaves = ALL.some((to) => canTransition(s, to));
      assert.equal(isFinal(s), !leaves, s);
    }
    assert.deepEqual(ALL.filter((s) => isFinal(s)), ['FAILED', 'PROCESSED', 'PARTIALLY_PROCESSED', 'ERRORED']);
  });

  test('every state is reachable from SUBMITTING, and every path ends in a final state', () => {
    const reached = new Set<StoredRequestStatus>(['SUBMITTING']);
    const queue: StoredRequestStatus[] = ['SUBMITTING'];
    while (queue.length > 0) {
      const from = queue.shift()!;
      for (const to of ALL) {
        if (canTransition(from, to) && !reached.has(to)) {
          reached.add(to);
          queue.push(to);
        }
      }
    }
    assert.deepEqual([...reached].sort(), [...ALL].sort());
    // No cycle: a path is at most two moves long (SUBMITTING → PENDING → final).
    const longest = (s: StoredRequestStatus): number => Math.max(0, ...ALL.filter((to) => canTransition(s, to)).map((to) => 1 + longest(to)));
    assert.equal(longest('SUBMITTING'), 2);
  });
});

describe('finalStatusFor over line outcomes', () => {
  test('a single line: GENERATED is PROCESSED, FAILED is ERRORED', () => {
    assert.equal(finalStatusFor(['GENERATED']), 'PROCESSED');
    assert.equal(finalStatusFor(['FAILED']), 'ERRORED');
  });

  test('all generated, mixed in any order, none generated', () => {
    assert.equal(finalStatusFor(Array(999).fill('GENERATED')), 'PROCESSED');
    assert.equal(finalStatusFor(['FAILED', 'GENERATED']), 'PARTIALLY_PROCESSED');
    assert.equal(finalStatusFor(['FAILED', 'FAILED', 'GENERATED', 'FAILED']), 'PARTIALLY_PROCESSED');
    assert.equal(finalStatusFor([...Array(998).fill('GENERATED'), 'FAILED']), 'PARTIALLY_PROCESSED');
    assert.equal(finalStatusFor(Array(999).fill('FAILED')), 'ERRORED');
  });

  test('every combination of up to three lines: PENDING anywhere throws, else the count of GENERATED decides', () => {
    const combos: (typeof LINE_STATUSES[number])[][] = [[]];
    for (let size = 0; size < 3; size++) {
      for (const combo of [...combos]) if (combo.length === size) for (const s of LINE_STATUSES) combos.push([...combo, s]);
    }
    for (const lines of combos.filter((combo) => combo.length > 0)) {
      const label = lines.join(',');
      if (lines.includes('PENDING')) {
        assert.throws(() => finalStatusFor(lines), /PENDING/, label);
        continue;
      }
      const generated = lines.filter((s) => s === 'GENERATED').length;
      const expected = generated === lines.length ? 'PROCESSED' : generated === 0 ? 'ERRORED' : 'PARTIALLY_PROCESSED';
      assert.equal(finalStatusFor(lines), expected, label);
    }
  });

  test('whatever it answers is a final state PENDING can move to', () => {
    for (const lines of [['GENERATED'], ['FAILED'], ['GENERATED', 'FAILED']] as const) {
      const status = finalStatusFor(lines);
      assert.equal(isFinal(status), true);
      assert.equal(canTransition('PENDING', status), true);
    }
  });

  test('only PENDING lines, or one PENDING among many, throws', () => {
    assert.throws(() => finalStatusFor(['PENDING']), /PENDING/);
    assert.throws(() => finalStatusFor(['PENDING', 'PENDING']), /PENDING/);
    assert.throws(() => finalStatusFor([...Array(500).fill('GENERATED'), 'PENDING', ...Array(498).fill('FAILED')]), /PENDING/);
  });
});
