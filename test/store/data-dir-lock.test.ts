import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { sql } from 'kysely';
import { acquireDataDirLock, DataDirLockedError } from '../../src/store/data-dir-lock.ts';
import { openDatabase } from '../../src/store/database.ts';

const LOCK_FILE = 'ebrc-gateway.lock';
const folders: string[] = [];

function tempFolder(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-lock-'));
  folders.push(dir);
  return dir;
}

/** The pid of a process that has already exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-p', 'process.pid'], { encoding: 'utf8' });
  const pid = Number(child.stdout.trim());
  assert.ok(Number.isInteger(pid) && pid > 0);
  return pid;
}

after(() => {
  for (const dir of folders) fs.rmSync(dir, { recursive: true, force: true });
});

test('opening the embedded database twice on one folder fails, naming the folder and the holder; closing frees it', async () => {
  const dir = tempFolder();
  const first = await openDatabase({ dataDir: dir });
  try {
    assert.equal(fs.readFileSync(path.join(dir, LOCK_FILE), 'utf8').trim(), String(process.pid));
    await assert.rejects(
      openDatabase({ dataDir: dir }),
      (error: unknown) => {
        assert.ok(error instanceof DataDirLockedError, String(error));
        assert.ok(error.message.includes(dir), error.message);
        assert.ok(error.message.includes(`pid ${process.pid}`), error.message);
        return true;
      },
    );
    // The refused second open did not disturb the first.
    const row = await sql<{ answer: number }>`select 42 as answer`.execute(first.db);
    assert.equal(row.rows[0]?.answer, 42);
    assert.ok(fs.existsSync(path.join(dir, LOCK_FILE)), 'the failed open must not remove the holder’s lock');
  } finally {
    await first.close();
  }
  assert.equal(fs.existsSync(path.join(dir, LOCK_FILE)), false, 'close releases the lock');
  acquireDataDirLock(dir).release();
});

test('a lock left by a process that is gone is taken over', () => {
  const dir = tempFolder();
  const file = path.join(dir, LOCK_FILE);
  fs.writeFileSync(file, `${deadPid()}\n`);
  const lock = acquireDataDirLock(dir);
  assert.equal(fs.readFileSync(file, 'utf8').trim(), String(process.pid));
  lock.release();
  assert.equal(fs.existsSync(file), false);
});

test('a lock naming this process’s own pid that it does not hold (a container restarted after a kill) is taken over', () => {
  const dir = tempFolder();
  fs.writeFileSync(path.join(dir, LOCK_FILE), `${process.pid}\n`);
  const lock = acquireDataDirLock(dir);
  assert.throws(() => acquireDataDirLock(dir), DataDirLockedError, 'once taken, it is held');
  lock.release();
  assert.equal(fs.existsSync(path.join(dir, LOCK_FILE)), false);
});

test('an unreadable lock file (empty, from a crash while writing it) is taken over', () => {
  const dir = tempFolder();
  fs.writeFileSync(path.join(dir, LOCK_FILE), '');
  const lock = acquireDataDirLock(dir);
  assert.equal(fs.readFileSync(path.join(dir, LOCK_FILE), 'utf8').trim(), String(process.pid));
  lock.release();
});

test('a lock held by a live process is respected, and releasing twice is harmless', () => {
  const dir = tempFolder();
  const lock = acquireDataDirLock(dir);
  assert.throws(() => acquireDataDirLock(dir), DataDirLockedError);
  lock.release();
  lock.release();
  const next = acquireDataDirLock(dir);
  // The first holder's second release must not remove the new holder's lock.
  lock.release();
  assert.ok(fs.existsSync(path.join(dir, LOCK_FILE)));
  assert.throws(() => acquireDataDirLock(dir), DataDirLockedError);
  next.release();
});
