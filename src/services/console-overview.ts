import type { Kysely } from 'kysely';
import { formatCents, parseDecimalString, type Cents } from '../domain/money.ts';
import { ebrcsPerDay, realisedPerCurrency, type ChartWindow } from '../store/console-charts.ts';
import type { Schema } from '../store/schema.ts';

/** The console's overview charts cover this many UTC days, today the last of them. */
export const OVERVIEW_DAYS = 30;
/** How long before the window a push may have been made and still have its eBRCs counted in it. */
const PROCESSING_MARGIN_DAYS = 30;
const DAY_MS = 86_400_000;

export type DayCount = { day: string; ebrcs: number };
/** A currency's realised value: exact cents, and the decimal text ("1566.25") the page formats. */
export type CurrencyTotal = { currency: string; cents: Cents; amount: string; ebrcs: number };

export type Overview = {
  fromDay: string;
  toDay: string;
  /** Every day of the window, oldest first, with 0 for a day without eBRCs. */
  days: DayCount[];
  today: number;
  total: number;
  /** Most eBRCs first, then by currency code: amounts in different currencies are never compared. */
  currencies: CurrencyTotal[];
};

function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** The window of the overview ending today (UTC), as the store reads it. */
export function overviewWindow(platformId: string, now: Date): ChartWindow {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const from = today - (OVERVIEW_DAYS - 1) * DAY_MS;
  return { platformId, fromDay: utcDay(new Date(from)), toDay: utcDay(new Date(today)), pushedSince: new Date(from - PROCESSING_MARGIN_DAYS * DAY_MS) };
}

/** The platform's eBRCs of the last 30 UTC days: per day (zero days included) and realised value per currency. */
export async function overview(db: Kysely<Schema>, platformId: string, now = new Date()): Promise<Overview> {
  const window = overviewWindow(platformId, now);
  const [perDay, perCurrency] = await Promise.all([ebrcsPerDay(db, window), realisedPerCurrency(db, window)]);
  const counted = new Map(perDay.map((row) => [row.day, row.ebrcs]));
  const start = Date.parse(`${window.fromDay}T00:00:00Z`);
  const days: DayCount[] = [];
  for (let index = 0; index < OVERVIEW_DAYS; index++) {
    const day = utcDay(new Date(start + index * DAY_MS));
    days.push({ day, ebrcs: counted.get(day) ?? 0 });
  }
  const currencies = perCurrency
    .map((row) => {
      const cents = parseDecimalString(row.amount);
      return { currency: row.currency, cents, amount: formatCents(cents), ebrcs: row.ebrcs };
    })
    .sort((a, b) => b.ebrcs - a.ebrcs || a.currency.localeCompare(b.currency));
  return {
    fromDay: window.fromDay,
    toDay: window.toDay,
    days,
    today: days.at(-1)?.ebrcs ?? 0,
    total: days.reduce((sum, day) => sum + day.ebrcs, 0),
    currencies,
  };
}
