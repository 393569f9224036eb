import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { AUTHORITY_ERROR_CODES } from '../../src/authority/protocol/error-codes.ts';
import { ERROR_TABLE } from '../../src/errors.ts';
import { ERRORS_DOC, renderErrorsDoc } from '../../scripts/errors-doc.ts';

test('docs/errors.md is what scripts/errors-doc.ts renders from the error tables (run `npm run docs:errors` when not)', () => {
  assert.ok(fs.existsSync(ERRORS_DOC), 'docs/errors.md exists: run `npm run docs:errors`');
  assert.equal(fs.readFileSync(ERRORS_DOC, 'utf8'), renderErrorsDoc(), 'docs/errors.md is stale: run `npm run docs:errors`');
});

test('every API code has a meaning and a what-to-do sentence, and a row with its status', () => {
  const doc = renderErrorsDoc();
  for (const [code, entry] of Object.entries(ERROR_TABLE)) {
    assert.match(entry.meaning, /^[A-Z`].{10,}[.)]$/s, `${code}: meaning is a sentence`);
    assert.match(entry.action, /^[A-Z`].{10,}[.)]$/s, `${code}: action is a sentence`);
    const row = doc.split('\n').find((line) => line.startsWith(`| \`${code}\` |`));
    assert.ok(row, `${code} has a row`);
    assert.ok(row.startsWith(`| \`${code}\` | ${entry.status} |`), row);
    assert.equal(row.split(/(?<!\\)\|/).length, 7, `${code}: five cells (a | in the text is escaped)`);
  }
});

test("every authority code ERR01-ERR09 has a row saying how it shows in this API", () => {
  const doc = renderErrorsDoc();
  for (const code of Object.keys(AUTHORITY_ERROR_CODES)) {
    const row = doc.split('\n').find((line) => line.startsWith(`| ${code} |`));
    assert.ok(row, `${code} has a row`);
    assert.doesNotMatch(row, /\|\s*\|$/, `${code}: the last cell is filled`);
  }
});
