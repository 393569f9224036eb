import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeConsole } from '../support/browser.ts';

describeConsole('console: audit log', (h) => {
  test('the audit log lists sign-ins and changes with filters and a CSV export, in one top-bar row at 1440 px and without sideways scrolling at 390 px', async () => {
    const page = await h.newPage();
    await h.signIn(page, h.userA);
    const created = await h.request('POST', '/api/v1/platform-customers', {
      key: h.platformA.apiKey,
      body: { name: 'Audited Exports', email: `audited.${Date.now()}@example.com`, companyName: 'Audited Exports Ltd' },
    });
    assert.equal(created.status, 201, created.text);
    await page.goto('/console/customers');
    await page.goto('/console/api-keys');
    await page.click('a[href="/console/audit-log"]');
    await page.waitForURL(/\/console\/audit-log/, { timeout: 60_000 });
    const rows = await page.locator('table.audit-log tbody tr').allInnerTexts();
    assert.ok(rows.some((row) => row.includes('platform_customer.create') && row.includes(created.body.id)), rows.join('\n'));
    assert.ok(rows.some((row) => row.includes('console_user.sign_in') && row.includes(h.userA.email)), rows.join('\n'));
    await h.screenshot(page, 'audit-log');
    const brand = (await page.locator('.brand').boundingBox())!;
    const account = (await page.locator('.account').boundingBox())!;
    assert.ok(account.y < brand.y + brand.height, 'the account is on a second row of the top bar');

    await page.selectOption('#filter-action', 'console_user.sign_in');
    await Promise.all([page.waitForURL(/action=console_user.sign_in/, { timeout: 60_000 }), page.click('form.filters button[type="submit"]')]);
    const filtered = await page.locator('table.audit-log tbody tr').allInnerTexts();
    assert.ok(filtered.length > 0 && filtered.every((row) => row.includes('console_user.sign_in')), filtered.join('\n'));
    const href = await page.locator('a[href*="export.csv"]').getAttribute('href');
    const csv = await page.request.get(`${h.base}${href}`);
    assert.equal(csv.status(), 200);
    const text = await csv.text();
    assert.ok(text.startsWith('id,at,platformId,actorType'), text.slice(0, 200));
    assert.ok(!text.includes('platform_customer.create'), 'the export follows the filters');

    const phone = await h.newPage({ width: 390 });
    await h.signIn(phone, h.userA);
    await phone.goto('/console/audit-log');
    const overflow = (await phone.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth')) as number;
    assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow} px`);
    await h.screenshot(phone, 'audit-log-phone');
  });
});
