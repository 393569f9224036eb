import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeUploadType } from '../../src/domain/upload-type.ts';

test('accepts the codes as strings and numbers', () => {
  for (const code of ['101', '102', '103', '104'] as const) {
    assert.equal(normalizeUploadType(code), code);
    assert.equal(normalizeUploadType(Number(code)), code);
  }
});

test('accepts the words case-insensitively', () => {
  assert.equal(normalizeUploadType('DIRECT_EXPORT'), '101');
  assert.equal(normalizeUploadType('goods'), '101');
  assert.equal(normalizeUploadType('Softex'), '102');
  assert.equal(normalizeUploadType('services'), '103');
  assert.equal(normalizeUploadType('deemed_export'), '104');
});

test('rejects anything else', () => {
  for (const bad of ['100', '105', 105, 101.5, ' 101', '101 ', 'EXPORT', '', null, undefined, true, {}, ['101']]) {
    assert.equal(normalizeUploadType(bad), null, String(bad));
  }
});
