import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, test } from 'node:test';
import { acquireDataDirLock } from '../src/store/data-dir-lock.ts';

const MAIN = path.join(import.meta.dirname, '../src/main.ts');
const API_KEY = /ebrc_test_[1-9A-HJ-NP-Za-km-z]{22,}/g;
const LOCK_FILE = 'ebrc-gateway.lock';

type Started = { child: ChildProcess; output: { stdout: string; stderr: string }; exited: Promise<number | null> };

function start(env: Record<string, string>): Started {
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', RUN_POLLER: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { stdout: '', stderr: '' };
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output.stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output.stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, output, exited };
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Waits until /health answers 200; fails at once if the process exits instead. */
async function waitForHealth(started: Started, port: number): Promise<void> {
  let exitCode: number | null | undefined;
  void started.exited.then((code) => (exitCode = code));
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (exitCode !== undefined) throw new Error(`the service exited with ${exitCode} before it was healthy: ${started.output.stderr}`);
    try {
      const response = await fetch(`http://127.0.0.1:${port}/health`);
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`the service did not become healthy: ${started.output.stderr}`);
}

/** With PORT=0 the system picks the port; the service's "listening" log line tells which. */
async function listeningPort(started: Started): Promise<number> {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    for (const line of started.output.stdout.split('\n')) {
      if (!line.startsWith('{')) continue;
      const entry = JSON.parse(line) as { msg?: string; port?: number; docs?: string };
      if (entry.msg === 'ebrc-gateway is listening') {
        assert.equal(entry.docs, `http://127.0.0.1:${entry.port}/docs`);
        return entry.port!;
      }
    }
    if (started.child.exitCode !== null) throw new Error(`the service exited with ${started.child.exitCode}: ${started.output.stderr}`);
    await sleep(100);
  }
  throw new Error(`the service did not say where it listens: ${started.output.stdout}`);
}

async function stop(started: Started): Promise<number | null> {
  started.child.kill('SIGTERM');
  return started.exited;
}

const folders: string[] = [];
function tempFolder(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-main-'));
  folders.push(dir);
  return dir;
}
after(() => {
  for (const dir of folders) fs.rmSync(dir, { recursive: true, force: true });
});

describe('bad configuration stops the start', { concurrency: true }, () => {
  const cases: Record<string, string> = { PORT: 'abc', RATE_LIMIT_BURST: '-1', DATABASE_URL: 'mysql://x' };
  for (const [name, value] of Object.entries(cases)) {
    test(`${name}=${value}: exit 1 with a message naming ${name}`, async () => {
      const dir = path.join(os.tmpdir(), `ebrc-main-badconfig-${process.pid}-${name}`);
      const started = start({ DATA_DIR: dir, [name]: value });
      assert.equal(await started.exited, 1);
      assert.match(started.output.stderr, new RegExp(`^ebrc-gateway: ${name} `, 'm'));
      assert.doesNotMatch(started.output.stderr, /\n\s+at /, 'a configuration mistake is a sentence, not a stack trace');
      assert.equal(fs.existsSync(dir), false, 'nothing is opened before the configuration is read');
    });
  }
});

test('a data folder held by another process: exit 1 naming the folder and the holder', async () => {
  const dir = tempFolder();
  const lock = acquireDataDirLock(dir);
  try {
    const started = start({ DATA_DIR: dir, PORT: String(await freePort()) });
    assert.equal(await started.exited, 1);
    assert.ok(started.output.stderr.includes(dir), started.output.stderr);
    assert.ok(started.output.stderr.includes(`pid ${process.pid}`), started.output.stderr);
    assert.equal(fs.readFileSync(path.join(dir, LOCK_FILE), 'utf8').trim(), String(process.pid), 'the holder keeps its lock');
  } finally {
    lock.release();
  }
});

describe('start and stop on the embedded database', () => {
  const dir = tempFolder();
  let apiKey: string;

  test('the first start creates a demo platform, prints its key once, and the key works', async () => {
    const port = await freePort();
    const started = start({ DATA_DIR: dir, PORT: String(port) });
    try {
      await waitForHealth(started, port);
      const keys = started.output.stdout.match(API_KEY) ?? [];
      assert.equal(keys.length, 1, `expected the key printed once, got: ${started.output.stdout}`);
      apiKey = keys[0]!;
      const response = await fetch(`http://127.0.0.1:${port}/api/v1/platform-customers`, { headers: { 'x-api-key': apiKey } });
      assert.equal(response.status, 200);
      assert.equal(((await response.json()) as { meta: { totalItems: number } }).meta.totalItems, 0);
      assert.ok(fs.existsSync(path.join(dir, LOCK_FILE)), 'the running service holds the folder');
    } finally {
      const code = await stop(started);
      assert.equal(code, 0, `SIGTERM should end the service cleanly: ${started.output.stderr}`);
    }
    assert.equal(fs.existsSync(path.join(dir, LOCK_FILE)), false, 'SIGTERM releases the data folder');
    assert.equal((started.output.stdout.match(API_KEY) ?? []).length, 1, 'no log line repeats the key');
  });

  test('a second start on the same folder prints no key, and the first key still works (PORT=0: the log names the port)', async () => {
    const started = start({ DATA_DIR: dir, PORT: '0' });
    try {
      const port = await listeningPort(started);
      assert.ok(port > 0);
      await waitForHealth(started, port);
      assert.doesNotMatch(started.output.stdout, API_KEY);
      const response = await fetch(`http://127.0.0.1:${port}/api/v1/platform-customers`, { headers: { 'x-api-key': apiKey } });
      assert.equal(response.status, 200);
    } finally {
      assert.equal(await stop(started), 0);
    }
    assert.equal(fs.existsSync(path.join(dir, LOCK_FILE)), false);
  });

  test('a port already in use: exit 1 saying so, and the data folder is released', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const started = start({ DATA_DIR: dir, PORT: String((server.address() as net.AddressInfo).port) });
      assert.equal(await started.exited, 1);
      assert.match(started.output.stderr, /EADDRINUSE/);
      assert.equal(fs.existsSync(path.join(dir, LOCK_FILE)), false);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
