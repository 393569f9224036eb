import assert from 'node:assert/strict';
import { SYSTEM_SOURCE } from '../../src/services/audit.ts';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createService } from '../../src/service.ts';
import { createPlatform } from '../../src/services/platforms.ts';
import { injectRequest, scratchDatabase, startTestSandbox, type InjectOptions, type TestResponse } from '../support/harness.ts';
import { assertLedgerConsistent, type AcknowledgedPush } from '../support/invariants.ts';
import { reportFigures } from '../support/reliability.ts';
import { firstRefresh, lineFor, pushBody, sleep, usableIrms, verifiedCustomer } from '../support/workflow.ts';

/**
 * The embedded database's folder on a disk that fills up (a size-limited tmpfs, mounted by the test: it needs root):
 * writing requests are answered 503 database_unavailable and store nothing half-way; reads go on; once space is
 * freed, the same process writes again, without a restart, and every push retried with its key is acknowledged once.
 */

const MOUNT_MB = 96;
/** Each push maps IRMs of its own (the amounts its lines declare stay true whatever order the retries come in). */
const PUSH_LINES = 20;
const IRMS = 900;
const MAX_PUSHES = IRMS / PUSH_LINES;

function tmpfsUnavailable(): string | false {
  if (process.platform !== 'linux') return 'tmpfs: Linux only';
  if (process.getuid?.() !== 0) return 'mounting a size-limited tmpfs needs root';
  return false;
}

function freeBytes(folder: string): number {
  const stats = fs.statfsSync(folder);
  return stats.bavail * stats.bsize;
}

test('the embedded database on a full disk: 503 for writes, nothing half-stored, writing again once space is back', { skip: tmpfsUnavailable() }, async (t) => {
  const mount = fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-full-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${MOUNT_MB}m`, 'tmpfs', mount]);
  } catch (error) {
    fs.rmdirSync(mount);
    t.skip(`tmpfs cannot be mounted here: ${(error as Error).message}`);
    return;
  }
  // Whatever fails, the mount is undone: a tmpfs left mounted outlives the test run.
  const undo: (() => unknown)[] = [() => fs.rmdirSync(mount), () => execFileSync('umount', ['--lazy', mount])];
  const filler = path.join(mount, 'filler');
  try {
    const scratch = await scratchDatabase('embedded');
    undo.push(() => scratch.drop());
    const sandboxScratch = await scratchDatabase('embedded');
    undo.push(() => sandboxScratch.drop());
    const dataDir = path.join(mount, 'data');
    fs.cpSync(scratch.dataDir, dataDir, { recursive: true });
    const sandbox = await startTestSandbox(sandboxScratch);
    undo.push(() => sandbox.close());
    const service = await createService({
      config: loadConfig({ DATA_DIR: dataDir, AUTHORITY_URL: sandbox.url, RATE_LIMIT_PER_SECOND: '100000', RATE_LIMIT_BURST: '100000', POLL_INTERVAL_SECONDS: '1', LOG_LEVEL: 'silent' }),
      logger: false,
    });
    undo.push(() => service.close());
    // First, should a check fail while the disk is full: the embedded database's close writes a checkpoint.
    undo.push(() => fs.rmSync(filler, { force: true }));
    const { apiKey } = await createPlatform(service.database.db, 'Full disk', SYSTEM_SOURCE);
    const request = (method: string, url: string, options: InjectOptions = {}) => injectRequest(service, method, url, { ...options, key: apiKey });
    const client = { request };
    const customerId = await verifiedCustomer(client, 'full-disk@example.com');
    await firstRefresh(client, customerId);
    const irms = await usableIrms(client, customerId, IRMS);
    let next = 0;
    const pushes: { key: string; body: unknown; lines: { irmNumber: string }[] }[] = [];
    const newPush = () => {
      const lines = Array.from({ length: PUSH_LINES }, (_, index) => lineFor(irms[next + index], index + 1, 0.01, { sbCumInvoiceNumber: String(500_000 + next + index) }));
      next += PUSH_LINES;
      const push = { key: randomUUID(), body: pushBody(customerId, lines), lines: lines.map((line) => ({ irmNumber: line.irmNumber as string })) };
      pushes.push(push);
      return push;
    };
    const send = (push: { key: string; body: unknown }) => request('POST', '/api/v1/genebrc/push-irm', { body: push.body, headers: { 'idempotency-key': push.key } });

    // Fill the disk, leaving a few kilobytes: the database's files can no longer grow.
    fs.writeFileSync(filler, Buffer.alloc(Math.max(0, freeBytes(mount) - 16 * 1024)));
    const answers: Map<string, TestResponse> = new Map();
    let refused = 0;
    for (let n = 0; n < MAX_PUSHES && refused < 3; n++) {
      const push = newPush();
      const answer = await send(push);
      answers.set(push.key, answer);
      if (answer.status === 503) {
        refused += 1;
        assert.equal(answer.body.code, 'database_unavailable', answer.text);
        assert.equal(answer.headers['retry-after'], '2');
        assert.match(String(answer.headers['content-type']), /^application\/problem\+json/);
        assert.doesNotMatch(answer.text, /ENOSPC|No space|base\/\d+|could not/);
      } else {
        assert.equal(answer.status, 200, answer.text);
      }
    }
    assert.ok(refused > 0, `the disk never filled: ${answers.size} pushes answered 200`);
    // Reads go on while the disk is full.
    const listed = await request('GET', '/api/v1/genebrc', { query: { platformCustomerId: customerId, limit: 1 } });
    assert.equal(listed.status, 200, listed.text);

    // Space comes back: the same process writes again, and every push is retried with its key until acknowledged.
    fs.rmSync(filler);
    const backAt = Date.now();
    const acknowledged: AcknowledgedPush[] = [];
    for (const push of pushes) {
      let answer = answers.get(push.key)!;
      for (let attempt = 0; answer.status !== 200; attempt++) {
        assert.ok(attempt < 20, `push ${push.key} not acknowledged after the disk was freed: ${answer.status} ${answer.text}`);
        await sleep(250);
        answer = await send(push);
      }
      assert.equal(answer.body.ackStatus, 'Validated', answer.text);
      acknowledged.push({
        requestId: answer.body.requestId,
        authorityAckId: answer.body.authorityAckId,
        lines: push.lines.map((line, index) => ({ serialNo: index + 1, irmNumber: line.irmNumber, mappedCents: 1n })),
      });
    }
    const writingAgainMs = Date.now() - backAt;
    for (;;) {
      const open = await request('GET', '/api/v1/genebrc', { query: { platformCustomerId: customerId, status: 'PENDING', limit: 1 } });
      if (open.headers['x-total-count'] === '0') break;
      assert.ok(Date.now() - backAt < 120_000, 'requests still open two minutes after the disk was freed');
      await sleep(500);
    }
    const ledger = await assertLedgerConsistent(service.database, sandbox.database, { acknowledged, exactEbrcSequence: true });
    const twice = await service.database.executor.executeSql(
      'select sb_cum_invoice_number from genebrc_request_lines group by sb_cum_invoice_number having count(distinct request_id) > 1',
    );
    assert.deepEqual((twice as { rows: unknown[] }).rows, [], 'no push is stored twice');
    reportFigures(t, 'embedded database on a full disk', {
      'tmpfs MB': MOUNT_MB,
      'pushes answered 200 on the full disk': [...answers.values()].filter((answer) => answer.status === 200).length,
      'pushes answered 503 database_unavailable': refused,
      'all retried pushes acknowledged after (ms)': writingAgainMs,
      'requests': ledger.requests,
      'lines generated': ledger.generatedLines,
    });
  } finally {
    for (const step of undo.reverse()) {
      try {
        await step();
      } catch (error) {
        t.diagnostic(`cleaning up: ${(error as Error).message}`);
      }
    }
  }
});
