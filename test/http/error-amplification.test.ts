import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeEachBackend, expectProblem, injectRaw, type Harness, type TestResponse } from '../support/harness.ts';
import { lineFor, pushBody, verifiedCustomer } from '../support/workflow.ts';

/**
 * A 400 stays small and cheap whatever the body: at most 100 field problems are listed, the detail says how many
 * there were, and rejecting a hostile body leaves the event loop free for other requests.
 */

const LISTED = 100;
/** Far above the ~9 KB of 100 listed problems; the hostile bodies below once answered 35 MB and 283 MB. */
const SMALL_ANSWER = 64 * 1024;
const NOBODY = '00000000-0000-4000-8000-000000000000';

/** A push whose top level also carries as many unknown fields `"u<i>":0` as fit in `bytes` (about 417,000 in 4.9 MB). */
function pushWithUnknownFields(bytes: number): { text: string; unknown: number } {
  const fields: string[] = [];
  let size = 0;
  while (size < bytes) {
    const field = `"u${fields.length}":0`;
    fields.push(field);
    size += field.length + 1;
  }
  const text = JSON.stringify({ platformCustomerId: NOBODY, recordResCount: 1, uploadType: '101', decalarationFlag: 'Y', ebrcBulkGenDtos: [] });
  return { text: `${text.slice(0, -1)},${fields.join(',')}}`, unknown: fields.length };
}

function pushWithLines(lineText: string, count: number): string {
  return `{"platformCustomerId":"${NOBODY}","recordResCount":1,"uploadType":"101","decalarationFlag":"Y","ebrcBulkGenDtos":[${Array(count).fill(lineText).join(',')}]}`;
}

function post(h: Harness, url: string, payload: string): Promise<TestResponse> {
  return injectRaw(h.service, 'POST', url, { key: h.platformA.apiKey, payload });
}

describeEachBackend('error amplification', (h) => {
  test('a 4.9 MB push with 417,000 unknown fields: a small 400 saying how many fields the object had, from the worker that parsed it', async () => {
    const hostile = pushWithUnknownFields(4_900_000);
    const response = await post(h, '/api/v1/genebrc/push-irm', hostile.text);
    const problem = expectProblem(response, 400, 'validation_failed');
    assert.ok(response.text.length < SMALL_ANSWER, `the answer is ${response.text.length} bytes`);
    // Refused where it was parsed (a worker thread, src/http/json-off-thread.ts): never copied to the event loop.
    const fields = hostile.unknown + 5;
    assert.equal(problem.detail, `An object in the body has ${fields} fields; no object this API takes has more than 1000.`);
    assert.deepEqual(problem.errors, [{ path: '', code: 'too_many_fields', message: problem.detail }]);
  });

  test('2,400,000 lines that are not objects: a small 400 that names the line limit', async () => {
    const response = await post(h, '/api/v1/genebrc/push-irm', pushWithLines('0', 2_400_000));
    const problem = expectProblem(response, 400, 'validation_failed');
    assert.ok(response.text.length < SMALL_ANSWER, `the answer is ${response.text.length} bytes`);
    assert.equal(problem.errors.length, LISTED);
    assert.deepEqual(problem.errors.find((error: any) => error.path === '/ebrcBulkGenDtos'), {
      path: '/ebrcBulkGenDtos',
      code: 'invalid_length',
      message: 'ebrcBulkGenDtos must have at most 999 items.',
    });
    assert.match(problem.detail, /Only the first 100 are listed/);
  });

  test('1,600,000 empty lines (once enough to exhaust the memory: 17 missing fields each) are a small 400', async () => {
    const response = await post(h, '/api/v1/genebrc/push-irm', pushWithLines('{}', 1_600_000));
    const problem = expectProblem(response, 400, 'validation_failed');
    assert.ok(response.text.length < SMALL_ANSWER, `the answer is ${response.text.length} bytes`);
    assert.equal(problem.errors.length, LISTED);
    assert.deepEqual(problem.errors.slice(0, 2), [
      { path: '/ebrcBulkGenDtos', code: 'invalid_length', message: 'ebrcBulkGenDtos must have at most 999 items.' },
      { path: '/ebrcBulkGenDtos/0/serialNo', code: 'required', message: 'serialNo is required.' },
    ]);
  });

  test('/health keeps answering while a hostile body is rejected', async () => {
    const hostile = pushWithUnknownFields(4_900_000).text;
    const started = Date.now();
    let rejectedAt: number | undefined;
    const rejection = post(h, '/api/v1/genebrc/push-irm', hostile);
    void rejection.then(() => (rejectedAt = Date.now()));
    const answeredAt: number[] = [];
    while (rejectedAt === undefined) {
      const health = await h.service.app.inject({ method: 'GET', url: '/health' });
      assert.equal(health.statusCode, 200);
      answeredAt.push(Date.now());
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expectProblem(await rejection, 400, 'validation_failed');
    const moments = [started, ...answeredAt.filter((at) => at < rejectedAt!), rejectedAt];
    const gaps = moments.slice(1).map((at, i) => at - moments[i]!);
    // Parsing 4.9 MB of JSON alone holds the event loop for a few hundred milliseconds; validating this body and
    // answering it used to hold it for 4 s more.
    assert.ok(Math.max(...gaps) < 3_000, `/health went unanswered for ${Math.max(...gaps)} ms (gaps ${gaps.join(', ')} ms)`);
  });

  test('an ordinary body with 150 unknown fields: the first 100 listed, with their hints, and the count of all', async () => {
    const fields = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [i === 0 ? 'companyname' : `extra${i}`, 'x']));
    const response = await h.request('POST', '/api/v1/platform-customers/', {
      body: { name: 'Many', email: 'many@example.com', companyName: 'Many Ltd', ...fields },
    });
    const problem = expectProblem(response, 400, 'validation_failed');
    assert.equal(problem.detail, 'The request has 150 invalid fields; see errors. Only the first 100 are listed; 50 more are not.');
    assert.equal(problem.errors.length, LISTED);
    assert.deepEqual(problem.errors[0], { path: '/companyname', code: 'unknown_field', message: 'companyname is not a known field; did you mean companyName?' });
    assert.deepEqual(problem.errors.at(-1).path, '/extra99');
    const listed = await h.request('GET', '/api/v1/platform-customers', { query: { search: 'many@example.com' } });
    assert.equal(listed.body.meta.totalItems, 0, 'nothing was stored');
  });

  test('a 999-line push with two bad formats on each line: the first 100 of its 1998 problems', async () => {
    const customer = await verifiedCustomer(h, `formats-${h.backend}@example.com`);
    const irm = { ifscCode: 'ABCD0123456', remittanceAdCode: '1234567', irmNumber: 'IRM1', irmIssueDate: '2025-01-15', remittanceFCC: 'USD', purposeOfRemittance: 'P0103', irmAvailableAmt: 10 };
    const lines = Array.from({ length: 999 }, (_, i) => lineFor(irm, i + 1, 0.01, { irmIfscCode: 'ABCD01234567', irmAdCode: '12345678' }));
    const response = await h.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(customer, lines) });
    const problem = expectProblem(response, 400, 'validation_failed');
    assert.equal(problem.detail, 'The push has 1998 invalid fields; see errors. Only the first 100 are listed; 1898 more are not.');
    assert.equal(problem.errors.length, LISTED);
    assert.deepEqual(problem.errors.slice(0, 2).map((error: any) => [error.path, error.code]), [
      ['/ebrcBulkGenDtos/0/irmIfscCode', 'ERR14'],
      ['/ebrcBulkGenDtos/0/irmAdCode', 'ERR16'],
    ]);
  });
});
