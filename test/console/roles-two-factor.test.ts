import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { Secret, TOTP } from 'otpauth';
import type { Page } from 'playwright-core';
import { CONSOLE_ROLES, type ConsoleRole } from '../../src/domain/console-roles.ts';
import { addConsoleUser, describeConsole, type ConsoleUserLogin } from '../support/browser.ts';

/** Contract 14 in Chromium: what each role is shown, and two-factor sign-in from enrolment to the code. */

function totpFor(secret: string): TOTP {
  return new TOTP({ algorithm: 'SHA1', digits: 6, period: 30, secret: Secret.fromBase32(secret) });
}

/** No sideways scrolling at this width. */
async function assertNoOverflow(page: Page, what: string): Promise<void> {
  const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
  assert.equal(overflow, 0, `${what} scrolls sideways by ${String(overflow)} px`);
}

/** What each role may change, by the button that does it: shown to the roles that may, absent for the others. */
const BUTTONS: { path: (ids: { customerId: string }) => string; button: string; needs: ConsoleRole }[] = [
  { path: () => '/console/customers', button: 'Create customer', needs: 'operator' },
  { path: (ids) => `/console/customers/${ids.customerId}`, button: 'Check credentials', needs: 'operator' },
  { path: () => '/console/webhooks', button: 'Add endpoint', needs: 'operator' },
  { path: () => '/console/api-keys', button: 'Issue a key', needs: 'owner' },
];

describeConsole('console: roles and two-factor sign-in', (h) => {
  const users = {} as Record<ConsoleRole, ConsoleUserLogin>;
  const ids = { customerId: '' };

  before(async () => {
    for (const role of CONSOLE_ROLES) users[role] = await addConsoleUser(h, h.platformA.id, `${role}-${h.backend}@chromium-roles.example`, role);
    const customer = await h.request('POST', '/api/v1/platform-customers', {
      body: { name: 'Role Exporter', email: `role-${h.backend}@exporter.example`, companyName: 'Role Exports' },
    });
    assert.equal(customer.status, 201, customer.text);
    ids.customerId = customer.body.id;
  });

  for (const role of CONSOLE_ROLES) {
    test(`${role}: the forms and pages it cannot use are not shown; a page it may not open says which role it needs`, async () => {
      const page = await h.newPage();
      await h.signIn(page, users[role]);
      for (const { path, button, needs } of BUTTONS) {
        await page.goto(path(ids));
        await page.getByRole('heading', { level: 1 }).waitFor();
        const count = await page.getByRole('button', { name: button }).count();
        const may = CONSOLE_ROLES.indexOf(role) <= CONSOLE_ROLES.indexOf(needs);
        assert.equal(count > 0, may, `${role} on ${path(ids)}: "${button}" ${may ? 'missing' : 'shown'}`);
      }
      const nav = page.getByRole('navigation', { name: 'Main' });
      await page.goto('/console/account');
      assert.equal(await page.getByRole('main').getByRole('link', { name: 'Users' }).count(), role === 'owner' ? 1 : 0, 'Users, from Your account');
      assert.equal(await nav.getByRole('link', { name: 'Generate' }).count(), role === 'viewer' ? 0 : 1);
      if (role !== 'owner') {
        const answer = await page.goto('/console/users');
        assert.equal(answer?.status(), 403);
        await page.getByRole('heading', { level: 1, name: 'Not allowed for your role' }).waitFor();
        await page.getByText('This needs the owner role').waitFor();
        if (role === 'viewer') await h.screenshot(page, 'forbidden-for-role');
      } else {
        await page.goto('/console/users');
        await page.getByRole('heading', { level: 1, name: 'Users' }).waitFor();
        await h.screenshot(page, 'users');
        const phone = await h.newPage({ width: 390 });
        await h.signIn(phone, users.owner);
        await phone.goto('/console/users');
        await phone.getByRole('heading', { level: 1, name: 'Users' }).waitFor();
        await assertNoOverflow(phone, 'the users page at 390 px');
        await h.screenshot(phone, 'users-390');
      }
    });
  }

  test('two-factor: set up from the account page with the QR code, then signing in asks for the code', async () => {
    const user = await addConsoleUser(h, h.platformA.id, `totp-${h.backend}@chromium-roles.example`, 'operator');
    const page = await h.newPage();
    await h.signIn(page, user);
    await page.getByRole('link', { name: user.email }).click();
    await page.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
    await page.getByText('This session').waitFor();
    await h.screenshot(page, 'account');
    await page.getByRole('link', { name: 'Set up two-factor sign-in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Set up two-factor sign-in' }).waitFor();
    assert.ok(await page.locator('.qr svg').isVisible(), 'the QR code is drawn (the CSP allows the inline SVG)');
    const box = await page.locator('.qr svg').boundingBox();
    assert.ok(box && box.width >= 150, `the QR code is large enough to scan: ${JSON.stringify(box)}`);
    await h.screenshot(page, 'two-factor-enrol');
    const phone = await h.newPage({ width: 390 });
    await h.signIn(phone, user);
    await phone.goto('/console/account/two-factor');
    await phone.locator('.qr svg').waitFor();
    await assertNoOverflow(phone, 'the enrolment at 390 px');
    await h.screenshot(phone, 'two-factor-enrol-390');

    const secret = await page.getByLabel('Or type this secret in the app').inputValue();
    await page.getByLabel('Code', { exact: true }).fill(totpFor(secret).generate());
    await page.getByRole('button', { name: 'Turn on two-factor sign-in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Two-factor sign-in is on' }).waitFor();
    assert.equal(await page.locator('.recovery-codes li').count(), 10);
    await h.screenshot(page, 'two-factor-recovery-codes');

    const again = await h.newPage();
    await again.goto('/console/sign-in');
    await again.getByLabel('E-mail').fill(user.email);
    await again.getByLabel('Password').fill(user.password);
    await again.getByRole('button', { name: 'Sign in' }).click();
    await again.getByRole('heading', { level: 1, name: 'Two-factor sign-in' }).waitFor();
    await h.screenshot(again, 'sign-in-code');
    const small = await h.newPage({ width: 390 });
    await small.context().addCookies(await again.context().cookies());
    await small.goto(again.url());
    await small.getByRole('heading', { level: 1, name: 'Two-factor sign-in' }).waitFor();
    await assertNoOverflow(small, 'the code page at 390 px');
    await h.screenshot(small, 'sign-in-code-390');
    // The next step's code: the enrolment used this one's, and each is good once.
    await again.getByLabel('Code', { exact: true }).fill(totpFor(secret).generate({ timestamp: Date.now() + 30_000 }));
    await again.getByRole('button', { name: 'Sign in' }).click();
    await again.waitForURL((url) => !url.pathname.startsWith('/console/sign-in'));
    await again.getByRole('navigation', { name: 'Main' }).waitFor();
    await again.goto('/console/account');
    assert.equal(await again.locator('table.sessions tbody tr').count(), 3, 'three sign-ins, three sessions');
    const account390 = await h.newPage({ width: 390 });
    await account390.context().addCookies(await again.context().cookies());
    await account390.goto('/console/account');
    await account390.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
    await assertNoOverflow(account390, 'the account page at 390 px');
    await h.screenshot(account390, 'account-390');
    await again.getByRole('button', { name: 'End every other session' }).click();
    await again.getByText('Every other session has ended').waitFor();
    assert.equal(await again.locator('table.sessions tbody tr').count(), 1);
  });
});
