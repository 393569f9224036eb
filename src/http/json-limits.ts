/**
 * What a JSON body parsed off the event loop may hold (./json-off-thread.ts): no object of this API has more than a
 * few dozen fields, so one with more than MAX_KEYS_PER_OBJECT is refused before it is handed to the event loop (where
 * copying and checking 420,000 unknown fields took a second); and no `__proto__` or `constructor.prototype` keys,
 * as Fastify's own parser refuses them.
 */
export const MAX_KEYS_PER_OBJECT = 1_000;

/**
 * How deep a body parsed off the event loop may nest: this API's bodies nest four levels at most, and a value much
 * deeper cannot be handed back to the event loop (the structured clone of an array nested 9,000 deep fails there,
 * and the request would never be answered).
 */
export const MAX_DEPTH = 64;

export type ParsedJsonProblem = { code: 'too_deep' | 'too_many_fields' | 'forbidden_property'; message: string };

/** A problem with a parsed body; null when it may be handed on. Iterative: never recursion-bound. */
export function checkParsedJson(value: unknown): ParsedJsonProblem | null {
  const pending: Array<{ node: unknown; depth: number }> = [{ node: value, depth: 0 }];
  while (pending.length > 0) {
    const { node, depth } = pending.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth >= MAX_DEPTH) return { code: 'too_deep', message: `The body nests deeper than ${MAX_DEPTH} levels; no body this API takes nests more than a few.` };
    if (Array.isArray(node)) {
      for (const item of node) pending.push({ node: item, depth: depth + 1 });
      continue;
    }
    const keys = Object.keys(node);
    if (keys.length > MAX_KEYS_PER_OBJECT) {
      return { code: 'too_many_fields', message: `An object in the body has ${keys.length} fields; no object this API takes has more than ${MAX_KEYS_PER_OBJECT}.` };
    }
    for (const key of keys) {
      const child = (node as Record<string, unknown>)[key];
      if (key === '__proto__' || (key === 'constructor' && child !== null && typeof child === 'object' && Object.hasOwn(child, 'prototype'))) {
        return { code: 'forbidden_property', message: 'The body has a forbidden prototype property.' };
      }
      pending.push({ node: child, depth: depth + 1 });
    }
  }
  return null;
}
