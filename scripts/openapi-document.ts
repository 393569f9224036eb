/**
 * The service's OpenAPI document (what GET /openapi.json serves), written to a file or to stdout without one:
 * `node scripts/openapi-document.ts [out.json]`. It builds the app on a temporary embedded database with no background
 * work and an authority that is never called, so it needs no network and no running service. The SDK's generator
 * builds its copy with the same function.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.ts';
import { createService } from '../src/service.ts';

export async function buildDocument(): Promise<Record<string, unknown>> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-openapi-'));
  try {
    const service = await createService({
      config: loadConfig({
        DATA_DIR: dataDir,
        AUTHORITY_URL: 'http://127.0.0.1:9',
        RUN_POLLER: 'false',
        RUN_WEBHOOKS: 'false',
        LOG_LEVEL: 'silent',
      }),
      logger: false,
    });
    try {
      await service.app.ready();
      return service.app.swagger() as unknown as Record<string, unknown>;
    } finally {
      await service.close();
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The document as a file holds it. */
export function documentText(document: Record<string, unknown>): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}

if (import.meta.main) {
  const out = process.argv[2];
  const text = documentText(await buildDocument());
  if (out === undefined) process.stdout.write(text);
  else fs.writeFileSync(out, text);
}
