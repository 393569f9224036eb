/**
 * Regenerates the SDK's openapi.json and src/schema.d.ts from the service's own routes:
 *   npm run sdk:generate          (at the repository's root)
 *   npm run generate -w @ebrc-gateway/sdk
 * test/sdk/generated.test.ts fails while either file differs from what this writes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { buildDocument, DOCUMENT_FILE, documentText, SCHEMA_FILE, schemaText } from './document.ts';

const document = await buildDocument();
fs.writeFileSync(DOCUMENT_FILE, documentText(document));
fs.writeFileSync(SCHEMA_FILE, await schemaText(document));
for (const file of [DOCUMENT_FILE, SCHEMA_FILE]) console.log(`wrote ${path.relative(process.cwd(), file)}`);
