import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Authority } from '../../src/authority/authority.ts';
import { describeEachBackend, expectProblem } from '../support/harness.ts';
import { verifiedCustomer } from '../support/workflow.ts';

const DAY_MS = 86_400_000;

/** The sandbox's clock, which the test moves on (the service keeps the real one). */
const clock = { offsetMs: 0 };
const pulls = { count: 0 };

/** The adapter to the sandbox, counting IRM pulls and slowing them a little so that they overlap. */
function countingSandbox(sandbox: Authority): Authority {
  return {
    ...sandbox,
    async fetchIrms(credentials, query, options) {
      pulls.count += 1;
      await new Promise((resolve) => setTimeout(resolve, 100));
      return sandbox.fetchIrms(credentials, query, options);
    },
  };
}

function refresh(h: { request: (method: string, url: string, options?: object) => Promise<any> }, customerId: string, query = {}) {
  return h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: customerId, ...query }, body: {} });
}

describeEachBackend(
  'IRM refresh',
  (h) => {
    test('concurrent refreshes of one customer share one authority call, and a fresh pull is reused', async () => {
      const id = await verifiedCustomer(h, 'coalesce@example.com');
      const before = pulls.count;
      const pages = await Promise.all([1, 2, 3, 4, 5].map((page) => refresh(h, id, { page })));
      assert.deepEqual(pages.map((p) => p.status), [200, 200, 200, 200, 200]);
      assert.equal(pulls.count - before, 1, 'five concurrent refreshes, one pull');
      assert.equal(new Set(pages.map((p) => p.body.meta.total)).size, 1);
      const ids = pages.flatMap((p) => p.body.data.map((irm: { id: string }) => irm.id));
      assert.equal(new Set(ids).size, 50, 'five different pages of ten');

      await refresh(h, id, { page: 6 });
      assert.equal(pulls.count - before, 1, 'within the interval the stored IRMs answer');

      const other = await verifiedCustomer(h, 'coalesce-other@example.com');
      await refresh(h, other);
      assert.equal(pulls.count - before, 2, 'another customer has its own pull');
    });

    test('after the interval a refresh pulls again and finds the IRMs that arrived meanwhile', async () => {
      const id = await verifiedCustomer(h, 'arrivals@example.com');
      const first = await refresh(h, id);
      const total = first.body.meta.total;
      assert.ok(first.body.data.every((irm: { iecCode: string }) => irm.iecCode === '0599001001'));

      clock.offsetMs += 2 * DAY_MS;
      await h.database.db.updateTable('platform_customers').set({ irms_pulled_at: new Date(Date.now() - 60_000) }).where('id', '=', id).execute();
      const before = pulls.count;
      const later = await refresh(h, id);
      assert.equal(pulls.count - before, 1);
      assert.ok(later.body.meta.total > total, `expected more than ${total} IRMs two days later, got ${later.body.meta.total}`);
      const newest = later.body.data[0].irmIssueDate;
      assert.ok(newest > first.body.data[0].irmIssueDate, 'the new IRMs come first');
    });

    test('a page served from a recent pull still answers as the customer is now: 409 once its credentials were refused, 404 to another platform, 404 for a malformed id', async () => {
      const id = await verifiedCustomer(h, 'served@example.com');
      const first = await refresh(h, id);
      assert.equal(first.status, 200, first.text);
      assert.ok(first.body.data.length > 0, 'a page with rows: what the one-statement read needs');
      const before = pulls.count;
      const again = await refresh(h, id.toUpperCase(), { page: 2 });
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.meta.total, first.body.meta.total);
      assert.equal(pulls.count, before, 'served from the pull just made');

      expectProblem(await h.request('POST', '/api/v1/irm/refresh', { key: h.platformB.apiKey, query: { platformCustomerId: id }, body: {} }), 404, 'not_found');
      expectProblem(await refresh(h, `${id.slice(0, -1)}z`), 404, 'not_found');

      await h.database.db.updateTable('platform_customers').set({ authority_credentials_status: 'invalid' }).where('id', '=', id).execute();
      expectProblem(await refresh(h, id), 409, 'customer_not_verified');
      await h.database.db.updateTable('platform_customers').set({ authority_credentials_status: 'valid' }).where('id', '=', id).execute();
      assert.equal((await refresh(h, id)).status, 200);
      assert.equal(pulls.count, before, 'none of these asked the authority');
    });

    test('the authority down or slow answers 502 or 504', async () => {
      const down = await verifiedCustomer(h, 'down@example.com', 'outage.exporter');
      expectProblem(await refresh(h, down), 502, 'authority_unavailable');
      const slow = await verifiedCustomer(h, 'slow@example.com', 'slow.exporter');
      expectProblem(await refresh(h, slow), 504, 'authority_timeout');
    });

    test('totals are exact for every filter, and stay so as new IRMs arrive', async () => {
      const id = await verifiedCustomer(h, 'totals@example.com');
      const first = await refresh(h, id, { limit: 1 });
      const days = [first.body.data[0].irmIssueDate, '2025-06-01', '2025-12-31'];
      const expected = async (from?: string, to?: string) => {
        let query = h.database.db.selectFrom('irms').where('platform_customer_id', '=', id);
        if (from) query = query.where('irm_issue_date', '>=', from);
        if (to) query = query.where('irm_issue_date', '<=', to);
        return Number((await query.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
      };
      const check = async () => {
        for (const [fromDate, toDate] of [[undefined, undefined], ['2025-06-01', undefined], [undefined, '2025-12-31'], ['2025-06-01', '2025-12-31'], [days[0], days[0]]]) {
          const query = { limit: 1, ...(fromDate ? { fromDate } : {}), ...(toDate ? { toDate } : {}) };
          const page = await refresh(h, id, query);
          assert.equal(page.body.meta.total, await expected(fromDate, toDate), JSON.stringify(query));
        }
      };
      await check();
      clock.offsetMs += 3 * DAY_MS;
      await h.database.db.updateTable('platform_customers').set({ irms_pulled_at: new Date(0) }).where('id', '=', id).execute();
      await check();
    });

    test('page past the end is empty with correct totals; limit above 100 is 400', async () => {
      const id = await verifiedCustomer(h, 'paging@example.com');
      const first = await refresh(h, id, { limit: 100 });
      const past = await refresh(h, id, { page: first.body.meta.totalPages + 1, limit: 100 });
      assert.equal(past.status, 200);
      assert.deepEqual(past.body.data, []);
      assert.equal(past.body.meta.total, first.body.meta.total);
      expectProblem(await refresh(h, id, { limit: 101 }), 400, 'validation_failed');
    });
  },
  { authority: countingSandbox, env: { AUTHORITY_TIMEOUT_MS: '3000' }, sandboxNow: () => new Date(Date.now() + clock.offsetMs) },
);
