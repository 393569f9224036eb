import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { simpleParser } from 'mailparser';
import { requestPasswordReset } from '../../src/services/mail/accounts.ts';
import { addConsoleUser } from '../support/console.ts';
import { describeEachBackend, type Harness } from '../support/harness.ts';

/**
 * Without SMTP_URL (the embedded default), every message is written as an .eml file in <DATA_DIR>/mail/, owner-only,
 * and listed on the console's Outbox page, so a newcomer reads what would have been sent.
 */
/** The outbox row of the message to `address`, once it is sent (or as it is after 60 s). */
async function outboxRowOnceSent(h: Harness, address: string): Promise<{ id: string; status: string } | undefined> {
  const deadline = Date.now() + 60_000;
  let row: { id: string; status: string } | undefined;
  while (Date.now() < deadline) {
    row = await h.database.db.selectFrom('mail_outbox').select(['id', 'status']).where('to_address', '=', address).executeTakeFirst();
    if (row?.status === 'sent') break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return row;
}

describeEachBackend('e-mail without SMTP_URL', (h) => {
  test('a message is written to DATA_DIR/mail/<outbox id>.eml with mode 0600, whole and parseable, and is listed in the Outbox', async () => {
    const user = await addConsoleUser(h, h.platformA.id, `eml-${h.backend}@platform-a.example`);
    await requestPasswordReset(h.database.db, h.service.mailOutbox, user.email);
    const folder = path.join(h.config.dataDir, 'mail');
    const row = await outboxRowOnceSent(h, user.email);
    assert.equal(row?.status, 'sent', 'the message is recorded as written');
    const file = path.join(folder, `${row!.id}.eml`);
    assert.equal(fs.statSync(file).mode & 0o777, 0o600, 'owner-only');
    assert.deepEqual(fs.readdirSync(folder).filter((name) => name.endsWith('.tmp')), [], 'no partial file left');
    const parsed = await simpleParser(fs.readFileSync(file));
    assert.equal(parsed.messageId, `<${row!.id}@localhost>`);
    assert.equal((parsed.to as { text: string }).text, user.email);
    assert.match(parsed.subject ?? '', /\[Platform A\] Reset your console password/);
    assert.match(parsed.text ?? '', /http:\/\/localhost:\d+\/console\/reset\/[A-Za-z0-9_-]{43}/, 'the link, with PUBLIC_URL\'s default');
    assert.ok(parsed.html, 'an HTML part too');

    // The Outbox page lists it, with the folder named.
    const signIn = await h.service.app.inject({ method: 'GET', url: '/console/sign-in' });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(signIn.body)![1]!;
    const cookies = signIn.cookies.map((cookie) => `${cookie.name}=${cookie.value}`).join('; ');
    const signedIn = await h.service.app.inject({ method: 'POST', url: '/console/sign-in', headers: { cookie: cookies }, payload: { _csrf: csrf, email: user.email, password: user.password } });
    assert.equal(signedIn.statusCode, 303);
    const session = signedIn.cookies.map((cookie) => `${cookie.name}=${cookie.value}`).join('; ');
    const outbox = await h.service.app.inject({ method: 'GET', url: '/console/outbox', headers: { cookie: `${cookies}; ${session}` } });
    assert.equal(outbox.statusCode, 200);
    assert.ok(outbox.body.includes(folder), 'the page says where the files are');
    assert.match(outbox.body, /Reset your console password/);
    assert.match(outbox.body, /Written/);
  });

  test('the monthly report: the .eml file holds the register CSV attached, the same as the API gives for the month', async () => {
    const user = await addConsoleUser(h, h.platformA.id, `monthly-eml-${h.backend}@platform-a.example`);
    await h.database.db.updateTable('console_users').set({ monthly_report: true }).where('id', '=', user.id).execute();
    assert.equal(await h.service.mail.composeMonthlyReports(new Date(Date.UTC(2026, 3, 1, 0, 10))), 1);
    const row = await outboxRowOnceSent(h, user.email);
    assert.equal(row?.status, 'sent');
    const parsed = await simpleParser(fs.readFileSync(path.join(h.config.dataDir, 'mail', `${row!.id}.eml`)));
    assert.equal(parsed.subject, '[Platform A] eBRC register for March 2026');
    assert.equal(parsed.attachments.length, 1);
    assert.equal(parsed.attachments[0]!.filename, 'all-customers-ebrc-register-2026-03-01-2026-03-31.csv');
    const api = await h.service.app.inject({ method: 'GET', url: '/api/v1/reports/ebrc-register', query: { format: 'csv', fromDate: '2026-03-01', toDate: '2026-03-31' }, headers: { 'x-api-key': h.platformA.apiKey } });
    assert.equal(api.statusCode, 200);
    assert.ok(parsed.attachments[0]!.content.equals(api.rawPayload), 'the API\'s CSV for the month');
  });
});
