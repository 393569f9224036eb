import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { NULL_WIRE_LINE } from '../../src/domain/push-line.ts';
import { describeEachBackend, expectProblem } from '../support/harness.ts';
import { lineFor, usableIrms, verifiedCustomer } from '../support/workflow.ts';

const SAMPLE = JSON.parse(fs.readFileSync(new URL('../../docs/examples/public-sample-push.json', import.meta.url), 'utf8'));

describeEachBackend('eBRC workflow', (h) => {
  test('credentials: valid ones verify the customer and tell its IEC; the password never comes back', async () => {
    const id = await verifiedCustomer(h, 'verify@example.com');
    const customer = await h.request('GET', `/api/v1/platform-customers/${id}`);
    assert.equal(customer.body.iecCode, '0599001001');
    assert.ok(customer.body.authorityVerifiedAt);
    assert.equal(customer.body.authorityCredentialsStatus, 'valid');
    assert.equal(customer.body.authorityApiCredentials.iecCode, '0599001001', 'the set the sandbox issued at the check is kept');
    assert.ok(!customer.text.includes('Sandbox@123'));
    const stored = await h.database.db.selectFrom('platform_customers').select('authority_credentials').where('id', '=', id).executeTakeFirstOrThrow();
    assert.ok(!String(stored.authority_credentials).includes('Sandbox@123'), 'stored encrypted');
  });

  test('credentials: wrong, expired, outage and slow answer 422, 422, 502, 504 and change nothing', async () => {
    const created = await h.request('POST', '/api/v1/platform-customers/', { body: { name: 'C', email: 'creds@example.com', companyName: 'C' } });
    const url = `/api/v1/platform-customers/${created.body.id}/check-authority-credentials`;
    expectProblem(await h.request('POST', url, { body: { authorityUsername: 'demo.exporter', authorityPassword: 'wrong' } }), 422, 'authority_credentials_invalid');
    expectProblem(await h.request('POST', url, { body: { authorityUsername: 'expired.exporter', authorityPassword: 'Sandbox@123' } }), 422, 'authority_credentials_invalid');
    expectProblem(await h.request('POST', url, { body: { authorityUsername: 'demo.exporter', authorityPassword: 'Outage@502' } }), 502, 'authority_unavailable');
    expectProblem(await h.request('POST', url, { body: { authorityUsername: 'demo.exporter', authorityPassword: 'Slow@504' } }), 504, 'authority_timeout');
    const after = await h.request('GET', `/api/v1/platform-customers/${created.body.id}`);
    assert.equal(after.body.authorityVerifiedAt, null);
    assert.equal(after.body.iecCode, null);
    assert.equal(after.body.authorityCredentialsStatus, 'unverified');
    assert.equal(after.body.authorityApiCredentials, null, 'no set is kept from a refused check');
  });

  test('refresh needs a verified customer, pages newest first and filters by number and date', async () => {
    const created = await h.request('POST', '/api/v1/platform-customers/', { body: { name: 'U', email: 'unverified@example.com', companyName: 'U' } });
    expectProblem(await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: created.body.id }, body: {} }), 409, 'customer_not_verified');

    const id = await verifiedCustomer(h, 'refresh@example.com');
    const first = await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: id }, body: {} });
    assert.equal(first.status, 200);
    assert.equal(first.body.data.length, 10);
    assert.equal(first.body.meta.page, 1);
    assert.equal(first.body.meta.limit, 10);
    assert.ok(first.body.meta.total > 100);
    assert.equal(first.body.meta.totalPages, Math.ceil(first.body.meta.total / 10));
    const dates = first.body.data.map((irm: any) => irm.irmIssueDate);
    assert.deepEqual(dates, [...dates].sort().reverse());
    const irm = first.body.data[3];
    assert.equal(irm.iecCode, '0599001001');
    assert.equal(irm.subjectType, 'USER');
    assert.equal(irm.platformCustomerId, id);
    assert.match(irm.irmIssueDate, /^\d{4}-\d{2}-\d{2}$/);

    const byNumber = await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: id, irmNumber: irm.irmNumber }, body: {} });
    assert.deepEqual(byNumber.body.data.map((i: any) => i.irmNumber), [irm.irmNumber]);
    const byDay = await h.request('POST', '/api/v1/irm/refresh', {
      query: { platformCustomerId: id, fromDate: irm.irmIssueDate, toDate: irm.irmIssueDate, limit: 100 },
      body: {},
    });
    assert.ok(byDay.body.data.length >= 1);
    assert.ok(byDay.body.data.every((i: any) => i.irmIssueDate === irm.irmIssueDate));
    expectProblem(
      await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: id, fromDate: '2025-02-02', toDate: '2025-01-01' }, body: {} }),
      400,
      'validation_failed',
    );
    expectProblem(await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: id, fromDate: '2025-02-30' }, body: {} }), 400, 'validation_failed');
  });

  test('the public sample passes the 400 checks and answers a Failed acknowledgement with ERR18', async () => {
    const id = await verifiedCustomer(h, 'sample@example.com');
    const response = await h.request('POST', '/api/v1/genebrc/push-irm', { body: { ...SAMPLE, platformCustomerId: id } });
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.ackStatus, 'Failed');
    assert.equal(response.body.authorityAckId, null);
    assert.ok(response.body.requestId.length <= 50);
    assert.ok(response.body.errorDetails.some((e: any) => e.code === 'ERR18' && e.serialNo === 1));
    const listed = await h.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: id } });
    assert.equal(listed.body[0].status, 'FAILED');
    assert.equal(listed.body[0].requestId, response.body.requestId);
    assert.equal(listed.headers['x-total-count'], '1');
  });

  test('a push is acknowledged, reserves its amounts at once, and is processed into eBRC numbers', async () => {
    const id = await verifiedCustomer(h, 'push@example.com');
    const [a, b] = await usableIrms(h, id, 2);
    const mapA = Math.min(a.irmAvailableAmt, 100.25);
    const body = {
      platformCustomerId: id,
      recordResCount: 2,
      uploadType: 'GOODS',
      decalarationFlag: 'Y',
      ebrcBulkGenDtos: [lineFor(a, 1, mapA), lineFor(b, 2, b.irmAvailableAmt, { billNo: 'SANDBOX-FAIL' })],
    };
    const ack = await h.request('POST', '/api/v1/genebrc/push-irm', { body });
    assert.equal(ack.status, 200, ack.text);
    assert.equal(ack.body.ackStatus, 'Validated', ack.text);
    assert.ok(ack.body.authorityAckId);
    assert.deepEqual(ack.body.errorDetails, []);

    const during = await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: id, irmNumber: a.irmNumber }, body: {} });
    const reservedA = during.body.data[0];
    assert.equal(reservedA.irmUtilizedAmt, mapA);
    assert.equal(reservedA.irmStatus, mapA === a.irmAvailableAmt ? 'utilised' : 'partially_utilised');

    const status = await h.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: id, requestId: ack.body.requestId } });
    assert.equal(status.status, 200, status.text);
    assert.equal(status.body.status, 'PARTIALLY_PROCESSED');
    assert.equal(status.body.recordProCount, 1);
    assert.equal(status.body.recordFailCount, 1);
    assert.ok(status.body.processedAt);
    const [lineA, lineB] = status.body.ebrcBulkGenStatusList;
    assert.equal(lineA.status, 'GENERATED');
    assert.match(lineA.ebrcNumber, /^EBRC\d{18}$/);
    assert.equal(lineB.status, 'FAILED');
    assert.equal(lineB.ebrcNumber, null);

    const afterB = await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: id, irmNumber: b.irmNumber }, body: {} });
    assert.equal(afterB.body.data[0].irmAvailableAmt, b.irmAvailableAmt, 'the failed line’s amount is given back');
    assert.equal(afterB.body.data[0].irmStatus, 'fresh');

    const listed = await h.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: id, status: 'PARTIALLY_PROCESSED' } });
    assert.equal(listed.body.length, 1);
    assert.equal(listed.body[0].uploadType, '101');
    assert.equal(listed.body[0].ebrcBulkGenDtos.length, 2);
    assert.equal(listed.body[0].ebrcBulkGenStatusList.length, 2);
    assert.deepEqual(listed.body[0].errorDetails, { errors: [] });

    // A stored line leaves out its null fields; the list gives every field of the 2.4 shape, those not sent as null.
    const dto = listed.body[0].ebrcBulkGenDtos[0];
    assert.deepEqual(Object.keys(dto).sort(), Object.keys(NULL_WIRE_LINE).sort());
    assert.deepEqual([dto.isVostro, dto.vostroType, dto.commissionValDeduct, dto.gstinInvoiceDate], ['N', null, null, null]);
    assert.equal(dto.mappedIRMAmountFCC, mapA);
    const storedLine = await h.database.db.selectFrom('genebrc_request_lines as line')
      .innerJoin('genebrc_requests as request', 'request.id', 'line.request_id')
      .select('line.payload')
      .where('request.request_id', '=', ack.body.requestId).where('line.serial_no', '=', 1)
      .executeTakeFirstOrThrow();
    assert.equal('vostroType' in storedLine.payload, false);
    assert.equal(storedLine.payload.isVostro, 'N');
  });

  test('a second push on the same IRM with the old available amount is refused with ERR23', async () => {
    const id = await verifiedCustomer(h, 'twice@example.com');
    const [irm] = await usableIrms(h, id, 1);
    const body = { platformCustomerId: id, recordResCount: 1, uploadType: '101', decalarationFlag: 'Y', ebrcBulkGenDtos: [lineFor(irm, 1, 1)] };
    assert.equal((await h.request('POST', '/api/v1/genebrc/push-irm', { body })).body.ackStatus, 'Validated');
    const again = await h.request('POST', '/api/v1/genebrc/push-irm', { body });
    assert.equal(again.body.ackStatus, 'Failed');
    assert.deepEqual(again.body.errorDetails.map((e: any) => e.code), ['ERR23']);
  });

  test('malformed pushes are 400 with field paths and ERR codes, and store nothing', async () => {
    const id = await verifiedCustomer(h, 'malformed@example.com');
    const line = { ...SAMPLE.ebrcBulkGenDtos[0], irmIfscCode: 'ABCD01234567', serialNo: 1000, irmDt: '31022025' };
    const response = await h.request('POST', '/api/v1/genebrc/push-irm', {
      body: { ...SAMPLE, platformCustomerId: id, ebrcBulkGenDtos: [line] },
    });
    const problem = expectProblem(response, 400, 'validation_failed');
    const byPath = Object.fromEntries(problem.errors.map((e: any) => [e.path, e.code]));
    assert.equal(byPath['/ebrcBulkGenDtos/0/irmIfscCode'], 'ERR14');
    assert.equal(byPath['/ebrcBulkGenDtos/0/serialNo'], 'ERR10');
    assert.equal(byPath['/ebrcBulkGenDtos/0/irmDt'], 'ERR17');

    const misspelt = await h.request('POST', '/api/v1/genebrc/push-irm', {
      body: { ...SAMPLE, platformCustomerId: id, declarationFlag: 'Y' },
    });
    const hint = expectProblem(misspelt, 400, 'validation_failed').errors.find((e: any) => e.path === '/declarationFlag');
    assert.match(hint.message, /did you mean decalarationFlag\?/);
    const listed = await h.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: id } });
    assert.deepEqual(listed.body, []);
  });

  test('security: another platform’s customer and requests are 404 on every route', async () => {
    const id = await verifiedCustomer(h, 'owned@example.com');
    const sample = await h.request('POST', '/api/v1/genebrc/push-irm', { body: { ...SAMPLE, platformCustomerId: id } });
    const other = { key: h.platformB.apiKey };
    expectProblem(await h.request('POST', `/api/v1/platform-customers/${id}/check-authority-credentials`, { ...other, body: { authorityUsername: 'demo.exporter', authorityPassword: 'Sandbox@123' } }), 404, 'not_found');
    expectProblem(await h.request('POST', '/api/v1/irm/refresh', { ...other, query: { platformCustomerId: id }, body: {} }), 404, 'not_found');
    expectProblem(await h.request('POST', '/api/v1/genebrc/push-irm', { ...other, body: { ...SAMPLE, platformCustomerId: id } }), 404, 'not_found');
    expectProblem(await h.request('POST', '/api/v1/genebrc/status', { ...other, body: { platformCustomerId: id, requestId: sample.body.requestId } }), 404, 'not_found');
    expectProblem(await h.request('GET', '/api/v1/genebrc', { ...other, query: { platformCustomerId: id } }), 404, 'not_found');
  });

  test('Idempotency-Key replays the first answer, refuses another body, and is per platform', async () => {
    const headers = { 'idempotency-key': 'create-once-1' };
    const body = { name: 'Idem', email: 'idem@example.com', companyName: 'Idem' };
    const first = await h.request('POST', '/api/v1/platform-customers/', { body, headers });
    const replay = await h.request('POST', '/api/v1/platform-customers/', { body, headers });
    assert.equal(first.status, 201);
    assert.equal(replay.status, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replay.body, first.body);
    expectProblem(await h.request('POST', '/api/v1/platform-customers/', { body: { ...body, name: 'Other' }, headers }), 422, 'idempotency_key_reused');
    const otherPlatform = await h.request('POST', '/api/v1/platform-customers/', { key: h.platformB.apiKey, body, headers });
    assert.equal(otherPlatform.status, 201);
    assert.notEqual(otherPlatform.headers['idempotent-replayed'], 'true');
  });
});
