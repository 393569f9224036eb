/**
 * What a JSON body parsed off the event loop may hold (./json-off-thread.ts): no object of this API has more than a
 * few dozen fields, so one with more than MAX_KEYS_PER_OBJECT is refused before it is handed to the event loop (where
 * copying and checking 420,000 unknown fields took a second); and no `__proto__` or `constructor.prototype` keys,
 * as Fastify's own parser refuses them.
 */
export const MAX_KEYS_PER_OBJECT = 1_000;

/** A problem with a parsed body, as a sentence; null when it may be handed on. Iterative: no depth limit applies. */
export function checkParsedJson(value: unknown): string | null {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const node = pending.pop();
    if (node === null || typeof node !== 'object') continue;
    if (Array.isArray(node)) {
      for (const item of node) pending.push(item);
      continue;
    }
    const keys = Object.keys(node);
    if (keys.length > MAX_KEYS_PER_OBJECT) return `An object in the body has ${keys.length} fields; no object this API takes has more than ${MAX_KEYS_PER_OBJECT}.`;
    for (const key of keys) {
      const child = (node as Record<string, unknown>)[key];
      if (key === '__proto__' || (key === 'constructor' && child !== null && typeof child === 'object' && Object.hasOwn(child, 'prototype'))) {
        return 'The body has a forbidden prototype property.';
      }
      pending.push(child);
    }
  }
  return null;
}
