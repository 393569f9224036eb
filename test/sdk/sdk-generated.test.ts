import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { buildDocument, DOCUMENT_FILE, documentText, SCHEMA_FILE, schemaText } from '../../packages/sdk/scripts/document.ts';

test("the SDK's openapi.json and src/schema.d.ts are what the service's routes generate now (else: npm run sdk:generate)", async () => {
  const document = await buildDocument();
  assert.ok(documentText(document) === fs.readFileSync(DOCUMENT_FILE, 'utf8'), 'packages/sdk/openapi.json is stale: run `npm run sdk:generate`');
  assert.ok((await schemaText(document)) === fs.readFileSync(SCHEMA_FILE, 'utf8'), 'packages/sdk/src/schema.d.ts is stale: run `npm run sdk:generate`');
});

test("the README's SDK example is packages/sdk/examples/quickstart.ts verbatim (which sdk-flow.test.ts runs)", () => {
  const root = new URL('../../', import.meta.url);
  const readme = fs.readFileSync(new URL('README.md', root), 'utf8');
  const example = fs.readFileSync(new URL('packages/sdk/examples/quickstart.ts', root), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Use the SDK'));
  assert.ok(readme.indexOf('\n## Use the SDK') > readme.indexOf('\n## From a new customer to eBRC numbers'), 'the section follows the curl walk-through');
  assert.ok(section.includes('```ts\n' + example + '```'), 'the README holds the example as the file has it');
});
