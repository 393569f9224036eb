import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseDecimalString } from '../../src/domain/money.ts';
import { helpers } from '../../src/http/console/helpers.ts';
import { currencyChart } from '../../src/http/console/pages/overview.ts';

const total = (currency: string, amount: string, ebrcs: number) => ({ currency, cents: parseDecimalString(amount), amount, ebrcs });

test('the realised-value chart draws no two currencies on one amount scale: its bars count eBRCs', () => {
  // INR 800,000 is not a bar 80 times longer than USD 10,000: one eBRC each, bars of one length.
  const chart = currencyChart([total('USD', '10000.00', 1), total('INR', '800000.00', 1), total('EUR', '5.00', 2)]);
  const width = (currency: string) => Number(chart.rows.find((row) => row.currency === currency)!.barWidth);
  assert.equal(width('USD'), width('INR'));
  assert.equal(width('EUR'), 2 * width('USD'));
  const inr = chart.rows.find((row) => row.currency === 'INR')!;
  assert.equal(inr.text, 'INR 800,000.00');
  assert.equal(inr.count, '1 eBRC');
  assert.equal(chart.rows.find((row) => row.currency === 'EUR')!.count, '2 eBRCs');
});

test('console dates read as people read them, whichever form they come in', () => {
  assert.equal(helpers.dayText('2026-11-23'), '23 Nov 2026');
  assert.equal(helpers.dayText('23112026'), '23 Nov 2026');
  assert.equal(helpers.dayText('01022026'), '1 Feb 2026');
  assert.equal(helpers.dayText('31022026'), '31022026', 'not a date: shown as it is');
  // As markup: a <time> that console.js shows in the user's own style, as it shows times.
  assert.equal(helpers.day('23112026'), '<time datetime="2026-11-23" data-day>23 Nov 2026</time>');
  assert.equal(helpers.day('2026-11-23'), helpers.day('23112026'));
  assert.equal(helpers.day(null), '<span class="none">—</span>');
  assert.equal(helpers.day('<b>'), '&lt;b&gt;');
  const text = (markup: string) => markup.replace(/<[^>]+>/g, '');
  assert.equal(
    text(helpers.readableDates('irmDt 23112026 does not match the issue date 2026-11-22 of IRM SBINIR0599001001001804.')),
    'irmDt 23 Nov 2026 does not match the issue date 22 Nov 2026 of IRM SBINIR0599001001001804.',
  );
  assert.equal(
    text(helpers.readableDates('irmDt 01012020 does not match the issue date 22112026 of IRM HDFCIR0599001001001800.')),
    'irmDt 1 Jan 2020 does not match the issue date 22 Nov 2026 of IRM HDFCIR0599001001001800.',
  );
  assert.equal(
    text(helpers.readableDates('For an advance (P0103) sbCumInvoiceDate 01092025 must be on or after the remittance date 2025-09-12 of IRM X.')),
    'For an advance (P0103) sbCumInvoiceDate 1 Sep 2025 must be on or after the remittance date 12 Sep 2025 of IRM X.',
  );
  // Escaped; an eight-digit invoice number is no date; a value quoted as sent stays as sent.
  assert.equal(helpers.readableDates('Invoice <12012026> is used twice.'), 'Invoice &lt;12012026&gt; is used twice.');
  assert.equal(helpers.readableDates('irmDt must be a real date (got "2026-02-30").'), 'irmDt must be a real date (got &quot;2026-02-30&quot;).');
  assert.equal(helpers.readableDates('gstinInvoiceDate must be ddMMyyyy (got "2026-11-23").'), 'gstinInvoiceDate must be ddMMyyyy (got &quot;2026-11-23&quot;).');
});
