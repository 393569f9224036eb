/**
 * The service and the authority meeting only over the wire (contract 7, authority-wire.md): the service in
 * AUTHORITY_MODE=dgft against the sandbox program, driven over the service's HTTP API as an integrator would, with
 * what the sandbox offers to make the authority misbehave. What the authority ended up holding is read from the
 * sandbox program's own store.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { pino } from 'pino';
import { readAllowList } from '../../sandbox/config.ts';
import { describeEachBackend, expectProblem, type Harness } from '../support/harness.ts';
import { PASSWORD, postJson } from '../sandbox/support.ts';
import { cents, firstRefresh, irmNow, lineFor, listedRequest, pushBody, usableIrms } from '../support/workflow.ts';

const DEMO_IEC = '0599001001';
const SERVICES_IEC = '0599001002';
/** How long the sandbox's access tokens live (authority-wire.md: 300 s). */
const TOKEN_LIFETIME_MS = 300_000;
/** In dgft mode the check never logs in anywhere: the login is only kept as given. */
const LOGIN = { authorityUsername: 'demo.exporter', authorityPassword: 'kept-as-given-never-used' };

/** The sandbox's clock: the test moves it on to expire the tokens the service holds. The service keeps the real one. */
const sandboxClock = { offsetMs: 0 };

/** What the sandbox program logs, as parsed lines: it says what it did on purpose. */
const sandboxLog: Record<string, any>[] = [];
const sandboxLogger = pino(
  { level: 'info' },
  new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) sandboxLog.push(JSON.parse(line));
      done();
    },
  }),
);

type CredentialFile = Record<string, string>;

/** The account's API credential file, downloaded as an exporter would (optionally issued for an envelope profile). */
async function downloadSet(h: Harness, username: string, envelopeProfile?: string): Promise<CredentialFile> {
  const answer = await postJson(`${h.sandbox.url}/sandbox/issueApiCredentials`, { username, password: PASSWORD, envelopeProfile });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body;
}

async function newCustomer(h: Harness, label: string): Promise<string> {
  const created = await h.request('POST', '/api/v1/platform-customers/', {
    body: { name: label, email: `${label}-${randomUUID()}@example.com`, companyName: `${label} Exports` },
  });
  assert.equal(created.status, 201, created.text);
  assert.equal(created.body.authorityCredentialsStatus, 'unverified');
  return created.body.id;
}

const customerUrl = (id: string) => `/api/v1/platform-customers/${id}`;
const check = (h: Harness, id: string) => h.request('POST', `${customerUrl(id)}/check-authority-credentials`, { body: LOGIN });
const putSet = (h: Harness, id: string, file: CredentialFile) => h.request('PUT', `${customerUrl(id)}/authority-api-credentials`, { body: file });
const refresh = (h: Harness, id: string, query: Record<string, string | number> = {}) =>
  h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: id, ...query }, body: {} });

/** Stores the set and checks it: the customer is verified. */
async function verifiedWithSet(h: Harness, id: string, file: CredentialFile): Promise<void> {
  const stored = await putSet(h, id, file);
  assert.equal(stored.status, 200, stored.text);
  const checked = await check(h, id);
  assert.equal(checked.status, 200, checked.text);
}

/** Asserts that nothing of a verification was stored: no IEC, no verification, still unverified. */
async function assertUnverified(h: Harness, id: string): Promise<any> {
  const customer = await h.request('GET', customerUrl(id));
  assert.equal(customer.status, 200, customer.text);
  assert.equal(customer.body.iecCode, null);
  assert.equal(customer.body.authorityVerifiedAt, null);
  assert.equal(customer.body.authorityCredentialsStatus, 'unverified');
  return customer.body;
}

/** The requests the sandbox program holds in its own store with this requestId. */
function authorityRequests(h: Harness, requestId: string) {
  return h.sandbox.database.db.selectFrom('authority_sandbox.requests').selectAll().where('request_id', '=', requestId).execute();
}

/** How many requests the sandbox holds that carry a line with this billNo. */
async function authorityRequestsWithBillNo(h: Harness, billNo: string): Promise<number> {
  const rows = await h.sandbox.database.db
    .selectFrom('authority_sandbox.request_lines')
    .select('request_id')
    .distinct()
    .where('bill_no', '=', billNo)
    .execute();
  return rows.length;
}

describeEachBackend(
  'the authority boundary: AUTHORITY_MODE=dgft against the sandbox program, over the wire',
  (h) => {
    test('without a stored set the check is 409 and changes nothing; with the downloaded set it verifies, and refresh and push work', async () => {
      const id = await newCustomer(h, 'dgft');
      const missing = expectProblem(await check(h, id), 409, 'authority_api_credentials_missing');
      assert.ok(missing.detail.includes(`${customerUrl(id)}/authority-api-credentials`), missing.detail);
      assert.equal((await assertUnverified(h, id)).authorityApiCredentials, null);

      const file = await downloadSet(h, 'demo.exporter');
      const stored = await putSet(h, id, file);
      assert.equal(stored.status, 200, stored.text);
      assert.deepEqual(
        { iecCode: stored.body.authorityApiCredentials.iecCode, clientId: stored.body.authorityApiCredentials.clientId },
        { iecCode: DEMO_IEC, clientId: file.client_Id },
      );
      assert.equal(stored.body.authorityCredentialsStatus, 'unverified', 'a stored set is not checked yet');
      for (const secret of [file.client_secret!, file['x-Api-Key']!, file.userprivateKey!]) assert.ok(!stored.text.includes(secret), 'no secret comes back');
      expectProblem(await refresh(h, id), 409, 'customer_not_verified');

      const checked = await check(h, id);
      assert.equal(checked.status, 200, checked.text);
      assert.equal(checked.body.iecCode, DEMO_IEC, "the set's IEC");
      assert.ok(checked.body.authorityVerifiedAt);
      assert.equal(checked.body.authorityCredentialsStatus, 'valid');

      await firstRefresh(h, id);
      const page = await refresh(h, id);
      assert.equal(page.status, 200, page.text);
      assert.ok(page.body.meta.total > 100, 'the IEC’s IRMs, from the sandbox over the wire');
      assert.ok(page.body.data.every((irm: any) => irm.iecCode === DEMO_IEC));

      const [a, b] = await usableIrms(h, id, 2);
      const ack = await h.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(id, [lineFor(a, 1, 10.5), lineFor(b, 2, 2.25)]) });
      assert.equal(ack.status, 200, ack.text);
      assert.equal(ack.body.ackStatus, 'Validated', ack.text);
      const [atAuthority] = await authorityRequests(h, ack.body.requestId);
      assert.equal(atAuthority?.ack_id, ack.body.authorityAckId, "the authority's own ack id");

      const status = await h.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: id, requestId: ack.body.requestId } });
      assert.equal(status.status, 200, status.text);
      assert.equal(status.body.status, 'PROCESSED', status.text);
      for (const line of status.body.ebrcBulkGenStatusList) assert.match(line.ebrcNumber, /^EBRC\d{18}$/);
      assert.equal(cents((await irmNow(h, id, a.irmNumber)).irmUtilizedAmt), 1050n);
    });

    test('a set in an envelope profile the authority does not speak for it: 502 authority_misconfigured naming the profile, nothing verified', async () => {
      // demo.exporter's set speaks spec-sha256 (the sandbox's default); stored as java-pbkdf2.
      const id = await newCustomer(h, 'profile');
      const demo = await downloadSet(h, 'demo.exporter');
      assert.equal(demo.envelopeProfile, 'spec-sha256');
      const stored = await putSet(h, id, { ...demo, envelopeProfile: 'java-pbkdf2' });
      assert.equal(stored.status, 200, stored.text);
      const wrong = expectProblem(await check(h, id), 502, 'authority_misconfigured');
      assert.match(wrong.detail, /java-pbkdf2/);
      assert.match(wrong.detail, /ERR0[56]/, "the authority's code: it cannot decrypt, or the signature does not match");
      await assertUnverified(h, id);

      // The reverse: services.exporter's set issued for java-pbkdf2, stored as spec-sha256.
      const other = await newCustomer(h, 'profile-reverse');
      const services = await downloadSet(h, 'services.exporter', 'java-pbkdf2');
      assert.equal(services.envelopeProfile, 'java-pbkdf2');
      assert.equal((await putSet(h, other, { ...services, envelopeProfile: 'spec-sha256' })).status, 200);
      const reverse = expectProblem(await check(h, other), 502, 'authority_misconfigured');
      assert.match(reverse.detail, /spec-sha256/);
      await assertUnverified(h, other);

      // Stored as issued, the java-pbkdf2 set works end to end.
      await verifiedWithSet(h, other, services);
      const verified = await h.request('GET', customerUrl(other));
      assert.equal(verified.body.iecCode, SERVICES_IEC);
      assert.equal(verified.body.authorityApiCredentials.envelopeProfile, 'java-pbkdf2');
      await firstRefresh(h, other);
      assert.equal((await refresh(h, other)).body.data[0].iecCode, SERVICES_IEC);
    });

    test('an answer lost after the authority accepted a push is settled by its requestId: Validated, and the authority holds it once', async () => {
      const id = await newCustomer(h, 'lost');
      await verifiedWithSet(h, id, await downloadSet(h, 'demo.exporter'));
      const [irm] = await usableIrms(h, id, 1);
      const before = await authorityRequestsWithBillNo(h, 'SANDBOX-LOST');

      // The sandbox stores and accepts the push, then destroys the connection instead of answering.
      const ack = await h.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(id, [lineFor(irm, 1, 3.5, { billNo: 'SANDBOX-LOST' })]) });
      assert.equal(ack.status, 200, ack.text);
      assert.equal(ack.body.ackStatus, 'Validated', ack.text);
      assert.ok(ack.body.authorityAckId);

      // What happened at the authority: accepted, the answer lost, then the retry met ERR09 (already received).
      const received = sandboxLog.filter((line) => line.msg === 'push received' && line.requestId === ack.body.requestId);
      assert.deepEqual(received.map((line) => line.ackStatus), ['Validated', 'Failed'], JSON.stringify(received));
      assert.ok(received[1]!.codes.includes('ERR09'), JSON.stringify(received));
      assert.ok(sandboxLog.some((line) => line.msg === 'destroying the connection instead of answering, on purpose'));
      const held = await authorityRequests(h, ack.body.requestId);
      assert.equal(held.length, 1, 'the authority holds the request once');
      assert.equal(held[0]!.ack_id, ack.body.authorityAckId, 'the ack id is the one the authority gave the lost answer');
      assert.equal(await authorityRequestsWithBillNo(h, 'SANDBOX-LOST'), before + 1, 'never a second push under another requestId');
      const listed = await h.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: id } });
      assert.equal(listed.body.length, 1, 'one request stored');

      const status = await h.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: id, requestId: ack.body.requestId } });
      assert.equal(status.body.status, 'PROCESSED', status.text);
      assert.equal(cents((await irmNow(h, id, irm.irmNumber)).irmUtilizedAmt), 350n, 'mapped once');
    });

    test('the authority down at a push (503): 502 authority_unavailable, the request FAILED and its amount available again', async () => {
      const id = await newCustomer(h, 'outage');
      await verifiedWithSet(h, id, await downloadSet(h, 'demo.exporter'));
      const [irm] = await usableIrms(h, id, 1);

      const mark = sandboxLog.length;
      const answer = await h.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(id, [lineFor(irm, 1, 4.75, { billNo: 'SANDBOX-OUTAGE' })]) });
      const problem = expectProblem(answer, 502, 'authority_unavailable');
      assert.match(problem.detail, /released/);
      // At the authority: the push answered 503 (each retry too), then the status call found nothing.
      const since = sandboxLog.slice(mark);
      const urlOf = new Map(since.filter((line) => line.msg === 'incoming request').map((line) => [line.reqId, line.req.url]));
      const answered = since.filter((line) => line.msg === 'request completed').map((line) => `${urlOf.get(line.reqId)} ${line.res.statusCode}`);
      assert.ok(answered.length >= 2 && answered.slice(0, -1).every((call) => call === '/pushIRMToGenEBRC 503'), answered.join(', '));
      assert.equal(answered.at(-1), '/getRequestStatus 200');

      const listed = await h.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: id } });
      assert.equal(listed.body.length, 1, listed.text);
      const request = listed.body[0];
      assert.equal(request.status, 'FAILED');
      assert.equal(request.authorityAckId, null);
      assert.ok(request.processedAt);
      assert.deepEqual(request.ebrcBulkGenStatusList.map((line: any) => line.status), ['FAILED']);
      assert.deepEqual(await authorityRequests(h, request.requestId), [], 'the authority never stored it');

      const after = await irmNow(h, id, irm.irmNumber);
      assert.equal(cents(after.irmAvailableAmt), cents(irm.irmAvailableAmt), 'the IRM’s available amount is back');
      assert.equal(cents(after.irmUtilizedAmt), 0n);
      assert.equal(after.irmStatus, 'fresh');
    });

    test('an access token the authority no longer takes is renewed on its 401 and the call goes through', async () => {
      const id = await newCustomer(h, 'token');
      const file = await downloadSet(h, 'demo.exporter');
      await verifiedWithSet(h, id, file);
      await firstRefresh(h, id);
      const liveTokens = async () =>
        (
          await h.sandbox.database.db
            .selectFrom('authority_sandbox.access_tokens')
            .select('token_hash')
            .where('client_id', '=', file.client_Id!)
            .where('expires_at', '>', new Date(Date.now() + sandboxClock.offsetMs))
            .execute()
        ).map((row) => row.token_hash);
      const before = await liveTokens();
      assert.ok(before.length >= 1, 'the service holds a token');

      // Past the tokens' lifetime at the authority; the service's own clock says its cached token is still good.
      sandboxClock.offsetMs += TOKEN_LIFETIME_MS + 1_000;
      assert.deepEqual(await liveTokens(), [], 'every token the service held has expired at the authority');
      const mark = sandboxLog.length;
      const later = await refresh(h, id);
      assert.equal(later.status, 200, later.text);
      // At the authority: the IRM pull refused with 401, a new token, the pull again.
      const since = sandboxLog.slice(mark);
      const urlOf = new Map(since.filter((line) => line.msg === 'incoming request').map((line) => [line.reqId, line.req.url]));
      const answered = since.filter((line) => line.msg === 'request completed').map((line) => `${urlOf.get(line.reqId)} ${line.res.statusCode}`);
      assert.deepEqual(answered, ['/fetchIRMDetails 401', '/getAccessToken 200', '/fetchIRMDetails 200']);
      const renewed = await liveTokens();
      assert.ok(renewed.length >= 1 && renewed.every((hash) => !before.includes(hash)), 'a new token was taken');

      const [irm] = await usableIrms(h, id, 1);
      const ack = await h.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(id, [lineFor(irm, 1, 1)]) });
      assert.equal(ack.body?.ackStatus, 'Validated', ack.text);
    });

    test('credentials the authority refuses later: 422, then invalid, and refresh and push are 409 until a check succeeds', async () => {
      const id = await newCustomer(h, 'refused');
      const file = await downloadSet(h, 'demo.exporter');
      await verifiedWithSet(h, id, file);
      await firstRefresh(h, id);
      const [irm] = await usableIrms(h, id, 1);

      // The exporter stores a set whose secret the authority does not know (a regenerated one, mistyped).
      const stored = await putSet(h, id, { ...file, client_secret: `${file.client_secret}-mistyped` });
      assert.equal(stored.status, 200, stored.text);
      expectProblem(await refresh(h, id), 422, 'authority_credentials_invalid');
      const invalid = await h.request('GET', customerUrl(id));
      assert.equal(invalid.body.authorityCredentialsStatus, 'invalid');
      assert.equal(invalid.body.iecCode, DEMO_IEC, 'the IEC stays');

      expectProblem(await refresh(h, id), 409, 'customer_not_verified');
      const push = pushBody(id, [lineFor(irm, 1, 1)]);
      expectProblem(await h.request('POST', '/api/v1/genebrc/push-irm', { body: push }), 409, 'customer_not_verified');
      assert.deepEqual((await h.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: id } })).body, [], 'nothing pushed');

      // A check of the refused set is refused too, and changes nothing.
      expectProblem(await check(h, id), 422, 'authority_credentials_invalid');
      assert.equal((await h.request('GET', customerUrl(id))).body.authorityCredentialsStatus, 'invalid');

      // The right set again, checked: valid, and refresh and push work again.
      await verifiedWithSet(h, id, file);
      assert.equal((await h.request('GET', customerUrl(id))).body.authorityCredentialsStatus, 'valid');
      assert.equal((await refresh(h, id)).status, 200);
      const ack = await h.request('POST', '/api/v1/genebrc/push-irm', { body: push });
      assert.equal(ack.body?.ackStatus, 'Validated', ack.text);
      assert.equal((await listedRequest(h, id, ack.body.requestId)).authorityAckId, ack.body.authorityAckId);
    });
  },
  {
    env: { AUTHORITY_MODE: 'dgft', IRM_REFRESH_INTERVAL_SECONDS: '0', AUTHORITY_TIMEOUT_MS: '4000' },
    sandboxNow: () => new Date(Date.now() + sandboxClock.offsetMs),
    sandboxLogger,
  },
);

describeEachBackend(
  'the authority boundary: a service whose address the authority has not whitelisted',
  (h) => {
    test('403 from the authority is 502 authority_ip_not_whitelisted naming AUTHORITY_EGRESS_IP, and nothing is verified', async () => {
      const id = await newCustomer(h, 'not-whitelisted');
      // The portal's download is not behind the allow-list; the API is.
      const file = await downloadSet(h, 'demo.exporter');
      assert.equal((await putSet(h, id, file)).status, 200);
      const problem = expectProblem(await check(h, id), 502, 'authority_ip_not_whitelisted');
      assert.ok(problem.detail.includes('203.0.113.7'), problem.detail);
      await assertUnverified(h, id);
    });
  },
  {
    env: { AUTHORITY_MODE: 'dgft', AUTHORITY_EGRESS_IP: '203.0.113.7' },
    // The service calls from 127.0.0.1, which is not on the list.
    sandbox: { allowedIps: readAllowList('10.0.0.1') },
  },
);
