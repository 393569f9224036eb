import assert from 'node:assert/strict';
import { SYSTEM_SOURCE } from '../../src/services/audit.ts';
import { test } from 'node:test';
import { REDACTED_PATHS } from '../../src/http/app.ts';
import { setConsoleUserDisabled } from '../../src/services/console-users.ts';
import { addConsoleUser, describeConsole, PASSWORD } from '../support/browser.ts';
import { memoryLog } from '../support/harness.ts';

/** Every log line of the service, at trace level, redacted as the service redacts. */
const log = memoryLog(REDACTED_PATHS);

describeConsole('console: signing in and out', (h) => {
  test('a visitor is sent to the sign-in page, and back to the page asked for once signed in', async () => {
    const page = await h.newPage();
    await page.goto('/console/webhooks');
    assert.equal(new URL(page.url()).pathname, '/console/sign-in');
    await h.screenshot(page, 'sign-in');
    await page.getByLabel('E-mail').fill(h.userA.email);
    await page.getByLabel('Password').fill(h.userA.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/console/webhooks');
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
    // The platform and the user are named in the top bar.
    await page.getByText('Platform A').waitFor();
  });

  test('a wrong password is refused with a clear message, saying nothing of whether the e-mail exists', async () => {
    const page = await h.newPage();
    await page.goto('/console/sign-in');
    await page.getByLabel('E-mail').fill(h.userA.email);
    await page.getByLabel('Password').fill('not the password at all');
    const answer = page.waitForResponse((response) => response.url().endsWith('/console/sign-in') && response.request().method() === 'POST');
    await page.getByRole('button', { name: 'Sign in' }).click();
    assert.equal((await answer).status(), 401);
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.innerText(), /Wrong e-mail or password/);
    // The e-mail stays filled in; the password does not.
    assert.equal(await page.getByLabel('E-mail').inputValue(), h.userA.email);
    assert.equal(await page.getByLabel('Password').inputValue(), '');
    await h.screenshot(page, 'sign-in-wrong-password');

    // An unknown e-mail reads exactly the same.
    await page.getByLabel('E-mail').fill('nobody@nowhere.example');
    await page.getByLabel('Password').fill('not the password at all');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /Wrong e-mail or password/);
  });

  test('the sign-in form works with the keyboard alone: Tab to each field, Enter to send', async () => {
    const page = await h.newPage();
    await page.goto('/console/sign-in');
    // The e-mail field has the focus first (autofocus); a skip link leads the page for screen readers and keyboards.
    assert.equal(await page.evaluate('document.activeElement && document.activeElement.id'), 'field-email');
    await page.keyboard.type(h.userA.email);
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate('document.activeElement && document.activeElement.id'), 'field-password');
    await page.keyboard.type(h.userA.password);
    await page.keyboard.press('Enter');
    // Earlier tests' wrong passwords for this user are reported on the first page after it (?signInFailures=…).
    await page.waitForURL(/\/console\/overview(\?|$)/);
    // Tab from the top of a page: the skip link first, and it is visible when focused.
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate('document.activeElement && document.activeElement.textContent'), 'Skip to content');
    assert.ok(await page.getByRole('link', { name: 'Skip to content' }).isVisible());
  });

  test('the session cookie is HttpOnly, SameSite=Lax, for /console only, and expires; sign-out ends the session', async () => {
    const page = await h.newPage();
    await h.signIn(page, h.userA);
    const cookies = await page.context().cookies();
    const session = cookies.find((cookie) => cookie.name === 'ebrc_console_session');
    assert.ok(session, `no session cookie in ${cookies.map((cookie) => cookie.name).join(', ')}`);
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, 'Lax');
    assert.equal(session.path, '/console');
    const hours = (session.expires * 1000 - Date.now()) / 3_600_000;
    assert.ok(hours > 11.9 && hours <= 12, `expires in ${hours} h`);
    const stored = await h.database.db.selectFrom('console_sessions').select(['token_hash', 'expires_at']).execute();
    assert.ok(stored.every((row) => Buffer.from(row.token_hash).toString('base64url') !== session.value), 'only the hash is stored');

    // The cookie copied into another browser works until sign-out, and not after.
    const thief = await h.newPage();
    await thief.context().addCookies([{ ...session }]);
    await thief.goto('/console/customers');
    assert.equal(new URL(thief.url()).pathname, '/console/customers');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL('**/console/sign-in?notice=signed-out');
    await page.getByText('You have signed out.').waitFor();
    assert.equal((await page.context().cookies()).some((cookie) => cookie.name === 'ebrc_console_session'), false);
    await thief.goto('/console/customers');
    assert.equal(new URL(thief.url()).pathname, '/console/sign-in');
  });

  test('a disabled user is signed out at once, and cannot sign in again', async () => {
    const user = await addConsoleUser(h, h.platformA.id, `soon-disabled-${h.backend}@platform-a.example`);
    const page = await h.newPage();
    await h.signIn(page, user);
    await setConsoleUserDisabled(h.database.db, user.id, true, SYSTEM_SOURCE);
    await page.goto('/console/customers');
    assert.equal(new URL(page.url()).pathname, '/console/sign-in');
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /disabled/);
  });

  test('a POST without its CSRF token, or with a wrong one, is refused with a 403 page and changes nothing', async () => {
    const page = await h.newPage();
    await h.signIn(page, h.userA);
    const before = await h.database.db.selectFrom('platform_customers').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    const form = { name: 'Forged', email: `forged-${h.backend}@example.com`, companyName: 'Forged Ltd' };
    // The browser sends the session cookie (as a forged form on another site would, for a top-level POST).
    const without = await page.request.post('/console/customers', { form, maxRedirects: 0 });
    assert.equal(without.status(), 403);
    assert.match(await without.text(), /This form has expired/);
    const wrong = await page.request.post('/console/customers', { form: { ...form, _csrf: 'not-a-token' }, maxRedirects: 0 });
    assert.equal(wrong.status(), 403);
    const after = await h.database.db.selectFrom('platform_customers').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    assert.equal(Number(after.n), Number(before.n));
    // Sign-out is a form like any other.
    const signOut = await page.request.post('/console/sign-out', { form: {}, maxRedirects: 0 });
    assert.equal(signOut.status(), 403);
    await page.goto('/console/customers');
    assert.equal(new URL(page.url()).pathname, '/console/customers', 'still signed in');
    await page.setContent(await without.text());
    await h.screenshot(page, 'csrf-refused');
  });

  test('unknown console paths are a 404 page; /console leads to the first page, or to sign-in', async () => {
    const visitor = await h.newPage();
    const answer = await visitor.goto('/console/no-such-page');
    assert.equal(new URL(visitor.url()).pathname, '/console/sign-in', 'a visitor signs in first');
    assert.ok(answer);
    const page = await h.newPage();
    await h.signIn(page, h.userA);
    const missing = await page.goto('/console/no-such-page');
    assert.equal(missing?.status(), 404);
    await page.getByRole('heading', { level: 1, name: 'Not found' }).waitFor();
    await page.goto('/console');
    assert.equal(new URL(page.url()).pathname, '/console/overview', '/console opens the first page of the navigation');
    const css = await page.request.get('/console/assets/console.css');
    assert.equal(css.status(), 200);
    assert.match(css.headers()['content-type'] ?? '', /^text\/css/);
    assert.match(css.headers()['content-security-policy'] ?? '', /script-src 'self'/);
  });

  test('repeated failures are slowed, with the time to wait, for known and unknown e-mails alike', async () => {
    const user = await addConsoleUser(h, h.platformA.id, `slowed-${h.backend}@platform-a.example`);
    for (const email of [user.email, `unknown-${h.backend}@platform-a.example`]) {
      const page = await h.newPage();
      let last = 0;
      for (let attempt = 1; attempt <= 6; attempt++) {
        await page.goto('/console/sign-in');
        await page.getByLabel('E-mail').fill(email);
        await page.getByLabel('Password').fill(`wrong password ${attempt}`);
        const answer = page.waitForResponse((response) => response.request().method() === 'POST');
        await page.getByRole('button', { name: 'Sign in' }).click();
        last = (await answer).status();
        if (attempt <= 5) assert.equal(last, 401, `attempt ${attempt} for ${email}`);
      }
      assert.equal(last, 429);
      assert.match(await page.getByRole('alert').innerText(), /Too many failed sign-ins[\s\S]*Wait \d+ seconds/);
      if (email !== user.email) continue;
      // Even the right password waits now. Tried at once: the wait (30 s from the fifth failure) must not run out first.
      await page.goto('/console/sign-in');
      await page.getByLabel('E-mail').fill(user.email);
      await page.getByLabel('Password').fill(PASSWORD);
      const right = page.waitForResponse((response) => response.request().method() === 'POST');
      await page.getByRole('button', { name: 'Sign in' }).click();
      assert.equal((await right).status(), 429);
      await page.getByRole('alert').waitFor();
      assert.equal(new URL(page.url()).pathname, '/console/sign-in');
      await h.screenshot(page, 'sign-in-slowed');
    }
  });

  test('no log line holds a password, a session token or a CSRF secret', async () => {
    const page = await h.newPage();
    await h.signIn(page, h.userA);
    const secrets = (await page.context().cookies()).map((cookie) => cookie.value).filter((value) => value.length >= 16);
    assert.ok(secrets.length >= 2, 'a session and a CSRF cookie');
    const lines = log.lines.join('\n');
    assert.ok(log.lines.length > 0, 'the service logged');
    assert.ok(!lines.includes(PASSWORD), 'a password is logged');
    for (const secret of secrets) assert.ok(!lines.includes(secret), 'a cookie value is logged');
    assert.match(lines, /console sign-in refused: wrong e-mail or password/);
  });
}, { logger: log.logger });
