import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DatabaseAvailability, isDatabaseUnavailable, QUIET_MS, unavailableReason } from '../../src/store/availability.ts';

function refused(): Error {
  return Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
}

test('the failures that mean the database cannot be reached, and the ones that do not', () => {
  const terminated = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
  const aggregate = Object.assign(new AggregateError([refused(), refused()], ''), { code: 'ECONNREFUSED' });
  const unnamed = new AggregateError([refused()], '');
  for (const error of [
    refused(),
    terminated,
    aggregate,
    unnamed,
    new Error('Connection terminated unexpectedly'),
    new Error('timeout exceeded when trying to connect'),
    Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }),
    Object.assign(new Error('could not extend file: No space left on device'), { code: '53100' }),
    Object.assign(new Error('the database system is starting up'), { code: '57P03' }),
    new Error('wrapped', { cause: refused() }),
  ]) {
    assert.equal(isDatabaseUnavailable(error), true, String(error));
  }
  for (const error of [
    new Error('something else'),
    Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' }),
    Object.assign(new Error('password authentication failed for user "app"'), { code: '28P01' }),
    Object.assign(new Error('relation "x" does not exist'), { code: '42P01' }),
    null,
    'ECONNREFUSED',
  ]) {
    assert.equal(isDatabaseUnavailable(error), false, String(error));
  }
  assert.equal(unavailableReason(refused()), 'connection refused');
  assert.equal(unavailableReason(new AggregateError([refused()], '')), 'connection refused');
  assert.equal(unavailableReason(new Error('timeout exceeded when trying to connect')), 'no connection within the connection timeout');
});

test('an outage is logged once per component per 30 s, then once when the database is reachable again', () => {
  let now = 1_000_000;
  const lines: { level: string; message: string; fields: Record<string, unknown> }[] = [];
  const log = (level: string) => (fields: object, message: string) => lines.push({ level, message, fields: fields as Record<string, unknown> });
  const availability = new DatabaseAvailability({ now: () => now });
  availability.useLog({ error: log('error'), info: log('info'), debug: log('debug') });

  assert.equal(availability.failed('relay', new Error('a bug, not an outage')), false, 'not the database: left to the caller');
  assert.equal(availability.reachable, true);
  for (let second = 0; second < 45; second++) {
    assert.equal(availability.failed('relay', refused(), { message: 'event relay failed; will try again' }), true);
    assert.equal(availability.failed('api', refused()), true);
    now += 1_000;
  }
  assert.equal(availability.reachable, false);
  const errors = lines.filter((line) => line.level === 'error');
  assert.deepEqual(
    errors.map((line) => [line.fields.component, line.message]),
    [
      ['relay', 'event relay failed; will try again'],
      ['api', 'the database is unavailable (api); will try again'],
      ['relay', 'event relay failed; will try again'],
      ['api', 'the database is unavailable (api); will try again'],
    ],
    `45 s of failures: each component's line at 0 s and at ${QUIET_MS / 1000} s`,
  );
  assert.equal(errors[0]!.fields.reason, 'connection refused');
  assert.ok(!JSON.stringify(errors).includes('stack'));

  availability.succeeded();
  availability.succeeded();
  const recovered = lines.filter((line) => line.message === 'database reachable again');
  assert.equal(recovered.length, 1, 'one line when it is back');
  assert.equal(recovered[0]!.level, 'info');
  assert.equal(recovered[0]!.fields.downForMs, 45_000);
  assert.equal(availability.reachable, true);

  // The next outage is logged at once.
  availability.failed('relay', refused());
  assert.equal(lines.filter((line) => line.level === 'error').length, 5);
});
