import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { Readable } from 'node:stream';
import { addConsoleUser, PASSWORD, type ConsoleUserLogin } from '../support/console.ts';
import { describeEachBackend } from '../support/harness.ts';
import { verifiedCustomer } from '../support/workflow.ts';

/**
 * The console over plain HTTP (no browser; test/console/ drives one): what its answers carry, cookie by cookie. These
 * run wherever the API's tests run, Chromium or not.
 */

type Jar = Map<string, string>;

function keep(jar: Jar, setCookie: string | string[] | number | undefined): string[] {
  const lines = setCookie === undefined ? [] : Array.isArray(setCookie) ? setCookie : [String(setCookie)];
  for (const line of lines) {
    const [pair] = line.split(';');
    const at = pair!.indexOf('=');
    const name = pair!.slice(0, at);
    const value = pair!.slice(at + 1);
    if (value === '') jar.delete(name);
    else jar.set(name, value);
  }
  return lines;
}

function cookieHeader(jar: Jar): string {
  return [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
}

function csrfOf(html: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(html);
  assert.ok(match, 'a form with its CSRF token');
  return match[1]!;
}

describeEachBackend('console over HTTP', (h) => {
  let user: ConsoleUserLogin;
  const send = async (jar: Jar, method: 'GET' | 'POST', url: string, form?: Record<string, string>) => {
    const response = await h.service.app.inject({
      method,
      url,
      headers: {
        ...(jar.size > 0 ? { cookie: cookieHeader(jar) } : {}),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(form ? { payload: new URLSearchParams(form).toString() } : {}),
    });
    return { response, cookies: keep(jar, response.headers['set-cookie']) };
  };
  const signedIn = async (): Promise<Jar> => {
    const jar: Jar = new Map();
    const page = await send(jar, 'GET', '/console/sign-in');
    const { response } = await send(jar, 'POST', '/console/sign-in', { _csrf: csrfOf(page.response.body), email: user.email, password: PASSWORD });
    assert.equal(response.statusCode, 303, response.body);
    return jar;
  };

  before(async () => {
    user = await addConsoleUser(h, h.platformA.id, `http-${h.backend}@platform-a.example`);
  });

  test('wrong passwords from another client never keep the user out, and the user is told of them', async () => {
    const target = await addConsoleUser(h, h.platformA.id, `told-${h.backend}@platform-a.example`);
    const attacker: Jar = new Map();
    const page = await h.service.app.inject({ method: 'GET', url: '/console/sign-in', remoteAddress: '203.0.113.66' });
    keep(attacker, page.headers['set-cookie']);
    for (let attempt = 0; attempt < 8; attempt++) {
      const guess = await h.service.app.inject({
        method: 'POST',
        url: '/console/sign-in',
        remoteAddress: '203.0.113.66',
        headers: { cookie: cookieHeader(attacker), 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ _csrf: csrfOf(page.body), email: target.email, password: `guess ${attempt}` }).toString(),
      });
      assert.equal(guess.statusCode, attempt < 5 ? 401 : 429);
    }
    const jar: Jar = new Map();
    const signIn = await send(jar, 'GET', '/console/sign-in');
    const { response } = await send(jar, 'POST', '/console/sign-in', { _csrf: csrfOf(signIn.response.body), email: target.email, password: PASSWORD });
    assert.equal(response.statusCode, 303, response.body);
    const location = String(response.headers.location);
    assert.match(location, /signInFailures=5/);
    let next = await send(jar, 'GET', location);
    if (next.response.statusCode === 303) next = await send(jar, 'GET', String(next.response.headers.location));
    assert.match(next.response.body, /There were 5 wrong passwords for your e-mail address since your last sign-in/);
  });

  test('an upload without a valid session is sent to sign in before its body is read', async () => {
    // A body that never ends: were it read before the session check, no answer would ever come.
    const endless = new Readable({ read() {} });
    endless.push('--x\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n\r\n' + 'a,b\n'.repeat(1000));
    const answer = h.service.app.inject({
      method: 'POST',
      url: '/console/uploads',
      headers: { cookie: 'ebrc_console_session=forged-or-expired', 'content-type': 'multipart/form-data; boundary=x' },
      payload: endless,
    });
    const timeout = new Promise<'no answer'>((resolve) => setTimeout(() => resolve('no answer'), 10_000).unref());
    const response = await Promise.race([answer, timeout]);
    endless.push(null);
    assert.notEqual(response, 'no answer', 'the body was read before the session was checked');
    if (response === 'no answer') return;
    assert.equal(response.statusCode, 303);
    assert.match(String(response.headers.location), /^\/console\/sign-in/);
  });

  test('a visitor is redirected to sign-in (303), with the page to come back to', async () => {
    const { response } = await send(new Map(), 'GET', '/console/customers?search=x');
    assert.equal(response.statusCode, 303);
    assert.equal(response.headers.location, '/console/sign-in?next=%2Fconsole%2Fcustomers%3Fsearch%3Dx');
  });

  test('sign-in: a CSRF cookie and token first, then a session cookie HttpOnly, SameSite=Lax, /console, 12 hours', async () => {
    const jar: Jar = new Map();
    const page = await send(jar, 'GET', '/console/sign-in');
    assert.equal(page.response.statusCode, 200);
    assert.match(String(page.response.headers['content-type']), /^text\/html/);
    assert.match(String(page.response.headers['content-security-policy']), /default-src 'none'; script-src 'self'/);
    assert.equal(page.response.headers['x-frame-options'], 'DENY');
    assert.equal(page.response.headers['cache-control'], 'no-store');
    assert.match(page.cookies.join('\n'), /^ebrc_console_csrf=[^;]+; Path=\/console; HttpOnly; SameSite=Lax$/m);

    const signIn = await send(jar, 'POST', '/console/sign-in', { _csrf: csrfOf(page.response.body), email: user.email, password: PASSWORD, next: '/console/webhooks' });
    assert.equal(signIn.response.statusCode, 303);
    assert.equal(signIn.response.headers.location, '/console/webhooks');
    const session = signIn.cookies.find((line) => line.startsWith('ebrc_console_session='));
    assert.ok(session);
    assert.match(session, /; Max-Age=43200; Path=\/console; HttpOnly; SameSite=Lax$/);
    assert.doesNotMatch(session, /Secure/, 'plain http: not Secure');
    assert.equal((await send(jar, 'GET', '/console/webhooks')).response.statusCode, 200);
  });

  test('sign-in goes back only to a console page: another site or path is the console', async () => {
    for (const next of ['https://evil.example/', '//evil.example/console/', '/api/v1/events', '/console\\@evil.example']) {
      const jar: Jar = new Map();
      const page = await send(jar, 'GET', '/console/sign-in');
      const { response } = await send(jar, 'POST', '/console/sign-in', { _csrf: csrfOf(page.response.body), email: user.email, password: PASSWORD, next });
      assert.equal(response.headers.location, '/console', next);
    }
  });

  test('a POST without the CSRF token is a 403 page, even signed in; with it, it works', async () => {
    const jar = await signedIn();
    const form = { name: 'Over HTTP', email: `http-${h.backend}@customer.example`, companyName: 'HTTP Ltd' };
    const refused = await send(jar, 'POST', '/console/customers', form);
    assert.equal(refused.response.statusCode, 403);
    assert.match(refused.response.body, /This form has expired/);
    const page = await send(jar, 'GET', '/console/customers');
    const created = await send(jar, 'POST', '/console/customers', { ...form, _csrf: csrfOf(page.response.body) });
    assert.equal(created.response.statusCode, 303);
    assert.match(String(created.response.headers.location), /^\/console\/customers\/[0-9a-f-]{36}\?notice=created$/);
  });

  test("a form's problem is the API's status with the field's message; text that cannot be stored is refused too", async () => {
    const jar = await signedIn();
    const page = await send(jar, 'GET', '/console/customers');
    const token = csrfOf(page.response.body);
    const invalid = await send(jar, 'POST', '/console/customers', { _csrf: token, name: 'X', email: 'not an e-mail', companyName: 'Y' });
    assert.equal(invalid.response.statusCode, 400);
    assert.match(invalid.response.body, /E-mail must be an email address/);
    const nul = await send(jar, 'POST', '/console/customers', { _csrf: token, name: 'A\u0000B', email: 'nul@example.com', companyName: 'Y' });
    assert.equal(nul.response.statusCode, 400);
  });

  test("the customer page's reconciliation panel: none yet, then Reconcile now runs one and the page says what it changed", async () => {
    const customerId = await verifiedCustomer(h, `reconcile-console-${h.backend}@example.com`);
    const jar = await signedIn();
    const before = await send(jar, 'GET', `/console/customers/${customerId}`);
    assert.match(before.response.body, /No reconciliation has run for this customer yet/);
    const started = await send(jar, 'POST', `/console/customers/${customerId}/reconcile`, { _csrf: csrfOf(before.response.body) });
    assert.equal(started.response.statusCode, 303);
    assert.equal(started.response.headers.location, `/console/customers/${customerId}?notice=reconcile-started`);
    await h.service.reconciliations.settled();
    const after = await send(jar, 'GET', `/console/customers/${customerId}`);
    assert.match(after.response.body, /<span class="badge good">Completed<\/span> on request/);
    assert.match(after.response.body, /What changed<\/dt><dd>0 IRMs changed \(0 cancelled\)/);
  });

  test('the console is in no part of the OpenAPI document, and the API still takes JSON only', async () => {
    const document = JSON.parse((await h.service.app.inject({ method: 'GET', url: '/openapi.json' })).body);
    assert.deepEqual(Object.keys(document.paths).filter((path) => path.startsWith('/console')), []);
    const form = await h.service.app.inject({
      method: 'POST',
      url: '/api/v1/platform-customers/',
      headers: { 'x-api-key': h.platformA.apiKey, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'name=a&email=a%40b.example&companyName=c',
    });
    assert.equal(form.statusCode, 415);
  });
});
