import assert from 'node:assert/strict';
import { SYSTEM_SOURCE } from '../../src/services/audit.ts';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { createService } from '../../src/service.ts';
import { createPlatform } from '../../src/services/platforms.ts';
import { NO_AUTHORITY } from '../support/gateway.ts';
import { backends, injectRequest, scratchDatabase, startTestSandbox, type Backend } from '../support/harness.ts';
import { verifiedCustomer } from '../support/workflow.ts';

const MAIN = path.join(import.meta.dirname, '../../src/main.ts');

function configFor(scratch: { dataDir: string; databaseUrl?: string }, encryptionKey: string, authorityUrl = NO_AUTHORITY) {
  return loadConfig({
    DATA_DIR: scratch.dataDir,
    ...(scratch.databaseUrl ? { DATABASE_URL: scratch.databaseUrl } : {}),
    AUTHORITY_URL: authorityUrl,
    ENCRYPTION_KEY: encryptionKey,
    RUN_POLLER: 'false',
    LOG_LEVEL: 'silent',
  });
}

function refusedForTheKey(error: unknown): boolean {
  return error instanceof ConfigError && /encryption key/.test(error.message) && /check [0-9a-f]{12}/.test(error.message);
}

async function keyCheck(backend: Backend): Promise<void> {
  const scratch = await scratchDatabase(backend);
  const original = randomBytes(32).toString('base64');
  const other = randomBytes(32).toString('base64');
  // The customer is verified, and its IRMs refreshed, with the sandbox program.
  const sandbox = await startTestSandbox(scratch);
  try {
    const first = await createService({ config: configFor(scratch, original, sandbox.url), logger: false });
    const { apiKey } = await createPlatform(first.database.db, 'Keys', SYSTEM_SOURCE);
    const customerId = await verifiedCustomer({ request: (m, u, o = {}) => injectRequest(first, m, u, { key: apiKey, ...o }) }, `keys-${backend}@example.com`);
    await first.close();

    await assert.rejects(createService({ config: configFor(scratch, other), logger: false }), refusedForTheKey, 'another key is refused at start');

    // A database from before the check: the stored credentials tell.
    const again = await createService({ config: configFor(scratch, original), logger: false });
    await again.database.db.deleteFrom('installation_settings').execute();
    await again.close();
    await assert.rejects(createService({ config: configFor(scratch, other), logger: false }), refusedForTheKey, 'credentials sealed under another key');

    const right = await createService({ config: configFor(scratch, original, sandbox.url), logger: false });
    try {
      const customer = await injectRequest(right, 'POST', '/api/v1/irm/refresh', { key: apiKey, query: { platformCustomerId: customerId, limit: 1 }, body: {} });
      assert.equal(customer.status, 200, `the right key opens the credentials: ${customer.text}`);
    } finally {
      await right.close();
    }
  } finally {
    await sandbox.close();
    await scratch.drop();
  }
}

describe('the encryption key is checked at start', { concurrency: true }, () => {
  for (const backend of backends()) {
    test(`a process with another key than the data was written with does not start [${backend}]`, () => keyCheck(backend));
  }

  test('npm start with the wrong key exits 1 with a message that names the problem and not the key', async () => {
    const scratch = await scratchDatabase('embedded');
    try {
      const original = randomBytes(32).toString('base64');
      await (await createService({ config: configFor(scratch, original), logger: false })).close();
      const other = randomBytes(32).toString('base64');
      const child = spawn(process.execPath, [MAIN], {
        env: { PATH: process.env.PATH ?? '', DATA_DIR: scratch.dataDir, AUTHORITY_URL: NO_AUTHORITY, ENCRYPTION_KEY: other, PORT: '0', RUN_POLLER: 'false' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      assert.equal(code, 1);
      assert.match(stderr, /^ebrc-gateway: the encryption key with the key id default \(ENCRYPTION_KEY or the key default of ENCRYPTION_KEYS, check [0-9a-f]{12}\) is not the one this database's values under that id were written with/);
      assert.ok(!stderr.includes(other) && !stderr.includes(original), 'no key in the message');
    } finally {
      await scratch.drop();
    }
  });
});
