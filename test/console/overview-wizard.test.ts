import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { describeConsole, type ConsoleHarness } from '../support/browser.ts';
import { cents, firstRefresh, lineFor, pushBody, usableIrms, verifiedCustomer } from '../support/workflow.ts';

/** The push of two lines through the API, the second failing at processing (the sandbox's SANDBOX-FAIL), settled. */
async function settledPush(h: ConsoleHarness, customerId: string): Promise<{ requestId: string; currency: string }> {
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
      return { requestId: pushed.body.requestId, currency: irm.remittanceFCC };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail('the push was not processed');
}

/** The focused element's id, read in the page (a string: the test's tsconfig has no DOM types). */
const focusedId = '(document.activeElement && document.activeElement.id) || ""';

/** "1234.50" from cents, the way a user types an amount. */
function typed(amount: bigint): string {
  return `${amount / 100n}.${String(amount % 100n).padStart(2, '0')}`;
}

/** The page wide, then at 390 px (a phone), each a full-page screenshot. */
async function shots(h: ConsoleHarness, page: Page, name: string): Promise<void> {
  await h.screenshot(page, name);
  const size = page.viewportSize();
  await page.setViewportSize({ width: 390, height: 844 });
  await h.screenshot(page, `${name}-390`);
  if (size) await page.setViewportSize(size);
}

/** Steps 1 and 2 of the wizard: the customer, then one IRM found by its number. */
async function chooseCustomerAndIrm(page: Page, customerId: string, irmNumber: string): Promise<void> {
  await page.goto('/console/generate');
  await page.getByLabel('Customer', { exact: true }).selectOption(customerId);
  await page.getByRole('button', { name: 'Next: choose IRMs' }).click();
  await page.getByRole('heading', { level: 2, name: '2. Choose the IRMs to map' }).waitFor();
  await page.getByLabel('Find an IRM by its number').fill(irmNumber);
  await page.getByRole('button', { name: 'Find', exact: true }).click();
  await page.getByLabel(irmNumber).check();
  await page.getByRole('button', { name: 'Next: enter the invoices' }).click();
  await page.getByRole('heading', { level: 2, name: '3. Map the IRMs to invoices' }).waitFor();
}

async function fillLine(page: Page, index: number, line: { invoice: string; date: string; value: string; mapped: string }): Promise<void> {
  await page.locator(`#line-${index}-invoiceNumber`).fill(line.invoice);
  await page.locator(`#line-${index}-invoiceDate`).fill(line.date);
  await page.locator(`#line-${index}-portCode`).fill('INDEL4');
  await page.locator(`#line-${index}-billNo`).fill(`B${line.invoice}`);
  await page.locator(`#line-${index}-invoiceValue`).fill(line.value);
  await page.locator(`#line-${index}-mappedAmount`).fill(line.mapped);
}

describeConsole('console: overview and the generation wizard', (h) => {
  let page: Page;
  let customerId = '';
  let irms: any[] = [];

  before(async () => {
    page = await h.newPage();
    await h.signIn(page, h.userA);
  });

  test('sign-in lands on the overview, first in the navigation', async () => {
    assert.equal(new URL(page.url()).pathname, '/console/overview');
    const first = page.getByRole('navigation', { name: 'Main' }).getByRole('link').first();
    assert.equal(await first.innerText(), 'Overview');
  });

  test("overview: today's eBRC count and the realised value for the currency, as charts and as a table", async () => {
    await page.goto('/console/overview');
    await page.getByText('No eBRCs generated in the last 30 days.').waitFor();
    assert.equal(await page.locator('#ebrcs-today').innerText(), '0');
    await shots(h, page, 'overview-empty');

    customerId = await verifiedCustomer(h, `wizard-${h.backend}@demo-exporter.example`);
    const { currency } = await settledPush(h, customerId);
    await page.goto('/console/overview');
    assert.equal(await page.locator('#ebrcs-today').innerText(), '1', 'one line generated, the other failed');
    const perDay = page.getByRole('img', { name: /eBRCs generated per day/ });
    assert.match((await perDay.locator('desc').textContent()) ?? '', /1 eBRCs in 30 days, 1 today/);
    const realised = page.getByRole('img', { name: /Realised value by currency/ });
    assert.match(await realised.innerHTML(), new RegExp(`${currency} 100\\.25`), 'the exact amount beside its bar');
    // The same figures as tables, behind their summaries.
    await page.getByText('The figures as a table').first().click();
    assert.match(await page.locator('table.figures').first().innerText(), /\(today\)\s+1/);
    await page.getByText('The figures as a table').nth(1).click();
    assert.match(await page.locator('table.figures').nth(1).innerText(), new RegExp(`${currency}\\s+${currency} 100\\.25\\s+1`));
    await shots(h, page, 'overview');
  });

  test('wizard: a customer, an IRM, one invoice, a review without problems, the push, and the request with its line', async () => {
    irms = await usableIrms(h, customerId, 3);
    const irm = irms[0];
    await page.goto('/console/generate');
    await shots(h, page, 'generate-customer');
    await chooseCustomerAndIrm(page, customerId, irm.irmNumber);
    await shots(h, page, 'generate-lines');
    // Side by side, the inputs line up, whichever of them has a hint above it (invoice number has, date has not).
    const top = async (id: string) => (await page.locator(`#line-0-${id}`).boundingBox())!.y;
    assert.equal(await top('invoiceNumber'), await top('invoiceDate'));
    assert.equal(await top('portCode'), await top('billNo'));
    await fillLine(page, 0, { invoice: '7001', date: irm.irmIssueDate, value: '80.00', mapped: '75.50' });
    await page.getByRole('button', { name: 'Review the lines' }).click();
    await page.getByRole('status').filter({ hasText: 'No problems' }).waitFor();
    assert.match(await page.locator('table.review-lines').innerText(), new RegExp(`7001[\\s\\S]*${irm.irmNumber}[\\s\\S]*${irm.remittanceFCC} 75\\.50`));
    await shots(h, page, 'generate-review');
    // The push form as sent, to send it once more below (a double click, a resend after a lost answer).
    const pushForm: [string, string][] = await page.evaluate(() => {
      const form = (globalThis as any).document.querySelector('form[action="/console/generate/push"]');
      return [...new (globalThis as any).FormData(form)].map(([name, value]: [string, unknown]) => [name, String(value)]);
    });
    assert.ok(pushForm.some(([name, value]) => name === 'pushKey' && /^console-push-/.test(value)), 'the form carries its push key');
    await page.getByRole('button', { name: 'Push 1 line to the authority' }).click();
    await page.waitForURL(new RegExp(`/console/requests/${customerId}/EBRCGW`));
    await page.getByRole('heading', { level: 1, name: /^Request EBRCGW/ }).waitFor();
    const lines = await page.locator('table.lines').innerText();
    assert.match(lines, new RegExp(`7001[\\s\\S]*${irm.irmNumber}[\\s\\S]*${irm.remittanceFCC} 75\\.50`));
    await shots(h, page, 'generate-request');
    // The same form sent again finds the same request: nothing is pushed twice.
    const resentTo: string = await page.evaluate(async (fields) => {
      const answer = await fetch('/console/generate/push', { method: 'POST', body: new URLSearchParams(fields), credentials: 'same-origin' });
      return answer.url;
    }, pushForm);
    assert.equal(new URL(resentTo).pathname, new URL(page.url()).pathname);
    // The IRM's balance moved by exactly the mapped amount.
    const now = await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: customerId, irmNumber: irm.irmNumber }, body: {} });
    assert.equal(cents(now.body.data[0].irmAvailableAmt), cents(irm.irmAvailableAmt) - 7550n);
  });

  test("wizard: a line over the IRM's balance is ERR38 at review, explained, and nothing can be pushed", async () => {
    const irm = irms[1];
    const over = typed(cents(irm.irmAvailableAmt) + 100n);
    await chooseCustomerAndIrm(page, customerId, irm.irmNumber);
    await fillLine(page, 0, { invoice: '7002', date: irm.irmIssueDate, value: over, mapped: over });
    await page.getByRole('button', { name: 'Review the lines' }).click();
    await page.getByRole('alert').filter({ hasText: 'nothing can be pushed yet' }).waitFor();
    const problems = await page.locator('tr.line-errors').innerText();
    assert.match(problems, /ERR38/);
    assert.match(problems, /more than its available amount/, 'the code is explained');
    assert.equal(await page.getByRole('button', { name: /^Push/ }).count(), 0, 'no push button while there are problems');
    await shots(h, page, 'generate-review-problems');
    // Back to the lines, with what was typed.
    await page.getByRole('button', { name: 'Back to the lines' }).click();
    assert.equal(await page.locator('#line-0-mappedAmount').inputValue(), over);
  });

  test('wizard: a line typed without an IRM is filled by "Suggest from matching"', async () => {
    const irm = irms[2];
    await chooseCustomerAndIrm(page, customerId, irm.irmNumber);
    await page.locator('#line-0-irmNumber').selectOption('');
    await page.locator('#line-0-invoiceCurrency').fill(irm.remittanceFCC);
    await fillLine(page, 0, { invoice: '7003', date: irm.remittanceDate, value: typed(cents(irm.irmAvailableAmt)), mapped: '' });
    await page.getByRole('button', { name: 'Suggest from matching' }).click();
    await page.locator('.notice, .problem').first().waitFor();
    assert.match(await page.locator('.notice, .problem').first().innerText(), /Matching filled 1 line/);
    assert.notEqual(await page.locator('#line-0-irmNumber').inputValue(), '', 'an IRM was chosen for the invoice');
    assert.notEqual(await page.locator('#line-0-mappedAmount').inputValue(), '');
    await shots(h, page, 'generate-suggested');
  });

  test('wizard: the first step with the keyboard alone (Tab, arrows, Enter)', async () => {
    await page.goto('/console/generate');
    let focused = '';
    for (let presses = 0; presses < 40 && focused !== 'field-customerId'; presses++) {
      await page.keyboard.press('Tab');
      focused = await page.evaluate(focusedId);
    }
    assert.equal(focused, 'field-customerId', 'the customer picker is reached with Tab');
    await page.keyboard.press('ArrowDown');
    assert.notEqual(await page.locator('#field-customerId').inputValue(), '');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(focusedId), 'field-uploadType');
    await page.keyboard.press('Tab');
    assert.equal(await page.locator(':focus').innerText(), 'Next: choose IRMs');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 2, name: '2. Choose the IRMs to map' }).waitFor();
    await shots(h, page, 'generate-irms');
  });
});
