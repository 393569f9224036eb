import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { REDACTED_PATHS } from '../../src/http/app.ts';
import { listPlatformKeys } from '../../src/services/platforms.ts';
import { describeConsole, type ConsoleHarness } from '../support/browser.ts';
import { expectProblem, memoryLog } from '../support/harness.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';
import { verifiedCustomer } from '../support/workflow.ts';

/** The status of a navigation (a document answer). */
async function statusOf(page: Page, path: string): Promise<number> {
  const answer = await page.goto(path);
  assert.ok(answer);
  return answer.status();
}

/** Every key of the platform, revoked ones included, as the service lists them. */
/** The platform's keys as issue and revoke change them (lastUsedAt is left out: earlier calls write it a moment later). */
async function keysOf(h: ConsoleHarness, platformId: string) {
  return (await listPlatformKeys(h.database.db, platformId, { page: 1, limit: 100 })).items.map(({ lastUsedAt: _written, ...key }) => key);
}

/** No sideways scrolling at this width. */
async function assertNoOverflow(page: Page, what: string): Promise<void> {
  const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
  assert.equal(overflow, 0, `${what} scrolls sideways by ${String(overflow)} px`);
}

const log = memoryLog(REDACTED_PATHS);

describeConsole(
  'console: events and API keys',
  (h) => {
    let page: Page;
    let customerId = '';
    let eventId = '';
    let issuedKeyId = '';
    const issuedKeys: string[] = [];
    let receiver: WebhookReceiver;

    before(async () => {
      receiver = await WebhookReceiver.start();
      page = await h.newPage();
      await h.signIn(page, h.userA);
    });
    after(async () => {
      await receiver?.close();
    });

    test('events: the empty list says so; a verified customer shows as platform_customer.verified', async () => {
      await page.goto('/console/events');
      await page.getByText('No events yet.').waitFor();
      assert.equal(await page.getByRole('link', { name: 'Events', exact: true }).getAttribute('aria-current'), 'page');
      await h.screenshot(page, 'events-empty');

      customerId = await verifiedCustomer(h, `events-${h.backend}@demo-exporter.example`);
      await page.goto('/console/events');
      const row = page.locator('table.list tbody tr').filter({ hasText: 'platform_customer.verified' });
      await row.waitFor();
      assert.match(await row.innerText(), /Demo/, "the event's customer is named");
      await h.screenshot(page, 'events-list');

      // The API's list and the page's agree.
      const listed = await h.request('GET', '/api/v1/events', { query: { type: 'platform_customer.verified' } });
      assert.equal(listed.status, 200, listed.text);
      eventId = listed.body.items[0].id;
      await page.getByRole('link', { name: eventId }).waitFor();
    });

    test('events: filters by type, customer and dates; a date range backwards is a 400 on its field', async () => {
      await page.goto('/console/events');
      await page.getByLabel('Type').selectOption('ebrc.generated');
      await page.getByRole('button', { name: 'Show events' }).click();
      await page.getByText('No event matches these filters.').waitFor();
      assert.match(page.url(), /type=ebrc\.generated/);
      await h.screenshot(page, 'events-filtered-empty');

      await page.getByLabel('Type').selectOption('platform_customer.verified');
      await page.getByLabel('Customer').selectOption(customerId);
      await page.getByRole('button', { name: 'Show events' }).click();
      await page.getByRole('link', { name: eventId }).waitFor();
      assert.match(await page.locator('p.count').innerText(), /^1 event matching the filters/);

      const today = new Date().toISOString().slice(0, 10);
      await page.goto(`/console/events?fromDate=${today}&toDate=${today}`);
      await page.getByRole('link', { name: eventId }).waitFor();
      assert.equal(await statusOf(page, `/console/events?fromDate=2030-01-02&toDate=2030-01-01`), 400);
      await page.getByRole('alert').waitFor();
      assert.equal(await page.getByLabel('From').getAttribute('aria-invalid'), 'true');
      assert.equal(await statusOf(page, `/console/events?type=no.such.type`), 400);
      await page.getByRole('alert').waitFor();
      await h.screenshot(page, 'events-filter-error');
    });

    test("events: an event's page shows its data as JSON and redelivers it to an endpoint", async () => {
      await page.goto('/console/events');
      await page.getByRole('link', { name: eventId }).click();
      await page.getByRole('heading', { level: 1, name: 'Event platform_customer.verified' }).waitFor();
      const shown = JSON.parse(await page.locator('pre.json').innerText());
      const api = await h.request('GET', `/api/v1/events/${eventId}`);
      assert.equal(api.status, 200, api.text);
      assert.deepEqual(shown, api.body.data, 'the data as the API gives it');
      assert.match(await page.locator('pre.json').innerText(), /\n {2}"/, 'pretty: one field a line, indented');
      await page.getByText('No webhook endpoints yet.').waitFor();
      await h.screenshot(page, 'event-detail-no-endpoint');

      // An endpoint made after the event never got it: redeliver it there.
      const created = await h.request('POST', '/api/v1/webhook-endpoints', { body: { url: receiver.url(), enabledEvents: ['*'], description: 'Receiver' } });
      assert.equal(created.status, 201, created.text);
      await page.reload();
      await page.getByLabel('Endpoint', { exact: true }).selectOption(created.body.id);
      await page.getByRole('button', { name: 'Redeliver' }).click();
      await page.getByRole('status').filter({ hasText: 'A delivery of this event is scheduled now' }).waitFor();
      const [delivered] = await receiver.waitForCount(1, 20_000);
      assert.equal(delivered!.headers['webhook-id'], eventId);
      assert.equal(JSON.parse(delivered!.body).type, 'platform_customer.verified');
      await h.screenshot(page, 'event-detail');
      await page.getByRole('link', { name: 'see its deliveries' }).click();
      await page.getByRole('heading', { level: 1, name: 'Webhook endpoint' }).waitFor();
    });

    test('API keys: the list shows the platform’s key; a key issued is shown once, works, and a reload does not show it', async () => {
      await page.goto('/console/api-keys');
      const original = (await keysOf(h, h.platformA.id)).find((key) => key.id === h.platformA.keyId)!;
      await page.getByText(`${original.prefix}…`).first().waitFor();
      await h.screenshot(page, 'api-keys-list');

      await page.getByRole('button', { name: 'Issue a key' }).click();
      await page.getByRole('heading', { level: 1, name: 'API key issued' }).waitFor();
      const apiKey = await page.getByRole('textbox', { name: 'API key' }).inputValue();
      assert.match(apiKey, /^ebrc_test_/);
      issuedKeys.push(apiKey);
      assert.ok(!page.url().includes(apiKey), 'the key is not in the URL');
      issuedKeyId = new URL(page.url()).pathname.split('/')[3]!;
      assert.ok((await keysOf(h, h.platformA.id)).some((key) => key.id === issuedKeyId && apiKey.startsWith(key.prefix)));
      await h.screenshot(page, 'api-key-issued');

      const used = await h.request('GET', '/api/v1/platform-customers', { key: apiKey });
      assert.equal(used.status, 200, 'the new key works against the API');
      assert.ok(used.body.items.some((customer: { id: string }) => customer.id === customerId), "it is the platform's key");
      const overTheWire = await fetch(`${h.base}/api/v1/platform-customers`, { headers: { 'x-api-key': apiKey } });
      assert.equal(overTheWire.status, 200);

      await page.reload();
      await page.getByRole('heading', { level: 2, name: 'The key is not shown again' }).waitFor();
      assert.ok(!(await page.content()).includes(apiKey), 'a reload does not show the key');
      await h.screenshot(page, 'api-key-shown-before');
      await page.goto('/console/api-keys');
      assert.ok(!(await page.content()).includes(apiKey));
      assert.equal(await page.locator('table.list tbody tr').count(), 2);
    });

    test('API keys: revoking asks first, then the key is refused by the API at once', async () => {
      const prefix = (await keysOf(h, h.platformA.id)).find((key) => key.id === issuedKeyId)!.prefix;
      await page.goto('/console/api-keys');
      await page.getByRole('link', { name: `Revoke ${prefix}…` }).click();
      await page.getByRole('heading', { level: 1, name: 'Revoke this API key?' }).waitFor();
      assert.equal(await page.getByText('This is your platform’s last active key').count(), 0, 'the platform has another');
      await h.screenshot(page, 'api-key-revoke-confirm');
      await page.getByRole('button', { name: 'Revoke the key' }).click();
      await page.getByRole('status').filter({ hasText: 'The key is revoked' }).waitFor();
      // This process forgot it at once: no cache window (the key was used, and cached, just before).
      expectProblem(await h.request('GET', '/api/v1/platform-customers', { key: issuedKeys[0]! }), 401, 'api_key_invalid');
      const row = page.locator('table.list tbody tr').filter({ hasText: prefix });
      assert.match(await row.innerText(), /Revoked/);
      assert.equal(await row.getByRole('link', { name: /Revoke/ }).count(), 0);
      await h.screenshot(page, 'api-keys-revoked');

      // Its confirm page now says when; a second revocation (an old form) is a 409 that says so, nothing changed.
      await page.goto(`/console/api-keys/${issuedKeyId}/revoke`);
      await page.getByRole('heading', { level: 1, name: 'API key revoked' }).waitFor();
      await page.getByText('This key was revoked').waitFor();
      const token = await page.locator('input[name="_csrf"]').first().inputValue();
      const again = await page.request.post(`/console/api-keys/${issuedKeyId}/revoke`, { form: { _csrf: token }, maxRedirects: 0 });
      assert.equal(again.status(), 409);
      assert.match(await again.text(), /already revoked/);

      // The platform's own key, the last active one: the confirm step says so.
      await page.goto(`/console/api-keys/${h.platformA.keyId}/revoke`);
      await page.getByText('This is your platform’s last active key').waitFor();
      await h.screenshot(page, 'api-key-revoke-last');
    });

    test('a form without its CSRF token is refused (403) and changes nothing', async () => {
      const before = await keysOf(h, h.platformA.id);
      const issue = await page.request.post('/console/api-keys', { form: {}, maxRedirects: 0 });
      assert.equal(issue.status(), 403);
      const revoke = await page.request.post(`/console/api-keys/${h.platformA.keyId}/revoke`, { form: { _csrf: 'forged' }, maxRedirects: 0 });
      assert.equal(revoke.status(), 403);
      const redeliver = await page.request.post(`/console/events/${eventId}/redeliver`, { form: {}, maxRedirects: 0 });
      assert.equal(redeliver.status(), 403);
      assert.deepEqual(await keysOf(h, h.platformA.id), before, 'no key issued, none revoked');
      assert.equal((await h.request('GET', '/api/v1/platform-customers')).status, 200, "the platform's key still works");
    });

    test("tenancy: platform B's user never sees or revokes platform A's keys or events (404)", async () => {
      const other = await h.newPage();
      await h.signIn(other, h.userB);
      await other.goto('/console/events');
      await other.getByText('No events yet.').waitFor();
      await other.goto('/console/api-keys');
      assert.doesNotMatch(await other.locator('main').innerText(), new RegExp(issuedKeys[0]!.slice(0, 16)));
      for (const path of [
        `/console/events/${eventId}`,
        `/console/events?customer=${customerId}`,
        `/console/api-keys/${h.platformA.keyId}/revoke`,
        `/console/api-keys/${h.platformA.keyId}/issued`,
      ]) {
        assert.equal(await statusOf(other, path), 404, path);
        await other.getByRole('heading', { level: 1, name: 'Not found' }).waitFor();
      }
      await other.goto('/console/api-keys');
      const token = await other.locator('input[name="_csrf"]').first().inputValue();
      const revoke = await other.request.post(`/console/api-keys/${h.platformA.keyId}/revoke`, { form: { _csrf: token }, maxRedirects: 0 });
      assert.equal(revoke.status(), 404);
      const redeliver = await other.request.post(`/console/events/${eventId}/redeliver`, { form: { _csrf: token, endpointId: 'x' }, maxRedirects: 0 });
      assert.equal(redeliver.status(), 404);
      assert.equal((await keysOf(h, h.platformA.id)).find((key) => key.id === h.platformA.keyId)!.revokedAt, null);
      assert.equal((await h.request('GET', '/api/v1/platform-customers')).status, 200, "A's key still works");
    });

    test('every page reads on a 390-pixel-wide screen', async () => {
      const phone = await h.newPage({ width: 390 });
      await h.signIn(phone, h.userA);
      for (const [name, path] of [
        ['events', '/console/events'],
        ['event', `/console/events/${eventId}`],
        ['api-keys', '/console/api-keys'],
        ['api-key-revoke', `/console/api-keys/${h.platformA.keyId}/revoke`],
      ] as const) {
        assert.equal(await statusOf(phone, path), 200, path);
        await h.screenshot(phone, `narrow-${name}`);
        await assertNoOverflow(phone, path);
      }
      await phone.goto('/console/api-keys');
      await phone.getByRole('link', { name: /^Revoke/ }).first().waitFor();
      await phone.getByRole('button', { name: 'Issue a key' }).click();
      await phone.getByRole('heading', { level: 1, name: 'API key issued' }).waitFor();
      issuedKeys.push(await phone.getByRole('textbox', { name: 'API key' }).inputValue());
      await assertNoOverflow(phone, 'the issued key');
      await h.screenshot(phone, 'narrow-api-key-issued');
    });

    test('no key issued through the console is ever written to the log', () => {
      assert.ok(log.lines.length > 0, 'the service logged');
      for (const apiKey of issuedKeys) assert.ok(!log.lines.some((line) => line.includes(apiKey)), 'a key reached the log');
    });
  },
  { logger: log.logger },
);
