import assert from 'node:assert/strict';
import { test } from 'node:test';
import { uploadOutcome } from '../../src/http/console/pages/uploads.ts';

/** The console's reading of an upload (its list and its page): a completed upload whose rows failed is not a success. */
const completed = { status: 'completed' as const, rowCount: 2, rowsValidated: 0, rowsGenerated: 0, rowsFailed: 0 };

test('an upload whose every row failed is shown as failed, in red, and never says every row was pushed', () => {
  const outcome = uploadOutcome({ ...completed, rowsFailed: 2 });
  assert.deepEqual([outcome.label, outcome.tone], ['Failed', 'bad']);
  assert.doesNotMatch(outcome.what, /Every row was pushed/);
});

test('some rows failed: completed with failures, in amber, with how many', () => {
  const outcome = uploadOutcome({ ...completed, rowsValidated: 1, rowsGenerated: 1, rowsFailed: 1 });
  assert.deepEqual([outcome.label, outcome.tone], ['Completed with failures', 'warn']);
  assert.match(outcome.what, /^1 row failed/);
});

test('no row failed: completed, in green; rows still processing are said to be', () => {
  assert.deepEqual([uploadOutcome({ ...completed, rowsValidated: 2, rowsGenerated: 2 }).tone], ['good']);
  assert.match(uploadOutcome({ ...completed, rowsValidated: 2, rowsGenerated: 1 }).what, /1 is still being processed/);
  assert.deepEqual(uploadOutcome({ ...completed, status: 'rejected' }).label, 'Rejected');
});
