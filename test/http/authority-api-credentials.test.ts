import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { AuthorityError } from '../../src/authority/authority.ts';
import { CredentialsVault } from '../../src/services/credentials-vault.ts';
import { loadKeyRing } from '../../src/services/server-key.ts';
import { describeEachBackend, expectProblem, type Harness } from '../support/harness.ts';
import { issueCredentials } from '../sandbox/support.ts';
import { verifiedCustomer } from '../support/workflow.ts';

const authorityKeys = generateKeyPairSync('rsa', { modulusLength: 2048 });
const userKeys = generateKeyPairSync('rsa', { modulusLength: 2048 });
const AUTHORITY_PUBLIC_PEM = authorityKeys.publicKey.export({ format: 'pem', type: 'spki' }).toString();
const USER_PRIVATE_DER = userKeys.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
const CLIENT_SECRET = 'client-secret-that-must-never-come-back';
const API_KEY = 'x-api-key-that-must-never-come-back';

/** A set as the authority's portal gives it, for the demo account's IEC. */
function portalFile(iecCode = '0599001001') {
  return {
    iecCode,
    client_Id: 'demo-client',
    client_secret: CLIENT_SECRET,
    'x-Api-Key': API_KEY,
    dgftpublicKey: AUTHORITY_PUBLIC_PEM,
    userprivateKey: USER_PRIVATE_DER,
  };
}

function assertNoSecretIn(text: string): void {
  for (const secret of [CLIENT_SECRET, API_KEY, USER_PRIVATE_DER.slice(40, 80), 'PRIVATE KEY', 'PUBLIC KEY']) {
    assert.ok(!text.includes(secret), `no secret or key in ${text.slice(0, 200)}…`);
  }
}

/** The adapter to the sandbox, refusing the credentials of every IRM pull while `refusing` is set (the authority revoked them). */
let refusing = false;

describeEachBackend(
  'API credential sets and the credentials status',
  (h: Harness) => {
    test('a set stored as the portal gives it, or in our names: kept sealed whole, shown without a secret', async () => {
      const customerId = await verifiedCustomer(h, `api-set-${randomUUID()}@example.com`);
      const url = `/api/v1/platform-customers/${customerId}/authority-api-credentials`;
      // The set the sandbox issued at the check is shown the same way: never its secret, API key or keys.
      const issued = await issueCredentials(h.sandbox.url, 'demo.exporter');
      const verified = await h.request('GET', `/api/v1/platform-customers/${customerId}`);
      assert.equal(verified.body.authorityApiCredentials.clientId, issued.clientId);
      for (const secret of [issued.clientSecret, issued.apiKey]) assert.ok(!verified.text.includes(secret), 'no secret of the issued set');
      const stored = await h.request('PUT', url, { body: portalFile() });
      assert.equal(stored.status, 200, stored.text);
      assert.equal(stored.body.authorityApiCredentials.iecCode, '0599001001');
      assert.equal(stored.body.authorityApiCredentials.clientId, 'demo-client');
      assert.equal(stored.body.authorityApiCredentials.envelopeProfile, 'spec-sha256');
      assert.ok(Date.parse(stored.body.authorityApiCredentials.updatedAt));
      assertNoSecretIn(stored.text);
      assertNoSecretIn((await h.request('GET', `/api/v1/platform-customers/${customerId}`)).text);
      assertNoSecretIn((await h.request('GET', '/api/v1/platform-customers', { query: { limit: 100 } })).text);

      const row = await h.database.db.selectFrom('platform_customers').selectAll().where('id', '=', customerId).executeTakeFirstOrThrow();
      assertNoSecretIn(JSON.stringify(row));
      const vault = new CredentialsVault(loadKeyRing(h.config));
      const opened = vault.openApiCredentials(customerId, row.authority_api_credentials!);
      assert.equal(opened.clientSecret, CLIENT_SECRET, 'the whole set is kept, sealed');
      assert.equal(opened.apiKey, API_KEY);
      assert.throws(() => vault.open(customerId, row.authority_api_credentials!), 'sealed for its own column only');

      const ours = {
        iecCode: '0599001001',
        clientId: 'second-client',
        clientSecret: CLIENT_SECRET,
        apiKey: API_KEY,
        authorityPublicKey: AUTHORITY_PUBLIC_PEM,
        userPrivateKey: USER_PRIVATE_DER,
        envelopeProfile: 'java-pbkdf2',
      };
      const replaced = await h.request('PUT', url, { body: ours });
      assert.equal(replaced.status, 200, replaced.text);
      assert.deepEqual(
        { clientId: replaced.body.authorityApiCredentials.clientId, profile: replaced.body.authorityApiCredentials.envelopeProfile },
        { clientId: 'second-client', profile: 'java-pbkdf2' },
        'a new set replaces the one before',
      );
    });

    test('a malformed set is a 400 naming its fields, and changes nothing', async () => {
      const customerId = await verifiedCustomer(h, `api-set-bad-${randomUUID()}@example.com`);
      const url = `/api/v1/platform-customers/${customerId}/authority-api-credentials`;
      // The set the sandbox issued at the check.
      const issued = (await h.request('GET', `/api/v1/platform-customers/${customerId}`)).body.authorityApiCredentials;
      assert.equal(issued.iecCode, '0599001001');
      const badKey = expectProblem(await h.request('PUT', url, { body: { ...portalFile(), dgftpublicKey: 'bm90IGEga2V5' } }), 400, 'validation_failed');
      assert.deepEqual(badKey.errors.map((error: { path: string }) => error.path), ['/dgftpublicKey']);
      const missing = { ...portalFile() } as Record<string, unknown>;
      delete missing.client_secret;
      const missingProblem = expectProblem(await h.request('PUT', url, { body: missing }), 400, 'validation_failed');
      assert.equal(missingProblem.errors[0].code, 'required');
      assert.match(missingProblem.errors[0].message, /client_secret/);
      expectProblem(await h.request('PUT', url, { body: { ...portalFile(), clientSecretx: 'x' } }), 400, 'validation_failed');
      const otherIec = expectProblem(await h.request('PUT', url, { body: portalFile('0599001999') }), 400, 'validation_failed');
      assert.deepEqual(otherIec.errors.map((error: { path: string }) => error.path), ['/iecCode']);
      const customer = await h.request('GET', `/api/v1/platform-customers/${customerId}`);
      assert.deepEqual(customer.body.authorityApiCredentials, issued, 'nothing stored: the issued set is kept');
    });

    test("another platform's customer is 404, and its set is not touched", async () => {
      const customerId = await verifiedCustomer(h, `api-set-tenant-${randomUUID()}@example.com`);
      const url = `/api/v1/platform-customers/${customerId}/authority-api-credentials`;
      const issued = (await h.request('GET', `/api/v1/platform-customers/${customerId}`)).body.authorityApiCredentials;
      assert.equal(issued.iecCode, '0599001001', 'the set the sandbox issued at the check');
      expectProblem(await h.request('PUT', url, { key: h.platformB.apiKey, body: portalFile() }), 404, 'not_found');
      expectProblem(await h.request('PUT', url, { key: null, body: portalFile() }), 401, 'api_key_missing');
      assert.deepEqual((await h.request('GET', `/api/v1/platform-customers/${customerId}`)).body.authorityApiCredentials, issued);
    });

    test("another exporter's valid credentials are refused for a verified customer, and change nothing", async () => {
      const customerId = await verifiedCustomer(h, `other-iec-${randomUUID()}@example.com`);
      const before = await h.request('GET', `/api/v1/platform-customers/${customerId}`);
      const other = await h.request('POST', `/api/v1/platform-customers/${customerId}/check-authority-credentials`, {
        body: { authorityUsername: 'services.exporter', authorityPassword: 'Sandbox@123' },
      });
      const problem = expectProblem(other, 422, 'authority_credentials_invalid');
      assert.match(problem.detail, /0599001002.*0599001001/);
      const after = await h.request('GET', `/api/v1/platform-customers/${customerId}`);
      assert.deepEqual(after.body, before.body, 'the IEC, the set and the verification stay as they were');
    });

    test('credentials the authority refuses later are marked invalid until a new check succeeds', async () => {
      const created = await h.request('POST', '/api/v1/platform-customers/', {
        body: { name: 'Status', email: `status-${randomUUID()}@example.com`, companyName: 'Status Ltd' },
      });
      assert.equal(created.body.authorityCredentialsStatus, 'unverified');
      const id = created.body.id;
      const check = () =>
        h.request('POST', `/api/v1/platform-customers/${id}/check-authority-credentials`, {
          body: { authorityUsername: 'demo.exporter', authorityPassword: 'Sandbox@123' },
        });
      assert.equal((await check()).body.authorityCredentialsStatus, 'valid');

      refusing = true;
      try {
        const refused = await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: id }, body: {} });
        expectProblem(refused, 422, 'authority_credentials_invalid');
        assert.equal((await h.request('GET', `/api/v1/platform-customers/${id}`)).body.authorityCredentialsStatus, 'invalid');
        expectProblem(await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: id }, body: {} }), 409, 'customer_not_verified');
      } finally {
        refusing = false;
      }
      assert.equal((await check()).body.authorityCredentialsStatus, 'valid');
      const refreshed = await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: id, limit: 1 }, body: {} });
      assert.equal(refreshed.status, 200, refreshed.text);
    });
  },
  {
    env: { IRM_REFRESH_INTERVAL_SECONDS: '0' },
    authority: (adapter) => ({
      ...adapter,
      fetchIrms: (credentials, query, options) =>
        refusing ? Promise.reject(new AuthorityError('credentials_invalid', 'revoked at the authority')) : adapter.fetchIrms(credentials, query, options),
    }),
  },
);
