import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { checkWebhookUrl, guardedLookup } from '../../src/services/webhook-url.ts';
import type { Resolver } from '../../src/services/webhook-url.ts';

// Stub resolvers: the tests need no DNS.
const resolvesTo =
  (...addresses: string[]): Resolver =>
  async () =>
    addresses;
const unresolvable: Resolver = async (host) => {
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
};
const mustNotResolve: Resolver = async (host) => assert.fail(`resolved ${host}`);

async function refused(url: string, resolve: Resolver = mustNotResolve): Promise<string> {
  const check = await checkWebhookUrl(url, { allowPrivate: false, resolve });
  assert.equal(check.ok, false, `${url} should be refused`);
  return check.ok ? '' : check.reason;
}

async function allowed(url: string, options: { allowPrivate: boolean; resolve?: Resolver | null }): Promise<URL> {
  const check = await checkWebhookUrl(url, options);
  assert.ok(check.ok, `${url} should be allowed: ${check.ok ? '' : check.reason}`);
  return check.url;
}

const INTERNAL_LITERALS = [
  'http://127.0.0.1/hook',
  'https://127.0.0.1:8443/hook',
  'http://10.0.0.1/',
  'https://169.254.169.254/latest/meta-data/',
  'http://[::1]/',
  'https://[::1]:9000/hook',
  'http://[::ffff:127.0.0.1]/',
  'http://[fe80::1]/',
  'http://[fd00::5]/',
  'http://0.0.0.0/',
  'http://2130706433/', // 127.0.0.1 in decimal
  'http://0x7f.0.0.1/', // in hex
  'http://0177.0.0.1/', // in octal
  'http://127.1/',
  'https://192.168.1.10/',
];

describe('checkWebhookUrl', () => {
  for (const url of INTERNAL_LITERALS) {
    test(`refuses the internal address in ${url}`, async () => {
      assert.match(await refused(url), /internal address/);
    });
  }

  for (const url of ['http://localhost/', 'https://localhost:3000/hook', 'https://foo.localhost/', 'https://LOCALHOST./', 'https://printer.local/', 'https://metadata.google.internal/', 'https://intranet/hook']) {
    test(`refuses the internal name in ${url}`, async () => {
      assert.match(await refused(url), /local or internal name/);
    });
  }

  test('refuses a public-looking name that resolves to an internal address', async () => {
    const reason = await refused('https://hooks.example.com/x', resolvesTo('203.0.113.5'));
    assert.match(reason, /hooks\.example\.com resolves to 203\.0\.113\.5/);
    // One internal address among public ones is enough.
    assert.match(await refused('https://hooks.example.com/x', resolvesTo('93.184.216.34', '10.1.2.3')), /10\.1\.2\.3/);
    assert.match(await refused('https://hooks.example.com/x', resolvesTo('2606:4700::1', '::1')), /::1/);
  });

  test('allows a public name over https and over http', async () => {
    const url = await allowed('https://hooks.example.com/webhooks?x=1', { allowPrivate: false, resolve: resolvesTo('93.184.216.34') });
    assert.equal(url.href, 'https://hooks.example.com/webhooks?x=1');
    await allowed('http://hooks.example.com/webhooks', { allowPrivate: false, resolve: resolvesTo('93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946') });
  });

  test('allows a public literal address without resolving anything', async () => {
    await allowed('http://8.8.8.8/hook', { allowPrivate: false, resolve: mustNotResolve });
    await allowed('https://[2606:4700:4700::1111]/hook', { allowPrivate: false, resolve: mustNotResolve });
  });

  test('accepts a name that does not resolve (delivery checks it again)', async () => {
    await allowed('https://not-yet-live.example.com/hook', { allowPrivate: false, resolve: unresolvable });
    await allowed('https://not-yet-live.example.com/hook', { allowPrivate: false, resolve: resolvesTo() });
  });

  test('with resolve null, checks only what the URL shows', async () => {
    await allowed('https://hooks.example.com/', { allowPrivate: false, resolve: null });
    assert.equal((await checkWebhookUrl('http://127.0.0.1/', { allowPrivate: false, resolve: null })).ok, false);
    assert.equal((await checkWebhookUrl('http://localhost/', { allowPrivate: false, resolve: null })).ok, false);
  });

  test('refuses schemes other than http and https, even with allowPrivate', async () => {
    for (const url of ['ftp://example.com/hook', 'file:///etc/passwd', 'gopher://example.com/', 'javascript:alert(1)', 'ws://example.com/']) {
      for (const allowPrivate of [false, true]) {
        const check = await checkWebhookUrl(url, { allowPrivate, resolve: mustNotResolve });
        assert.equal(check.ok, false, url);
        assert.match(check.ok ? '' : check.reason, /must use https:\/\//);
      }
    }
  });

  test('refuses credentials in the URL, even with allowPrivate', async () => {
    for (const url of ['https://user:pass@hooks.example.com/', 'https://user@hooks.example.com/', 'https://:pass@hooks.example.com/']) {
      for (const allowPrivate of [false, true]) {
        const check = await checkWebhookUrl(url, { allowPrivate, resolve: mustNotResolve });
        assert.equal(check.ok, false, url);
        assert.match(check.ok ? '' : check.reason, /username or password/);
      }
    }
  });

  test('refuses what is not a URL, and URLs over 2048 characters', async () => {
    for (const url of ['', 'not a url', '/relative/path', 'hooks.example.com/x', 'https://']) {
      assert.match(await refused(url), /not a valid absolute URL/, url);
    }
    const long = `https://hooks.example.com/${'a'.repeat(2048)}`;
    assert.match(await refused(long), /longer than 2048/);
    await allowed(`https://hooks.example.com/${'a'.repeat(2048 - 'https://hooks.example.com/'.length)}`, { allowPrivate: false, resolve: resolvesTo('93.184.216.34') });
  });

  test('allowPrivate lets every internal host through, over http too', async () => {
    for (const url of [...INTERNAL_LITERALS, 'http://localhost:3000/hook', 'http://foo.localhost/', 'http://intranet/']) {
      await allowed(url, { allowPrivate: true, resolve: mustNotResolve });
    }
    await allowed('http://hooks.example.com/', { allowPrivate: true, resolve: resolvesTo('10.0.0.1') });
  });
});

describe('guardedLookup', () => {
  type Answer = { error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number | undefined };
  const lookup = (allowPrivate: boolean, host: string, all: boolean): Promise<Answer> =>
    new Promise((resolve) => {
      guardedLookup(allowPrivate)(host, { all }, (error, address, family) => resolve({ error, address, family }));
    });

  // "localhost" resolves from the hosts file, without a DNS server, to a loopback address.
  test('refuses a host that resolves to an internal address, for both kinds of caller', async () => {
    for (const all of [false, true]) {
      const answer = await lookup(false, 'localhost', all);
      assert.equal(answer.error?.code, 'EWEBHOOKADDRESS');
      assert.match(answer.error?.message ?? '', /localhost resolves to .*internal address/);
    }
  });

  test('with allowPrivate, answers as dns.lookup does', async () => {
    const one = await lookup(true, 'localhost', false);
    assert.equal(one.error, null);
    assert.equal(typeof one.address, 'string');
    assert.ok(one.family === 4 || one.family === 6);

    const every = await lookup(true, 'localhost', true);
    assert.equal(every.error, null);
    assert.ok(Array.isArray(every.address) && every.address.length > 0);
    for (const entry of every.address) assert.ok(entry.family === 4 || entry.family === 6);
  });
});
