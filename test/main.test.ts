import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import http from 'node:http';
import { after, describe, test } from 'node:test';
import { acquireDataDirLock as acquireSandboxDataDirLock, LOCK_FILE_NAME as SANDBOX_LOCK_FILE } from '../sandbox/store/data-dir-lock.ts';
import { demoKeyFileOf } from '../src/service-file.ts';
import { acquireDataDirLock } from '../src/store/data-dir-lock.ts';
import { httpClient, NO_AUTHORITY } from './support/gateway.ts';

const MAIN = path.join(import.meta.dirname, '../src/main.ts');
const API_KEY = /ebrc_test_[1-9A-HJ-NP-Za-km-z]{22,}/g;
const LOCK_FILE = 'ebrc-gateway.lock';

type Started = { child: ChildProcess; output: { stdout: string; stderr: string }; exited: Promise<number | null> };

/** The service with the environment given plus NO_AUTHORITY: it starts no sandbox program beside it. */
function start(env: Record<string, string>): Started {
  return startMain({ AUTHORITY_URL: NO_AUTHORITY, ...env });
}

/** The service with only the environment given: with no AUTHORITY_URL it starts (or reuses) the sandbox program. */
function startMain(env: Record<string, string>): Started {
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

  test('the first start creates a demo platform, writes its key to an owner-only file (not a terminal), and the key works', async () => {
    const port = await freePort();
    const started = start({ DATA_DIR: dir, PORT: String(port) });
    try {
      await waitForHealth(started, port);
      // Not a terminal: the key is in a file only its owner reads, never in the output (a log collector's).
      assert.doesNotMatch(started.output.stdout, API_KEY);
      assert.doesNotMatch(started.output.stderr, API_KEY);
      const keyFile = demoKeyFileOf(dir);
      assert.equal(fs.statSync(keyFile).mode & 0o777, 0o600);
      const keys = fs.readFileSync(keyFile, 'utf8').match(API_KEY) ?? [];
      assert.equal(keys.length, 1);
      assert.match(started.output.stdout, new RegExp(`its API key is in ${keyFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
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
    assert.equal((started.output.stdout.match(API_KEY) ?? []).length, 0, 'no log line holds the key');
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

  test('on a terminal the log is one readable line per entry; piped, it is JSON lines', { skip: !fs.existsSync('/usr/bin/script') && 'needs script(1) for a terminal' }, async () => {
    // script(1) gives the service a pseudo-terminal as its stdout, as `npm start` in a terminal has; -f writes at once.
    const folder = tempFolder();
    const transcript = path.join(folder, 'terminal.txt');
    const command = `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(MAIN)}`;
    const child = spawn('script', ['-qfc', command, transcript], {
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', RUN_POLLER: 'false', AUTHORITY_URL: NO_AUTHORITY, DATA_DIR: path.join(folder, 'data'), PORT: '0' },
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    const exited = new Promise((resolve) => child.on('close', resolve));
    const read = () => (fs.existsSync(transcript) ? fs.readFileSync(transcript, 'utf8').replace(/\x1b\[[0-9;]*m/g, '') : '');
    try {
      const deadline = Date.now() + 90_000;
      let port: number | undefined;
      while (port === undefined && Date.now() < deadline) {
        port = Number(/^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] INFO: ebrc-gateway is listening \{.*"port":(\d+)/m.exec(read())?.[1]) || undefined;
        await sleep(100);
      }
      assert.ok(port, `no readable "listening" line:\n${read()}`);
      assert.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200);
      const until = Date.now() + 10_000;
      while (!/request completed 200/.test(read()) && Date.now() < until) await sleep(100);
      assert.match(read(), /^\[[\d :.-]+\] INFO: incoming request GET \/health \{"reqId":"[^"]+"\}\r?$/m);
      assert.match(read(), /^\[[\d :.-]+\] INFO: request completed 200 \{"reqId":"[^"]+","responseTime":[\d.]+\}\r?$/m);
      assert.doesNotMatch(read(), /^\{"level"/m, 'no JSON line on a terminal');
    } finally {
      // SIGINT through the terminal, as Ctrl-C.
      child.stdin!.write('\x03');
      await Promise.race([exited, sleep(15_000)]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    // The other tests of this file read the piped log as JSON lines (listeningPort, logEntry).
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

type LogEntry = { msg?: string; sandbox?: { how: 'started' | 'reused'; url: string; pid?: number; logFile?: string; stopsWithService?: boolean } };

/** The service's first log line that `matches`, waiting for it; fails if the service exits first. */
async function logEntry(started: Started, matches: (entry: LogEntry) => boolean): Promise<LogEntry> {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    for (const line of started.output.stdout.split('\n')) {
      if (!line.startsWith('{')) continue;
      const entry = JSON.parse(line) as LogEntry;
      if (matches(entry)) return entry;
    }
    if (started.child.exitCode !== null || started.child.signalCode !== null) {
      throw new Error(`the service exited (${started.child.exitCode ?? started.child.signalCode}): ${started.output.stderr}${started.output.stdout}`);
    }
    await sleep(100);
  }
  throw new Error(`no such log line: ${started.output.stdout}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('no AUTHORITY_URL: npm start runs the sandbox program beside the service; it outlives a kill, and stops with a SIGTERM', () => {
  const dir = tempFolder();
  const services: Started[] = [];
  /** Every sandbox pid seen: the log line of a start, or the lock file of its data folder. */
  const sandboxPids = new Set<number>();
  let sandboxPort: number;
  let sandboxPid: number;
  let apiKey: string;
  let customerId: string;

  const lockHolder = (): number | undefined => {
    try {
      const pid = Number.parseInt(fs.readFileSync(path.join(dir, 'sandbox', SANDBOX_LOCK_FILE), 'utf8'), 10);
      return Number.isInteger(pid) ? pid : undefined;
    } catch {
      return undefined;
    }
  };

  // Even when a test fails: no service and no sandbox is left behind.
  after(async () => {
    for (const started of services) if (started.child.exitCode === null && started.child.signalCode === null) started.child.kill('SIGKILL');
    const holder = lockHolder();
    if (holder !== undefined) sandboxPids.add(holder);
    for (const pid of sandboxPids) if (isAlive(pid)) process.kill(pid, 'SIGTERM');
    const deadline = Date.now() + 10_000;
    while ([...sandboxPids].some(isAlive) && Date.now() < deadline) await sleep(50);
    for (const pid of sandboxPids) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  });

  const startBeside = (): Started => {
    // PORT=0 and a free SANDBOX_PORT: nothing of another test (or of a developer's own sandbox on 3100) is touched.
    const started = startMain({ DATA_DIR: dir, PORT: '0', SANDBOX_PORT: String(sandboxPort), SANDBOX_PROCESSING_DELAY_MS: '0' });
    services.push(started);
    return started;
  };

  test('the first start starts the sandbox, logs where, and a demo.exporter customer is verified through it', async () => {
    sandboxPort = await freePort();
    const started = startBeside();
    const entry = await logEntry(started, (e) => e.sandbox !== undefined);
    assert.equal(entry.sandbox?.how, 'started', JSON.stringify(entry));
    assert.equal(entry.sandbox?.url, `http://127.0.0.1:${sandboxPort}`);
    assert.equal(entry.sandbox?.logFile, path.join(dir, 'sandbox.log'));
    assert.ok(Number.isInteger(entry.sandbox?.pid), JSON.stringify(entry));
    sandboxPid = entry.sandbox!.pid!;
    sandboxPids.add(sandboxPid);
    assert.match(entry.msg ?? '', new RegExp(`^using the sandbox authority at .*: started it beside the service \\(pid ${sandboxPid},.*it stops with the service`));
    assert.equal(entry.sandbox?.stopsWithService, true);

    const port = await listeningPort(started);
    await waitForHealth(started, port);
    const health = await fetch(`http://127.0.0.1:${sandboxPort}/health`);
    assert.deepEqual(await health.json(), { status: 'ok', program: 'authority-sandbox', pid: sandboxPid, dataDir: path.join(dir, 'sandbox') });
    assert.equal(lockHolder(), sandboxPid, "the sandbox keeps its state in the service's data folder");
    assert.ok(fs.readFileSync(path.join(dir, 'sandbox.log'), 'utf8').includes('the sandbox authority is listening'), 'its output goes to the log file');

    assert.doesNotMatch(started.output.stdout, API_KEY);
    const keys = fs.readFileSync(demoKeyFileOf(dir), 'utf8').match(API_KEY) ?? [];
    assert.equal(keys.length, 1);
    apiKey = keys[0]!;
    const api = httpClient(`http://127.0.0.1:${port}`, apiKey);
    const created = await api.request('POST', '/api/v1/platform-customers', { body: { name: 'Demo', email: 'beside@example.com', companyName: 'Demo Exports' } });
    assert.equal(created.status, 201, created.text);
    customerId = (created.body as { id: string }).id;
    const checked = await api.request('POST', `/api/v1/platform-customers/${customerId}/check-authority-credentials`, {
      body: { authorityUsername: 'demo.exporter', authorityPassword: 'Sandbox@123' },
    });
    assert.equal(checked.status, 200, checked.text);

    // A crash: nothing of the service is closed, and the sandbox, a program of its own, goes on.
    started.child.kill('SIGKILL');
    await started.exited;
    const afterCrash = await fetch(`http://127.0.0.1:${sandboxPort}/health`);
    assert.equal(afterCrash.status, 200);
    assert.ok(isAlive(sandboxPid));
  });

  test('a restart on the same data folder reuses that sandbox: the customer is still verified and its IRMs refresh', async () => {
    assert.ok(customerId, 'the first test verified a customer');
    const started = startBeside();
    const entry = await logEntry(started, (e) => e.sandbox !== undefined);
    // The line names the pid to stop it by; its state is in this data folder, so it is this service's to stop.
    assert.deepEqual(entry.sandbox, { how: 'reused', url: `http://127.0.0.1:${sandboxPort}`, pid: sandboxPid, stopsWithService: true });
    assert.match(entry.msg ?? '', new RegExp(`^using the sandbox authority at .*: reused the one already running there \\(pid ${sandboxPid}\\); it stops with the service`));
    assert.equal(lockHolder(), sandboxPid, 'the same sandbox, not a second one');

    const port = await listeningPort(started);
    await waitForHealth(started, port);
    const api = httpClient(`http://127.0.0.1:${port}`, apiKey);
    const customer = await api.request('GET', `/api/v1/platform-customers/${customerId}`);
    assert.equal(customer.status, 200, customer.text);
    assert.equal((customer.body as { authorityCredentialsStatus: string }).authorityCredentialsStatus, 'valid');
    const refreshed = await api.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: customerId, limit: 5 }, body: {} });
    assert.equal(refreshed.status, 200, refreshed.text);
    const irms = refreshed.body as { data: { iecCode: string }[]; meta: { total: number } };
    assert.ok(irms.meta.total > 0 && irms.data.length > 0, refreshed.text);

    // SIGTERM to the service: it stops cleanly, and the sandbox it reused with it, its data folder released.
    assert.equal(await stop(started), 0, started.output.stderr);
    assert.equal(isAlive(sandboxPid), false, `the sandbox (pid ${sandboxPid}) still runs after SIGTERM to the service`);
    assert.equal(lockHolder(), undefined);
    assert.ok(started.output.stdout.includes('stopped the sandbox authority'), started.output.stdout);
  });

  test('a start after that starts a sandbox again, and SIGTERM to the service stops both', async () => {
    const started = startBeside();
    const entry = await logEntry(started, (e) => e.sandbox !== undefined);
    assert.equal(entry.sandbox?.how, 'started', JSON.stringify(entry));
    const pid = entry.sandbox!.pid!;
    sandboxPids.add(pid);
    assert.notEqual(pid, sandboxPid);
    await waitForHealth(started, await listeningPort(started));
    assert.equal(lockHolder(), pid);
    assert.equal(await stop(started), 0, started.output.stderr);
    assert.equal(isAlive(pid), false, `the sandbox (pid ${pid}) still runs after SIGTERM to the service`);
    assert.equal(lockHolder(), undefined);
    await assert.rejects(fetch(`http://127.0.0.1:${sandboxPort}/health`), 'nothing answers on SANDBOX_PORT any more');
  });
});

describe('no AUTHORITY_URL, and the sandbox cannot be used: exit 1 with a message naming SANDBOX_PORT', { concurrency: true }, () => {
  test('SANDBOX_PORT taken by another program: nothing is started', async () => {
    const dir = tempFolder();
    const other = http.createServer((_request, response) => response.end('{"status":"ok"}'));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    try {
      const port = (other.address() as net.AddressInfo).port;
      const started = startMain({ DATA_DIR: dir, PORT: '0', SANDBOX_PORT: String(port) });
      assert.equal(await started.exited, 1);
      assert.match(started.output.stderr, new RegExp(`^ebrc-gateway: SANDBOX_PORT ${port}: .* not the sandbox authority`, 'm'));
      assert.equal(fs.existsSync(path.join(dir, 'sandbox')), false, 'no sandbox was started');
    } finally {
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });

  test('the sandbox started exits at once (its data folder is held): the message names the log file and quotes its end', async () => {
    const dir = tempFolder();
    fs.mkdirSync(path.join(dir, 'sandbox'), { recursive: true });
    const lock = acquireSandboxDataDirLock(path.join(dir, 'sandbox'));
    try {
      const started = startMain({ DATA_DIR: dir, PORT: '0', SANDBOX_PORT: String(await freePort()) });
      assert.equal(await started.exited, 1);
      assert.match(started.output.stderr, /SANDBOX_PORT \d+\) exited with code 1 before it answered/);
      assert.ok(started.output.stderr.includes(path.join(dir, 'sandbox.log')), started.output.stderr);
      assert.match(started.output.stderr, /in use by another process \(pid \d+\)/, 'the end of its log says why');
      assert.equal(fs.existsSync(path.join(dir, LOCK_FILE)), false, 'the service opened nothing');
    } finally {
      lock.release();
    }
  });
});

/** The first npm on PATH outside any node_modules: the one a shell runs for `npm start`. */
function shellNpm(): { npm: string; searchPath: string } | undefined {
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter((dir) => dir !== '' && !dir.split(path.sep).includes('node_modules'));
  for (const dir of dirs) {
    const candidate = path.join(dir, 'npm');
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return { npm: candidate, searchPath: dirs.join(path.delimiter) };
    } catch {
      // not here
    }
  }
  return undefined;
}

/** The parent pid of a live process, from /proc; undefined once it is gone. */
function parentPid(pid: number): number | undefined {
  try {
    // "pid (comm) state ppid ...": comm may hold spaces, so read after its closing parenthesis.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number.parseInt(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]!, 10);
  } catch {
    return undefined;
  }
}

test('npm start: the service is npm\'s own child, and SIGTERM to npm stops it (no orphan left listening)', { skip: !fs.existsSync('/proc/self/stat') && 'needs /proc' }, async (t) => {
  const found = shellNpm();
  if (found === undefined) {
    t.skip('no npm on PATH outside node_modules');
    return;
  }
  const child = spawn(found.npm, ['start'], {
    cwd: path.join(import.meta.dirname, '..'),
    env: { PATH: found.searchPath, HOME: process.env.HOME ?? os.tmpdir(), HOST: '127.0.0.1', RUN_POLLER: 'false', AUTHORITY_URL: NO_AUTHORITY, DATA_DIR: tempFolder(), PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { stdout: '', stderr: '' };
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output.stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output.stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const started: Started = { child, output, exited };
  let serverPid: number | undefined;
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    if (serverPid !== undefined && isAlive(serverPid)) process.kill(serverPid, 'SIGKILL');
  });

  const port = await listeningPort(started);
  const line = output.stdout.split('\n').find((l) => l.startsWith('{') && l.includes('"ebrc-gateway is listening"'))!;
  serverPid = (JSON.parse(line) as { pid: number }).pid;
  assert.notEqual(serverPid, child.pid);
  assert.equal(parentPid(serverPid), child.pid, 'no shell between npm and the service: npm signals the service itself');

  child.kill('SIGTERM');
  const deadline = Date.now() + 10_000;
  while (isAlive(serverPid) && Date.now() < deadline) await sleep(50);
  assert.equal(isAlive(serverPid), false, `the service (pid ${serverPid}) still runs after SIGTERM to npm start: ${output.stderr}`);
  await exited;
  await assert.rejects(fetch(`http://127.0.0.1:${port}/health`), 'nothing answers on its port any more');
});
