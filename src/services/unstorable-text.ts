import { isStorableText } from '../domain/storable-text.ts';
import type { FieldError } from '../errors.ts';

// Text PostgreSQL cannot keep as it was sent, in a request. Its own module (no ajv): the JSON parse worker checks large
// bodies with it.

/**
 * Whether JSON text, once parsed, may hold text that unstorableText would report. JSON refuses raw control characters,
 * so a NUL can come only from a `\u` escape, and so can an unpaired surrogate when the text itself is well formed (as
 * text decoded from UTF-8 always is). A body without `\u`, nearly every body, need not be walked after it is parsed.
 */
export function jsonTextMayHoldUnstorableText(text: string): boolean {
  return text.includes('\\u') || !text.isWellFormed();
}

/**
 * Whether `value` holds any text that unstorableText would report: the cheap check every request runs, building no
 * paths. Iterative, like unstorableText: a body may nest thousands of levels deep.
 */
export function hasUnstorableText(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const current = pending.pop();
    if (typeof current === 'string') {
      if (!isStorableText(current)) return true;
    } else if (current !== null && typeof current === 'object') {
      for (const key in current) pending.push((current as Record<string, unknown>)[key]);
    }
  }
  return false;
}

/**
 * Text the database cannot keep as it was sent: a NUL character (PostgreSQL text and jsonb refuse it), or an unpaired
 * surrogate (not Unicode; it would be stored as U+FFFD, another text than the one sent). Returns a field problem for
 * each such string in a parsed body, query or path (at most `limit`), with its JSON pointer under `base`.
 */
export function unstorableText(value: unknown, base = '', limit = 10): FieldError[] {
  const found: FieldError[] = [];
  const pending: [unknown, string][] = [[value, base]];
  while (pending.length > 0 && found.length < limit) {
    const [current, path] = pending.pop()!;
    if (typeof current === 'string') {
      if (!isStorableText(current)) {
        found.push({
          path,
          code: 'invalid_character',
          message: `${path.split('/').pop() || 'The text'} must not contain the NUL character or an unpaired surrogate.`,
        });
      }
    } else if (current !== null && typeof current === 'object') {
      for (const [key, item] of Object.entries(current)) pending.push([item, `${path}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`]);
    }
  }
  return found.sort((a, b) => (a.path < b.path ? -1 : 1));
}
