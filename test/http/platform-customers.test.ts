import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeEachBackend, expectProblem } from '../support/harness.ts';

const acme = { name: 'Acme Exports', email: 'ops@acme.example', type: 'customer', companyName: 'Acme Exports Pvt Ltd', address: '12 MG Road, Pune' };

describeEachBackend('platform customers', (h) => {
  test('create answers 201 with the customer, owned by the key’s platform', async () => {
    const response = await h.request('POST', '/api/v1/platform-customers/', { body: acme });
    assert.equal(response.status, 201);
    const customer = response.body;
    assert.match(customer.id, /^[0-9a-f-]{36}$/);
    assert.equal(customer.name, acme.name);
    assert.equal(customer.email, acme.email);
    assert.equal(customer.type, 'customer');
    assert.equal(customer.companyName, acme.companyName);
    assert.equal(customer.address, acme.address);
    assert.equal(customer.platformId, h.platformA.id);
    assert.equal(customer.isActive, true);
    assert.equal(customer.iecCode, null);
    assert.equal(customer.authorityVerifiedAt, null);
    assert.equal(customer.authorityCredentialsStatus, 'unverified', 'no check yet');
    assert.equal(customer.authorityApiCredentials, null, 'no API credential set yet');
    assert.ok(!Number.isNaN(Date.parse(customer.createdAt)));
    assert.ok(customer.createdAt.endsWith('Z'), 'times are UTC');

    const fetched = await h.request('GET', `/api/v1/platform-customers/${customer.id}`);
    assert.equal(fetched.status, 200);
    assert.deepEqual(fetched.body, customer);
  });

  test('create works without the trailing slash, and type and address are optional', async () => {
    const response = await h.request('POST', '/api/v1/platform-customers', {
      body: { name: 'No Slash', email: 'noslash@example.com', companyName: 'No Slash Ltd' },
    });
    assert.equal(response.status, 201);
    assert.equal(response.body.type, 'customer');
    assert.equal(response.body.address, null);
  });

  test('email is unique per platform ignoring case, but another platform may use it', async () => {
    const first = await h.request('POST', '/api/v1/platform-customers/', { body: { ...acme, email: 'dup@example.com' } });
    assert.equal(first.status, 201);
    const again = await h.request('POST', '/api/v1/platform-customers/', { body: { ...acme, email: 'DUP@Example.com' } });
    const problem = expectProblem(again, 409, 'customer_email_taken');
    assert.equal(problem.errors[0].path, '/email');
    const otherPlatform = await h.request('POST', '/api/v1/platform-customers/', {
      key: h.platformB.apiKey,
      body: { ...acme, email: 'dup@example.com' },
    });
    assert.equal(otherPlatform.status, 201);
  });

  test('bad bodies get 400 with a JSON pointer for every field problem, and nothing is stored', async () => {
    const before = await h.request('GET', '/api/v1/platform-customers', { query: { limit: 100 } });
    const response = await h.request('POST', '/api/v1/platform-customers/', {
      body: { name: '', email: 'not-an-email', type: 'vendor', address: 42 },
    });
    const problem = expectProblem(response, 400, 'validation_failed');
    const byPath = Object.fromEntries(problem.errors.map((e: { path: string; code: string }) => [e.path, e.code]));
    assert.equal(byPath['/name'], 'invalid_length');
    assert.equal(byPath['/email'], 'invalid_format');
    assert.equal(byPath['/type'], 'invalid_value');
    assert.equal(byPath['/companyName'], 'required');
    assert.equal(byPath['/address'], 'invalid_type');
    for (const error of problem.errors) assert.ok(error.message.length > 5);
    const after = await h.request('GET', '/api/v1/platform-customers', { query: { limit: 100 } });
    assert.equal(after.body.meta.totalItems, before.body.meta.totalItems);
  });

  test('an unknown field is refused, with a hint when it is a near miss', async () => {
    const response = await h.request('POST', '/api/v1/platform-customers/', { body: { ...acme, email: 'hint@example.com', companyname: 'x' } });
    const problem = expectProblem(response, 400, 'validation_failed');
    const unknown = problem.errors.find((e: { path: string }) => e.path === '/companyname');
    assert.equal(unknown.code, 'unknown_field');
    assert.match(unknown.message, /did you mean companyName\?/);
  });

  test('lengths are bounded: name 200, email 254, address 500', async () => {
    const long = await h.request('POST', '/api/v1/platform-customers/', {
      body: { name: 'n'.repeat(201), email: `${'e'.repeat(250)}@x.io`, companyName: 'c', address: 'a'.repeat(501) },
    });
    const problem = expectProblem(long, 400, 'validation_failed');
    const paths = problem.errors.map((e: { path: string }) => e.path).sort();
    assert.deepEqual(paths, ['/address', '/email', '/name']);
  });

  test('malformed JSON is 400, a non-JSON body is 415, a body over 5 MiB is 413', async () => {
    const broken = await h.service.app.inject({
      method: 'POST',
      url: '/api/v1/platform-customers/',
      headers: { 'x-api-key': h.platformA.apiKey, 'content-type': 'application/json' },
      payload: '{"name": ',
    });
    assert.equal(broken.statusCode, 400);
    assert.equal(JSON.parse(broken.body).code, 'validation_failed');
    const text = await h.service.app.inject({
      method: 'POST',
      url: '/api/v1/platform-customers/',
      headers: { 'x-api-key': h.platformA.apiKey, 'content-type': 'text/plain' },
      payload: 'name=acme',
    });
    assert.equal(text.statusCode, 415);
    assert.equal(JSON.parse(text.body).code, 'unsupported_media_type');
    const huge = await h.service.app.inject({
      method: 'POST',
      url: '/api/v1/platform-customers/',
      headers: { 'x-api-key': h.platformA.apiKey, 'content-type': 'application/json' },
      payload: JSON.stringify({ ...acme, address: 'x'.repeat(5 * 1024 * 1024 + 1) }),
    });
    assert.equal(huge.statusCode, 413);
    assert.equal(JSON.parse(huge.body).code, 'payload_too_large');
  });

  test('list is newest first with the interface envelope, paged and searchable', async () => {
    const key = h.platformB.apiKey;
    const names = ['Eta\\Theta Mills', 'Zeta 100% Cotton', 'Alpha_Beta Traders', 'Gamma Foods', 'Delta Spices'];
    for (const [i, name] of names.entries()) {
      const created = await h.request('POST', '/api/v1/platform-customers/', {
        key,
        body: { name, email: `list${i}@shop.example`, companyName: `${name} Ltd` },
      });
      assert.equal(created.status, 201);
    }
    const page1 = await h.request('GET', '/api/v1/platform-customers', { key, query: { page: 1, limit: 2 } });
    assert.equal(page1.status, 200);
    assert.equal(page1.body.items.length, 2);
    assert.equal(page1.body.meta.itemsPerPage, 2);
    assert.equal(page1.body.meta.currentPage, 1);
    const total = page1.body.meta.totalItems;
    assert.equal(page1.body.meta.totalPages, Math.ceil(total / 2));
    assert.equal(page1.body.items[0].name, 'Delta Spices', 'newest first');

    const beyond = await h.request('GET', '/api/v1/platform-customers', { key, query: { page: 99, limit: 2 } });
    assert.equal(beyond.status, 200);
    assert.deepEqual(beyond.body.items, []);
    assert.equal(beyond.body.meta.totalItems, total);

    const search = await h.request('GET', '/api/v1/platform-customers', { key, query: { search: 'GAMMA' } });
    assert.deepEqual(search.body.items.map((c: { name: string }) => c.name), ['Gamma Foods']);
    const byEmail = await h.request('GET', '/api/v1/platform-customers', { key, query: { search: 'list4@' } });
    assert.deepEqual(byEmail.body.items.map((c: { name: string }) => c.name), ['Delta Spices']);
    const percent = await h.request('GET', '/api/v1/platform-customers', { key, query: { search: '100%' } });
    assert.deepEqual(percent.body.items.map((c: { name: string }) => c.name), ['Zeta 100% Cotton']);
    const underscore = await h.request('GET', '/api/v1/platform-customers', { key, query: { search: 'a_b' } });
    assert.deepEqual(underscore.body.items.map((c: { name: string }) => c.name), ['Alpha_Beta Traders']);
    const literalPercent = await h.request('GET', '/api/v1/platform-customers', { key, query: { search: '%' } });
    assert.deepEqual(literalPercent.body.items.map((c: { name: string }) => c.name), ['Zeta 100% Cotton']);
    const backslash = await h.request('GET', '/api/v1/platform-customers', { key, query: { search: 'A\\t' } });
    assert.deepEqual(backslash.body.items.map((c: { name: string }) => c.name), ['Eta\\Theta Mills']);
  });

  test('page and limit outside their range, or not whole numbers, are 400, never clamped', async () => {
    for (const query of [{ page: 0 }, { limit: 0 }, { limit: 101 }, { page: 'abc' }, { limit: '1.5' }, { page: -1 }]) {
      const response = await h.request('GET', '/api/v1/platform-customers', { query: query as unknown as Record<string, string> });
      const problem = expectProblem(response, 400, 'validation_failed');
      assert.equal(problem.errors[0].path, `/${Object.keys(query)[0]}`);
    }
    const unknownParameter = await h.request('GET', '/api/v1/platform-customers', { query: { pgae: 2 } });
    expectProblem(unknownParameter, 400, 'validation_failed');
  });

  test('an unknown or malformed id is 404', async () => {
    expectProblem(await h.request('GET', '/api/v1/platform-customers/00000000-0000-4000-8000-000000000000'), 404, 'not_found');
    expectProblem(await h.request('GET', '/api/v1/platform-customers/not-a-uuid'), 404, 'not_found');
  });

  test('security: another platform’s customer is answered exactly like a missing one, and never listed', async () => {
    const created = await h.request('POST', '/api/v1/platform-customers/', { body: { ...acme, email: 'private@acme.example' } });
    const id = created.body.id;
    const foreign = await h.request('GET', `/api/v1/platform-customers/${id}`, { key: h.platformB.apiKey });
    const missing = await h.request('GET', '/api/v1/platform-customers/00000000-0000-4000-8000-000000000000', { key: h.platformB.apiKey });
    expectProblem(foreign, 404, 'not_found');
    assert.equal(foreign.body.title, missing.body.title);
    const list = await h.request('GET', '/api/v1/platform-customers', { key: h.platformB.apiKey, query: { search: 'private@acme', limit: 100 } });
    assert.deepEqual(list.body.items, []);
  });

  test('security: a missing key is 401 api_key_missing, a wrong one 401 api_key_invalid', async () => {
    expectProblem(await h.request('GET', '/api/v1/platform-customers', { key: null }), 401, 'api_key_missing');
    expectProblem(await h.request('GET', '/api/v1/platform-customers', { key: 'ebrc_test_3yQ9wZg8kLmN2pQrStUvWxYzAbCd' }), 401, 'api_key_invalid');
    expectProblem(await h.request('POST', '/api/v1/platform-customers/', { key: 'nonsense', body: acme }), 401, 'api_key_invalid');
  });
});
