import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { REDACTED_PATHS } from '../../src/http/app.ts';
import { readServiceFile } from '../../src/service-file.ts';
import { NO_AUTHORITY, startGateway, stopGateway, waitUntilReady, type Running } from '../support/gateway.ts';
import { backends, describeEachBackend, expectProblem, memoryLog, scratchDatabase, startHarness, type Harness, type TestResponse } from '../support/harness.ts';
import { sleep } from '../support/workflow.ts';

/** Contract 10: the operator's admin API at /admin/v1, behind a bearer token. */

const TOKEN = `test-admin-${randomBytes(24).toString('hex')}`;
const API_KEY = /^ebrc_test_[1-9A-HJ-NP-Za-km-z]{22,}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MISSING = '00000000-0000-4000-8000-000000000000';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** A request to the admin API: no API key, the bearer token unless another (or none: null) is given. */
function adminRequest(h: Harness, seen: TestResponse[], method: string, url: string, options: { body?: unknown; token?: string | null; query?: Record<string, string | number> } = {}) {
  const token = options.token === undefined ? TOKEN : options.token;
  return h
    .request(method, `/admin/v1${url}`, {
      key: null,
      headers: token === null ? {} : { authorization: `Bearer ${token}` },
      ...(options.body === undefined ? {} : { body: options.body }),
      ...(options.query === undefined ? {} : { query: options.query }),
    })
    .then((response) => {
      seen.push(response);
      return response;
    });
}

const log = memoryLog(REDACTED_PATHS);

describeEachBackend(
  'admin API',
  (h) => {
    /** Every answer of the admin API in this suite, to check that none holds a key's hash or a password's. */
    const seen: TestResponse[] = [];
    const admin = (method: string, url: string, options?: Parameters<typeof adminRequest>[4]) => adminRequest(h, seen, method, url, options);
    const apiKeys: string[] = [];
    const passwords: string[] = [];
    let platformId: string;
    let firstKeyId: string;

    test('without a token: 401 admin_token_missing, with a challenge; a wrong one or another scheme: 401 admin_token_invalid', async () => {
      for (const [method, url] of [
        ['GET', '/platforms'],
        ['POST', '/platforms'],
        ['GET', `/platforms/${h.platformA.id}`],
        ['POST', `/api-keys/${h.platformA.keyId}/revoke`],
        ['PATCH', `/users/${MISSING}`],
      ] as const) {
        const missing = await admin(method, url, { token: null, ...(method === 'GET' ? {} : { body: {} }) });
        expectProblem(missing, 401, 'admin_token_missing');
        assert.match(String(missing.headers['www-authenticate']), /^Bearer realm=/);
        expectProblem(await admin(method, url, { token: `${TOKEN}x`, ...(method === 'GET' ? {} : { body: {} }) }), 401, 'admin_token_invalid');
      }
      expectProblem(await admin('GET', '/platforms', { token: TOKEN.slice(0, -1) }), 401, 'admin_token_invalid');
      const basic = await h.request('GET', '/admin/v1/platforms', { key: null, headers: { authorization: `Basic ${Buffer.from(`admin:${TOKEN}`).toString('base64')}` } });
      expectProblem(basic, 401, 'admin_token_invalid');
      // A platform's API key opens nothing here.
      expectProblem(await h.request('GET', '/admin/v1/platforms', { key: h.platformA.apiKey }), 401, 'admin_token_missing');
      expectProblem(await admin('GET', '/platforms', { token: h.platformA.apiKey }), 401, 'admin_token_invalid');
      // Nor does the admin token open /api/v1.
      expectProblem(await h.request('GET', '/api/v1/platform-customers', { key: null, headers: { authorization: `Bearer ${TOKEN}` } }), 401, 'api_key_missing');
      // Nothing was made by the refused requests.
      const listed = await admin('GET', '/platforms');
      assert.equal(listed.body.meta.totalItems, 2);
    });

    test('the scheme name is case-insensitive (RFC 9110)', async () => {
      assert.equal((await h.request('GET', '/admin/v1/platforms', { key: null, headers: { authorization: `bearer ${TOKEN}` } })).status, 200);
    });

    test('POST /platforms: 201 with the platform and its first key, which the API takes', async () => {
      const created = await admin('POST', '/platforms', { body: { name: 'Acme Payments' } });
      assert.equal(created.status, 201, created.text);
      assert.deepEqual(Object.keys(created.body).sort(), ['apiKey', 'platform']);
      assert.deepEqual(Object.keys(created.body.platform).sort(), ['createdAt', 'id', 'name', 'requireTwoFactor']);
      assert.match(created.body.platform.id, UUID);
      assert.equal(created.body.platform.name, 'Acme Payments');
      assert.ok(created.body.platform.createdAt.endsWith('Z'));
      assert.match(created.body.apiKey, API_KEY);
      assert.equal(created.headers['cache-control'], 'no-store');
      platformId = created.body.platform.id;
      apiKeys.push(created.body.apiKey);

      const customers = await h.request('GET', '/api/v1/platform-customers', { key: created.body.apiKey });
      assert.equal(customers.status, 200);
      assert.equal(customers.body.meta.totalItems, 0, 'a new platform sees nothing of the others');
    });

    test('POST /platforms refuses a missing, blank or over-long name and unknown fields (400)', async () => {
      for (const body of [{}, { name: '' }, { name: '   ' }, { name: 'x'.repeat(201) }, { name: 'Ok', extra: 1 }]) {
        expectProblem(await admin('POST', '/platforms', { body }), 400, 'validation_failed');
      }
    });

    test('GET /platforms: the customers\' envelope, newest first, paged; GET /platforms/{id}', async () => {
      const all = await admin('GET', '/platforms');
      assert.equal(all.status, 200);
      assert.deepEqual(all.body.meta, { totalItems: 3, itemsPerPage: 10, totalPages: 1, currentPage: 1 });
      assert.deepEqual(
        all.body.items.map((p: { id: string }) => p.id),
        [platformId, h.platformB.id, h.platformA.id],
      );
      const second = await admin('GET', '/platforms', { query: { page: 2, limit: 2 } });
      assert.deepEqual(second.body.meta, { totalItems: 3, itemsPerPage: 2, totalPages: 2, currentPage: 2 });
      assert.deepEqual(second.body.items.map((p: { id: string }) => p.id), [h.platformA.id]);
      const past = await admin('GET', '/platforms', { query: { page: 9, limit: 2 } });
      assert.deepEqual(past.body, { items: [], meta: { totalItems: 3, itemsPerPage: 2, totalPages: 2, currentPage: 9 } });
      expectProblem(await admin('GET', '/platforms', { query: { limit: 101 } }), 400, 'validation_failed');
      expectProblem(await admin('GET', '/platforms', { query: { page: 0 } }), 400, 'validation_failed');
      expectProblem(await admin('GET', '/platforms', { query: { pgae: 2 } }), 400, 'validation_failed');

      const one = await admin('GET', `/platforms/${platformId}`);
      assert.equal(one.status, 200);
      assert.deepEqual(one.body, all.body.items[0]);
      for (const id of [MISSING, 'not-a-uuid']) {
        const problem = expectProblem(await admin('GET', `/platforms/${id}`), 404, 'not_found');
        assert.equal(problem.detail, `Platform ${id} was not found.`);
      }
    });

    test('POST /platforms/{id}/api-keys: 201 {id, apiKey, prefix, createdAt}; GET lists them without the keys', async () => {
      const issued = await admin('POST', `/platforms/${platformId}/api-keys`);
      assert.equal(issued.status, 201, issued.text);
      assert.deepEqual(Object.keys(issued.body).sort(), ['apiKey', 'createdAt', 'id', 'prefix']);
      assert.match(issued.body.apiKey, API_KEY);
      assert.ok(issued.body.apiKey.startsWith(issued.body.prefix));
      assert.ok(issued.body.prefix.length < issued.body.apiKey.length - 16);
      assert.equal(issued.headers['cache-control'], 'no-store');
      apiKeys.push(issued.body.apiKey);
      firstKeyId = issued.body.id;
      // With `{}` as the body too.
      const another = await admin('POST', `/platforms/${platformId}/api-keys`, { body: {} });
      assert.equal(another.status, 201);
      apiKeys.push(another.body.apiKey);
      expectProblem(await admin('POST', `/platforms/${platformId}/api-keys`, { body: { name: 'x' } }), 400, 'validation_failed');
      expectProblem(await admin('POST', `/platforms/${MISSING}/api-keys`), 404, 'not_found');

      const listed = await admin('GET', `/platforms/${platformId}/api-keys`);
      assert.equal(listed.status, 200);
      assert.equal(listed.body.meta.totalItems, 3);
      assert.deepEqual(listed.body.items.slice(0, 2).map((k: { id: string }) => k.id), [another.body.id, issued.body.id], 'newest first');
      for (const key of listed.body.items) {
        assert.deepEqual(Object.keys(key).sort(), ['createdAt', 'id', 'lastUsedAt', 'platformId', 'prefix', 'revokedAt']);
        assert.equal(key.platformId, platformId);
        assert.equal(key.revokedAt, null);
      }
      expectProblem(await admin('GET', `/platforms/${MISSING}/api-keys`), 404, 'not_found');

      const one = await admin('GET', `/api-keys/${issued.body.id}`);
      assert.equal(one.status, 200);
      assert.deepEqual(one.body, listed.body.items[1]);
      expectProblem(await admin('GET', `/api-keys/${MISSING}`), 404, 'not_found');
    });

    test('lastUsedAt appears once a key is used, and is not written again within the minute', async () => {
      const keyOf = async () => (await admin('GET', `/api-keys/${firstKeyId}`)).body;
      assert.equal((await keyOf()).lastUsedAt, null, 'not used yet');
      const before = Date.now();
      assert.equal((await h.request('GET', '/api/v1/platform-customers', { key: apiKeys[1] })).status, 200);
      let key = await keyOf();
      for (let waited = 0; key.lastUsedAt === null && waited < 10_000; waited += 100) {
        await sleep(100);
        key = await keyOf();
      }
      assert.ok(key.lastUsedAt, 'lastUsedAt is written within a few seconds of the use');
      assert.ok(Date.parse(key.lastUsedAt) >= before - 1_000 && Date.parse(key.lastUsedAt) <= Date.now() + 1_000, key.lastUsedAt);
      // More uses within the minute write nothing more.
      for (let i = 0; i < 5; i++) assert.equal((await h.request('GET', '/api/v1/platform-customers', { key: apiKeys[1] })).status, 200);
      await sleep(1_500);
      assert.equal((await keyOf()).lastUsedAt, key.lastUsedAt);
    });

    test('POST /api-keys/{id}/revoke: 200 with the key, refused by the API from the very next request; again: 409 saying when', async () => {
      const apiKey = apiKeys[1]!;
      // The key is in the authenticator's cache (API_KEY_CACHE_SECONDS is 5 here).
      assert.equal((await h.request('GET', '/api/v1/platform-customers', { key: apiKey })).status, 200);
      assert.equal((await h.request('GET', '/api/v1/platform-customers', { key: apiKey })).status, 200);
      const revoked = await admin('POST', `/api-keys/${firstKeyId}/revoke`);
      assert.equal(revoked.status, 200, revoked.text);
      assert.equal(revoked.body.id, firstKeyId);
      assert.ok(Date.parse(revoked.body.revokedAt) > 0);
      expectProblem(await h.request('GET', '/api/v1/platform-customers', { key: apiKey }), 401, 'api_key_invalid');
      // The platform's other keys still work.
      assert.equal((await h.request('GET', '/api/v1/platform-customers', { key: apiKeys[0] })).status, 200);

      const again = expectProblem(await admin('POST', `/api-keys/${firstKeyId}/revoke`, { body: {} }), 409, 'api_key_already_revoked');
      assert.ok(again.detail.includes(revoked.body.revokedAt), again.detail);
      const listed = await admin('GET', `/platforms/${platformId}/api-keys`);
      assert.equal(listed.body.items.find((k: { id: string }) => k.id === firstKeyId).revokedAt, revoked.body.revokedAt, 'the first revocation time stays');
      expectProblem(await admin('POST', `/api-keys/${MISSING}/revoke`), 404, 'not_found');
      expectProblem(await admin('POST', '/api-keys/nope/revoke'), 404, 'not_found');
    });

    let userId: string;
    test('POST /platforms/{id}/users: 201 {id, email, platformId, role, disabled, twoFactor, createdAt}; the e-mail is unique ignoring case (409)', async () => {
      const password = `pw-${randomBytes(8).toString('hex')}`;
      passwords.push(password);
      const created = await admin('POST', `/platforms/${platformId}/users`, { body: { email: 'Ops@Acme-Payments.example', password } });
      assert.equal(created.status, 201, created.text);
      assert.deepEqual(Object.keys(created.body).sort(), ['createdAt', 'disabled', 'email', 'id', 'platformId', 'role', 'twoFactor']);
      assert.equal(created.body.role, 'owner', "the platform's first user is its owner");
      assert.deepEqual(created.body.twoFactor, { enrolled: false, enrolledAt: null });
      assert.equal(created.body.email, 'Ops@Acme-Payments.example', 'kept as sent');
      assert.equal(created.body.platformId, platformId);
      assert.equal(created.body.disabled, false);
      userId = created.body.id;
      const stored = await h.database.db.selectFrom('console_users').select('password_hash').where('id', '=', userId).executeTakeFirstOrThrow();
      assert.match(stored.password_hash, /^scrypt\$/);
      assert.ok(!stored.password_hash.includes(password));

      for (const [platform, email] of [
        [platformId, 'ops@acme-payments.example'],
        [h.platformB.id, 'OPS@ACME-PAYMENTS.EXAMPLE'],
      ]) {
        const taken = expectProblem(await admin('POST', `/platforms/${platform}/users`, { body: { email, password } }), 409, 'console_user_email_taken');
        assert.equal(taken.errors[0].path, '/email');
      }
    });

    test('a password under 12 characters, a bad e-mail or an unknown field is 400 with errors[]; an unknown platform 404', async () => {
      const short = expectProblem(await admin('POST', `/platforms/${platformId}/users`, { body: { email: 'short@acme.example', password: 'elevenchars' } }), 400, 'validation_failed');
      assert.deepEqual(short.errors.map((e: { path: string }) => e.path), ['/password']);
      assert.match(short.errors[0].message, /at least 12 characters/);
      // Twelve characters are enough, counted as characters (not bytes or UTF-16 units).
      assert.equal((await admin('POST', `/platforms/${platformId}/users`, { body: { email: 'twelve@acme.example', password: '🔑'.repeat(12) } })).status, 201);
      expectProblem(await admin('POST', `/platforms/${platformId}/users`, { body: { email: 'eleven@acme.example', password: '🔑'.repeat(11) } }), 400, 'validation_failed');
      const email = expectProblem(await admin('POST', `/platforms/${platformId}/users`, { body: { email: 'not-an-email', password: 'long enough password' } }), 400, 'validation_failed');
      assert.equal(email.errors[0].path, '/email');
      expectProblem(await admin('POST', `/platforms/${platformId}/users`, { body: { email: 'x@acme.example', password: 'long enough password', role: 'admin' } }), 400, 'validation_failed');
      expectProblem(await admin('POST', `/platforms/${platformId}/users`, { body: { email: 'x@acme.example' } }), 400, 'validation_failed');
      expectProblem(await admin('POST', `/platforms/${MISSING}/users`, { body: { email: 'x@acme.example', password: 'long enough password' } }), 404, 'not_found');
    });

    test('GET /platforms/{id}/users lists the platform\'s users, newest first; another platform\'s are not there', async () => {
      const listed = await admin('GET', `/platforms/${platformId}/users`);
      assert.equal(listed.status, 200);
      assert.equal(listed.body.meta.totalItems, 2);
      assert.deepEqual(listed.body.items.map((u: { email: string }) => u.email), ['twelve@acme.example', 'Ops@Acme-Payments.example']);
      const other = await admin('GET', `/platforms/${h.platformB.id}/users`);
      assert.deepEqual(other.body, { items: [], meta: { totalItems: 0, itemsPerPage: 10, totalPages: 0, currentPage: 1 } });
      expectProblem(await admin('GET', `/platforms/${MISSING}/users`), 404, 'not_found');
    });

    test('PATCH /users/{id} {disabled}: 200 with the user; disabling ends its console sessions at once', async () => {
      const db = h.database.db;
      const session = { token_hash: randomBytes(32), user_id: userId, expires_at: new Date(Date.now() + 3_600_000) };
      await db.insertInto('console_sessions').values(session).execute();
      const disabled = await admin('PATCH', `/users/${userId}`, { body: { disabled: true } });
      assert.equal(disabled.status, 200, disabled.text);
      assert.equal(disabled.body.disabled, true);
      assert.equal(disabled.body.id, userId);
      const left = await db.selectFrom('console_sessions').select('user_id').where('user_id', '=', userId).execute();
      assert.equal(left.length, 0, 'the session was ended');
      // Again: nothing changes, same answer.
      assert.deepEqual((await admin('PATCH', `/users/${userId}`, { body: { disabled: true } })).body, disabled.body);
      const enabled = await admin('PATCH', `/users/${userId}`, { body: { disabled: false } });
      assert.equal(enabled.status, 200);
      assert.equal(enabled.body.disabled, false);
      expectProblem(await admin('PATCH', `/users/${userId}`, { body: {} }), 400, 'validation_failed');
      expectProblem(await admin('PATCH', `/users/${userId}`, { body: { disabled: 'yes' } }), 400, 'validation_failed');
      expectProblem(await admin('PATCH', `/users/${MISSING}`, { body: { disabled: true } }), 404, 'not_found');
    });

    test('no answer holds an API key\'s hash or a password\'s (nor a password), and no log line holds a secret', async () => {
      const hashes = (await h.database.db.selectFrom('api_keys').select('key_hash').execute()).map((row) => row.key_hash);
      const passwordHashes = (await h.database.db.selectFrom('console_users').select('password_hash').execute()).map((row) => row.password_hash);
      assert.ok(hashes.length >= 5 && passwordHashes.length >= 2);
      assert.ok(seen.length > 50);
      for (const response of seen) {
        for (const secret of [...hashes, ...passwordHashes, ...passwords]) assert.ok(!response.text.includes(secret), `${response.text.slice(0, 300)} holds a secret`);
        assert.doesNotMatch(response.text, /scrypt\$|"keyHash"|"key_hash"|"passwordHash"|"password_hash"/);
      }
      for (const key of apiKeys) assert.ok(hashes.includes(sha256(key)));
      const lines = log.lines.join('\n');
      for (const secret of [TOKEN, ...apiKeys, ...passwords]) assert.ok(!lines.includes(secret), 'a secret reached a log line');
    });
  },
  { env: { ADMIN_TOKEN: TOKEN }, logger: log.logger },
);

describe('admin API: where the token comes from', () => {
  for (const backend of backends()) {
    test(`[${backend}] without ADMIN_TOKEN: ${backend === 'postgres' ? 'off, every path answers 404 as an unknown path does' : 'a token made once in DATA_DIR/admin-token (0600)'}`, async () => {
      const h = await startHarness(backend);
      try {
        const file = path.join(h.config.dataDir, 'admin-token');
        if (backend === 'postgres') {
          assert.equal(fs.existsSync(file), false, 'no token file on PostgreSQL');
          for (const [method, url] of [
            ['GET', '/admin/v1/platforms'],
            ['POST', '/admin/v1/platforms'],
            ['GET', `/admin/v1/platforms/${h.platformA.id}/api-keys`],
            ['PATCH', `/admin/v1/users/${MISSING}`],
          ] as const) {
            for (const headers of [{}, { authorization: `Bearer ${TOKEN}` }] as Record<string, string>[]) {
              const problem = expectProblem(await h.request(method, url, { key: null, headers, ...(method === 'GET' ? {} : { body: {} }) }), 404, 'not_found');
              assert.equal(problem.detail, `There is no ${method} ${url}.`);
            }
          }
          // The same answer as a path no route has.
          assert.equal(expectProblem(await h.request('GET', '/admin/v1/nothing', { key: null }), 404, 'not_found').title, 'Not found');
          return;
        }
        const mode = fs.statSync(file).mode & 0o777;
        assert.equal(mode, 0o600, `mode ${mode.toString(8)}`);
        const token = fs.readFileSync(file, 'utf8').trim();
        assert.match(token, /^ebrc_admin_[1-9A-HJ-NP-Za-km-z]{40,}$/);
        const listed = await h.request('GET', '/admin/v1/platforms', { key: null, headers: { authorization: `Bearer ${token}` } });
        assert.equal(listed.status, 200, listed.text);
        assert.equal(listed.body.meta.totalItems, 2);
        expectProblem(await h.request('GET', '/admin/v1/platforms', { key: null, headers: { authorization: `Bearer ${TOKEN}` } }), 401, 'admin_token_invalid');
      } finally {
        await h.stop();
      }
    });
  }

  test('[postgres] with ADMIN_TOKEN the admin API is on', { skip: !backends().includes('postgres') }, async () => {
    const h = await startHarness('postgres', { env: { ADMIN_TOKEN: TOKEN } });
    try {
      assert.equal((await h.request('GET', '/admin/v1/platforms', { key: null, headers: { authorization: `Bearer ${TOKEN}` } })).status, 200);
      expectProblem(await h.request('GET', '/admin/v1/platforms', { key: null }), 401, 'admin_token_missing');
    } finally {
      await h.stop();
    }
  });
});

describe('admin API: the embedded default, as `npm start` runs it', () => {
  let scratch: Awaited<ReturnType<typeof scratchDatabase>>;
  let gateway: Running | undefined;
  let base: string;
  before(async () => {
    scratch = await scratchDatabase('embedded', { empty: true });
    gateway = startGateway({ DATA_DIR: scratch.dataDir, PORT: '0', HOST: '127.0.0.1', AUTHORITY_URL: NO_AUTHORITY, RUN_POLLER: 'false', LOG_LEVEL: 'info' });
    base = await waitUntilReady(gateway);
  });
  after(async () => {
    await stopGateway(gateway);
    await scratch.drop();
  });

  test('the first start makes the token file (0600) and logs its path, never the token; it is the same at the next start', async () => {
    const file = path.join(scratch.dataDir, 'admin-token');
    const token = fs.readFileSync(file, 'utf8').trim();
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    const output = gateway!.output();
    assert.ok(output.includes(`the admin API (/admin/v1) takes the token in ${file}`), output);
    assert.ok(!output.includes(token), 'the token itself is never printed');
    const answer = await fetch(`${base}/admin/v1/platforms`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(answer.status, 200);
    assert.equal(((await answer.json()) as { meta: { totalItems: number } }).meta.totalItems, 1, 'the demo platform');

    // service.json names the running service for the CLI, and goes when it stops.
    const running = readServiceFile(scratch.dataDir);
    assert.deepEqual(running, { url: base, pid: gateway!.child.pid, adminTokenFile: file });
    await stopGateway(gateway);
    assert.equal(readServiceFile(scratch.dataDir), undefined, 'service.json is removed on shutdown');

    gateway = startGateway({ DATA_DIR: scratch.dataDir, PORT: '0', HOST: '127.0.0.1', AUTHORITY_URL: NO_AUTHORITY, RUN_POLLER: 'false', LOG_LEVEL: 'info' });
    base = await waitUntilReady(gateway);
    assert.equal(fs.readFileSync(file, 'utf8').trim(), token, 'made once: the next start keeps it');
    assert.ok(!gateway.output().includes(token));
    assert.equal((await fetch(`${base}/admin/v1/platforms`, { headers: { authorization: `Bearer ${token}` } })).status, 200);
  });
});
