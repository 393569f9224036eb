import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { test } from 'node:test';
import { sql } from 'kysely';
import { purgeAuditBefore, verifyAuditChains } from '../../src/services/audit.ts';
import { describeEachBackend, type Harness } from '../support/harness.ts';
import { verifiedCustomer } from '../support/workflow.ts';

/** Contract 14: the audit trail. */

const TOKEN = `test-admin-${randomBytes(24).toString('hex')}`;
const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** Routes that take a POST but change nothing: each with why. Every other write route must declare its audit action. */
const CHANGES_NOTHING: Record<string, string> = {
  'POST /api/v1/genebrc/status': 'reads the status of requests (a POST for its list of ids)',
  'POST /api/v1/platform-customers/:id/irm/match': 'matches lines to IRMs, storing nothing',
  'POST /admin/v1/backup': 'copies the database, changing nothing',
  'POST /console/generate/irms': "a step of the wizard: its state goes back in the page, nothing is stored",
  'POST /console/generate/lines': "a step of the wizard: its state goes back in the page, nothing is stored",
};

const admin = (h: Harness, method: string, url: string, options: { body?: unknown; query?: Record<string, string | number>; headers?: Record<string, string> } = {}) =>
  h.request(method, `/admin/v1${url}`, { key: null, ...options, headers: { authorization: `Bearer ${TOKEN}`, ...options.headers } });

async function entries(h: Harness, apiKey: string, query: Record<string, string | number> = {}) {
  const response = await h.request('GET', '/api/v1/audit-log', { key: apiKey, query: { limit: 100, ...query } });
  assert.equal(response.status, 200, response.text);
  return response.body.items as any[];
}

describeEachBackend(
  'audit trail',
  (h) => {
    test('every route that changes something declares its audit action', () => {
      const undeclared = h.service.app.auditedRoutes
        .filter((route) => WRITE_METHODS.has(route.method) && route.audit === undefined)
        .map((route) => `${route.method} ${route.url.replace(/\/$/, '')}`)
        .filter((route) => !(route in CHANGES_NOTHING));
      assert.deepEqual(undeclared, [], 'write routes with no `config: { audit }`');
      const writes = h.service.app.auditedRoutes.filter((route) => WRITE_METHODS.has(route.method)).length;
      assert.ok(writes > 30, `only ${writes} write routes seen: the walk missed scopes`);
    });

    test('API changes record who, what, on what, and the request id; another platform never sees them', async () => {
      const requestId = `audit-${randomUUID()}`;
      const created = await h.request('POST', '/api/v1/platform-customers', {
        key: h.platformA.apiKey,
        headers: { 'x-request-id': requestId, 'user-agent': 'audit-test/1.0' },
        body: { name: 'Audited', email: `audited.${randomUUID()}@example.com`, companyName: 'Audited Ltd' },
      });
      assert.equal(created.status, 201, created.text);
      const [entry] = await entries(h, h.platformA.apiKey, { action: 'platform_customer.create', targetId: created.body.id });
      assert.ok(entry, 'no entry for the customer');
      assert.equal(entry.platformId, h.platformA.id);
      assert.deepEqual(entry.actor, { type: 'api_key', id: h.platformA.keyId, label: h.platformA.apiKey.slice(0, 16) });
      assert.deepEqual(entry.target, { type: 'platform_customer', id: created.body.id });
      assert.equal(entry.outcome, 'succeeded');
      assert.equal(entry.requestId, requestId);
      assert.equal(entry.userAgent, 'audit-test/1.0');

      const endpoint = await h.request('POST', '/api/v1/webhook-endpoints', { key: h.platformA.apiKey, body: { url: 'https://hooks.example.com/audit', enabledEvents: ['*'] } });
      assert.equal(endpoint.status, 201, endpoint.text);
      const id = endpoint.body.id;
      assert.equal((await h.request('PATCH', `/api/v1/webhook-endpoints/${id}`, { key: h.platformA.apiKey, body: { description: 'changed' } })).status, 200);
      const rotated = await h.request('POST', `/api/v1/webhook-endpoints/${id}/rotate-secret`, { key: h.platformA.apiKey, body: {} });
      assert.equal(rotated.status, 200, rotated.text);
      assert.equal((await h.request('DELETE', `/api/v1/webhook-endpoints/${id}`, { key: h.platformA.apiKey })).status, 204);
      const about = await entries(h, h.platformA.apiKey, { targetType: 'webhook_endpoint', targetId: id });
      assert.deepEqual(
        about.map((e) => e.action),
        ['webhook_endpoint.delete', 'webhook_endpoint.rotate_secret', 'webhook_endpoint.update', 'webhook_endpoint.create'],
      );

      // Secrets never enter an entry: the API key, the webhook secrets.
      const all = JSON.stringify(await entries(h, h.platformA.apiKey));
      for (const secret of [h.platformA.apiKey, endpoint.body.secret, rotated.body.secret]) assert.ok(!all.includes(secret), 'a secret is in the audit trail');

      // Platform B sees none of A's entries; the filters narrow.
      const theirs = await entries(h, h.platformB.apiKey);
      assert.ok(theirs.every((e) => e.platformId === h.platformB.id));
      assert.ok(!JSON.stringify(theirs).includes(created.body.id));
      const byAction = await entries(h, h.platformA.apiKey, { action: 'webhook_endpoint.update' });
      assert.ok(byAction.length >= 1 && byAction.every((e) => e.action === 'webhook_endpoint.update'));
      const future = await entries(h, h.platformA.apiKey, { fromDate: '2999-01-01' });
      assert.equal(future.length, 0);
      const wrong = await h.request('GET', '/api/v1/audit-log', { key: h.platformA.apiKey, query: { actorType: 'robot' } });
      assert.equal(wrong.status, 400);
    });

    test('an IRM refresh is recorded when it asked the authority, not for a page served from a recent pull', async () => {
      const customerId = await verifiedCustomer(h, `audit-refresh.${randomUUID()}@example.com`);
      const refresh = (page: number) => h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: customerId, page }, body: {} });
      assert.equal((await refresh(1)).status, 200);
      const afterPull = await entries(h, h.platformA.apiKey, { action: 'irm.refresh', targetId: customerId });
      assert.equal(afterPull.length, 1, 'the refresh that pulled is recorded');
      // Within IRM_REFRESH_INTERVAL_SECONDS (30 s): the pages come from that pull, and change nothing.
      for (const page of [2, 3, 1]) assert.equal((await refresh(page)).status, 200);
      assert.equal((await entries(h, h.platformA.apiKey, { action: 'irm.refresh', targetId: customerId })).length, 1);
    });

    test('the admin API and its audit log: platform, keys and users, all platforms, CSV with formulas neutralised', async () => {
      const platform = await admin(h, 'POST', '/platforms', { body: { name: 'Audited platform' } });
      assert.equal(platform.status, 201, platform.text);
      const platformId = platform.body.platform.id;
      const issued = await admin(h, 'POST', `/platforms/${platformId}/api-keys`, { body: {}, headers: { 'user-agent': '=HYPERLINK("http://evil.example")' } });
      assert.equal(issued.status, 201);
      assert.equal((await admin(h, 'POST', `/api-keys/${issued.body.id}/revoke`, { body: {} })).status, 200);
      const password = `pw-${randomBytes(12).toString('hex')}`;
      const user = await admin(h, 'POST', `/platforms/${platformId}/users`, { body: { email: `audit.${randomUUID()}@example.com`, password } });
      assert.equal(user.status, 201, user.text);
      assert.equal((await admin(h, 'PATCH', `/users/${user.body.id}`, { body: { disabled: true } })).status, 200);

      const listed = await admin(h, 'GET', '/audit-log', { query: { platformId, limit: 100 } });
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual(
        listed.body.items.map((e: any) => e.action),
        ['console_user.disable', 'console_user.create', 'api_key.revoke', 'api_key.issue', 'api_key.issue', 'platform.create'],
      );
      assert.ok(listed.body.items.every((e: any) => e.actor.type === 'admin' && e.requestId !== null));
      const everything = await admin(h, 'GET', '/audit-log', { query: { limit: 100 } });
      assert.ok(new Set(everything.body.items.map((e: any) => e.platformId)).size > 1, 'the admin log covers every platform');

      const csv = await admin(h, 'GET', '/audit-log', { query: { platformId, format: 'csv' } });
      assert.equal(csv.status, 200);
      assert.match(String(csv.headers['content-type']), /^text\/csv/);
      const lines = csv.text.trim().split('\n');
      assert.equal(lines[0], 'id,at,platformId,actorType,actorId,actorLabel,action,targetType,targetId,outcome,ip,userAgent,requestId');
      assert.equal(lines.length, 7);
      assert.ok(csv.text.includes(`"'=HYPERLINK(""http://evil.example"")"`), 'a formula-looking cell is neutralised');
      const accepted = await admin(h, 'GET', '/audit-log', { query: { platformId }, headers: { accept: 'text/csv' } });
      assert.equal(accepted.text, csv.text);

      const text = JSON.stringify(everything.body) + csv.text;
      for (const secret of [platform.body.apiKey, issued.body.apiKey, password, TOKEN]) assert.ok(!text.includes(secret), 'a secret is in the audit trail');
    });

    test('concurrent changes of one platform keep its chain whole', async () => {
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          h.request('POST', '/api/v1/platform-customers', { key: h.platformB.apiKey, body: { name: `C${i}`, email: `c${i}.${randomUUID()}@example.com`, companyName: 'C Ltd' } }),
        ),
      );
      assert.ok(results.every((r) => r.status === 201));
      const verified = await verifyAuditChains(h.database.db);
      assert.equal(verified.ok, true, JSON.stringify(verified));
    });

    test('audit-verify finds an edited entry, and a purge keeps the chains verifiable', async () => {
      const [victim] = await entries(h, h.platformA.apiKey, { action: 'platform_customer.create' });
      await sql`update audit_log set actor_label = 'someone else' where id = ${victim.id}`.execute(h.database.db);
      const broken = await verifyAuditChains(h.database.db);
      assert.equal(broken.ok, false);
      assert.equal(!broken.ok && broken.entryId, victim.id);
      if (h.config.databaseUrl) {
        // The CLI itself (on PostgreSQL: the embedded database is held by this test's service).
        const cli = path.resolve(import.meta.dirname, '../../src/cli/main.ts');
        const failed = await promisify(execFile)(process.execPath, [cli, 'audit-verify'], { env: { ...process.env, DATABASE_URL: h.config.databaseUrl } }).then(
          () => assert.fail('audit-verify passed a tampered trail'),
          (error: { code: number; stderr: string }) => error,
        );
        assert.equal(failed.code, 1);
        assert.ok(failed.stderr.includes(victim.id), failed.stderr);
      }
      await sql`update audit_log set actor_label = ${victim.actor.label} where id = ${victim.id}`.execute(h.database.db);
      assert.equal((await verifyAuditChains(h.database.db)).ok, true);

      const cut = new Date(Date.now() + 5);
      await new Promise((resolve) => setTimeout(resolve, 20));
      const later = await h.request('POST', '/api/v1/platform-customers', { key: h.platformA.apiKey, body: { name: 'Later', email: `later.${randomUUID()}@example.com`, companyName: 'L Ltd' } });
      assert.equal(later.status, 201);
      const purged = await purgeAuditBefore(h.database.db, cut, 3);
      assert.ok(purged > 0);
      const kept = await entries(h, h.platformA.apiKey);
      assert.equal(kept.length, 1);
      assert.equal(kept[0].target.id, later.body.id);
      const after = await verifyAuditChains(h.database.db);
      assert.equal(after.ok, true, JSON.stringify(after));
    });
  },
  { env: { ADMIN_TOKEN: TOKEN } },
);
