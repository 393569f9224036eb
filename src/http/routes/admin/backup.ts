import { Readable } from 'node:stream';
import type { Api, Deps } from '../../deps.ts';
import { AppError } from '../../../errors.ts';
import { EMBEDDED_BACKUP_TYPE } from '../../../store/embedded-backup.ts';
import { adminProblems } from '../../../schemas/problems.ts';

export function backupRoute(app: Api, deps: Deps): void {
  app.post(
    '/backup',
    {
      schema: {
        tags: ['Admin'],
        operationId: 'backupEmbeddedDatabase',
        summary: 'A consistent copy of the embedded database',
        description:
          'The embedded database as a gzip\'ed tar of its data folder, copied between transactions while the service ' +
          'serves (requests wait for the copy: about a second per 100 MB). It holds everything but the encryption key ' +
          '(DATA_DIR/encryption.key, or the ENCRYPTION_KEYS ring), which a restore needs beside it. `npm run cli -- backup <file>` ' +
          'calls this while the service runs. On PostgreSQL there is nothing to copy here: 404; use pg_dump.',
        security: [{ adminToken: [] }],
        response: {
          200: {
            description: 'The backup (restore it with `npm run cli -- restore <file>`, the service stopped)',
            content: { [EMBEDDED_BACKUP_TYPE]: { schema: { type: 'string', format: 'binary' }, example: "(a gzip'ed tar of the data folder, a few MB for a small database)" } },
          } as never,
          ...adminProblems(),
        },
      },
    },
    async (request, reply) => {
      const backup = deps.database.backup;
      if (backup === undefined) {
        throw new AppError('not_found', 'This service runs on PostgreSQL: back it up with pg_dump (README, "Backups").');
      }
      const copy = await backup();
      request.log.info({ bytes: copy.size }, 'backup of the embedded database taken');
      return reply
        .type(EMBEDDED_BACKUP_TYPE)
        .header('content-length', String(copy.size))
        .header('content-disposition', `attachment; filename="ebrc-gateway-${new Date().toISOString().slice(0, 10)}.tar.gz"`)
        .send(Readable.fromWeb(copy.stream() as never));
    },
  );
}
