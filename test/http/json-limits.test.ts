import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_DEPTH, MAX_KEYS_PER_OBJECT, checkParsedJson } from '../../src/http/json-limits.ts';
import { parseJsonOffThread } from '../../src/http/json-off-thread.ts';

const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

test('a body nested deeper than any this API takes is refused as too_deep, however deep', () => {
  assert.equal(checkParsedJson(JSON.parse(`{"a":${nested(MAX_DEPTH - 2)}}`)), null);
  assert.equal(checkParsedJson(JSON.parse(`{"a":${nested(MAX_DEPTH + 1)}}`))?.code, 'too_deep');
  assert.equal(checkParsedJson(JSON.parse(nested(9_344)))?.code, 'too_deep');
});

test('each refusal has its own code', () => {
  const wide = Object.fromEntries(Array.from({ length: MAX_KEYS_PER_OBJECT + 1 }, (_, index) => [`k${index}`, index]));
  assert.equal(checkParsedJson(wide)?.code, 'too_many_fields');
  assert.equal(checkParsedJson(JSON.parse('{"a":{"__proto__":{"x":1}}}'))?.code, 'forbidden_property');
});

test('a large body nested 9,344 deep is answered by the worker (it once never was: its clone failed on the way back)', async () => {
  const text = `{"pad":"${'x'.repeat(300_000)}","deep":${nested(9_344)}}`;
  const outcome = await parseJsonOffThread(text);
  assert.ok('failure' in outcome, 'refused');
  assert.equal(outcome.failure.kind, 'shape');
  if (outcome.failure.kind === 'shape') assert.equal(outcome.failure.code, 'too_deep');
});

test('the worker says whether a body holds text the database cannot keep (NUL, an unpaired surrogate), wherever it is', async () => {
  const pad = 'x'.repeat(300_000);
  const clean = await parseJsonOffThread(JSON.stringify({ pad, lines: [{ a: 'ok \ud83d\ude00' }] }));
  assert.ok('value' in clean && clean.storable);
  for (const bad of ['a\\u0000b', '\\ud800', 'x\\udfff']) {
    const outcome = await parseJsonOffThread(`{"pad":"${pad}","lines":[{"a":"ok"},{"b":["${bad}"]}]}`);
    assert.ok('value' in outcome && !outcome.storable, bad);
  }
});
