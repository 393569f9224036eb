import { overview, type CurrencyTotal, type DayCount } from '../../../services/console-overview.ts';
import type { Api, Deps } from '../../deps.ts';
import { helpers } from '../helpers.ts';
import type { ConsolePage } from '../page.ts';
import { platformOf, render } from '../render.ts';

const OVERVIEW = '/console/overview';
/** "3 Jun 2026" for 2026-06-03, as every date of the console reads (as text: the chart's titles and table). */
const longDay = helpers.dayText;

/** "3 Jun": the same without its year, under the bars. */
function shortDay(day: string): string {
  return longDay(day).replace(/ \d{4}$/, '');
}

/** The top of the count axis: the largest count rounded up to 1, 2 or 5 times a power of ten (at least 4, for halves). */
function axisTop(largest: number): number {
  if (largest <= 4) return 4;
  const power = 10 ** Math.floor(Math.log10(largest));
  return [1, 2, 5, 10].map((step) => step * power).find((top) => top >= largest) ?? largest;
}

/**
 * The per-day chart drawn as SVG by the view: every coordinate here (viewBox units), so the view only places them.
 * Counts are whole numbers; nothing here is money.
 */
function dayChart(days: readonly DayCount[]) {
  const width = 480;
  const height = 230;
  const plot = { left: 44, right: 8, top: 22, bottom: 38 };
  const plotWidth = width - plot.left - plot.right;
  const plotHeight = height - plot.top - plot.bottom;
  const top = axisTop(Math.max(0, ...days.map((day) => day.ebrcs)));
  const slot = plotWidth / days.length;
  const bars = days.map((day, index) => {
    const barHeight = (day.ebrcs / top) * plotHeight;
    const x = plot.left + index * slot + slot * 0.15;
    return {
      day: day.day,
      label: longDay(day.day),
      ebrcs: day.ebrcs,
      x: x.toFixed(1),
      y: (plot.top + plotHeight - barHeight).toFixed(1),
      width: (slot * 0.7).toFixed(1),
      height: barHeight.toFixed(1),
      centre: (x + slot * 0.35).toFixed(1),
      today: index === days.length - 1,
    };
  });
  const ticks = [0, top / 2, top].map((value) => ({ value, y: (plot.top + plotHeight - (value / top) * plotHeight).toFixed(1) }));
  // A date under every seventh bar, counting back from today (which is always labelled).
  const dates = bars.filter((_bar, index) => (days.length - 1 - index) % 7 === 0).map((bar) => ({ x: bar.centre, text: bar.today ? 'Today' : shortDay(bar.day) }));
  return { width, height, left: plot.left, right: width - plot.right, baseline: (plot.top + plotHeight).toFixed(1), bars, ticks, dates, dateY: height - 12 };
}

/**
 * The realised-value chart: one row per currency, its amount printed, its bar the number of eBRCs in that currency.
 * Amounts in different currencies share no scale (USD 10,000 and INR 800,000 are not a bar 80 times longer), so the
 * bars measure the one thing they share, a count, scaled to the currency with the most eBRCs; no amount is converted,
 * added or compared across currencies, and none passes through a float. Each row is two lines, the currency and its
 * amount above the bar, so that a long amount never runs past the chart on a phone.
 */
export function currencyChart(currencies: readonly CurrencyTotal[]) {
  const width = 400;
  const row = 58;
  const barStart = 52;
  const barSpace = width - barStart - 4;
  const largest = Math.max(0, ...currencies.map((entry) => entry.ebrcs));
  const rows = currencies.map((entry, index) => {
    const barWidth = entry.ebrcs > 0 ? Math.max((entry.ebrcs / largest) * barSpace, 2) : 0;
    const y = 4 + index * row;
    return {
      currency: entry.currency,
      text: helpers.money(entry.amount, entry.currency),
      ebrcs: entry.ebrcs,
      count: `${helpers.count(entry.ebrcs)} ${entry.ebrcs === 1 ? 'eBRC' : 'eBRCs'}`,
      y,
      textY: y + 12,
      barY: y + 26,
      barHeight: 18,
      barWidth: barWidth.toFixed(1),
      amountX: barStart,
    };
  });
  return { width, height: 8 + currencies.length * row, barStart, rows };
}

export const overviewPage: ConsolePage = {
  nav: { label: 'Overview', href: OVERVIEW },
  routes(app: Api, deps: Deps): void {
    app.get('/overview', async (request, reply) => {
      const figures = await overview(deps.database.db, platformOf(request));
      return render(request, reply, 'overview/index', {
        title: 'Overview',
        figures,
        from: longDay(figures.fromDay),
        to: longDay(figures.toDay),
        days: dayChart(figures.days),
        currencies: currencyChart(figures.currencies),
      });
    });
  },
};
