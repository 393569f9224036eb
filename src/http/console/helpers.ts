import { AUTHORITY_ERROR_CODES, isAuthorityErrorCode } from '../../authority/protocol/error-codes.ts';
import { parseIsoDate, parseLineDate, toIsoDate, type CalendarDate } from '../../domain/dates.ts';
import { LINE_ERROR_CODES } from '../../domain/line-error-codes.ts';
import { assetHref } from './assets.ts';

/**
 * What templates format with (`it.h` in every view): times, dates, money, statuses, codes, links. Each returns text
 * that the template escapes (`<%= %>`), except `time`, `day` and `readableDates`, which return markup they have
 * escaped themselves (`<%~ %>`).
 */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (char) => ESCAPES[char]!);
}

/** "2026-11-22 14:05 UTC": what a time shows before (or without) the script that shows it in the user's zone. */
function utcText(date: Date): string {
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/**
 * A moment as `<time>`: the UTC text, which console.js replaces with the user's own zone, keeping the UTC text in
 * the title (shown on hover). '—' when there is none.
 */
function time(value: string | Date | null | undefined): string {
  if (value === null || value === undefined || value === '') return '<span class="none">—</span>';
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) return escapeHtml(value);
  const iso = escapeHtml(date.toISOString());
  const utc = escapeHtml(utcText(date));
  return `<time datetime="${iso}" title="${utc}" data-local>${utc}</time>`;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

function calendarText(date: CalendarDate): string {
  return `${date.day} ${MONTHS[date.month - 1]} ${date.year}`;
}

/** A calendar date as `<time>`: "23 Nov 2026", which console.js shows in the user's own way, as it shows times. */
function dayMarkup(date: CalendarDate): string {
  return `<time datetime="${toIsoDate(date)}" data-day>${calendarText(date)}</time>`;
}

/**
 * A calendar date as text people read, "23 Nov 2026", whichever form it comes in: the API's `YYYY-MM-DD` (IRMs,
 * eBRCs) or a push line's `ddMMyyyy`. Anything else is returned as it is.
 */
function dayText(value: string): string {
  const date = parseLineDate(value);
  return date === null ? value : calendarText(date);
}

/** The same as markup (`<%~ %>`): a `<time>` that console.js formats like the times; '—' when there is none. */
function day(value: string | null | undefined): string {
  if (value === null || value === undefined || value === '') return '<span class="none">—</span>';
  const date = parseLineDate(value);
  return date === null ? escapeHtml(value) : dayMarkup(date);
}

/** Date fields of a push line, as the authority's and this service's messages name them before a ddMMyyyy value. */
/** In escaped text: a ddMMyyyy value after a line date field or the word "date", or an ISO date not quoted as sent. */
const DATE_IN_TEXT = /\b(irmDt|sbCumInvoiceDate|gstinInvoiceDate|date) (\d{8})\b|(?<!got &quot;)\b(\d{4}-\d{2}-\d{2})\b/g;

/**
 * A message as markup (`<%~ %>`, escaped here) with its dates as the console shows every date: "irmDt 23112026 does
 * not match the issue date 2026-11-22" reads "irmDt 23 Nov 2026 does not match the issue date 22 Nov 2026". Only a
 * line date field's value and ISO dates are rewritten (an invoice number of eight digits is not a date); a value
 * quoted as sent ("got …") is left as it was sent.
 */
function readableDates(message: string): string {
  // One pass, so that no date is looked for inside the markup of another.
  return escapeHtml(message).replace(DATE_IN_TEXT, (whole, field: string | undefined, lineDate: string | undefined, isoDate: string | undefined) => {
    const date = field === undefined ? parseIsoDate(isoDate!) : parseLineDate(lineDate!);
    if (date === null) return whole;
    return field === undefined ? dayMarkup(date) : `${field} ${dayMarkup(date)}`;
  });
}

const moneyFormats = new Map<string, Intl.NumberFormat>();

/**
 * An amount with its currency, "USD 1,234.50", formatted from its decimal text (never through a rounding of its
 * own: the API's amounts have at most two decimals, and so does this). '—' when there is none.
 */
function money(amount: number | string | null | undefined, currency: string | null | undefined): string {
  if (amount === null || amount === undefined || amount === '') return '—';
  const code = currency ?? '';
  const decimal = typeof amount === 'number' ? String(amount) : amount;
  if (!/^[A-Z]{3}$/.test(code) || !/^-?\d+(\.\d+)?$/.test(decimal)) return `${code} ${decimal}`.trim();
  let format = moneyFormats.get(code);
  if (format === undefined) {
    format = new Intl.NumberFormat('en', { style: 'currency', currency: code, currencyDisplay: 'code', minimumFractionDigits: 2, maximumFractionDigits: 2 });
    moneyFormats.set(code, format);
  }
  // A string keeps every digit (Intl.NumberFormat formats decimal strings exactly); a code before the amount: "USD 1,234.50".
  return format.format(decimal as unknown as number).replace(/\u00a0/g, ' ');
}

/** A count with thousands separators. */
function count(value: number): string {
  return value.toLocaleString('en');
}

/** The tone of a status badge (its text says the status; the tone only repeats it). */
function tone(status: string): 'good' | 'bad' | 'warn' | 'neutral' {
  switch (status) {
    case 'PROCESSED':
    case 'GENERATED':
    case 'generated':
    case 'valid':
    case 'succeeded':
    case 'enabled':
      return 'good';
    case 'FAILED':
    case 'ERRORED':
    case 'cancelled':
    case 'invalid':
    case 'failed':
    case 'disabled':
      return 'bad';
    case 'PARTIALLY_PROCESSED':
    case 'PENDING':
    case 'pending':
      return 'warn';
    default:
      return 'neutral';
  }
}

/** A status as people read it: "PARTIALLY_PROCESSED" → "Partially processed". */
function statusLabel(status: string): string {
  const words = status.replaceAll('_', ' ').toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** What an error code of a push or a line means (the authority's tables and this service's), or null. */
function explain(code: string): string | null {
  if (isAuthorityErrorCode(code)) return AUTHORITY_ERROR_CODES[code].meaning;
  return Object.hasOwn(LINE_ERROR_CODES, code) ? LINE_ERROR_CODES[code]! : null;
}

/** A link to `path` with these query parameters (blank ones left out). */
function href(path: string, params: Record<string, string | number | undefined | null> = {}): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') query.set(name, String(value));
  }
  const search = query.toString();
  return search === '' ? path : `${path}?${search}`;
}

const ROLE_LABELS: Record<string, string> = { owner: 'Owner', operator: 'Operator', viewer: 'Viewer' };

/** A console role as the pages name it. */
function roleLabel(role: string): string {
  return ROLE_LABELS[role] ?? role;
}

export const helpers = { time, day, dayText, readableDates, money, count, tone, statusLabel, explain, href, roleLabel, asset: assetHref };
export type Helpers = typeof helpers;
