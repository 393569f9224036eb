import assert from 'node:assert/strict';
import path from 'node:path';
import { before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { describeConsole, SCREENSHOTS } from '../support/browser.ts';
import { firstRefresh, lineFor, pushBody, usableIrms, verifiedCustomer } from '../support/workflow.ts';

describeConsole('console: reports', (h) => {
  let page: Page;
  let customerId = '';
  let ebrcNumber = '';
  let day = '';

  before(async () => {
    customerId = await verifiedCustomer(h, `reports-${h.backend}@demo-exporter.example`);
    await firstRefresh(h, customerId);
    const [irm] = await usableIrms(h, customerId, 1);
    const ack = await h.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(customerId, [lineFor(irm, 1, 42.5, { billNo: '=SUM(A1)' })]) });
    assert.equal(ack.body?.ackStatus, 'Validated', ack.text);
    const status = await h.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: customerId, requestId: ack.body.requestId } });
    assert.equal(status.body.status, 'PROCESSED', status.text);
    ebrcNumber = status.body.ebrcBulkGenStatusList[0].ebrcNumber;
    day = status.body.ebrcBulkGenStatusList[0].ebrcDate;
    page = await h.newPage();
    await h.signIn(page, h.userA);
  });

  test('the register: pick the customer and the period, preview the first rows, download the file', async () => {
    await page.goto('/console/reports');
    await page.getByRole('link', { name: 'Reports', exact: true }).and(page.locator('[aria-current="page"]')).waitFor();
    await h.screenshot(page, 'reports-empty');
    const form = page.getByRole('form', { name: 'Report and period' });
    await form.getByLabel('Customer').selectOption(customerId);
    await form.getByLabel('From', { exact: true }).fill(day);
    await form.getByLabel('To', { exact: true }).fill(day);
    await form.getByRole('button', { name: 'Preview' }).click();
    const preview = page.getByRole('region', { name: 'Preview of the report' });
    await preview.getByText(ebrcNumber).waitFor();
    // The preview shows the cell as it is; only the CSV file quotes it.
    assert.match(await preview.innerText(), /=SUM\(A1\)/);
    assert.match(await preview.innerText(), /42\.50/);
    await h.screenshot(page, 'reports-register-preview');

    const downloading = page.waitForEvent('download');
    await page.getByRole('link', { name: 'CSV' }).click();
    const file = await downloading;
    assert.equal(file.suggestedFilename(), `0599001001-ebrc-register-${day}-${day}.csv`);
    const text = await new Response(await file.createReadStream() as unknown as ReadableStream).text();
    assert.match(text, /'=SUM\(A1\)/);
    assert.match(text, /\ncurrency,count,realisedValue\n[A-Z]{3},1,42\.50\n/);

    const phone = await h.newPage({ width: 390 });
    await h.signIn(phone, h.userA);
    await phone.goto(`/console/reports?report=irm-utilisation&customer=${customerId}`);
    await phone.getByRole('region', { name: 'Preview of the report' }).getByText(ebrcNumber).waitFor();
    await h.screenshot(phone, 'reports-utilisation-phone');
    await phone.screenshot({ path: path.join(SCREENSHOTS, `${h.backend}-reports-utilisation-phone-top.png`) });
  });

  test('the IRM utilisation report needs a customer; another platform’s customer is a 404', async () => {
    const refused = await page.goto('/console/reports?report=irm-utilisation&customer=');
    assert.equal(refused?.status(), 400);
    await page.getByText('Choose the customer whose IRMs to report on.').waitFor();
    const reversed = await page.goto(`/console/reports?report=ebrc-register&customer=${customerId}&fromDate=2026-02-01&toDate=2026-01-31`);
    assert.equal(reversed?.status(), 400);

    const other = await h.newPage();
    await h.signIn(other, h.userB);
    assert.equal((await other.goto(`/console/reports?report=ebrc-register&customer=${customerId}`))?.status(), 404);
    const download = await other.request.get(`/console/reports/download?report=ebrc-register&customer=${customerId}&format=csv`);
    assert.equal(download.status(), 404);
    // Platform B's own register is empty.
    await other.goto('/console/reports?report=ebrc-register&customer=');
    await other.getByText('Nothing in this period.').waitFor();
  });
});
