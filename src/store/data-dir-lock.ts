import fs from 'node:fs';
import path from 'node:path';

export type DataDirLock = { release(): void };

export class DataDirLockedError extends Error {}

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
 * Two processes writing one PGlite folder corrupt it, so the folder is held with a lock file
 * created exclusively and naming the holder's pid. A lock left by a process that is gone
 * (killed with SIGKILL, say) is taken over. So is one naming this very process's pid while this process does
 * not hold it: in a container every start gets the same pid, so a lock left by a killed start names us.
 */
export function acquireDataDirLock(dataDir: string): DataDirLock {
  const file = path.resolve(dataDir, 'ebrc-gateway.lock');
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
          `The data folder ${dataDir} is ${ours ? 'already open in this process' : 'in use by another process'} (pid ${holder}). ` +
            'Stop it first, or set DATA_DIR to another folder.',
        );
      }
      fs.rmSync(file, { force: true });
    }
  }
  throw new DataDirLockedError(`Could not take the lock file ${file}; another process keeps creating it.`);
}
