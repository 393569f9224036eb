import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { Page } from 'playwright-core';
import { addConsoleUser, describeConsole, PASSWORD } from '../support/browser.ts';
import { TestSmtp } from '../support/smtp.ts';

/**
 * Invitations, password resets, the Notifications and Outbox pages, end to end in Chromium, with the messages taken by
 * a real SMTP server started here and their links followed.
 */

const smtp = await TestSmtp.start();
after(async () => smtp.close());
const PUBLIC_URL = 'https://gateway.example';

/** The link to `path` in the last message to `to`, checked to start with PUBLIC_URL, as a path of the test's service. */
async function linkIn(to: string, path: string): Promise<string> {
  const [message] = await smtp.waitFor(`a message to ${to}`, () => smtp.to(to).length > 0 && smtp.to(to).slice(-1));
  const link = new RegExp(`${PUBLIC_URL}(/console/${path}/[A-Za-z0-9_-]{43})`).exec(message!.mail.text ?? '');
  assert.ok(link, `the message holds a ${path} link with PUBLIC_URL: ${message!.mail.text}`);
  assert.ok(String(message!.mail.html).includes(`${PUBLIC_URL}${link[1]}`), 'the HTML part holds the same link');
  return link[1]!;
}

async function choosePassword(page: Page, label: string, password: string, button: string): Promise<void> {
  await page.getByLabel(label, { exact: true }).fill(password);
  await page.getByLabel('The same password again').fill(password);
  await page.getByRole('button', { name: button }).click();
  await page.waitForURL((url) => url.pathname === '/console/sign-in');
}

describeConsole(
  'console: e-mail',
  (h) => {
    test('an owner invites by e-mail with a role; the link sets the password once, then no longer works', async () => {
      const invitee = `invitee-${h.backend}@platform-a.example`;
      const page = await h.newPage();
      await h.signIn(page, h.userA);
      await page.goto('/console/invitations');
      await page.getByLabel('E-mail').fill(invitee);
      await page.getByLabel('Role').selectOption('viewer');
      await page.getByRole('button', { name: 'Send the invitation' }).click();
      await page.getByText('The invitation is on its way').waitFor();
      await page.locator('table.invitations tbody tr').filter({ hasText: invitee }).filter({ hasText: 'viewer' }).waitFor();
      const link = await linkIn(invitee, 'invite');
      const [message] = smtp.to(invitee);
      assert.match(message!.mail.subject ?? '', /\[Platform A\] You are invited/);

      const guest = await h.newPage();
      await guest.goto(link);
      await guest.getByText('as viewer').waitFor();
      await choosePassword(guest, 'Password', 'a brand new passphrase', 'Create my account');
      await guest.getByText('Your account is ready').waitFor();
      await h.signIn(guest, { id: '', email: invitee, password: 'a brand new passphrase' });
      assert.ok(new URL(guest.url()).pathname.startsWith('/console'));
      const made = await h.database.db.selectFrom('console_users').select(['platform_id']).where('email', '=', invitee).executeTakeFirstOrThrow();
      assert.equal(made.platform_id, h.platformA.id);

      const again = await (await h.newPage()).goto(link);
      assert.equal(again?.status(), 410);

      // The Outbox lists it, without the link (its text is sealed at rest and dropped once sent).
      await page.goto('/console/outbox');
      const row = page.locator('table.outbox tbody tr').filter({ hasText: invitee });
      await row.getByText('Sent').waitFor();
      await row.getByRole('link').click();
      await page.getByText('single-use link').waitFor();
      assert.equal(await page.getByText(link).count(), 0);
      await h.screenshot(page, 'mail-outbox-message');
    });

    test('a password reset: the same answer for any address, a single-use link, every session ended', async () => {
      const user = await addConsoleUser(h, h.platformA.id, `reset-${h.backend}@platform-a.example`);
      const signedIn = await h.newPage();
      await h.signIn(signedIn, user);

      const page = await h.newPage();
      await page.goto('/console/sign-in');
      await page.getByRole('link', { name: 'Forgot your password?' }).click();
      await page.getByLabel('E-mail').fill(`nobody-${h.backend}@nowhere.example`);
      await page.getByRole('button', { name: 'Send the link' }).click();
      const unknownAnswer = await page.locator('.notice').textContent();
      await page.goto('/console/password-reset');
      await page.getByLabel('E-mail').fill(user.email.toUpperCase());
      await page.getByRole('button', { name: 'Send the link' }).click();
      assert.equal(await page.locator('.notice').textContent(), unknownAnswer, 'the same page whatever the address');

      const link = await linkIn(user.email, 'reset');
      assert.match(smtp.to(user.email)[0]!.mail.text ?? '', /works once/);
      await page.goto(link);
      await page.getByLabel('New password', { exact: true }).fill('short');
      await page.getByLabel('The same password again').fill('short');
      await page.getByRole('button', { name: 'Set the new password' }).click();
      await page.getByText('at least 12 characters', { exact: false }).first().waitFor();
      await choosePassword(page, 'New password', 'another good passphrase', 'Set the new password');
      await page.getByText('every session of your account has ended').waitFor();

      // The session opened before the reset has ended.
      await signedIn.goto('/console/customers');
      assert.equal(new URL(signedIn.url()).pathname, '/console/sign-in');
      // The old password no longer works; the new one does.
      await page.getByLabel('E-mail').fill(user.email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('Wrong e-mail or password').waitFor();
      await h.signIn(page, { ...user, password: 'another good passphrase' });
      // Single use.
      const reused = await (await h.newPage()).goto(link);
      assert.equal(reused?.status(), 410);
    });

    test('the Notifications page saves choices and the time zone', async () => {
      const user = await addConsoleUser(h, h.platformA.id, `prefs-${h.backend}@platform-a.example`);
      const page = await h.newPage();
      await h.signIn(page, user);
      await page.goto('/console/notifications');
      assert.equal(await page.getByLabel('A request failed at acknowledgement').inputValue(), 'immediate', 'the role default shows');
      assert.equal(await page.getByLabel('A reconciliation found changes made outside').inputValue(), 'off');
      await page.getByLabel('A request failed at acknowledgement').selectOption('daily');
      await page.getByLabel('A reconciliation found changes made outside').selectOption('immediate');
      await page.getByLabel('Time zone of the messages').selectOption('Asia/Kolkata');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByText('Your notification choices are saved.').waitFor();
      const saved = await h.database.db.selectFrom('mail_preferences').select(['event_type', 'delivery']).where('user_id', '=', user.id).execute();
      assert.equal(saved.find((row) => row.event_type === 'genebrc.request.failed')?.delivery, 'daily');
      assert.equal(saved.find((row) => row.event_type === 'reconciliation.completed')?.delivery, 'immediate');
      const zone = await h.database.db.selectFrom('console_users').select('time_zone').where('id', '=', user.id).executeTakeFirstOrThrow();
      assert.equal(zone.time_zone, 'Asia/Kolkata');
      await h.screenshot(page, 'mail-notifications');
    });
  },
  { env: { SMTP_URL: smtp.url(), PUBLIC_URL } },
);
