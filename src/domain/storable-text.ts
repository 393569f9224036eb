/**
 * Whether PostgreSQL can keep this text exactly as it is: no NUL character (text and jsonb refuse it) and no half of a
 * surrogate pair (not Unicode: UTF-8 cannot carry it, and it would be stored as U+FFFD).
 */
export function isStorableText(text: string): boolean {
  return !text.includes('\u0000') && text.isWellFormed();
}

/** The text as PostgreSQL can keep it: a NUL or half a surrogate pair becomes U+FFFD (the authority's eBRCs). */
export function storableText(text: string): string {
  return text.toWellFormed().replaceAll('\u0000', '\uFFFD');
}
