import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { sql } from 'kysely';
import { AuthorityError, type Authority } from '../../src/authority/authority.ts';
import { requestFingerprint } from '../../src/http/plugins/idempotency.ts';
import { ServerKey } from '../../src/services/server-key.ts';
import { claimKey, linkResource } from '../../src/store/idempotency.ts';
import { describeEachBackend, expectProblem, type Harness } from '../support/harness.ts';
import { cents, irmNow, lineFor, money, pushBody, sleep, usableIrms, verifiedCustomer } from '../support/workflow.ts';

const PUSH = '/api/v1/genebrc/push-irm';

/** What a process killed after the work committed but before it kept its answer leaves: a running key, its lease over. */
async function loseAnswer(h: Harness, key: string): Promise<void> {
  const result = await h.database.db
    .updateTable('idempotency_keys')
    .set({ state: 'running', status_code: null, response_body: null, created_at: sql<Date>`now() - interval '1 hour'` })
    .where('key', '=', key)
    .executeTakeFirst();
  assert.equal(Number(result.numUpdatedRows), 1);
}

async function requestsOf(h: Harness, customerId: string): Promise<{ request_id: string; status: string }[]> {
  return h.database.db.selectFrom('genebrc_requests').select(['request_id', 'status']).where('platform_customer_id', '=', customerId).execute();
}

/** The same JSON with the keys of every object in reverse order. */
function reordered(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reordered);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).reverse().map(([key, item]) => [key, reordered(item)]));
}

describeEachBackend('Idempotency-Key through crashes, secrets and key order', (h) => {
  test('a push whose answer was lost after it committed is answered from what it stored: never pushed twice', async () => {
    const customerId = await verifiedCustomer(h, 'crash-ack@example.com');
    const [irm] = await usableIrms(h, customerId, 1);
    const mapped = cents(irm.irmAvailableAmt) / 2n;
    const body = pushBody(customerId, [lineFor(irm, 1, money(mapped))]);
    const headers = { 'idempotency-key': `push-${randomUUID()}` };
    const first = await h.request('POST', PUSH, { body, headers });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.ackStatus, 'Validated');

    await loseAnswer(h, headers['idempotency-key']);
    const retry = await h.request('POST', PUSH, { body, headers });
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.deepEqual(retry.body, first.body, 'the retry gets the first acknowledgement');
    assert.deepEqual((await requestsOf(h, customerId)).map((r) => r.request_id), [first.body.requestId], 'one request');
    const now = await irmNow(h, customerId, irm.irmNumber);
    assert.equal(cents(now.irmAvailableAmt), cents(irm.irmAvailableAmt) - mapped, 'the amount is reserved once');

    const again = await h.request('POST', PUSH, { body, headers });
    assert.equal(again.text, retry.text, 'the rebuilt answer is kept and replayed as it is');
  });

  test('a Failed acknowledgement and a created customer are rebuilt the same way', async () => {
    const customerId = await verifiedCustomer(h, 'crash-failed@example.com');
    const [irm] = await usableIrms(h, customerId, 1);
    const body = { ...pushBody(customerId, [lineFor(irm, 1, 1)]), recordResCount: 2 };
    const headers = { 'idempotency-key': `failed-${randomUUID()}` };
    const first = await h.request('POST', PUSH, { body, headers });
    assert.equal(first.body.ackStatus, 'Failed', first.text);
    await loseAnswer(h, headers['idempotency-key']);
    const retry = await h.request('POST', PUSH, { body, headers });
    assert.deepEqual(retry.body, first.body);
    assert.equal((await requestsOf(h, customerId)).length, 1);

    const customer = { name: 'Once', email: `once-${randomUUID()}@example.com`, companyName: 'Once Ltd' };
    const createHeaders = { 'idempotency-key': `customer-${randomUUID()}` };
    const created = await h.request('POST', '/api/v1/platform-customers/', { body: customer, headers: createHeaders });
    assert.equal(created.status, 201, created.text);
    await loseAnswer(h, createHeaders['idempotency-key']);
    const recreated = await h.request('POST', '/api/v1/platform-customers/', { body: customer, headers: createHeaders });
    assert.equal(recreated.status, 201, `not 409 customer_email_taken: ${recreated.text}`);
    assert.equal(recreated.headers['idempotent-replayed'], 'true');
    assert.deepEqual(recreated.body, created.body);
  });

  test('a retry while the first push is still being submitted is 409; work that never committed runs again', async () => {
    const customerId = await verifiedCustomer(h, 'crash-submitting@example.com');
    const [irm] = await usableIrms(h, customerId, 1);
    const body = pushBody(customerId, [lineFor(irm, 1, 1)]);
    const headers = { 'idempotency-key': `submitting-${randomUUID()}` };
    const first = await h.request('POST', PUSH, { body, headers });
    assert.equal(first.body.ackStatus, 'Validated', first.text);
    await loseAnswer(h, headers['idempotency-key']);
    await h.database.db.updateTable('genebrc_requests').set({ status: 'SUBMITTING' }).where('request_id', '=', first.body.requestId).execute();
    expectProblem(await h.request('POST', PUSH, { body, headers }), 409, 'idempotency_key_in_use');
    await h.database.db.updateTable('genebrc_requests').set({ status: 'PENDING' }).where('request_id', '=', first.body.requestId).execute();
    assert.deepEqual((await h.request('POST', PUSH, { body, headers })).body, first.body);

    // A customer created, then gone as if its transaction had never committed: the key holds nothing, so it runs again.
    const customer = { name: 'Twice', email: `twice-${randomUUID()}@example.com`, companyName: 'Twice Ltd' };
    const createHeaders = { 'idempotency-key': `uncommitted-${randomUUID()}` };
    const created = await h.request('POST', '/api/v1/platform-customers/', { body: customer, headers: createHeaders });
    await h.database.db.deleteFrom('platform_customers').where('id', '=', created.body.id).execute();
    await loseAnswer(h, createHeaders['idempotency-key']);
    await h.database.db.updateTable('idempotency_keys').set({ resource_id: null }).where('key', '=', createHeaders['idempotency-key']).execute();
    const rerun = await h.request('POST', '/api/v1/platform-customers/', { body: customer, headers: createHeaders });
    assert.equal(rerun.status, 201, rerun.text);
    assert.notEqual(rerun.headers['idempotent-replayed'], 'true');
    assert.notEqual(rerun.body.id, created.body.id);
  });

  test('a claim taken over after its lease can no longer link its work, and a key whose work committed is never taken over', async () => {
    const { db } = h.database;
    const key = `lease-${randomUUID()}`;
    const first = { platformId: h.platformA.id, key, claimId: randomUUID() };
    const claim = { fingerprint: 'f', keepHours: 24, abandonAfterSeconds: 120 };
    assert.equal(await claimKey(db, { ...first, ...claim }), null);
    await db.updateTable('idempotency_keys').set({ created_at: sql<Date>`now() - interval '1 hour'` }).where('key', '=', key).execute();
    const second = { ...first, claimId: randomUUID() };
    assert.equal(await claimKey(db, { ...second, ...claim }), null, 'an abandoned claim with nothing committed is taken over');
    assert.equal(await linkResource(db, first, randomUUID()), false, 'the first claim cannot commit its work any more');
    const resourceId = randomUUID();
    assert.equal(await linkResource(db, second, resourceId), true);
    await db.updateTable('idempotency_keys').set({ created_at: sql<Date>`now() - interval '1 hour'` }).where('key', '=', key).execute();
    const held = await claimKey(db, { ...first, claimId: randomUUID(), ...claim });
    assert.equal(held?.resourceId, resourceId, 'committed work keeps its key, however old its claim');
  });

  test('fingerprints are keyed, hold no password, and do not depend on key order', async () => {
    const created = await h.request('POST', '/api/v1/platform-customers/', {
      body: { name: 'Secret', email: `secret-${randomUUID()}@example.com`, companyName: 'Secret Ltd' },
    });
    const url = `/api/v1/platform-customers/${created.body.id}/check-authority-credentials`;
    const body = { authorityUsername: 'demo.exporter', authorityPassword: 'Sandbox@123' };
    const headers = { 'idempotency-key': `check-${randomUUID()}` };
    assert.equal((await h.request('POST', url, { body, headers })).status, 200);

    const row = await h.database.db.selectFrom('idempotency_keys').selectAll().where('key', '=', headers['idempotency-key']).executeTakeFirstOrThrow();
    assert.ok(!JSON.stringify(row).includes('Sandbox@123'), 'no stored value holds the password');
    const unkeyed = createHash('sha256').update(`POST ${url}\n${JSON.stringify(body)}`).digest('hex');
    assert.notEqual(row.fingerprint, unkeyed, 'not a plain digest that a guess can be tested against');
    const request = { method: 'POST', route: '/platform-customers/:id/check-authority-credentials', params: { id: created.body.id }, query: {}, body };
    assert.notEqual(
      requestFingerprint(new ServerKey(randomBytes(32)), request),
      requestFingerprint(new ServerKey(randomBytes(32)), request),
      'another server key, another fingerprint',
    );

    expectProblem(
      await h.request('POST', url, { body: { ...body, authorityPassword: 'Sandbox@124' }, headers }),
      422,
      'idempotency_key_reused',
    );
    const replay = await h.request('POST', url, { body: reordered(body), headers });
    assert.equal(replay.status, 200, replay.text);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
  });

  test('a push with its keys in another order is the same request', async () => {
    const customerId = await verifiedCustomer(h, 'key-order@example.com');
    const [irm] = await usableIrms(h, customerId, 1);
    const body = pushBody(customerId, [lineFor(irm, 1, 1)]);
    const headers = { 'idempotency-key': `order-${randomUUID()}` };
    const first = await h.request('POST', PUSH, { body, headers });
    const again = await h.request('POST', PUSH, { body: reordered(body), headers });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.body, first.body);
  });

  test('expired keys are purged', async () => {
    const keys = [`old-${randomUUID()}`, `old-${randomUUID()}`];
    for (const key of keys) {
      await h.request('POST', '/api/v1/platform-customers/', {
        body: { name: 'Old', email: `${key}@example.com`, companyName: 'Old Ltd' },
        headers: { 'idempotency-key': key },
      });
    }
    await h.database.db.updateTable('idempotency_keys').set({ expires_at: sql<Date>`now() - interval '1 second'` }).where('key', '=', keys[0]!).execute();
    assert.ok((await h.service.housekeeping.runOnce()) >= 1);
    const left = await h.database.db.selectFrom('idempotency_keys').select('key').where('key', 'in', keys).execute();
    assert.deepEqual(left.map((row) => row.key), [keys[1]], 'the expired key is gone, the live one stays');
  });
});

describeEachBackend(
  'expired idempotency keys, on a schedule',
  (h) => {
    test('a key that expires is purged by the schedule, with nobody asking', async () => {
      const key = `scheduled-${randomUUID()}`;
      await h.request('POST', '/api/v1/platform-customers/', {
        body: { name: 'Soon', email: `${key}@example.com`, companyName: 'Soon Ltd' },
        headers: { 'idempotency-key': key },
      });
      await h.database.db.updateTable('idempotency_keys').set({ expires_at: sql<Date>`now()` }).where('key', '=', key).execute();
      for (let waited = 0; ; waited += 200) {
        const left = await h.database.db.selectFrom('idempotency_keys').select('key').where('key', '=', key).execute();
        if (left.length === 0) break;
        assert.ok(waited < 10_000, 'purged within a few intervals');
        await sleep(200);
      }
    });
  },
  { env: { HOUSEKEEPING_INTERVAL_SECONDS: '1' } },
);

/** Request ids whose status the authority does not answer in time (the adapter's timeout, as a slow authority gives). */
const UNANSWERED_STATUS = new Set<string>();

function statusUnanswered(adapter: Authority): Authority {
  return {
    ...adapter,
    async getStatus(credentials, requestId, options) {
      if (UNANSWERED_STATUS.has(requestId)) throw new AuthorityError('timeout', 'The status call did not finish within its deadline.');
      return adapter.getStatus(credentials, requestId, options);
    },
  };
}

describeEachBackend(
  'a retry of a push whose first run died, while the authority does not answer',
  (h) => {
    test('is 409 (retry later), never a 504 that names no request, and sends nothing again; once the authority answers, its acknowledgement', async () => {
      const customerId = await verifiedCustomer(h, 'crash-unanswered@example.com');
      const [irm] = await usableIrms(h, customerId, 1);
      const body = pushBody(customerId, [lineFor(irm, 1, 1)]);
      const headers = { 'idempotency-key': `unanswered-${randomUUID()}` };
      const first = await h.request('POST', PUSH, { body, headers });
      assert.equal(first.body.ackStatus, 'Validated', first.text);
      // The first run died after the authority took the push and before the service recorded its answer.
      await loseAnswer(h, headers['idempotency-key']);
      await h.database.db.updateTable('genebrc_requests').set({ status: 'SUBMITTING' }).where('request_id', '=', first.body.requestId).execute();
      // Past the submit grace time (AUTHORITY_TIMEOUT_MS + 5 s), the retry asks the authority about the request.
      await sleep(5_600);
      UNANSWERED_STATUS.add(first.body.requestId);
      try {
        expectProblem(await h.request('POST', PUSH, { body, headers }), 409, 'idempotency_key_in_use');
      } finally {
        UNANSWERED_STATUS.delete(first.body.requestId);
      }
      const copies = await h.sandbox.database.db.selectFrom('authority_sandbox.requests').select('request_id').where('request_id', '=', first.body.requestId).execute();
      assert.equal(copies.length, 1, 'the request was not sent again');
      const answered = await h.request('POST', PUSH, { body, headers });
      assert.equal(answered.status, 200, answered.text);
      assert.deepEqual(answered.body, first.body);
    });
  },
  { env: { AUTHORITY_TIMEOUT_MS: '500', RUN_POLLER: 'false' }, authority: statusUnanswered },
);
