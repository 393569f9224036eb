import { AUTHORITY_ERROR_CODES, isAuthorityErrorCode } from '../../authority/protocol/error-codes.ts';
import { LINE_ERROR_CODES } from '../../domain/line-error-codes.ts';
import { assetHref } from './assets.ts';

/**
 * What templates format with (`it.h` in every view): times, money, statuses, codes, links. Each returns text that
 * the template escapes (`<%= %>`), except `time`, which returns markup it has escaped itself (`<%~ %>`).
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

export const helpers = { time, money, count, tone, statusLabel, explain, href, asset: assetHref };
export type Helpers = typeof helpers;
