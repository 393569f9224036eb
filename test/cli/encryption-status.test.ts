import { SYSTEM_SOURCE } from '../../src/services/audit.ts';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { describe, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createService } from '../../src/service.ts';
import { createPlatform } from '../../src/services/platforms.ts';
import { NO_AUTHORITY } from '../support/gateway.ts';
import { backends, injectRequest, scratchDatabase, type Backend } from '../support/harness.ts';
import { runProgram } from '../support/run.ts';

const CLI = path.join(import.meta.dirname, '../../src/cli/main.ts');
const ADMIN_TOKEN = 'adm_encryption_status_0123456789abcdef';

async function encryptionStatus(backend: Backend): Promise<void> {
  const scratch = await scratchDatabase(backend);
  const a = randomBytes(32).toString('base64');
  const b = randomBytes(32).toString('base64');
  const storage = { DATA_DIR: scratch.dataDir, ...(scratch.databaseUrl ? { DATABASE_URL: scratch.databaseUrl } : {}) };
  const config = (keys: Record<string, string>) =>
    loadConfig({ ...storage, ...keys, AUTHORITY_URL: NO_AUTHORITY, RUN_POLLER: 'false', WEBHOOK_ALLOW_PRIVATE_URLS: 'true', ADMIN_TOKEN, LOG_LEVEL: 'silent' });
  try {
    // Two endpoints under A, one under B (the ring B,A without its job: RUN_POLLER=false).
    const first = await createService({ config: config({ ENCRYPTION_KEY: a }), logger: false });
    const { apiKey } = await createPlatform(first.database.db, 'Status', SYSTEM_SOURCE);
    for (const index of [1, 2]) {
      const created = await injectRequest(first, 'POST', '/api/v1/webhook-endpoints', { key: apiKey, body: { url: `http://127.0.0.1:9/hooks/${index}`, enabledEvents: ['*'] } });
      assert.equal(created.status, 201, created.text);
    }
    await first.close();
    const ring = { ENCRYPTION_KEYS: `next:${b},default:${a}` };
    const second = await createService({ config: config(ring), logger: false });
    const created = await injectRequest(second, 'POST', '/api/v1/webhook-endpoints', { key: apiKey, body: { url: 'http://127.0.0.1:9/hooks/3', enabledEvents: ['*'] } });
    assert.equal(created.status, 201, created.text);
    const expected = {
      currentKeyId: 'next',
      keys: [
        { keyId: 'next', values: 1, current: true, inRing: true },
        { keyId: 'default', values: 2, current: false, inRing: true },
      ],
    };
    const admin = await injectRequest(second, 'GET', '/admin/v1/encryption-status', { key: null, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(admin.status, 200, admin.text);
    assert.deepEqual({ currentKeyId: admin.body.currentKeyId, keys: admin.body.keys }, expected);
    assert.deepEqual(
      admin.body.columns.find((column: any) => column.table === 'webhook_endpoints' && column.column === 'secret').keys,
      { default: 2, next: 1 },
    );
    await second.close();

    const env = { ...storage, ...ring };
    const json = await runProgram(process.execPath, [CLI, 'encryption-status', '--json'], env);
    assert.equal(json.code, 0, json.stderr);
    const printed = JSON.parse(json.stdout);
    assert.deepEqual({ currentKeyId: printed.currentKeyId, keys: printed.keys }, expected);
    assert.equal(printed.columns.length, admin.body.columns.length, 'every sealed column is counted');

    const text = await runProgram(process.execPath, [CLI, 'encryption-status'], env);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^ {2}next +1 {2}current$/m);
    assert.match(text.stdout, /^ {2}default +2 {2}being re-sealed$/m);
    assert.match(text.stdout, /^ {2}webhook_endpoints\.secret +next: 1, default: 2 {2}\(webhook signing secrets\)$/m);

    // Run with B alone, the CLI still counts what is under A, and says so.
    const dropped = await runProgram(process.execPath, [CLI, 'encryption-status'], { ...storage, ENCRYPTION_KEYS: `next:${b}` });
    assert.equal(dropped.code, 0, dropped.stderr);
    assert.match(dropped.stdout, /^ {2}default +2 {2}NOT IN THE RING/m);
  } finally {
    await scratch.drop();
  }
}

describe('encryption-status', { concurrency: true }, () => {
  for (const backend of backends()) {
    test(`counts the sealed values per key id, by the CLI and the admin API [${backend}]`, () => encryptionStatus(backend));
  }
});
