import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { decodeBase64Strictly } from '../../../src/authority/protocol/base64.ts';

/** Canonical base64 by its grammar (RFC 4648 section 4, padded), with the unused bits of the last group zero. */
function isCanonicalBase64(text: string): boolean {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(text)) return false;
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  if (padding === 0) return true;
  const last = alphabet.indexOf(text[text.length - padding - 1]!);
  return (last & (padding === 2 ? 0b1111 : 0b11)) === 0;
}

const base64Alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=';
/** Text near base64: its alphabet and padding, with the characters a lenient decoder skips or reads another way. */
const nearBase64 = fc.string({ unit: fc.constantFrom(...base64Alphabet, '-', '_', ' ', '\n', '.', 'é'), maxLength: 24 });

test('decodes exactly the canonical base64 texts, and decodes them to their bytes', () => {
  fc.assert(
    fc.property(fc.oneof(nearBase64, fc.uint8Array({ maxLength: 20 }).map((bytes) => Buffer.from(bytes).toString('base64'))), (text) => {
      const decoded = decodeBase64Strictly(text);
      assert.equal(decoded !== null, isCanonicalBase64(text), JSON.stringify(text));
      if (decoded !== null) assert.equal(decoded.toString('base64'), text);
    }),
    { numRuns: 20_000 },
  );
});

test('refuses what a lenient decoder would read as other bytes', () => {
  for (const text of ['QQ', 'QR==', 'QQ==QQ==', 'Q Q==', 'QQ=\n=', '-_8=', 'QQ===', '====', 'Q===']) assert.equal(decodeBase64Strictly(text), null, text);
  assert.deepEqual(decodeBase64Strictly('QQ=='), Buffer.from('A'));
  assert.deepEqual(decodeBase64Strictly(''), Buffer.alloc(0));
});
