import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createPlatform } from '../../src/services/platforms.ts';
import { openDatabase } from '../../src/store/database.ts';
import { postgresUrl, scratchDatabase, type TestResponse } from '../support/harness.ts';
import { lineFor, pushBody, sleep, usableIrms, verifiedCustomer, waitForFinal } from '../support/workflow.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const API_KEY = /ebrc_test_[1-9A-HJ-NP-Za-km-z]+/;

type Running = { child: ChildProcess; output: () => string; exited: Promise<unknown> };

/** `node src/main.ts` as an operator starts it, with only the environment given. */
function startGateway(env: Record<string, string>): Running {
  const child = spawn(process.execPath, ['src/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output, exited: once(child, 'exit') };
}

/** Waits for the "listening" log line (PORT=0: the system picks the port, so no other test can take it) and /ready. */
async function waitUntilReady(gateway: Running): Promise<string> {
  const deadline = Date.now() + 90_000;
  let base: string | undefined;
  while (Date.now() < deadline) {
    if (gateway.child.exitCode !== null) assert.fail(`the gateway exited with ${gateway.child.exitCode}: ${gateway.output()}`);
    const listening = /"port":(\d+).*"msg":"ebrc-gateway is listening"/.exec(gateway.output());
    if (listening) base = `http://127.0.0.1:${listening[1]}`;
    if (base) {
      try {
        if ((await fetch(`${base}/ready`, { signal: AbortSignal.timeout(5_000) })).ok) return base;
      } catch {
        // not answering yet
      }
    }
    await sleep(100);
  }
  assert.fail(`the gateway did not become ready: ${gateway.output()}`);
}

async function stopGateway(gateway: Running | undefined): Promise<void> {
  if (!gateway || gateway.child.exitCode !== null || gateway.child.signalCode !== null) return;
  gateway.child.kill('SIGTERM');
  const timer = setTimeout(() => gateway.child.kill('SIGKILL'), 15_000);
  await gateway.exited;
  clearTimeout(timer);
}

/** The harness's `request`, over real HTTP. */
function httpClient(base: string, apiKey: string) {
  return {
    async request(method: string, url: string, options: { body?: unknown; query?: Record<string, string | number> } = {}): Promise<TestResponse> {
      const target = new URL(url, base);
      for (const [key, value] of Object.entries(options.query ?? {})) target.searchParams.set(key, String(value));
      const response = await fetch(target, {
        method,
        headers: { 'x-api-key': apiKey, ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      });
      const text = await response.text();
      return { status: response.status, headers: Object.fromEntries(response.headers), body: text ? JSON.parse(text) : undefined, text };
    },
  };
}

/**
 * Push, SIGKILL right after the acknowledgement (before the sandbox has processed it), start again on the same
 * data, and wait: the request reaches its final state with an eBRC number without anybody asking for status.
 */
async function killAndRestart(backend: 'embedded' | 'postgres'): Promise<void> {
  const scratch = await scratchDatabase(backend);
  const env: Record<string, string> = {
    DATA_DIR: scratch.dataDir,
    PORT: '0',
    HOST: '127.0.0.1',
    SANDBOX_PROCESSING_DELAY_MS: '2000',
    POLL_INTERVAL_SECONDS: '1',
    LOG_LEVEL: 'info',
    ...(scratch.databaseUrl ? { DATABASE_URL: scratch.databaseUrl, ENCRYPTION_KEY: randomBytes(32).toString('base64') } : {}),
  };
  let gateway: Running | undefined;
  try {
    gateway = startGateway(env);
    const firstBase = await waitUntilReady(gateway);
    let apiKey: string;
    if (backend === 'embedded') {
      // The first start on an empty folder makes the demo platform and prints its key once.
      const printed = API_KEY.exec(gateway.output());
      assert.ok(printed, `no API key printed: ${gateway.output()}`);
      apiKey = printed[0];
    } else {
      const database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir });
      try {
        apiKey = (await createPlatform(database.db, 'Restart platform')).apiKey;
      } finally {
        await database.close();
      }
    }
    const client = httpClient(firstBase, apiKey);
    const id = await verifiedCustomer(client, 'restart@example.com');
    const [irm] = await usableIrms(client, id, 1);
    const ack = await client.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(id, [lineFor(irm, 1, 12.5)]) });
    gateway.child.kill('SIGKILL');
    assert.equal(ack.status, 200, ack.text);
    assert.equal(ack.body.ackStatus, 'Validated', ack.text);
    await gateway.exited;
    assert.equal(gateway.child.signalCode, 'SIGKILL');

    const lockFile = path.join(scratch.dataDir, 'ebrc-gateway.lock');
    const killedPid = gateway.child.pid;
    if (backend === 'embedded') assert.equal(Number.parseInt(fs.readFileSync(lockFile, 'utf8'), 10), killedPid, 'the killed process left its lock');

    // Same folder (its lock file names a dead process, and is taken over) or same database.
    gateway = startGateway(env);
    const restarted = httpClient(await waitUntilReady(gateway), apiKey);
    if (backend === 'embedded') {
      assert.equal(Number.parseInt(fs.readFileSync(lockFile, 'utf8'), 10), gateway.child.pid);
      assert.doesNotMatch(gateway.output(), API_KEY, 'no second demo platform');
    }
    const done = await waitForFinal(restarted, id, ack.body.requestId, 30_000);
    assert.equal(done.status, 'PROCESSED', JSON.stringify(done));
    assert.equal(done.authorityAckId, ack.body.authorityAckId);
    assert.ok(done.processedAt);
    assert.match(done.ebrcBulkGenStatusList[0].ebrcNumber, /^EBRC\d{18}$/);
    const listed = await restarted.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: id } });
    assert.equal(listed.body.length, 1, 'the acknowledged request is there once');
  } finally {
    await stopGateway(gateway);
    await scratch.drop();
  }
}

describe('a gateway killed after acknowledging a push', () => {
  test('finishes the request after a restart on the embedded database', () => killAndRestart('embedded'));
  test('finishes the request after a restart on PostgreSQL', { skip: postgresUrl() ? false : 'no PostgreSQL for the tests' }, () =>
    killAndRestart('postgres'));
});
