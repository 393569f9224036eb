import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { describeEachBackend } from '../support/harness.ts';

const cookiesOf = (header: string | string[] | number | undefined): string[] => (header === undefined ? [] : Array.isArray(header) ? header : [String(header)]);

test('TRUST_PROXY: unset is false; true, a number of hops, or addresses and ranges; anything else is refused', () => {
  const of = (value: string | undefined) => loadConfig({ AUTHORITY_URL: 'http://127.0.0.1:9', ...(value === undefined ? {} : { TRUST_PROXY: value }) }).trustProxy;
  assert.equal(of(undefined), false);
  assert.equal(of('false'), false);
  assert.equal(of('true'), true);
  assert.equal(of('1'), 1);
  assert.deepEqual(of('127.0.0.1, 10.0.0.0/8,::1,loopback'), ['127.0.0.1', '10.0.0.0/8', '::1', 'loopback']);
  for (const wrong of ['yes', '10.0.0.0/33', 'proxy.example', '1.2.3.4/8/1']) assert.throws(() => of(wrong), ConfigError, wrong);
});

describeEachBackend(
  'TRUST_PROXY behind a TLS-terminating proxy',
  (h) => {
    test("the console's cookies are Secure when the trusted proxy says https, and only then", async () => {
      const viaProxy = await h.service.app.inject({ method: 'GET', url: '/console/sign-in', headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.9' } });
      assert.equal(viaProxy.statusCode, 200);
      const secure = cookiesOf(viaProxy.headers['set-cookie']);
      assert.ok(secure.length > 0 && secure.every((cookie) => /;\s*Secure/i.test(cookie)), secure.join('\n'));

      // The same header from an address that is not the proxy is not believed.
      const direct = await h.service.app.inject({ method: 'GET', url: '/console/sign-in', remoteAddress: '198.51.100.7', headers: { 'x-forwarded-proto': 'https' } });
      const plain = cookiesOf(direct.headers['set-cookie']);
      assert.ok(plain.length > 0 && plain.every((cookie) => !/;\s*Secure/i.test(cookie)), plain.join('\n'));
    });
  },
  { env: { TRUST_PROXY: '127.0.0.1' } },
);
