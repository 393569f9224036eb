export type CalendarDate = { year: number; month: number; day: number };

const DD_MM_YYYY = /^(\d{2})(\d{2})(\d{4})$/;
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

const MIN_YEAR = 1900;
const MAX_YEAR = 2999;

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** A real calendar date between the years 1900 and 2999, or null. */
function calendarDate(year: number, month: number, day: number): CalendarDate | null {
  if (year < MIN_YEAR || year > MAX_YEAR) return null;
  if (month < 1 || month > 12) return null;
  if (day < 1 || day > daysInMonth(year, month)) return null;
  return { year, month, day };
}

function parseDdMMyyyy(s: string): CalendarDate | null {
  const match = DD_MM_YYYY.exec(s);
  return match === null ? null : calendarDate(Number(match[3]), Number(match[2]), Number(match[1]));
}

/** Strict YYYY-MM-DD, a real date between the years 1900 and 2999. */
export function parseIsoDate(s: string): CalendarDate | null {
  const match = ISO_DATE.exec(s);
  return match === null ? null : calendarDate(Number(match[1]), Number(match[2]), Number(match[3]));
}

/** A push line date: ddMMyyyy (the authority's format) or YYYY-MM-DD. */
export function parseLineDate(s: string): CalendarDate | null {
  return parseDdMMyyyy(s) ?? parseIsoDate(s);
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

export function toDdMMyyyy(d: CalendarDate): string {
  return `${pad(d.day, 2)}${pad(d.month, 2)}${pad(d.year, 4)}`;
}

export function toIsoDate(d: CalendarDate): string {
  return `${pad(d.year, 4)}-${pad(d.month, 2)}-${pad(d.day, 2)}`;
}

/** Negative when a is earlier than b, 0 when equal, positive when later. */
export function compareDates(a: CalendarDate, b: CalendarDate): number {
  return a.year - b.year || a.month - b.month || a.day - b.day;
}

/** "15092025" → "2025-09-15"; null unless s is a real ddMMyyyy date. */
export function isoFromDdMMyyyy(s: string): string | null {
  const date = parseDdMMyyyy(s);
  return date === null ? null : toIsoDate(date);
}
