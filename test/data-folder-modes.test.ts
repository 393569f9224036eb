import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import { loadConfig } from '../src/config.ts';
import { makeOwnerOnlyFolder } from '../src/owner-only-folder.ts';
import { createService } from '../src/service.ts';
import { readSandboxConfig } from '../sandbox/config.ts';
import { startSandbox } from '../sandbox/program.ts';
import { memoryLog } from './support/harness.ts';

/** Every entry under `folder` whose mode lets a group or other users in, with its mode. */
function widerThanOwner(folder: string): string[] {
  const wide: string[] = [];
  const walk = (entry: string): void => {
    const stats = fs.lstatSync(entry);
    if (stats.isSymbolicLink()) return;
    if ((stats.mode & 0o077) !== 0) wide.push(`${path.relative(folder, entry) || '.'} ${(stats.mode & 0o777).toString(8)}`);
    if (stats.isDirectory()) for (const name of fs.readdirSync(entry)) walk(path.join(entry, name));
  };
  walk(folder);
  return wide;
}

function countEntries(folder: string): number {
  return fs.readdirSync(folder, { recursive: true }).length;
}

test('a fresh embedded data folder, and everything the service writes in it, is owner-only', async () => {
  const dataDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-modes-')), 'data');
  process.umask(0o022); // As a shell leaves it.
  try {
    const service = await createService({ config: loadConfig({ DATA_DIR: dataDir, RUN_POLLER: 'false', LOG_LEVEL: 'silent', AUTHORITY_URL: 'http://127.0.0.1:9' }), logger: false });
    await service.close();
    assert.ok(countEntries(dataDir) > 100, 'the database wrote its files');
    assert.deepEqual(widerThanOwner(dataDir), []);
    assert.equal(fs.statSync(dataDir).mode & 0o777, 0o700);
  } finally {
    fs.rmSync(path.dirname(dataDir), { recursive: true, force: true });
  }
});

test('an existing data folder with wider modes is made owner-only at start, with a warning naming the folder', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-modes-'));
  process.umask(0o022);
  try {
    fs.chmodSync(dataDir, 0o755);
    fs.mkdirSync(path.join(dataDir, 'old'), { mode: 0o777 });
    fs.chmodSync(path.join(dataDir, 'old'), 0o777);
    fs.writeFileSync(path.join(dataDir, 'old', 'wal'), 'customer data', { mode: 0o666 });
    fs.chmodSync(path.join(dataDir, 'old', 'wal'), 0o666);
    const log = memoryLog([]);
    const service = await createService({ config: loadConfig({ DATA_DIR: dataDir, RUN_POLLER: 'false', AUTHORITY_URL: 'http://127.0.0.1:9' }), logger: log.logger });
    await service.close();
    assert.deepEqual(widerThanOwner(dataDir), []);
    assert.equal(fs.statSync(path.join(dataDir, 'old', 'wal')).mode & 0o777, 0o600);
    const warning = log.lines.find((line) => line.includes('owner-only now'));
    assert.ok(warning !== undefined, 'a warning says the modes were narrowed');
    assert.equal(JSON.parse(warning).narrowed, 3);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

test("the sandbox program's data folder is owner-only too", async () => {
  const dataDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-modes-')), 'sandbox');
  process.umask(0o022);
  try {
    const program = await startSandbox({ ...readSandboxConfig({ SANDBOX_PORT: '0', SANDBOX_LOG_LEVEL: 'silent' }), dataDir }, { logger: pino({ level: 'silent' }) });
    await program.close();
    assert.ok(countEntries(dataDir) > 100);
    assert.deepEqual(widerThanOwner(dataDir), []);
  } finally {
    fs.rmSync(path.dirname(dataDir), { recursive: true, force: true });
  }
});

test('a folder whose modes cannot be changed is refused with a message', { skip: process.getuid?.() === 0 && 'root can change any mode' }, () => {
  assert.throws(() => makeOwnerOnlyFolder('/proc/self'), /other users/);
});
