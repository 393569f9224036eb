import fs from 'node:fs';
import path from 'node:path';

export type DataDirLock = { release(): void };

export class DataDirLockedError extends Error {}

export const LOCK_FILE_NAME = 'authority-sandbox.lock';

/** Lock files this process holds: a lock naming our own pid that is not in here was left by an earlier process. */
const held = new Set<string>();

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Two processes writing one PGlite folder corrupt it, so the folder is held with a lock file created exclusively
 * and naming the holder's pid. A lock whose process is gone (killed with SIGKILL, say) is taken over; so is one
 * naming this process's own pid that this process does not hold (a container restarts with the same pid).
 */
export function acquireDataDirLock(dataDir: string): DataDirLock {
  const file = path.resolve(dataDir, LOCK_FILE_NAME);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
      held.add(file);
      let holding = true;
      return {
        release() {
          if (!holding) return;
          holding = false;
          held.delete(file);
          fs.rmSync(file, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number.parseInt(fs.readFileSync(file, 'utf8'), 10);
      const ours = holder === process.pid;
      if (Number.isInteger(holder) && (ours ? held.has(file) : isAlive(holder))) {
        throw new DataDirLockedError(
          `The sandbox's data folder ${dataDir} is ${ours ? 'already open in this process' : 'in use by another process'} (pid ${holder}). ` +
            'Stop it first, or set SANDBOX_DATA_DIR to another folder.',
        );
      }
      fs.rmSync(file, { force: true });
    }
  }
  throw new DataDirLockedError(`Could not take the lock file ${file}; another process keeps creating it.`);
}
