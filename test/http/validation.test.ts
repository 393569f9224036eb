import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { hasUnstorableText, unstorableText } from '../../src/http/validation.ts';

/** Text PostgreSQL cannot keep as sent: NUL, or a surrogate without its pair. */
const unstorable = fc.constantFrom('\u0000', 'a\u0000b', '\uD800', 'x\uDC00', '\uDFFF\uD800');
const text = fc.oneof(fc.string({ unit: 'binary' }), unstorable);
const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, text, fc.integer(), fc.boolean(), fc.constant(null), tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 5 }),
  object: fc.dictionary(fc.string(), tie('value'), { maxKeys: 5 }),
})).value;

describe('text the database cannot keep', () => {
  test('the quick check every request runs agrees with the full report, for any JSON value', () => {
    fc.assert(
      fc.property(json, (value) => {
        assert.equal(hasUnstorableText(value), unstorableText(value, '', Number.POSITIVE_INFINITY).length > 0);
      }),
      { numRuns: 2_000 },
    );
  });

  test('a body nested 100,000 levels deep is checked without overflowing the stack', () => {
    let clean: unknown = 'text';
    let dirty: unknown = 'te\u0000xt';
    for (let depth = 0; depth < 100_000; depth++) {
      clean = [clean];
      dirty = { inner: dirty };
    }
    assert.equal(hasUnstorableText(clean), false);
    assert.equal(hasUnstorableText(dirty), true);
  });

  test('the report names each bad field by its JSON pointer', () => {
    const found = unstorableText({ lines: [{ billNo: 'B\u0000' }, { 'a/b': '\uD800' }] }, '/body');
    assert.deepEqual(found.map((problem) => [problem.path, problem.code]), [
      ['/body/lines/0/billNo', 'invalid_character'],
      ['/body/lines/1/a~1b', 'invalid_character'],
    ]);
  });
});
