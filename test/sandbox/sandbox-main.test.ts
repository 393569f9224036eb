import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { LOCK_FILE_NAME } from '../../sandbox/store/data-dir-lock.ts';

const MAIN = path.join(import.meta.dirname, '..', '..', 'sandbox', 'main.ts');
const START_TIMEOUT_MS = 30_000;

let dataDir: string;
const started: ChildProcess[] = [];

function startMain(): ChildProcess {
  const { SANDBOX_DATABASE_URL: _, ...env } = process.env;
  const child = spawn(process.execPath, [MAIN], {
    env: { ...env, SANDBOX_PORT: '0', SANDBOX_DATA_DIR: dataDir, SANDBOX_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  return child;
}

/** The URL the program says it listens on, from its JSON log lines. */
async function listeningUrl(child: ChildProcess): Promise<string> {
  assert.ok(child.stdout);
  const timeout = AbortSignal.timeout(START_TIMEOUT_MS);
  for await (const line of createInterface({ input: child.stdout, signal: timeout })) {
    const entry = JSON.parse(line) as { msg?: string; url?: string };
    if (entry.msg === 'the sandbox authority is listening' && entry.url !== undefined) return entry.url;
  }
  assert.fail('the sandbox never said where it listens');
}

before(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'authority-sandbox-main-'));
});

after(() => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  fs.rmSync(dataDir, { recursive: true, force: true });
});

test('npm run sandbox: it starts on its own folder, answers /health, holds the folder, and exits 0 on SIGTERM', async () => {
  const child = startMain();
  const exited = once(child, 'exit');
  const url = await listeningUrl(child);

  const health = await fetch(`${url}/health`);
  assert.equal(health.status, 200);
  // It names itself: `npm start` reuses a sandbox already on SANDBOX_PORT only when it is one (src/sandbox-beside.ts),
  // and by its pid and data folder, which say whether it stops with the service.
  assert.deepEqual(await health.json(), { status: 'ok', program: 'authority-sandbox', pid: child.pid, dataDir: path.resolve(dataDir) });
  const lockFile = path.join(dataDir, LOCK_FILE_NAME);
  assert.equal(fs.readFileSync(lockFile, 'utf8').trim(), String(child.pid));

  const second = startMain();
  let secondError = '';
  second.stderr?.on('data', (chunk: Buffer) => {
    secondError += chunk.toString();
  });
  const [secondCode] = await once(second, 'exit');
  assert.equal(secondCode, 1);
  assert.match(secondError, /in use by another process/);

  child.kill('SIGTERM');
  const [code, signal] = await exited;
  assert.deepEqual([code, signal], [0, null]);
  assert.equal(fs.existsSync(lockFile), false, 'the lock is released');
});
