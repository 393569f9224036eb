import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { before, test } from 'node:test';
import { Secret, TOTP } from 'otpauth';
import { CONSOLE_ROUTE_ROLES } from '../../src/http/console/roles.ts';
import { CONSOLE_ROLES, roleAllows, type ConsoleRole } from '../../src/domain/console-roles.ts';
import { addConsoleUser, PASSWORD, type ConsoleUserLogin } from '../support/console.ts';
import { describeEachBackend, expectProblem } from '../support/harness.ts';

/**
 * Contract 14 over plain HTTP: every console route against every role (the role map is the one place each route's
 * role is declared; a role below it gets 403 forbidden_for_role, a page naming the role), the forms each role is shown,
 * two-factor sign-in with real TOTP codes, recovery codes, the platform's requirement, a user's own sessions, and the
 * admin API's roles and resets.
 */

const TOKEN = `test-admin-${randomBytes(24).toString('hex')}`;

type Jar = Map<string, string>;

function keep(jar: Jar, setCookie: string | string[] | number | undefined): void {
  const lines = setCookie === undefined ? [] : Array.isArray(setCookie) ? setCookie : [String(setCookie)];
  for (const line of lines) {
    const [pair] = line.split(';');
    const at = pair!.indexOf('=');
    const value = pair!.slice(at + 1);
    if (value === '') jar.delete(pair!.slice(0, at));
    else jar.set(pair!.slice(0, at), value);
  }
}

function csrfOf(html: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(html);
  assert.ok(match, 'a form with its CSRF token');
  return match[1]!;
}

/** A route pattern of the role map as a regular expression over concrete paths. */
function patternOf(route: string): RegExp {
  const path = route.slice(route.indexOf(' ') + 1);
  return new RegExp(`^${path.replace(/[.]/g, '\\.').replace(/:[A-Za-z]+/g, '[^/]+')}$`);
}

/** The role-map route a form's action goes to (POST), or undefined. */
function routeOfAction(action: string): string | undefined {
  const path = action.split('?')[0]!;
  return Object.keys(CONSOLE_ROUTE_ROLES).find((route) => route.startsWith('POST ') && patternOf(route).test(path));
}

/** The actions of the POST forms of a page. */
function postActions(html: string): string[] {
  return [...html.matchAll(/<form method="post" action="([^"]+)"/g)].map((match) => match[1]!);
}

function totpFor(secret: string): TOTP {
  return new TOTP({ algorithm: 'SHA1', digits: 6, period: 30, secret: Secret.fromBase32(secret) });
}

describeEachBackend(
  'console roles and two-factor sign-in',
  (h) => {
    const users = {} as Record<ConsoleRole, ConsoleUserLogin>;
    const jars = {} as Record<ConsoleRole, Jar>;
    const ids = { customerId: '', endpointId: '', eventId: '', otherUserId: '' };

    const send = async (jar: Jar, method: 'GET' | 'POST', url: string, form?: Record<string, string>) => {
      const response = await h.service.app.inject({
        method,
        url,
        headers: {
          ...(jar.size > 0 ? { cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; ') } : {}),
          ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        },
        ...(form ? { payload: new URLSearchParams(form).toString() } : {}),
      });
      keep(jar, response.headers['set-cookie']);
      return response;
    };
    /** Signs in with the password; the answer's redirect (the code's page when the user has a second factor). */
    const signIn = async (user: ConsoleUserLogin, jar: Jar = new Map()) => {
      const page = await send(jar, 'GET', '/console/sign-in');
      const answer = await send(jar, 'POST', '/console/sign-in', { _csrf: csrfOf(page.body), email: user.email, password: user.password });
      assert.equal(answer.statusCode, 303, answer.body);
      return { jar, location: String(answer.headers.location) };
    };
    const admin = (method: string, url: string, body?: unknown) =>
      h.request(method, `/admin/v1${url}`, { key: null, headers: { authorization: `Bearer ${TOKEN}` }, ...(body === undefined ? {} : { body }) });

    before(async () => {
      for (const role of CONSOLE_ROLES) {
        users[role] = await addConsoleUser(h, h.platformA.id, `${role}-${h.backend}@roles.example`, role);
        jars[role] = (await signIn(users[role])).jar;
      }
      const customer = await h.request('POST', '/api/v1/platform-customers', {
        body: { name: 'Roles Exporter', email: `roles-${h.backend}@exporter.example`, companyName: 'Roles Exports' },
      });
      assert.equal(customer.status, 201, customer.text);
      ids.customerId = customer.body.id;
      const endpoint = await h.request('POST', '/api/v1/webhook-endpoints', { body: { url: 'http://127.0.0.1:9/hook', enabledEvents: ['*'] } });
      assert.equal(endpoint.status, 201, endpoint.text);
      ids.endpointId = endpoint.body.id;
      const events = await h.request('GET', '/api/v1/events');
      ids.eventId = events.body.items?.[0]?.id ?? events.body.data?.[0]?.id ?? randomUUID();
      ids.otherUserId = (await addConsoleUser(h, h.platformA.id, `other-${h.backend}@roles.example`, 'viewer')).id;
    });

    /** A concrete path of a route pattern, with the ids of this suite's platform. */
    const pathOf = (route: string): string => {
      const path = route.slice(route.indexOf(' ') + 1);
      return path
        .replace(/^\/console\/customers\/:id/, `/console/customers/${ids.customerId}`)
        .replace(/^\/console\/webhooks\/:id/, `/console/webhooks/${ids.endpointId}`)
        .replace(/^\/console\/events\/:id/, `/console/events/${ids.eventId}`)
        .replace(/^\/console\/api-keys\/:id/, `/console/api-keys/${h.platformA.keyId}`)
        .replace(/^\/console\/users\/:id/, `/console/users/${ids.otherUserId}`)
        .replace(/^\/console\/account\/sessions\/:id/, `/console/account/sessions/${'0'.repeat(64)}`)
        .replace(/:customerId/, ids.customerId)
        .replace(/:[A-Za-z]+/g, randomUUID());
    };

    test('every console route against every role: a role below the route\'s gets 403 forbidden_for_role naming the role; the others get past it', async () => {
      const checked: string[] = [];
      for (const [route, needed] of Object.entries(CONSOLE_ROUTE_ROLES)) {
        const method = route.startsWith('POST ') ? 'POST' : 'GET';
        const path = pathOf(route);
        for (const role of CONSOLE_ROLES) {
          // A POST is sent without its CSRF token: the role is checked first, so an allowed one stops at the token
          // (a 403 "form has expired" page) and changes nothing; a forbidden one is refused for its role.
          const answer = await send(jars[role], method, path, method === 'POST' ? {} : undefined);
          const refused = answer.statusCode === 403 && answer.body.includes('Not allowed for your role');
          if (roleAllows(role, needed)) {
            assert.ok(!refused, `${role} was refused ${route} (${path}), which needs ${needed}`);
            assert.notEqual(answer.statusCode, 500, `${role} ${route}: ${answer.body.slice(0, 500)}`);
            // (The upload form is multipart: anything else is refused as such before its token is read.)
            if (method === 'POST' && route !== 'POST /console/uploads') assert.match(answer.body, /This form has expired/, `${role} ${route}`);
          } else {
            assert.ok(refused, `${role} got ${answer.statusCode} for ${route} (${path}), which needs ${needed}`);
            assert.match(answer.body, new RegExp(`needs the ${needed} role`), route);
            assert.match(answer.body, new RegExp(`you are an? ${role}`), route);
          }
          checked.push(`${role} ${route}`);
        }
      }
      assert.equal(checked.length, Object.keys(CONSOLE_ROUTE_ROLES).length * 3);
    });

    test('every page shows each role only the forms it may use; the navigation only the pages it may open', async () => {
      for (const role of CONSOLE_ROLES) {
        let forms = 0;
        for (const [route, needed] of Object.entries(CONSOLE_ROUTE_ROLES)) {
          if (!route.startsWith('GET ') || !roleAllows(role, needed)) continue;
          const answer = await send(jars[role], 'GET', pathOf(route));
          if (answer.statusCode !== 200 || !String(answer.headers['content-type']).startsWith('text/html')) continue;
          for (const action of postActions(answer.body)) {
            if (action === '/console/sign-out') continue;
            const target = routeOfAction(action);
            assert.ok(target, `${route} has a form to ${action}, which is no console route`);
            assert.ok(roleAllows(role, CONSOLE_ROUTE_ROLES[target as keyof typeof CONSOLE_ROUTE_ROLES]), `${role} is shown a form to ${target} on ${route}`);
            forms += 1;
          }
          const nav = [...answer.body.matchAll(/<li><a href="(\/console\/[a-z-]+)"/g)].map((match) => match[1]!);
          for (const href of nav) assert.ok(roleAllows(role, CONSOLE_ROUTE_ROLES[`GET ${href}` as keyof typeof CONSOLE_ROUTE_ROLES]), `${role} is offered ${href}`);
          // The Users page is reached from Your account (the top bar has no room for one more entry at 1440 px).
          if (route === 'GET /console/account') assert.equal(answer.body.includes('href="/console/users"'), role === 'owner', `${role}'s account page`);
        }
        assert.ok(forms > 0, `${role} saw forms`);
      }
      // What each role is (and is not) offered on the pages that change things.
      const customer = (role: ConsoleRole) => send(jars[role], 'GET', `/console/customers/${ids.customerId}`).then((answer) => postActions(answer.body));
      assert.ok((await customer('operator')).some((action) => action.endsWith('/check-credentials')));
      assert.ok(!(await customer('viewer')).some((action) => action.endsWith('/check-credentials')));
      const keys = (role: ConsoleRole) => send(jars[role], 'GET', '/console/api-keys').then((answer) => answer.body);
      assert.match(await keys('owner'), /action="\/console\/api-keys"/);
      assert.doesNotMatch(await keys('operator'), /action="\/console\/api-keys"|\/revoke"/);
    });

    test('an owner manages the platform\'s users: creates one with a role, changes roles, disables and enables; never itself', async () => {
      const jar = jars.owner;
      const page = await send(jar, 'GET', '/console/users');
      assert.equal(page.statusCode, 200);
      assert.match(page.body, new RegExp(users.viewer.email));
      const email = `new-${h.backend}@roles.example`;
      const created = await send(jar, 'POST', '/console/users', { _csrf: csrfOf(page.body), email, password: PASSWORD, role: 'viewer' });
      assert.equal(created.statusCode, 303, created.body);
      const listed = await admin('GET', `/platforms/${h.platformA.id}/users`, undefined);
      const made = listed.body.items.find((user: { email: string }) => user.email === email);
      assert.equal(made.role, 'viewer');

      const role = await send(jar, 'POST', `/console/users/${made.id}/role`, { _csrf: csrfOf(page.body), role: 'operator' });
      assert.equal(role.statusCode, 303);
      const disabled = await send(jar, 'POST', `/console/users/${made.id}/disabled`, { _csrf: csrfOf(page.body), disabled: 'true' });
      assert.equal(disabled.statusCode, 303);
      let now = (await admin('GET', `/platforms/${h.platformA.id}/users`)).body.items.find((user: { id: string }) => user.id === made.id);
      assert.equal(now.role, 'operator');
      assert.equal(now.disabled, true);
      await send(jar, 'POST', `/console/users/${made.id}/disabled`, { _csrf: csrfOf(page.body), disabled: 'false' });
      now = (await admin('GET', `/platforms/${h.platformA.id}/users`)).body.items.find((user: { id: string }) => user.id === made.id);
      assert.equal(now.disabled, false);

      // Not itself: no lock-out by mistake.
      const self = await send(jar, 'POST', `/console/users/${users.owner.id}/role`, { _csrf: csrfOf(page.body), role: 'viewer' });
      assert.equal(self.statusCode, 400);
      assert.match(self.body, /cannot change the role of yourself/);
      // Another platform's user is not found.
      const other = await addConsoleUser(h, h.platformB.id, `b-${h.backend}@roles.example`);
      assert.equal((await send(jar, 'POST', `/console/users/${other.id}/disabled`, { _csrf: csrfOf(page.body), disabled: 'true' })).statusCode, 404);
      // A bad e-mail is shown on its field.
      const bad = await send(jar, 'POST', '/console/users', { _csrf: csrfOf(page.body), email: 'not-an-email', password: PASSWORD, role: 'viewer' });
      assert.equal(bad.statusCode, 400);
      assert.match(bad.body, /aria-invalid="true"/);
    });

    test('two-factor: enrolment with a real code gives ten recovery codes; sign-in then asks for a code, and a recovery code works once', async () => {
      const user = await addConsoleUser(h, h.platformA.id, `totp-${h.backend}@roles.example`, 'operator');
      const { jar } = await signIn(user);
      const enrol = await send(jar, 'GET', '/console/account/two-factor');
      assert.equal(enrol.statusCode, 200);
      assert.match(enrol.body, /<svg[^>]*viewBox/, 'the QR code is drawn inline');
      const secret = /id="secret"[^>]*value="([A-Z2-7]+)"/.exec(enrol.body)?.[1];
      assert.ok(secret, 'the secret is shown as text');
      const stored = await h.database.db.selectFrom('console_users').select('totp_secret').where('id', '=', user.id).executeTakeFirstOrThrow();
      assert.ok(stored.totp_secret !== null && !stored.totp_secret.includes(secret), 'the secret is stored sealed');
      // A reload shows the same pending secret.
      assert.match((await send(jar, 'GET', '/console/account/two-factor')).body, new RegExp(secret));

      const wrong = await send(jar, 'POST', '/console/account/two-factor', { _csrf: csrfOf(enrol.body), code: '000000' === totpFor(secret).generate() ? '111111' : '000000' });
      assert.equal(wrong.statusCode, 400);
      const done = await send(jar, 'POST', '/console/account/two-factor', { _csrf: csrfOf(enrol.body), code: totpFor(secret).generate() });
      assert.equal(done.statusCode, 200, done.body.slice(0, 500));
      const codes = [...done.body.matchAll(/<li>([a-z2-9]{5}-[a-z2-9]{5})<\/li>/g)].map((match) => match[1]!);
      assert.equal(codes.length, 10);
      assert.equal(new Set(codes).size, 10);
      const hashes = await h.database.db.selectFrom('console_recovery_codes').select('code_hash').where('user_id', '=', user.id).execute();
      assert.equal(hashes.length, 10);
      assert.ok(hashes.every((row) => !codes.some((code) => Buffer.from(row.code_hash).toString('utf8').includes(code))), 'stored hashed');
      const shown = (await admin('GET', `/platforms/${h.platformA.id}/users`)).body.items.find((one: { id: string }) => one.id === user.id);
      assert.equal(shown.twoFactor.enrolled, true);

      // The password alone now opens nothing but the code's page.
      const second = await signIn(user);
      assert.match(second.location, /^\/console\/sign-in\/code\?next=/);
      const blocked = await send(second.jar, 'GET', '/console/customers');
      assert.equal(blocked.statusCode, 303);
      assert.match(String(blocked.headers.location), /^\/console\/sign-in\/code/);
      const codePage = await send(second.jar, 'GET', second.location);
      assert.equal(codePage.statusCode, 200);
      assert.equal((await send(second.jar, 'POST', '/console/sign-in/code', { _csrf: csrfOf(codePage.body), code: '12345' })).statusCode, 401);
      // The code of the next step (the enrolment used this one's: each step is good once).
      const code = totpFor(secret).generate({ timestamp: Date.now() + 30_000 });
      const passed = await send(second.jar, 'POST', '/console/sign-in/code', { _csrf: csrfOf(codePage.body), code, next: '/console/customers' });
      assert.equal(passed.statusCode, 303);
      assert.equal(passed.headers.location, '/console/customers');
      assert.equal((await send(second.jar, 'GET', '/console/customers')).statusCode, 200);
      // The same code again is refused: a replay.
      const third = await signIn(user);
      const thirdPage = await send(third.jar, 'GET', third.location);
      assert.equal((await send(third.jar, 'POST', '/console/sign-in/code', { _csrf: csrfOf(thirdPage.body), code })).statusCode, 401);

      // A recovery code (typed in capitals, without its dash) works once.
      const recovery = codes[3]!.toUpperCase().replace('-', '');
      const byRecovery = await send(third.jar, 'POST', '/console/sign-in/code', { _csrf: csrfOf(thirdPage.body), code: recovery });
      assert.equal(byRecovery.statusCode, 303);
      assert.match(String(byRecovery.headers.location), /^\/console\/account\?notice=recovery-code-used/);
      const fourth = await signIn(user);
      const fourthPage = await send(fourth.jar, 'GET', fourth.location);
      assert.equal((await send(fourth.jar, 'POST', '/console/sign-in/code', { _csrf: csrfOf(fourthPage.body), code: codes[3]! })).statusCode, 401, 'used once only');

      // Wrong codes are slowed as wrong passwords are: after five, 429 with Retry-After, even for a right code.
      for (let attempt = 0; attempt < 4; attempt++) {
        assert.equal((await send(fourth.jar, 'POST', '/console/sign-in/code', { _csrf: csrfOf(fourthPage.body), code: 'zzzzz-zzzzz' })).statusCode, 401);
      }
      const slowed = await send(fourth.jar, 'POST', '/console/sign-in/code', { _csrf: csrfOf(fourthPage.body), code: codes[5]! });
      assert.equal(slowed.statusCode, 429);
      assert.ok(Number(slowed.headers['retry-after']) > 0);
      assert.equal((await send(fourth.jar, 'GET', '/console/customers')).statusCode, 303, 'still waiting for the code');

      // The admin API resets it: the sessions end, and the password alone signs in again.
      const reset = await admin('PATCH', `/users/${user.id}`, { twoFactor: null });
      assert.equal(reset.status, 200, reset.text);
      assert.deepEqual(reset.body.twoFactor, { enrolled: false, enrolledAt: null });
      assert.equal((await send(second.jar, 'GET', '/console/customers')).statusCode, 303, 'its sessions ended');
      const after = await signIn(user);
      assert.equal(after.location, '/console');
      assert.equal((await h.database.db.selectFrom('console_recovery_codes').select('code_hash').where('user_id', '=', user.id).execute()).length, 0);
    });

    test('a platform that requires two factors sends a user without one to enrol before anything else', async () => {
      const user = await addConsoleUser(h, h.platformB.id, `required-${h.backend}@roles.example`, 'owner');
      const required = await admin('PATCH', `/platforms/${h.platformB.id}`, { requireTwoFactor: true });
      assert.equal(required.status, 200, required.text);
      assert.equal(required.body.requireTwoFactor, true);
      assert.equal((await admin('GET', `/platforms/${h.platformB.id}`)).body.requireTwoFactor, true);
      const { jar } = await signIn(user);
      for (const path of ['/console/overview', '/console/api-keys', '/console/account']) {
        const answer = await send(jar, 'GET', path);
        assert.equal(answer.statusCode, 303, path);
        assert.match(String(answer.headers.location), /^\/console\/account\/two-factor\?next=/);
      }
      const enrol = await send(jar, 'GET', '/console/account/two-factor?next=%2Fconsole%2Fapi-keys');
      assert.equal(enrol.statusCode, 200);
      assert.match(enrol.body, /Your platform requires it/);
      assert.doesNotMatch(enrol.body, /<nav class="nav"/, 'no navigation until it is set up');
      const secret = /id="secret"[^>]*value="([A-Z2-7]+)"/.exec(enrol.body)![1]!;
      const done = await send(jar, 'POST', '/console/account/two-factor', { _csrf: csrfOf(enrol.body), code: totpFor(secret).generate(), next: '/console/api-keys' });
      assert.equal(done.statusCode, 200);
      assert.match(done.body, /href="\/console\/api-keys"/, 'then on to the page asked for');
      assert.equal((await send(jar, 'GET', '/console/api-keys')).statusCode, 200);
      const off = await admin('PATCH', `/platforms/${h.platformB.id}`, { requireTwoFactor: false });
      assert.equal(off.body.requireTwoFactor, false);
      expectProblem(await admin('PATCH', `/platforms/${h.platformB.id}`, { requireTwoFactor: 'yes' }), 400, 'validation_failed');
      expectProblem(await admin('PATCH', `/platforms/${randomUUID()}`, { requireTwoFactor: true }), 404, 'not_found');
    });

    test('a user sees their own sessions, this one marked, and ends one or all the others', async () => {
      const user = await addConsoleUser(h, h.platformA.id, `sessions-${h.backend}@roles.example`, 'viewer');
      const first = await signIn(user);
      const second = await signIn(user);
      const third = await signIn(user);
      const page = await send(third.jar, 'GET', '/console/account');
      assert.equal(page.statusCode, 200);
      const ends = postActions(page.body).filter((action) => action.endsWith('/end'));
      assert.equal(ends.length, 3);
      assert.equal((page.body.match(/This session/g) ?? []).length, 1);
      // Another user's session cannot be ended from here.
      const stranger = await send(jars.viewer, 'POST', ends[2]!, { _csrf: csrfOf((await send(jars.viewer, 'GET', '/console/account')).body) });
      assert.equal(stranger.statusCode, 404);
      // End the oldest (the first sign-in), then every other.
      const ended = await send(third.jar, 'POST', ends[2]!, { _csrf: csrfOf(page.body) });
      assert.equal(ended.statusCode, 303);
      assert.equal((await send(first.jar, 'GET', '/console/overview')).statusCode, 303, 'the first is signed out');
      assert.equal((await send(second.jar, 'GET', '/console/overview')).statusCode, 200);
      const others = await send(third.jar, 'POST', '/console/account/sessions/end-others', { _csrf: csrfOf(page.body) });
      assert.equal(others.statusCode, 303);
      assert.equal((await send(second.jar, 'GET', '/console/overview')).statusCode, 303, 'the second is signed out');
      assert.equal((await send(third.jar, 'GET', '/console/overview')).statusCode, 200, 'this one goes on');
    });

    test('admin API: a platform\'s first user is its owner and the next operators; role changes; bad roles refused', async () => {
      const platform = await admin('POST', '/platforms', { name: `Roles ${h.backend}` });
      const platformId = platform.body.platform.id;
      const first = await admin('POST', `/platforms/${platformId}/users`, { email: `first-${h.backend}@p.example`, password: PASSWORD });
      const next = await admin('POST', `/platforms/${platformId}/users`, { email: `next-${h.backend}@p.example`, password: PASSWORD });
      const viewer = await admin('POST', `/platforms/${platformId}/users`, { email: `viewer-${h.backend}@p.example`, password: PASSWORD, role: 'viewer' });
      assert.deepEqual([first.body.role, next.body.role, viewer.body.role], ['owner', 'operator', 'viewer']);
      const changed = await admin('PATCH', `/users/${next.body.id}`, { role: 'viewer' });
      assert.equal(changed.status, 200);
      assert.equal(changed.body.role, 'viewer');
      assert.equal(changed.body.disabled, false);
      const both = await admin('PATCH', `/users/${next.body.id}`, { role: 'owner', disabled: true });
      assert.deepEqual([both.body.role, both.body.disabled], ['owner', true]);
      expectProblem(await admin('PATCH', `/users/${next.body.id}`, { role: 'admin' }), 400, 'validation_failed');
      expectProblem(await admin('PATCH', `/users/${next.body.id}`, { twoFactor: { enrolled: false } }), 400, 'validation_failed');
      expectProblem(await admin('PATCH', `/users/${next.body.id}`, {}), 400, 'validation_failed');
      expectProblem(await admin('PATCH', `/users/${randomUUID()}`, { twoFactor: null }), 404, 'not_found');
      // The role a user has is the one the console checks from its next page.
      const operatorNow = await addConsoleUser(h, h.platformA.id, `demoted-${h.backend}@roles.example`, 'operator');
      const { jar } = await signIn(operatorNow);
      assert.equal((await send(jar, 'GET', '/console/generate')).statusCode, 200);
      await admin('PATCH', `/users/${operatorNow.id}`, { role: 'viewer' });
      const refused = await send(jar, 'GET', '/console/generate');
      assert.equal(refused.statusCode, 403);
      assert.match(refused.body, /needs the operator role/);
    });
  },
  { env: { ADMIN_TOKEN: TOKEN, WEBHOOK_ALLOW_PRIVATE_URLS: 'true' } },
);
