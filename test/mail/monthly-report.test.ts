import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { composeMonthlyReports } from '../../src/services/mail/monthly-report.ts';
import { addConsoleUser, type ConsoleUserLogin } from '../support/console.ts';
import { describeEachBackend, type Harness } from '../support/harness.ts';
import { TestSmtp } from '../support/smtp.ts';
import { firstRefresh, lineFor, pushBody, usableIrms, verifiedCustomer } from '../support/workflow.ts';

/**
 * The monthly report e-mail (contract 15, 16) against a real SMTP server: a user who chose it gets, once the month has
 * ended, one message with the platform's eBRC register of that month attached, the same CSV the API gives for the
 * period; a user who did not gets none; a second run sends nothing; the choice is made on the Notifications page.
 */

const smtp = await TestSmtp.start();
after(async () => smtp.close());

const PUBLIC_URL = 'https://gateway.example';

/** The month of `day` (YYYY-MM-DD): its first and last day, the first of the next month, and its name as a subject gives it. */
function monthOf(day: string) {
  const [year, month] = day.split('-').map(Number) as [number, number];
  const iso = (date: Date) => date.toISOString().slice(0, 10);
  return {
    fromDate: iso(new Date(Date.UTC(year, month - 1, 1))),
    toDate: iso(new Date(Date.UTC(year, month, 0))),
    nextMonth: new Date(Date.UTC(year, month, 1, 0, 7)),
    name: new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', month: 'long', year: 'numeric' }).format(new Date(Date.UTC(year, month - 1, 1))),
  };
}

async function signIn(h: Harness, user: ConsoleUserLogin): Promise<{ cookie: string; csrf: string }> {
  const page = await h.service.app.inject({ method: 'GET', url: '/console/sign-in' });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1]!;
  const cookies = page.cookies.map((cookie) => `${cookie.name}=${cookie.value}`).join('; ');
  const signedIn = await h.service.app.inject({ method: 'POST', url: '/console/sign-in', headers: { cookie: cookies }, payload: { _csrf: csrf, email: user.email, password: user.password } });
  assert.equal(signedIn.statusCode, 303);
  return { cookie: `${cookies}; ${signedIn.cookies.map((cookie) => `${cookie.name}=${cookie.value}`).join('; ')}`, csrf };
}

async function monthlyRows(h: Harness, userId: string, monthName: string) {
  const rows = await h.database.db.selectFrom('mail_outbox').select(['id', 'status', 'subject']).where('user_id', '=', userId).where('kind', '=', 'monthly_report').execute();
  return rows.filter((row) => row.subject.includes(monthName));
}

describeEachBackend(
  'the monthly report e-mail',
  (h) => {
    before(() => {
      smtp.behaviour = 'accept';
    });

    test('chosen on the Notifications page; the user gets one message with the month\'s register CSV attached, equal to the API\'s; others none; a second run sends nothing', async () => {
      const customerId = await verifiedCustomer(h, 'monthly@example.com');
      await firstRefresh(h, customerId);
      const [a, b] = await usableIrms(h, customerId, 2);
      const ack = await h.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(customerId, [lineFor(a, 1, 100.25, { billNo: '=1+1' }), lineFor(b, 2, 12.5)]) });
      assert.equal(ack.body?.ackStatus, 'Validated', ack.text);
      const status = await h.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: customerId, requestId: ack.body.requestId } });
      assert.equal(status.body.status, 'PROCESSED', status.text);
      const month = monthOf(status.body.ebrcBulkGenStatusList[0].ebrcDate);

      const chooser = await addConsoleUser(h, h.platformA.id, `monthly-${h.backend}@platform-a.example`, 'viewer');
      const other = await addConsoleUser(h, h.platformA.id, `no-monthly-${h.backend}@platform-a.example`);
      // Off by default, for every role; saved from the page.
      const session = await signIn(h, chooser);
      const page = await h.service.app.inject({ method: 'GET', url: '/console/notifications', headers: { cookie: session.cookie } });
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /<option value="off" selected>Off<\/option>/);
      const form = { _csrf: session.csrf, timeZone: 'UTC', 'genebrc.request.failed': 'off', 'genebrc.request.errored': 'off', 'genebrc.request.partially_processed': 'off', 'platform_customer.credentials_invalid': 'off', 'bulk_upload.completed': 'off', 'reconciliation.completed': 'off' };
      const refused = await h.service.app.inject({ method: 'POST', url: '/console/notifications', headers: { cookie: session.cookie }, payload: { ...form, monthlyReport: 'weekly' } });
      assert.equal(refused.statusCode, 400);
      assert.match(refused.body, /monthly report: on or off/);
      const saved = await h.service.app.inject({ method: 'POST', url: '/console/notifications', headers: { cookie: session.cookie }, payload: { ...form, monthlyReport: 'on' } });
      assert.equal(saved.statusCode, 303, saved.body);
      const shown = await h.service.app.inject({ method: 'GET', url: '/console/notifications', headers: { cookie: session.cookie } });
      assert.match(shown.body, /<option value="on" selected>/);

      // While the month runs, only the month before it is due.
      await h.service.mail.composeMonthlyReports(new Date(`${month.fromDate}T12:00:00Z`));
      assert.deepEqual(await monthlyRows(h, chooser.id, month.name), []);

      const written = await h.service.mail.composeMonthlyReports(month.nextMonth);
      assert.ok(written >= 1);
      const [received] = await smtp.waitFor('the monthly report', () => {
        const found = smtp.to(chooser.email).filter((mail) => mail.mail.subject?.includes(month.name));
        return found.length >= 1 && found;
      });
      assert.equal(received!.mail.subject, `[Platform A] eBRC register for ${month.name}`);
      const attachments = received!.mail.attachments;
      assert.equal(attachments.length, 1);
      assert.equal(attachments[0]!.filename, `all-customers-ebrc-register-${month.fromDate}-${month.toDate}.csv`);
      assert.match(attachments[0]!.contentType, /^text\/csv/);
      const api = await h.service.app.inject({ method: 'GET', url: '/api/v1/reports/ebrc-register', query: { format: 'csv', fromDate: month.fromDate, toDate: month.toDate }, headers: { 'x-api-key': h.platformA.apiKey } });
      assert.equal(api.statusCode, 200, api.body);
      assert.ok(attachments[0]!.content.equals(api.rawPayload), 'the attachment is the API\'s CSV for the month, byte for byte');
      assert.match(api.body, new RegExp(status.body.ebrcBulkGenStatusList[0].ebrcNumber), 'the register holds the month\'s eBRCs');
      assert.match(received!.mail.text!, new RegExp(`${month.fromDate} to ${month.toDate}`));

      // A second run (a restart, another process's tick) writes nothing more.
      assert.equal(await h.service.mail.composeMonthlyReports(month.nextMonth), 0);
      assert.equal(await h.service.mail.composeMonthlyReports(new Date(month.nextMonth.getTime() + 86_400_000)), 0);
      const deadline = Date.now() + 60_000;
      let rows = await monthlyRows(h, chooser.id, month.name);
      while (rows.some((row) => row.status !== 'sent') && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        rows = await monthlyRows(h, chooser.id, month.name);
      }
      assert.deepEqual(rows.map((row) => row.status), ['sent'], 'one message, sent');
      assert.equal(smtp.to(chooser.email).filter((mail) => mail.mail.subject?.includes(month.name)).length, 1, 'received once');
      assert.deepEqual(await monthlyRows(h, other.id, month.name), [], 'a user who did not choose it gets none');
      assert.equal(smtp.to(other.email).filter((mail) => mail.mail.subject?.includes('eBRC register')).length, 0);
    });

    test('a register larger than the cap is not attached: the message links to the Reports page for the month', async () => {
      const user = await addConsoleUser(h, h.platformB.id, `capped-${h.backend}@platform-b.example`);
      await h.database.db.updateTable('console_users').set({ monthly_report: true }).where('id', '=', user.id).execute();
      const now = new Date(Date.UTC(2026, 1, 1, 0, 5));
      assert.ok((await composeMonthlyReports(h.database.db, h.service.mailOutbox, now, { maxBytes: 10 })) >= 1);
      h.service.mailOutbox.committed();
      const [received] = await smtp.waitFor('the capped report', () => smtp.to(user.email).length >= 1 && smtp.to(user.email));
      assert.equal(received!.mail.attachments.length, 0, 'no attachment');
      assert.match(received!.mail.text!, /larger than/);
      assert.ok(received!.mail.text!.includes(`${PUBLIC_URL}/console/reports?fromDate=2026-01-01&toDate=2026-01-31`), received!.mail.text!);
    });
  },
  { env: { SMTP_URL: smtp.url(), PUBLIC_URL } },
);
