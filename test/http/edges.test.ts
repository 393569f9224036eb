import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { describeEachBackend, expectProblem, injectRaw, type Harness, type TestResponse } from '../support/harness.ts';

/** The edges of HTTP: oversized bodies over a real socket, wrong methods, and bodies that are not UTF-8. */

const OVERSIZED = 32 * 1024 * 1024;
const CUSTOMER = { name: 'Edge', companyName: 'Edge Exports' };

/**
 * A plain node:http client in a process of its own (in the service's process the reset hides behind the shared event
 * loop): it POSTs `bytes` of spaces in 64 KiB chunks, `attempts` times, alternately with a Content-Length and chunked,
 * writing all of it whatever the server answers meanwhile, and prints each outcome as a JSON line.
 */
const OVERSIZED_CLIENT = `
const http = require('node:http');
const [port, apiKey, bytes, attempts] = process.argv.slice(1);
const post = (chunked) => new Promise((resolve) => {
  const request = http.request({
    host: '127.0.0.1', port: Number(port), method: 'POST', path: '/api/v1/platform-customers/',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json', ...(chunked ? {} : { 'content-length': bytes }) },
  });
  let answered = false;
  request.on('response', (response) => {
    let body = '';
    response.setEncoding('utf8');
    response.on('data', (chunk) => (body += chunk));
    response.on('end', () => {
      answered = true;
      resolve({ chunked, status: response.statusCode, connection: response.headers.connection, contentType: response.headers['content-type'], body });
    });
    response.on('error', (error) => resolve({ chunked, error: error.code ?? error.message }));
  });
  // Once the answer is read, the server may close while the last bytes are still on their way: no concern.
  request.on('error', (error) => answered || resolve({ chunked, error: error.code ?? error.message }));
  const chunk = Buffer.alloc(64 * 1024, ' ');
  let sent = 0;
  const writeMore = () => {
    while (sent < Number(bytes)) {
      sent += chunk.length;
      if (!request.write(chunk)) return request.once('drain', writeMore);
    }
    request.end();
  };
  writeMore();
});
(async () => {
  for (let attempt = 0; attempt < Number(attempts); attempt++) console.log(JSON.stringify(await post(attempt % 2 === 1)));
})();
`;

type OversizedOutcome = { chunked: boolean; status?: number; connection?: string; contentType?: string; body?: string; error?: string };

async function postOversized(port: number, apiKey: string, attempts: number): Promise<OversizedOutcome[]> {
  const client = spawn(process.execPath, ['-e', OVERSIZED_CLIENT, String(port), apiKey, String(OVERSIZED), String(attempts)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  client.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const [code] = await once(client, 'exit');
  assert.equal(code, 0, output);
  return output.trim().split('\n').map((line) => JSON.parse(line) as OversizedOutcome);
}

function postBytes(h: Harness, payload: Buffer | string, contentType = 'application/json'): Promise<TestResponse> {
  return injectRaw(h.service, 'POST', '/api/v1/platform-customers/', { key: h.platformA.apiKey, payload, contentType });
}

describeEachBackend('HTTP edges', (h) => {
  test('a 32 MiB body over a real socket: the client reads the 413 every time, with or without Content-Length', async () => {
    await h.service.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = h.service.app.server.address() as AddressInfo;
    const outcomes = await postOversized(port, h.platformA.apiKey, 10);
    for (const [attempt, outcome] of outcomes.entries()) {
      const what = `attempt ${attempt + 1} (${outcome.chunked ? 'chunked' : 'Content-Length'}): ${JSON.stringify(outcome)}`;
      assert.equal(outcome.error, undefined, what);
      assert.equal(outcome.status, 413, what);
      assert.match(String(outcome.contentType), /^application\/problem\+json/, what);
      assert.equal(outcome.connection, 'close', what);
      assert.equal(JSON.parse(outcome.body!).code, 'payload_too_large', what);
    }
    const ready = await fetch(`http://127.0.0.1:${port}/ready`);
    assert.equal(ready.status, 200, 'the server still answers');
  });

  test('a known path with a method it does not take: 405 with Allow, before the key is checked', async () => {
    const customer = await h.request('POST', '/api/v1/platform-customers/', { body: { ...CUSTOMER, email: `allow-${h.backend}@example.com` } });
    assert.equal(customer.status, 201, customer.text);
    const cases: [method: string, url: string, allow: string][] = [
      ['GET', '/api/v1/genebrc/push-irm', 'POST'],
      ['DELETE', `/api/v1/platform-customers/${customer.body.id}`, 'GET, HEAD'],
      ['PUT', '/api/v1/platform-customers/00000000-0000-4000-8000-000000000000', 'GET, HEAD'],
      ['GET', `/api/v1/platform-customers/${customer.body.id}/check-authority-credentials`, 'POST'],
      ['PATCH', '/api/v1/platform-customers', 'GET, HEAD, POST'],
      ['DELETE', '/api/v1/platform-customers/?page=2', 'GET, HEAD, POST'],
      ['POST', '/health', 'GET, HEAD'],
    ];
    for (const [method, url, allow] of cases) {
      for (const key of [h.platformA.apiKey, null]) {
        const response = await h.request(method, url, { key });
        const problem = expectProblem(response, 405, 'method_not_allowed');
        assert.equal(response.headers.allow, allow, `${method} ${url}`);
        assert.equal(problem.detail, `${method} is not allowed on ${url.split('?')[0]}; it takes ${allow}.`);
      }
    }
    const head = await h.request('HEAD', '/api/v1/genebrc/status');
    assert.equal(head.status, 405);
    assert.equal(head.headers.allow, 'POST');
    assert.equal(head.text, '', 'a HEAD answer has no body');
    const customerStill = await h.request('GET', `/api/v1/platform-customers/${customer.body.id}`);
    assert.equal(customerStill.status, 200, 'DELETE did nothing');
  });

  test('an unknown path stays 404, whatever the method', async () => {
    for (const [method, url] of [
      ['GET', '/api/v1/platform-customer'],
      ['DELETE', '/api/v1/genebrc/push'],
      ['POST', '/api/v1/platform-customers/x/check'],
      ['GET', '/nothing-here'],
    ] as const) {
      const response = await h.request(method, url);
      expectProblem(response, 404, 'not_found');
      assert.equal(response.headers.allow, undefined);
    }
  });

  test('a body that is not valid UTF-8 is refused, and nothing is stored', async () => {
    const email = `latin1-${h.backend}@example.com`;
    const prefix = Buffer.from(`{"name":"Caf`);
    const suffix = Buffer.from(`","email":"${email}","companyName":"Edge Exports"}`);
    const broken = [
      Buffer.from([0xe9]), // é in Latin-1
      Buffer.from([0xc3]), // a sequence cut short
      Buffer.from([0xed, 0xa0, 0x80]), // a surrogate encoded as if it were a character (CESU-8)
      Buffer.from([0xc0, 0xaf]), // an overlong "/"
    ];
    for (const bytes of broken) {
      const problem = expectProblem(await postBytes(h, Buffer.concat([prefix, bytes, suffix])), 400, 'validation_failed');
      assert.deepEqual(problem.errors, [{ path: '', code: 'invalid_encoding', message: 'The body is not valid UTF-8.' }]);
      assert.equal(problem.detail, 'The body is not valid UTF-8; send JSON text in UTF-8.');
    }
    const listed = await h.request('GET', '/api/v1/platform-customers', { query: { search: email } });
    assert.equal(listed.body.meta.totalItems, 0);

    const accented = `Café ✓ 日本 ${String.fromCodePoint(0x1f600)}`;
    const created = await postBytes(h, Buffer.from(JSON.stringify({ ...CUSTOMER, name: accented, email })));
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.name, accented);
    const stored = await h.request('GET', `/api/v1/platform-customers/${created.body.id}`);
    assert.equal(stored.body.name, accented, 'stored as sent');
  });

  test('the JSON parser still refuses prototype keys, empty and broken bodies, and anything but JSON', async () => {
    for (const poisoned of ['{"__proto__":{"isActive":false},"name":"P"}', '{"constructor":{"prototype":{"x":1}},"name":"P"}']) {
      const problem = expectProblem(await postBytes(h, poisoned), 400, 'validation_failed');
      assert.deepEqual(problem.errors, [{ path: '', code: 'invalid_json', message: 'The body is not valid JSON.' }]);
    }
    const empty = expectProblem(await postBytes(h, ''), 400, 'validation_failed');
    assert.equal(empty.detail, 'The body is empty; send a JSON object.');
    const broken = expectProblem(await postBytes(h, '{"name": '), 400, 'validation_failed');
    assert.equal(broken.detail, 'The body is not valid JSON.');
    expectProblem(await postBytes(h, 'name=Edge', 'text/plain'), 415, 'unsupported_media_type');
    expectProblem(await postBytes(h, Buffer.from([0xe9]), 'application/octet-stream'), 415, 'unsupported_media_type');
    const withBom = await postBytes(h, `\uFEFF${JSON.stringify({ ...CUSTOMER, email: `bom-${h.backend}@example.com` })}`);
    assert.equal(withBom.status, 201, `a byte order mark is allowed, as before: ${withBom.text}`);
  });
});
