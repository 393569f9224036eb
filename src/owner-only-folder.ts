import fs from 'node:fs';
import path from 'node:path';

/**
 * A data folder only its owner can read or write (docs/decisions.md, "Data folders are owner-only"). Files the
 * process creates from now on are owner-only (umask 077: PGlite writes its own files, with the modes the umask
 * leaves); the folder is created 0700; an existing one, and everything in it, loses any group and other permission
 * bits (a folder made by an older version, or copied with wider modes). Used by the service and the sandbox program
 * alike; it imports nothing of either.
 */

export class DataFolderError extends Error {}

/** The entries whose modes were narrowed, relative to the folder; empty when it already was owner-only. */
export function makeOwnerOnlyFolder(folder: string): string[] {
  process.umask(0o077);
  fs.mkdirSync(folder, { recursive: true, mode: 0o700 });
  const narrowed: string[] = [];
  const narrow = (entry: string): void => {
    const stats = fs.lstatSync(entry);
    if (stats.isSymbolicLink()) return;
    if ((stats.mode & 0o077) !== 0) {
      try {
        fs.chmodSync(entry, stats.mode & 0o700);
      } catch (error) {
        throw new DataFolderError(
          `${entry} can be read or written by other users (mode ${(stats.mode & 0o777).toString(8)}) and this user cannot change it ` +
            `(${(error as NodeJS.ErrnoException).code}): make DATA_DIR and everything in it owned by the user running the service, mode 0700/0600.`,
        );
      }
      narrowed.push(path.relative(folder, entry) || '.');
    }
    if (stats.isDirectory()) for (const name of fs.readdirSync(entry)) narrow(path.join(entry, name));
  };
  narrow(folder);
  return narrowed;
}
