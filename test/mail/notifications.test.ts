import { SYSTEM_SOURCE } from '../../src/services/audit.ts';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { createPlatform } from '../../src/services/platforms.ts';
import { EventOutbox, type NewEvent } from '../../src/services/outbox.ts';
import { savePreferences } from '../../src/store/mail.ts';
import { addConsoleUser } from '../support/console.ts';
import { describeEachBackend, type Harness } from '../support/harness.ts';
import { TestSmtp } from '../support/smtp.ts';

/**
 * E-mail notifications (contract 15) against a real SMTP server started here: each notification type, the role
 * defaults, preferences (immediate, daily, off), the daily digest's grouping, and a server that refuses or drops the
 * connection (retried, then failed with the reason). Events are recorded through the outbox with the service's own
 * notifier, in one transaction, as every writer records them.
 */

const smtp = await TestSmtp.start();
after(async () => smtp.close());

const PUBLIC_URL = 'https://gateway.example';

async function newPlatform(h: Harness, name: string): Promise<string> {
  return (await createPlatform(h.database.db, name, SYSTEM_SOURCE)).platform.id;
}

async function record(h: Harness, events: NewEvent[]) {
  const outbox = new EventOutbox(h.service.mailOutbox);
  const recorded = await h.database.db.transaction().execute((tx) => outbox.record(tx, events));
  outbox.committed();
  return recorded;
}

async function outboxRows(h: Harness, platformId: string) {
  return h.database.db.selectFrom('mail_outbox').selectAll().where('platform_id', '=', platformId).orderBy('created_at').execute();
}

const REQUEST_DATA = { requestId: 'EBRCGW2026REQUEST000000000000001', status: 'FAILED', recordProCount: 0, recordFailCount: 2 };

describeEachBackend(
  'e-mail notifications',
  (h) => {
    before(() => {
      smtp.behaviour = 'accept';
    });

    test('each notification type reaches an owner at once (the role default), in plain text and HTML, in their time zone, with a Message-ID from its outbox row', async () => {
      const platformId = await newPlatform(h, `Mehta Payments ${h.backend}`);
      const user = await addConsoleUser(h, platformId, `owner-${h.backend}@notify.example`);
      await h.database.db.updateTable('console_users').set({ time_zone: 'Asia/Kolkata' }).where('id', '=', user.id).execute();
      const customerId = null;
      const events = await record(h, [
        { platformId, platformCustomerId: customerId, type: 'genebrc.request.failed', data: REQUEST_DATA },
        { platformId, platformCustomerId: customerId, type: 'genebrc.request.errored', data: { ...REQUEST_DATA, status: 'ERRORED' } },
        { platformId, platformCustomerId: customerId, type: 'genebrc.request.partially_processed', data: { ...REQUEST_DATA, status: 'PARTIALLY_PROCESSED', recordProCount: 1, recordFailCount: 1 } },
        { platformId, platformCustomerId: customerId, type: 'platform_customer.credentials_invalid', data: { companyName: 'Mehta Exports', iecCode: '0599001001' } },
        { platformId, platformCustomerId: customerId, type: 'bulk_upload.completed', data: { fileName: 'march.xlsx', rowCount: 5, rowsFailed: 2 } },
        // Not mailed: an upload without failed rows, a reconciliation (off by default), events of other types.
        { platformId, platformCustomerId: customerId, type: 'bulk_upload.completed', data: { fileName: 'clean.xlsx', rowCount: 5, rowsFailed: 0 } },
        { platformId, platformCustomerId: customerId, type: 'reconciliation.completed', data: { irmsUpdated: 1, irmsCancelled: 0, ebrcsDiscovered: 0, ebrcsCancelled: 0 } },
        { platformId, platformCustomerId: customerId, type: 'genebrc.request.processed', data: REQUEST_DATA },
      ]);
      const mails = await smtp.waitFor('five notifications', () => smtp.to(user.email).length >= 5 && smtp.to(user.email));
      const rows = await outboxRows(h, platformId);
      assert.equal(rows.length, 5, 'one outbox row per notification, none for the others');
      const subjects = mails.map((mail) => mail.mail.subject).sort();
      assert.deepEqual(subjects, [
        `[Mehta Payments ${h.backend}] A request errored`,
        `[Mehta Payments ${h.backend}] A request failed at acknowledgement`,
        `[Mehta Payments ${h.backend}] A request was partially processed`,
        `[Mehta Payments ${h.backend}] An upload completed with failed rows`,
        `[Mehta Payments ${h.backend}] The authority refused a customer's credentials`,
      ]);
      for (const mail of mails) {
        const row = rows.find((candidate) => mail.messageId === `<${candidate.id}@localhost>`);
        assert.ok(row, `the Message-ID ${mail.messageId} is an outbox row's id`);
        assert.ok(mail.mail.text && mail.mail.html, 'plain text and HTML');
        assert.match(mail.mail.text!, /GMT\+5:30/, 'times in the user\'s zone');
        assert.match(mail.mail.text!, new RegExp(`${PUBLIC_URL}/console/events/evt_`), 'a link with PUBLIC_URL');
        assert.match(String(mail.mail.html), /Mehta Payments/);
      }
      const failed = mails.find((mail) => mail.mail.subject!.includes('failed at acknowledgement'))!;
      assert.match(failed.mail.text!, /Request EBRCGW2026REQUEST000000000000001 failed at acknowledgement: 0 lines processed, 2 failed\./);
      assert.match(failed.mail.text!, new RegExp(events[0]!.id));
      const upload = mails.find((mail) => mail.mail.subject!.includes('upload'))!;
      assert.match(upload.mail.text!, /march\.xlsx completed: 2 of 5 rows failed/);
      // Recorded as sent, each once.
      const settled = await waitForRows(h, platformId, (all) => all.every((row) => row.status === 'sent'));
      assert.ok(settled.every((row) => row.attempts === 1 && row.sent_at !== null));
      assert.equal(smtp.to(user.email).length, 5, 'each sent once');
    });

    test('preferences: daily items wait for the digest, off sends nothing, immediate sends; a disabled user gets nothing', async () => {
      const platformId = await newPlatform(h, `Prefs ${h.backend}`);
      const daily = await addConsoleUser(h, platformId, `daily-${h.backend}@prefs.example`);
      const off = await addConsoleUser(h, platformId, `off-${h.backend}@prefs.example`);
      const recon = await addConsoleUser(h, platformId, `recon-${h.backend}@prefs.example`);
      const disabled = await addConsoleUser(h, platformId, `disabled-${h.backend}@prefs.example`);
      const all = (delivery: 'immediate' | 'daily' | 'off') => Object.fromEntries(['genebrc.request.failed', 'genebrc.request.errored', 'genebrc.request.partially_processed', 'platform_customer.credentials_invalid', 'bulk_upload.completed', 'reconciliation.completed'].map((type) => [type, delivery]));
      await savePreferences(h.database.db, daily.id, all('daily'), 'America/New_York');
      await savePreferences(h.database.db, off.id, all('off'), 'UTC');
      await savePreferences(h.database.db, recon.id, { ...all('off'), 'reconciliation.completed': 'immediate' }, 'UTC');
      await h.database.db.updateTable('console_users').set({ disabled: true }).where('id', '=', disabled.id).execute();
      await record(h, [
        { platformId, platformCustomerId: null, type: 'genebrc.request.failed', data: REQUEST_DATA },
        { platformId, platformCustomerId: null, type: 'genebrc.request.errored', data: REQUEST_DATA },
        { platformId, platformCustomerId: null, type: 'reconciliation.completed', data: { irmsUpdated: 0, irmsCancelled: 2, ebrcsDiscovered: 1, ebrcsCancelled: 0 } },
        { platformId, platformCustomerId: null, type: 'reconciliation.completed', data: { irmsUpdated: 0, irmsCancelled: 0, ebrcsDiscovered: 0, ebrcsCancelled: 0 } },
        { platformId, platformCustomerId: null, type: 'genebrc.request.failed', data: REQUEST_DATA },
      ]);
      const [reconMail] = await smtp.waitFor('the reconciliation notification', () => smtp.to(recon.email).length >= 1 && smtp.to(recon.email));
      assert.match(reconMail!.mail.text!, /2 IRMs cancelled, 1 eBRCs found/);
      const rows = await waitForRows(h, platformId, (found) => found.length === 1 && found[0]!.status === 'sent');
      assert.equal(rows.length, 1, 'only the reconciliation user got a message now');
      const items = await h.database.db.selectFrom('mail_digest_items').selectAll().where('user_id', '=', daily.id).execute();
      assert.equal(items.length, 4, "the daily user's four notifications wait for the digest");

      // Not yet due: the items are of the user's current day.
      assert.equal(await h.service.mail.composeDigests(new Date()), 0);
      // The next day in New York, the digest groups them by type.
      const tomorrow = new Date(Date.now() + 36 * 3_600_000);
      assert.equal(await h.service.mail.composeDigests(tomorrow), 1);
      assert.equal(await h.service.mail.composeDigests(tomorrow), 0, 'a digest carries its items once');
      const [digest] = await smtp.waitFor('the digest', () => smtp.to(daily.email).length >= 1 && smtp.to(daily.email));
      assert.equal(digest!.mail.subject, `[Prefs ${h.backend}] Daily summary: 4 notifications`);
      const text = digest!.mail.text!;
      assert.match(text, /A request failed at acknowledgement \(2\)/);
      assert.match(text, /A request errored \(1\)/);
      assert.match(text, /A reconciliation found changes made outside \(1\)/);
      assert.ok(text.indexOf('failed at acknowledgement (2)') < text.indexOf('A request errored (1)'), 'grouped in the preferences\' order');
      assert.match(text, /GMT-5|EST|EDT|GMT-4/, "times in the user's zone");
      assert.equal(smtp.to(off.email).length, 0);
      assert.equal(smtp.to(disabled.email).length, 0);
    });

    test('an SMTP server that refuses (5xx) or drops the connection: retried, then failed with the reason', async () => {
      const platformId = await newPlatform(h, `Refused ${h.backend}`);
      const user = await addConsoleUser(h, platformId, `refused-${h.backend}@smtp.example`);
      smtp.behaviour = 'refuse';
      try {
        await record(h, [{ platformId, platformCustomerId: null, type: 'genebrc.request.failed', data: REQUEST_DATA }]);
        const [refused] = await waitForRows(h, platformId, (rows) => rows.length === 1 && rows[0]!.status === 'failed', 120_000);
        assert.equal(refused!.attempts, 3, 'MAIL_MAX_ATTEMPTS attempts');
        assert.match(refused!.last_error!, /550.*refused by the test server/);
        assert.equal(smtp.to(user.email).length, 0);
        const page = await outboxPage(h, user.email, user.password);
        assert.match(page, /badge bad">Failed</, 'the Outbox page shows it failed');
        assert.match(page, /550 Mailbox unavailable: refused by the test server/, '… with the reason');

        smtp.behaviour = 'drop';
        await record(h, [{ platformId, platformCustomerId: null, type: 'genebrc.request.errored', data: REQUEST_DATA }]);
        const dropped = await waitForRows(h, platformId, (rows) => rows.length === 2 && rows[1]!.attempts >= 1, 120_000);
        assert.match(dropped[1]!.last_error!, /connection|closed|ECONNRESET|socket/i);
        // The server takes messages again: the retry succeeds.
        smtp.behaviour = 'accept';
        const [, recovered] = await waitForRows(h, platformId, (rows) => rows[1]!.status === 'sent', 120_000);
        assert.ok(recovered!.attempts >= 2);
        assert.equal(smtp.to(user.email).length, 1);
      } finally {
        smtp.behaviour = 'accept';
      }
    });

    test('a pending message whose job was lost is sent by the recovery sweep, once; a job for an attempt already made sends nothing', async () => {
      const platformId = await newPlatform(h, `Lost job ${h.backend}`);
      const user = await addConsoleUser(h, platformId, `lost-job-${h.backend}@notify.example`);
      const outbox = new EventOutbox(h.service.mailOutbox);
      const liveJobs = (mailId: string) =>
        sql<{ jobs: number }>`select count(*)::int as jobs from pgboss.job where name = 'mail-send' and data->>'mailId' = ${mailId} and state <= 'active'`
          .execute(h.database.db)
          .then(({ rows }) => rows[0]!.jobs);
      // The message commits without its job, as after pg-boss gave up on it (its retries spent while the database was
      // down), and with one attempt made already.
      const mailId = await h.database.db.transaction().execute(async (tx) => {
        await outbox.record(tx, [{ platformId, platformCustomerId: null, type: 'genebrc.request.failed', data: REQUEST_DATA }]);
        const [mail] = await tx.selectFrom('mail_outbox').select('id').where('platform_id', '=', platformId).execute();
        await sql`delete from pgboss.job where name = 'mail-send' and data->>'mailId' = ${mail!.id}`.execute(tx);
        await tx.updateTable('mail_outbox').set({ attempts: 1 }).where('id', '=', mail!.id).execute();
        return mail!.id;
      });
      outbox.committed();
      assert.equal(await liveJobs(mailId), 0, 'no job will send it');

      // A job queued for the attempt already made (a sweep that read the message just before that attempt) sends nothing.
      await h.service.mail.send(mailId, 0);
      assert.equal((await outboxRows(h, platformId))[0]!.status, 'pending');
      assert.equal(smtp.to(user.email).length, 0);

      await h.service.mail.recover();
      await h.service.mail.recover();
      const [sent] = await waitForRows(h, platformId, (rows) => rows[0]!.status === 'sent');
      assert.equal(sent!.attempts, 2, 'sent at its second attempt');
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      assert.equal(smtp.to(user.email).length, 1, 'sent once, however often the sweep ran');
    });
  },
  { env: { SMTP_URL: smtp.url(), PUBLIC_URL, MAIL_MAX_ATTEMPTS: '3', MAIL_RETRY_DELAY_SECONDS: '1' } },
);

/** The Outbox page as `email` sees it (signed in through the form, with its CSRF token). */
async function outboxPage(h: Harness, email: string, password: string): Promise<string> {
  const form = await h.service.app.inject({ method: 'GET', url: '/console/sign-in' });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)![1]!;
  const cookies = form.cookies.map((cookie) => `${cookie.name}=${cookie.value}`).join('; ');
  const signedIn = await h.service.app.inject({ method: 'POST', url: '/console/sign-in', headers: { cookie: cookies }, payload: { _csrf: csrf, email, password } });
  assert.equal(signedIn.statusCode, 303);
  const session = signedIn.cookies.map((cookie) => `${cookie.name}=${cookie.value}`).join('; ');
  const page = await h.service.app.inject({ method: 'GET', url: '/console/outbox', headers: { cookie: `${cookies}; ${session}` } });
  assert.equal(page.statusCode, 200);
  return page.body;
}

async function waitForRows(h: Harness, platformId: string, ready: (rows: Awaited<ReturnType<typeof outboxRows>>) => boolean, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await outboxRows(h, platformId);
    if (ready(rows)) return rows;
    if (Date.now() > deadline) assert.fail(`the outbox did not get there: ${JSON.stringify(rows.map((row) => ({ status: row.status, attempts: row.attempts, error: row.last_error })))}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
