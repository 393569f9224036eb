import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import type { Page } from 'playwright-core';
import type { Authority } from '../../src/authority/authority.ts';
import { SPREADSHEET_COLUMNS } from '../../src/domain/spreadsheet-columns.ts';
import { markIrmsPulled } from '../../src/store/irms.ts';
import { cardLabelsTooWide, describeConsole } from '../support/browser.ts';
import { firstRefresh, lineFor, sleep, usableIrms, verifiedCustomer } from '../support/workflow.ts';

type Row = Record<string, unknown>;

/** A CSV of the template's columns (as test/http/uploads.test.ts builds them). */
function csvOf(rows: readonly Row[]): string {
  const cell = (value: unknown) => (value === null || value === undefined ? '' : String(value));
  return [SPREADSHEET_COLUMNS.join(','), ...rows.map((row) => SPREADSHEET_COLUMNS.map((column) => cell(row[column])).join(','))].join('\r\n') + '\r\n';
}

/** One row per IRM, each mapping 1.00 of it to its own invoice; rows leave serialNo and uploadType empty. */
let invoice = 7_000_000;
function rowsFor(irms: readonly any[], extra: Row = {}): Row[] {
  return irms.map((irm) => {
    invoice++;
    return { ...lineFor(irm, invoice, 1), serialNo: null, uploadType: null, sbCumInvoiceNumber: String(invoice), ...extra };
  });
}

/** The status of the page's last navigation (a document answer). */
async function statusOf(page: Page, path: string): Promise<number> {
  const answer = await page.goto(path);
  assert.ok(answer);
  return answer.status();
}

/** The authority's IRM pulls, counted (the backends' suites run one after the other: tests compare before and after). */
let irmPulls = 0;
function countingPulls(adapter: Authority): Authority {
  return new Proxy(adapter, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (property === 'fetchIrms') {
        return (...args: unknown[]) => {
          irmPulls++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
}

describeConsole(
  'console: IRMs, eBRCs and uploads',
  (h) => {
    let page: Page;
    let customerId = '';
    let irms: any[] = [];
    let uploadId = '';
    let rejectedId = '';
    let ebrcNumber = '';

    before(async () => {
      customerId = await verifiedCustomer(h, `data-${h.backend}@demo-exporter.example`);
      await firstRefresh(h, customerId);
      irms = await usableIrms(h, customerId, 3);
      page = await h.newPage();
      await h.signIn(page, h.userA);
    });

    test('uploads: the form needs the declaration; a small CSV is checked, pushed and completed, with its requests', async () => {
      await page.goto('/console/uploads');
      await page.getByRole('link', { name: 'Uploads', exact: true }).and(page.locator('[aria-current="page"]')).waitFor();
      await page.getByText('No uploads yet.').waitFor();
      await h.screenshot(page, 'uploads-empty');
      const form = page.getByRole('region', { name: 'New upload' });
      const csv = csvOf(rowsFor(irms));

      // Without the declaration: the push's own check (ERR36), on the check box, with a 400; nothing is stored.
      await form.getByLabel('Customer').selectOption(customerId);
      await form.getByLabel('File').setInputFiles({ name: 'lines.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
      const refused = page.waitForResponse((response) => response.request().method() === 'POST');
      await form.getByRole('button', { name: 'Upload' }).click();
      assert.equal((await refused).status(), 400);
      await page.getByRole('alert').waitFor();
      assert.equal(await form.getByRole('checkbox').getAttribute('aria-invalid'), 'true');
      assert.match(await form.locator('.field-error').first().innerText(), /decalarationFlag|Y/);
      assert.equal(await form.getByLabel('Customer').inputValue(), customerId, 'the customer chosen is kept');
      await h.screenshot(page, 'upload-form-error');

      await form.getByLabel('File').setInputFiles({ name: 'lines.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
      await form.getByRole('checkbox').check();
      await form.getByRole('button', { name: 'Upload' }).click();
      await page.waitForURL(/\/console\/uploads\/[0-9a-f-]{36}/);
      uploadId = new URL(page.url()).pathname.split('/').pop()!;
      await page.getByRole('status').filter({ hasText: 'The file was accepted' }).waitFor();
      await h.screenshot(page, 'upload-in-progress');
      // The page follows the upload by itself (uploads.js), and shows it completed.
      await page.getByText('Every row was pushed').waitFor({ timeout: 60_000 });
      const progress = page.locator('progress#upload-rows');
      assert.equal(await progress.getAttribute('value'), '3');
      assert.equal(await progress.getAttribute('max'), '3');
      assert.match(await page.locator('#upload-rows-text').innerText(), /3 of 3 rows pushed/);

      const api = await h.request('GET', `/api/v1/genebrc/uploads/${uploadId}`);
      assert.equal(api.body.status, 'completed', api.text);
      const requestId = api.body.requests[0].requestId as string;
      const link = page.getByRole('link', { name: requestId });
      await link.waitFor();
      assert.match(await page.locator('table.upload-requests').innerText(), /Validated[\s\S]*Rows 2–4/);
      await h.screenshot(page, 'upload-completed');
      await link.click();
      await page.getByRole('heading', { level: 1, name: `Request ${requestId}` }).waitFor();

      // Listed, and filtered by customer.
      await page.goto(`/console/uploads?customer=${customerId}`);
      await page.getByRole('link', { name: 'lines.csv' }).waitFor();
      assert.match(await page.locator('table.uploads').innerText(), /Completed[\s\S]*3 \/ 3/);
      await h.screenshot(page, 'uploads-list');
    });

    test('uploads: a malformed CSV is rejected and its row errors are shown, with the codes explained', async () => {
      const rows = [...rowsFor(irms.slice(0, 1)), ...rowsFor(irms.slice(1, 2), { irmIfscCode: 'SHORT' })];
      await page.goto('/console/uploads');
      const form = page.getByRole('region', { name: 'New upload' });
      await form.getByLabel('Customer').selectOption(customerId);
      await form.getByRole('checkbox').check();
      await form.getByLabel('File').setInputFiles({ name: 'malformed.csv', mimeType: 'text/csv', buffer: Buffer.from(csvOf(rows)) });
      await form.getByRole('button', { name: 'Upload' }).click();
      await page.waitForURL(/\/console\/uploads\/[0-9a-f-]{36}/);
      rejectedId = new URL(page.url()).pathname.split('/').pop()!;
      await page.getByText('nothing was pushed', { exact: false }).first().waitFor({ timeout: 60_000 });
      await page.getByRole('heading', { name: /Problems to fix/ }).waitFor();
      const errors = await page.locator('table.upload-errors').innerText();
      assert.match(errors, /3\s+irmIfscCode\s+ERR14/, 'row 3 (the header is row 1), its column and code');
      assert.match(errors, /IFSC/i, 'the code is explained');
      await h.screenshot(page, 'upload-rejected');
    });

    test('IRMs: the list with utilisation bars, linked from the customer; the filters work; a bad range is a 400', async () => {
      await page.goto(`/console/customers/${customerId}`);
      await page.getByRole('link', { name: 'IRMs', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'IRMs of Demo' }).waitFor();
      const rows = page.locator('table.irms tbody tr');
      assert.equal(await rows.count(), 20, 'a page of 20');
      assert.equal(await page.locator('table.irms meter').count(), 20, 'a bar per IRM');
      assert.match((await page.locator('table.irms meter').first().getAttribute('aria-label')) ?? '', /^[A-Z]{3} [\d,]+\.\d\d of [A-Z]{3} [\d,]+\.\d\d mapped \((?:<1|>99|\d+)%\)$/);
      await page.getByRole('navigation', { name: 'Pages' }).waitFor();
      await h.screenshot(page, 'irms');

      // The IRM the upload mapped 1.00 of: one row, its bar and text say so.
      const mapped = irms[0];
      await page.getByLabel('IRM number').fill(mapped.irmNumber);
      await page.getByRole('button', { name: 'Show IRMs' }).click();
      await page.getByText('1 IRM matching the filters').waitFor();
      assert.equal(await rows.count(), 1);
      const meter = page.locator('table.irms meter');
      assert.equal(Number(await meter.getAttribute('value')), 1, 'the 1.00 mapped by the upload');
      assert.equal(Number(await meter.getAttribute('max')), mapped.remittanceFCCAmount);
      assert.match(await rows.first().innerText(), /Partially utilised/);
      assert.match(await rows.first().innerText(), new RegExp(`${mapped.remittanceFCC} 1\\.00`));
      assert.match((await meter.getAttribute('aria-label')) ?? '', /mapped \(<1%\)$/, 'a little mapped is not 0%');
      await h.screenshot(page, 'irms-filtered');

      // Dates: the IRMs issued on its day only.
      await page.goto(`/console/customers/${customerId}/irms?fromDate=${mapped.irmIssueDate}&toDate=${mapped.irmIssueDate}`);
      // Each date a <time> with its day, shown in the browser's own date style.
      const dates = await page.locator('table.irms td[data-label="Issued"] time').evaluateAll((times) => times.map((time) => time.getAttribute('datetime')));
      assert.ok(dates.length > 0 && dates.every((date) => date === mapped.irmIssueDate), dates.join());
      const shown = await page.locator('table.irms td[data-label="Issued"]').first().innerText();
      // The browser's locale is en-IN: "28 Nov 2026".
      assert.equal(shown, new Intl.DateTimeFormat('en-IN', { dateStyle: 'medium', timeZone: 'UTC' }).format(new Date(`${mapped.irmIssueDate}T00:00:00Z`)));
      // From after to: the API's 400, on the field.
      assert.equal(await statusOf(page, `/console/customers/${customerId}/irms?fromDate=2026-02-02&toDate=2026-02-01`), 400);
      await page.getByRole('alert').waitFor();
      assert.equal(await page.getByLabel('Issued from').getAttribute('aria-invalid'), 'true');

      // A customer whose credentials are not checked: the API's 409, and what to do.
      const unverified = await h.request('POST', '/api/v1/platform-customers/', { body: { name: 'Unchecked', email: `unchecked-${h.backend}@demo.example`, companyName: 'Unchecked Exports' } });
      assert.equal(await statusOf(page, `/console/customers/${unverified.body.id}/irms`), 409);
      await page.getByRole('link', { name: 'Check its credentials' }).waitFor();
    });

    test('IRMs: Refresh pulls from the authority (once per interval, as the API does)', async () => {
      await page.goto(`/console/customers/${customerId}/irms`);
      // The last pull made older than IRM_REFRESH_INTERVAL_SECONDS (an hour here) rather than waited out: with a 5-s
      // interval, a busy machine once took longer than that between the two clicks below, and the second pulled again.
      await markIrmsPulled(h.database.db, customerId, new Date(Date.now() - 2 * 3_600_000));
      const before = irmPulls;
      await page.getByRole('button', { name: 'Refresh from the authority' }).click();
      await page.getByRole('status').filter({ hasText: 'pulled from the authority just now' }).waitFor();
      assert.equal(irmPulls, before + 1, 'one pull');
      assert.equal(await page.locator('table.irms tbody tr').count(), 20);
      // At once again: the pull just made is reused, and the page says so. (The screenshot comes after: a full page
      // taken on a busy machine can outlast the interval.)
      await page.getByRole('button', { name: 'Refresh from the authority' }).click();
      await page.getByRole('status').filter({ hasText: 'not pulled again' }).waitFor();
      assert.equal(irmPulls, before + 1, 'no second pull within the interval');
      await h.screenshot(page, 'irms-refreshed');
    });

    test("eBRCs: the customer's eBRCs, linked from the customer, each with its PDF", async () => {
      await page.goto(`/console/customers/${customerId}`);
      await page.getByRole('link', { name: 'eBRCs', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'eBRCs of Demo' }).waitFor();
      // The upload's requests are processed in the background: wait for their eBRCs.
      for (let attempt = 0; attempt < 60 && (await page.locator('table.ebrcs').count()) === 0; attempt++) {
        await sleep(500);
        await page.reload();
      }
      const table = page.locator('table.ebrcs');
      assert.match(await table.innerText(), /EBRC\d+/);
      assert.match(await table.innerText(), /[A-Z]{3} 1\.00/, 'the realised value with its currency');
      await h.screenshot(page, 'ebrcs');
      ebrcNumber = (await table.locator('[data-ebrc-number]').first().innerText()).trim();

      const pdfLink = page.getByRole('link', { name: `PDF of ${ebrcNumber}` });
      const href = await pdfLink.getAttribute('href');
      assert.ok(href);
      const pdf = await page.request.get(href);
      assert.equal(pdf.status(), 200);
      assert.equal(pdf.headers()['content-type'], 'application/pdf');
      assert.equal((await pdf.body()).subarray(0, 5).toString(), '%PDF-');
      // The browser opens it too (a download or its viewer): the link answers a PDF.
      const opened = page.waitForResponse((response) => response.url().endsWith('/certificate.pdf'));
      await pdfLink.click({ modifiers: [] }).catch(() => undefined);
      assert.equal((await opened).headers()['content-type'], 'application/pdf');

      // Filters: an invoice that is not there.
      await page.goto(`/console/customers/${customerId}/ebrcs?sbCumInvoiceNumber=NO-SUCH-INVOICE`);
      await page.getByText('No eBRC of Demo matches these filters.').waitFor();
      // Signed out, the PDF is the sign-in page.
      const stranger = await h.newPage();
      const anonymous = await stranger.request.get(href, { maxRedirects: 0 });
      assert.equal(anonymous.status(), 303);
      assert.match(anonymous.headers().location ?? '', /\/console\/sign-in/);
    });

    test('templates: CSV and XLSX downloads of the customer’s IRMs', async () => {
      const csv = await page.request.get(`/console/customers/${customerId}/irm-template?format=csv`);
      assert.equal(csv.status(), 200);
      assert.match(csv.headers()['content-type'] ?? '', /^text\/csv/);
      assert.match(csv.headers()['content-disposition'] ?? '', /attachment; filename="irm-template-0599001001-\d{8}\.csv"/);
      assert.ok((await csv.text()).startsWith('serialNo,uploadType'));
      await page.goto(`/console/uploads?customer=${customerId}`);
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'XLSX' }).click()]);
      assert.match(download.suggestedFilename(), /^irm-template-0599001001-\d{8}\.xlsx$/);
    });

    test("tenancy: platform B's user gets 404 for platform A's IRMs, eBRCs, PDFs, templates and uploads", async () => {
      const other = await h.newPage();
      await h.signIn(other, h.userB);
      for (const path of [
        `/console/customers/${customerId}/irms`,
        `/console/customers/${customerId}/ebrcs`,
        `/console/customers/${customerId}/ebrcs/${ebrcNumber}/certificate.pdf`,
        `/console/customers/${customerId}/irm-template?format=csv`,
        `/console/uploads/${uploadId}`,
        `/console/uploads/${rejectedId}`,
        `/console/uploads?customer=${customerId}`,
      ]) {
        assert.equal(await statusOf(other, path), 404, path);
        await other.getByRole('heading', { level: 1, name: 'Not found' }).waitFor();
        assert.doesNotMatch(await other.locator('main').innerText(), /Demo|EBRC|lines\.csv/);
      }
      assert.equal((await other.request.get(`/console/uploads/${uploadId}/progress`)).status(), 404);
      // B's own list shows none of A's uploads.
      await other.goto('/console/uploads');
      assert.doesNotMatch(await other.locator('main').innerText(), /lines\.csv|malformed\.csv/);
      // Nor act on them: a refresh or an upload posted with B's own token for A's customer is a 404.
      const token = await other.locator('input[name="_csrf"]').first().inputValue();
      const before = irmPulls;
      const refresh = await other.request.post(`/console/customers/${customerId}/irms/refresh`, { form: { _csrf: token }, maxRedirects: 0 });
      assert.equal(refresh.status(), 404);
      assert.equal(irmPulls, before);
      const upload = await other.request.post('/console/uploads', {
        multipart: {
          _csrf: token,
          platformCustomerId: customerId,
          uploadType: '101',
          decalarationFlag: 'Y',
          file: { name: 'lines.csv', mimeType: 'text/csv', buffer: Buffer.from(csvOf(rowsFor(irms.slice(0, 1)))) },
        },
        maxRedirects: 0,
      });
      assert.equal(upload.status(), 404);
      // And a multipart form without its token is refused (403), as every form is.
      const forged = await other.request.post('/console/uploads', {
        multipart: { platformCustomerId: customerId, uploadType: '101', decalarationFlag: 'Y', file: { name: 'x.csv', mimeType: 'text/csv', buffer: Buffer.from('a\r\n') } },
        maxRedirects: 0,
      });
      assert.equal(forged.status(), 403);
    });

    test('every page reads on a 390-pixel-wide screen: no sideways scrolling', async () => {
      const phone = await h.newPage({ width: 390 });
      await h.signIn(phone, h.userA);
      for (const [name, path] of [
        ['irms', `/console/customers/${customerId}/irms`],
        ['ebrcs', `/console/customers/${customerId}/ebrcs`],
        ['uploads', '/console/uploads'],
        ['upload', `/console/uploads/${uploadId}`],
        ['upload-rejected', `/console/uploads/${rejectedId}`],
      ] as const) {
        assert.equal(await statusOf(phone, path), 200, path);
        const overflow = await phone.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
        assert.equal(overflow, 0, `${path} scrolls sideways by ${String(overflow)} px`);
        assert.deepEqual(await cardLabelsTooWide(phone), [], `${path}: card labels wider than their column`);
        await h.screenshot(phone, `narrow-${name}`);
      }
      // Nor on a laptop's or a tablet's width, where the tables are tables.
      for (const width of [1024, 1280]) {
        const wide = await h.newPage({ width });
        await h.signIn(wide, h.userA);
        for (const path of [`/console/customers/${customerId}/irms`, `/console/customers/${customerId}/ebrcs`, `/console/uploads/${rejectedId}`]) {
          assert.equal(await statusOf(wide, path), 200, path);
          const overflow = await wide.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
          assert.equal(overflow, 0, `${path} scrolls sideways by ${String(overflow)} px at ${width} px`);
        }
      }
    });
  },
  { env: { RUN_POLLER: 'true', POLL_INTERVAL_SECONDS: '1', IRM_REFRESH_INTERVAL_SECONDS: '3600' }, authority: countingPulls },
);
