/**
 * Spreadsheet formula injection (OWASP "CSV Injection"): a spreadsheet program evaluates a CSV cell that starts with
 * `=`, `+`, `-` or `@` as a formula (a leading tab or carriage return can hide such a start), so text that came from
 * elsewhere (the authority, an exporter) must not reach a CSV cell as it is. The template guards every CSV cell with a
 * leading single quote, which spreadsheet programs take as "this is text". In XLSX it writes string cells in
 * text-formatted columns, which Excel never evaluates, so no quote is added there.
 *
 * An upload reader calls unguardCellText on every cell's text, CSV or XLSX, as read and before trimming it: a guarded
 * cell comes back as the original text. Text that itself starts with quotes before a trigger (`'=x`) gets one more
 * quote from either guard, so that unguardCellText gives it back exactly too.
 */

/** The first characters that make a spreadsheet program read a cell as a formula (OWASP's list). */
export const FORMULA_TRIGGERS: ReadonlySet<string> = new Set(['=', '+', '-', '@', '\t', '\r']);

/** What the guard puts in front of a cell that would otherwise be read as a formula. */
export const FORMULA_GUARD = "'";

/** How many guard characters the text starts with, and whether a trigger comes right after them. */
function leadingGuards(text: string): { guards: number; triggerNext: boolean } {
  let guards = 0;
  while (text[guards] === FORMULA_GUARD) guards++;
  const next = text[guards];
  return { guards, triggerNext: next !== undefined && FORMULA_TRIGGERS.has(next) };
}

/** The text as a CSV cell may safely hold it: one single quote more in front when a trigger follows its quotes. */
export function guardCellText(text: string): string {
  return leadingGuards(text).triggerNext ? FORMULA_GUARD + text : text;
}

/**
 * The text for an XLSX string cell (never evaluated): as it is, unless unguardCellText would take a quote off it,
 * in which case it is guarded so that the reader gives it back exactly.
 */
export function guardStringCellText(text: string): string {
  const { guards, triggerNext } = leadingGuards(text);
  return guards > 0 && triggerNext ? FORMULA_GUARD + text : text;
}

/**
 * A cell's text as it was before guardCellText or guardStringCellText: a single quote comes off when quotes and then
 * a trigger start the text. Any other text (a lone quote, a quote before anything else) is returned unchanged.
 */
export function unguardCellText(text: string): string {
  const { guards, triggerNext } = leadingGuards(text);
  return guards > 0 && triggerNext ? text.slice(1) : text;
}
