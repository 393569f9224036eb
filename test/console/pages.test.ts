import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { cardLabelsTooWide, describeConsole, type ConsoleHarness } from '../support/browser.ts';
import { verifies, WebhookReceiver } from '../support/webhook-receiver.ts';
import { firstRefresh, lineFor, pushBody, usableIrms, verifiedCustomer } from '../support/workflow.ts';

/** The push of two lines through the API, the second failing at processing (the sandbox's SANDBOX-FAIL), settled. */
async function settledPush(h: ConsoleHarness, customerId: string): Promise<string> {
  await firstRefresh(h, customerId);
  const [irm] = await usableIrms(h, customerId, 1);
  const pushed = await h.request('POST', '/api/v1/genebrc/push-irm', {
    body: pushBody(customerId, [lineFor(irm, 1, 100.25), lineFor(irm, 2, 50, { billNo: 'SANDBOX-FAIL' })]),
  });
  assert.equal(pushed.status, 200, pushed.text);
  assert.equal(pushed.body.ackStatus, 'Validated', pushed.text);
  for (let attempt = 0; attempt < 100; attempt++) {
    const status = await h.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: customerId, requestId: pushed.body.requestId } });
    assert.equal(status.status, 200, status.text);
    if (status.body.status !== 'PENDING') {
      assert.equal(status.body.status, 'PARTIALLY_PROCESSED', status.text);
      return pushed.body.requestId;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail('the push was not processed');
}

/** The status of the page's last navigation (a document answer). */
async function statusOf(page: Page, path: string): Promise<number> {
  const answer = await page.goto(path);
  assert.ok(answer);
  return answer.status();
}

describeConsole('console: pages', (h) => {
  let page: Page;
  let customerId = '';
  let requestId = '';
  let endpointId = '';
  let receiver: WebhookReceiver;

  before(async () => {
    receiver = await WebhookReceiver.start();
    page = await h.newPage();
    await h.signIn(page, h.userA);
  });
  after(async () => {
    await receiver?.close();
  });

  test('customers: the empty list says what to do; a customer is created through the form', async () => {
    await page.goto('/console/customers');
    await page.getByText('No customers yet.').waitFor();
    await h.screenshot(page, 'customers-empty');

    await page.getByLabel('Name', { exact: true }).fill('Demo Exporter');
    await page.getByLabel('E-mail', { exact: true }).fill(`ops-${h.backend}@demo-exporter.example`);
    await page.getByLabel('Company name').fill('Demo Exports Pvt Ltd');
    await page.getByRole('button', { name: 'Create customer' }).click();
    await page.getByRole('heading', { level: 1, name: 'Demo Exporter' }).waitFor();
    await page.getByRole('status').filter({ hasText: 'The customer was created' }).waitFor();
    customerId = new URL(page.url()).pathname.split('/').pop()!;
    const created = await h.request('GET', `/api/v1/platform-customers/${customerId}`);
    assert.equal(created.status, 200, 'the API sees the customer the console created');
    assert.equal(created.body.companyName, 'Demo Exports Pvt Ltd');
  });

  test('customers: an e-mail already used is shown on its field, with a 409, and the form keeps what was typed', async () => {
    await page.goto('/console/customers');
    await page.getByLabel('Name', { exact: true }).fill('Second Demo');
    await page.getByLabel('E-mail', { exact: true }).fill(`OPS-${h.backend}@demo-exporter.example`);
    await page.getByLabel('Company name').fill('Second Exports');
    const answer = page.waitForResponse((response) => response.request().method() === 'POST');
    await page.getByRole('button', { name: 'Create customer' }).click();
    assert.equal((await answer).status(), 409);
    await page.getByRole('alert').filter({ hasText: 'Email already used by another customer' }).waitFor();
    assert.equal(await page.getByLabel('E-mail', { exact: true }).getAttribute('aria-invalid'), 'true');
    assert.equal(await page.getByLabel('Name', { exact: true }).inputValue(), 'Second Demo');
    await h.screenshot(page, 'customers-create-error');
  });

  test('customers: check credentials at the authority, wrong and then right', async () => {
    await page.goto(`/console/customers/${customerId}`);
    await page.getByLabel('Username').fill('demo.exporter');
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Check credentials' }).click();
    await page.getByRole('alert').filter({ hasText: 'Authority credentials not valid' }).waitFor();
    await h.screenshot(page, 'customer-credentials-refused');

    await page.getByLabel('Username').fill('demo.exporter');
    await page.getByLabel('Password').fill('Sandbox@123');
    await page.getByRole('button', { name: 'Check credentials' }).click();
    await page.getByRole('status').filter({ hasText: 'the customer is verified' }).waitFor();
    await page.getByText('0599001001').first().waitFor();
    await h.screenshot(page, 'customer-detail');
  });

  test('customers: an API credential set that is not JSON is refused on its field', async () => {
    await page.goto(`/console/customers/${customerId}`);
    await page.getByLabel('Credential set (JSON)').fill('{"iecCode": "0599001001", "client_Id": "x"');
    const answer = page.waitForResponse((response) => response.request().method() === 'POST');
    await page.getByRole('button', { name: 'Store the credential set' }).click();
    assert.equal((await answer).status(), 400);
    await page.getByText('This is not JSON').waitFor();
    await page.getByLabel('Credential set (JSON)').fill('{"iecCode": "0599001001", "client_Id": "x"}');
    await page.getByRole('button', { name: 'Store the credential set' }).click();
    await page.getByRole('alert').waitFor();
    assert.match(await page.locator('#field-credentialSet-error').innerText(), /client_secret|clientSecret/);
  });

  test('customers: search finds by part of the name, and says so when nothing matches', async () => {
    await page.goto('/console/customers');
    await page.getByLabel('Search by name or e-mail').fill('demo ex');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: 'Demo Exporter' }).waitFor();
    await h.screenshot(page, 'customers-list');
    await page.getByLabel('Search by name or e-mail').fill('no such name');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('No customer matches “no such name”.').waitFor();
  });

  test("requests: a request's lines, the eBRC made and the failed line's ERR code explained", async () => {
    const verified = await verifiedCustomer(h, `pushes-${h.backend}@demo-exporter.example`);
    requestId = await settledPush(h, verified);
    await page.goto('/console/requests');
    await page.getByText('to see its requests').waitFor();
    await h.screenshot(page, 'requests-choose');
    await page.getByLabel('Customer').selectOption(verified);
    await page.getByRole('button', { name: 'Show requests' }).click();
    await page.getByRole('link', { name: requestId }).click();
    await page.getByRole('heading', { level: 1, name: `Request ${requestId}` }).waitFor();
    const lines = page.locator('table.lines');
    assert.match(await lines.innerText(), /Generated[\s\S]*EBRC\d+/);
    const failed = page.locator('tr.line-errors');
    assert.match(await failed.innerText(), /ERR40/);
    assert.match(await failed.innerText(), /Shipping bill not found at customs/);
    assert.match(await failed.innerText(), /its amount is back on the IRM/, 'the code is explained');
    assert.match(await lines.innerText(), /[A-Z]{3} 100\.25/, 'money with its currency');
    await h.screenshot(page, 'request-detail');

    // The list, filtered by status.
    await page.goto(`/console/requests?customer=${verified}&status=PROCESSED`);
    await page.getByText('No request of Demo matches these filters.').waitFor();
    await page.goto(`/console/requests?customer=${verified}&status=PARTIALLY_PROCESSED`);
    await page.getByRole('link', { name: requestId }).waitFor();
    await h.screenshot(page, 'requests-list');
    // A bad filter is a 400 on its field.
    assert.equal(await statusOf(page, `/console/requests?customer=${verified}&fromDate=2026-02-30`), 400);
    await page.getByRole('alert').waitFor();
    customerId = verified;
  });

  test('webhooks: create an endpoint, see its secret once, send a test delivery that reaches the receiver', async () => {
    await page.goto('/console/webhooks');
    await page.getByText('No webhook endpoints yet.').waitFor();
    await h.screenshot(page, 'webhooks-empty');
    // A URL the service refuses is explained on its field.
    await page.getByLabel('URL').fill('ftp://example.com/hooks');
    const refused = page.waitForResponse((response) => response.request().method() === 'POST');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    assert.equal((await refused).status(), 400);
    await page.getByRole('alert').waitFor();

    await page.getByLabel('URL').fill(receiver.url());
    await page.getByLabel('Description').fill('Our receiver');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByRole('heading', { level: 1, name: 'Endpoint created' }).waitFor();
    const secret = await page.getByRole('textbox', { name: 'Signing secret' }).inputValue();
    assert.match(secret, /^whsec_/);
    await h.screenshot(page, 'webhook-secret');
    await page.getByRole('link', { name: 'Go to the endpoint' }).click();
    endpointId = new URL(page.url()).pathname.split('/').pop()!;
    await page.getByText('Nothing delivered to this endpoint yet.').waitFor();

    await page.getByRole('button', { name: 'Send a test event' }).click();
    await page.getByRole('status').filter({ hasText: 'webhook.test event is on its way' }).waitFor();
    const [delivered] = await receiver.waitForCount(1, 20_000);
    assert.ok(verifies(delivered!, secret), 'signed with the secret the page showed');
    assert.equal(JSON.parse(delivered!.body).type, 'webhook.test');
    for (let attempt = 0; attempt < 50; attempt++) {
      await page.goto(`/console/webhooks/${endpointId}`);
      if ((await page.locator('table.list').count()) > 0 && /Succeeded/.test(await page.locator('table.list').innerText())) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.match(await page.locator('table.list').innerText(), /webhook\.test[\s\S]*Succeeded[\s\S]*HTTP 200/);
    await h.screenshot(page, 'webhook-detail');

    // Redeliver the event: a second request with the same webhook-id.
    await page.getByRole('button', { name: /^Redeliver/ }).first().click();
    await page.getByRole('status').filter({ hasText: 'A new delivery attempt is scheduled' }).waitFor();
    await receiver.waitForCount(2, 20_000);
    assert.equal(receiver.requests[1]!.headers['webhook-id'], delivered!.headers['webhook-id']);

    // Rotate: a new secret, shown once.
    await page.getByRole('button', { name: 'Rotate the signing secret' }).click();
    await page.getByRole('heading', { level: 1, name: 'New signing secret' }).waitFor();
    const rotated = await page.getByRole('textbox', { name: 'Signing secret' }).inputValue();
    assert.match(rotated, /^whsec_/);
    assert.notEqual(rotated, secret);

    // Disable, then enable: a disabled endpoint offers no test or redelivery.
    await page.getByRole('link', { name: 'Go to the endpoint' }).click();
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('status').filter({ hasText: 'The endpoint is disabled' }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Send a test event' }).count(), 0);
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByRole('status').filter({ hasText: 'The endpoint is enabled' }).waitFor();

    await page.goto('/console/webhooks');
    await page.getByRole('link', { name: receiver.url() }).waitFor();
    await h.screenshot(page, 'webhooks-list');
  });

  test("tenancy: platform B's user never sees platform A's customers, requests or endpoints, even by URL", async () => {
    const other = await h.newPage();
    await h.signIn(other, h.userB);
    await other.goto('/console/customers');
    await other.getByText('No customers yet.').waitFor();
    for (const path of [
      `/console/customers/${customerId}`,
      `/console/requests?customer=${customerId}`,
      `/console/requests/${customerId}/${requestId}`,
      `/console/webhooks/${endpointId}`,
    ]) {
      assert.equal(await statusOf(other, path), 404, path);
      await other.getByRole('heading', { level: 1, name: 'Not found' }).waitFor();
      assert.doesNotMatch(await other.locator('main').innerText(), /Demo|whsec|EBRC/);
    }
    await h.screenshot(other, 'not-found');
    // Nor act on them: a form posted with B's own token to A's endpoint is a 404 too.
    await other.goto('/console/webhooks');
    const token = await other.locator('input[name="_csrf"]').first().inputValue();
    const before = receiver.requests.length;
    const test = await other.request.post(`/console/webhooks/${endpointId}/test`, { form: { _csrf: token }, maxRedirects: 0 });
    assert.equal(test.status(), 404);
    const check = await other.request.post(`/console/customers/${customerId}/check-credentials`, {
      form: { _csrf: token, authorityUsername: 'demo.exporter', authorityPassword: 'Sandbox@123' },
      maxRedirects: 0,
    });
    assert.equal(check.status(), 404);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(receiver.requests.length, before);
  });

  test('at 1440 px the top bar is one row on every page', async () => {
    for (const path of ['/console/overview', '/console/customers', `/console/customers/${customerId}`, '/console/webhooks', `/console/webhooks/${endpointId}`]) {
      await page.goto(path);
      const brand = (await page.locator('.brand').boundingBox())!;
      const account = (await page.locator('.account').boundingBox())!;
      assert.ok(account.y < brand.y + brand.height, `${path}: the account is on a second row of the top bar`);
    }
  });

  test('every page reads on a 390-pixel-wide screen: no sideways scrolling', async () => {
    const phone = await h.newPage({ width: 390 });
    await h.signIn(phone, h.userA);
    for (const [name, path] of [
      ['customers', '/console/customers'],
      ['customer', `/console/customers/${customerId}`],
      ['requests', `/console/requests?customer=${customerId}`],
      ['request', `/console/requests/${customerId}/${requestId}`],
      ['webhooks', '/console/webhooks'],
      ['webhook', `/console/webhooks/${endpointId}`],
    ] as const) {
      assert.equal(await statusOf(phone, path), 200, path);
      const overflow = await phone.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      assert.equal(overflow, 0, `${path} scrolls sideways by ${String(overflow)} px`);
      assert.deepEqual(await cardLabelsTooWide(phone), [], `${path}: card labels wider than their column`);
      await h.screenshot(phone, `narrow-${name}`);
    }
  });

  test('times are shown in the browser’s zone with UTC on hover; the console is not in the OpenAPI document', async () => {
    await page.goto(`/console/customers/${customerId}`);
    const time = page.locator('time[data-local]').first();
    assert.match((await time.getAttribute('title')) ?? '', /^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/);
    assert.doesNotMatch(await time.innerText(), /UTC/);
    const openapi = await (await page.request.get('/openapi.json')).json();
    assert.deepEqual(Object.keys(openapi.paths).filter((path) => path.startsWith('/console')), []);
  });
});
