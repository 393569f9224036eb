import assert from 'node:assert/strict';
import { SYSTEM_SOURCE } from '../../src/services/audit.ts';
import { describe, test } from 'node:test';
import { PgBoss } from 'pg-boss';
import { loadConfig } from '../../src/config.ts';
import { createService, type Service } from '../../src/service.ts';
import { createPlatform } from '../../src/services/platforms.ts';
import { backends, injectRequest, scratchDatabase, startTestSandbox, type Backend } from '../support/harness.ts';
import { lineFor, pushBody, sleep, usableIrms, verifiedCustomer } from '../support/workflow.ts';

/**
 * A process that dies while it works a request's poll job leaves that job `active` in pg-boss. Its expiry is long (2 ×
 * the authority deadline + 30 s: 150 s here), and the request must not wait for it: the next start cancels what a dead
 * process left running and polls again at once (embedded), or the job's missing heartbeat gives it away (PostgreSQL).
 */
const AUTHORITY_TIMEOUT_MS = 60_000;
const JOB_EXPIRY_MS = 2 * AUTHORITY_TIMEOUT_MS + 30_000;

async function orphanedJob(backend: Backend): Promise<number> {
  const scratch = await scratchDatabase(backend);
  // The authority keeps running while the service's process dies and starts again; it processes pushes at once.
  const sandbox = await startTestSandbox(scratch, { processingDelayMs: 0 }).catch(async (error: unknown) => {
    await scratch.drop();
    throw error;
  });
  const env = {
    DATA_DIR: scratch.dataDir,
    ...(scratch.databaseUrl ? { DATABASE_URL: scratch.databaseUrl } : {}),
    AUTHORITY_URL: sandbox.url,
    POLL_INTERVAL_SECONDS: '1',
    AUTHORITY_TIMEOUT_MS: String(AUTHORITY_TIMEOUT_MS),
    LOG_LEVEL: 'silent',
  };
  let service: Service | undefined;
  try {
    service = await createService({ config: loadConfig({ ...env, RUN_POLLER: 'false' }), logger: false });
    const { apiKey } = await createPlatform(service.database.db, 'Orphans', SYSTEM_SOURCE);
    const running = service;
    const client = { request: (method: string, url: string, options = {}) => injectRequest(running, method, url, { key: apiKey, ...options }) };
    const customerId = await verifiedCustomer(client, `orphan-${backend}@example.com`);
    const [irm] = await usableIrms(client, customerId, 1);
    const ack = await client.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(customerId, [lineFor(irm, 1, 1)]) });
    assert.equal(ack.body?.ackStatus, 'Validated', ack.text);

    // Another worker takes the request's job, as a process about to be killed would, and never finishes it.
    const dying = new PgBoss({ db: service.database.executor as never, supervise: false, schedule: false });
    await dying.start();
    let taken: unknown[] = [];
    for (let tries = 0; taken.length === 0 && tries < 50; tries++) {
      await sleep(100);
      taken = await dying.fetch('genebrc-advance');
    }
    assert.equal(taken.length, 1, "the request's job is taken");
    await dying.stop({ graceful: false });
    await service.close();

    const restartedAt = Date.now();
    service = await createService({ config: loadConfig({ ...env, RUN_POLLER: 'true' }), logger: false });
    for (;;) {
      const row = await service.database.db.selectFrom('genebrc_requests').select('status').where('request_id', '=', ack.body.requestId).executeTakeFirstOrThrow();
      if (row.status === 'PROCESSED') return Date.now() - restartedAt;
      assert.ok(Date.now() - restartedAt < JOB_EXPIRY_MS / 3, `still ${row.status} after ${Date.now() - restartedAt} ms: the request waited for its job's expiry`);
      await sleep(200);
    }
  } finally {
    try {
      await service?.close();
      await sandbox.close();
    } finally {
      await scratch.drop();
    }
  }
}

describe('a poll job left running by a dead process', { concurrency: true }, () => {
  for (const backend of backends()) {
    test(`does not hold its request until the job expires [${backend}]`, async (t) => {
      const settledMs = await orphanedJob(backend);
      t.diagnostic(`settled ${settledMs} ms after the restart (the job's expiry: ${JOB_EXPIRY_MS} ms)`);
    });
  }
});
