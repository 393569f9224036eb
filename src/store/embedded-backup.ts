import fs from 'node:fs';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { acquireDataDirLock } from './data-dir-lock.ts';

/** What PGlite's dump is: a gzip'ed tar of the data folder. */
export const EMBEDDED_BACKUP_TYPE = 'application/gzip';

/** A restore that failed; the data folder was put back as it was. */
export class RestoreError extends Error {}

/**
 * A consistent copy of the embedded database while it serves: PGlite's dump of its data folder (a gzip'ed tar), taken
 * inside its exclusive transaction, so that no other transaction is half-way and no statement runs while the files
 * are copied. A checkpoint first writes the page cache out, so that the copy needs little recovery when loaded.
 * Requests wait for the copy (about a second per 100 MB of data folder); it is held in memory while it is sent.
 */
export async function dumpEmbedded(pglite: PGlite): Promise<Blob> {
  await pglite.exec('checkpoint');
  return pglite.transaction(() => pglite.dumpDataDir('gzip'));
}

function stamp(): string {
  return new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
}

/**
 * Replaces the embedded database in `dataDir` by the backup in `file`, with the data folder locked (the service must
 * be stopped: DataDirLockedError otherwise). The database it replaces is kept beside, renamed (`replaced`); a backup
 * that does not load leaves the folder as it was. The encryption key file is not touched.
 */
export async function restoreEmbedded(dataDir: string, file: string): Promise<{ replaced: string | undefined; migrations: number }> {
  const backup = await fs.openAsBlob(file, { type: EMBEDDED_BACKUP_TYPE });
  fs.mkdirSync(dataDir, { recursive: true });
  const lock = acquireDataDirLock(dataDir);
  try {
    const pgdata = path.join(dataDir, 'pgdata');
    const replaced = fs.existsSync(pgdata) ? `${pgdata}.before-restore-${stamp()}` : undefined;
    if (replaced) fs.renameSync(pgdata, replaced);
    try {
      const { PGlite } = await import('@electric-sql/pglite');
      const pglite = await PGlite.create(pgdata, { loadDataDir: backup });
      try {
        const result = await pglite.query<{ migrations: number }>('select count(*)::int as migrations from schema_migrations');
        return { replaced, migrations: result.rows[0]!.migrations };
      } finally {
        await pglite.close();
      }
    } catch (error) {
      fs.rmSync(pgdata, { recursive: true, force: true });
      if (replaced) fs.renameSync(replaced, pgdata);
      throw new RestoreError(`${file} is not a backup of the embedded database (${(error as Error).message}); ${dataDir} is as it was`);
    }
  } finally {
    lock.release();
  }
}
