import path from 'node:path';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';
import { buildDocument, documentText } from '../../../scripts/openapi-document.ts';

export { buildDocument, documentText };

/** Where the generated files live, beside this script's package. */
export const PACKAGE_DIR = path.resolve(import.meta.dirname, '..');
export const DOCUMENT_FILE = path.join(PACKAGE_DIR, 'openapi.json');
export const SCHEMA_FILE = path.join(PACKAGE_DIR, 'src', 'schema.d.ts');

/** src/schema.d.ts: the document's types by openapi-typescript. */
export async function schemaText(document: Record<string, unknown>): Promise<string> {
  // openapi-typescript resolves and validates the document in place: give it a copy.
  const ast = await openapiTS(structuredClone(document) as unknown as Parameters<typeof openapiTS>[0], { alphabetize: false });
  return COMMENT_HEADER + astToString(ast);
}
