import type { Api, Deps } from '../../deps.ts';
import { encryptionStatus } from '../../../services/sealed-values.ts';
import { ENCRYPTION_STATUS_EXAMPLE, EncryptionStatusSchema } from '../../../schemas/admin.ts';
import { answer } from '../../../schemas/common.ts';
import { adminProblems } from '../../../schemas/problems.ts';

export function encryptionStatusRoute(app: Api, deps: Deps): void {
  app.get(
    '/encryption-status',
    {
      schema: {
        tags: ['Admin'],
        operationId: 'getEncryptionStatus',
        summary: 'How many sealed values use each encryption key',
        description:
          'Counts the sealed values (authority credentials, webhook signing secrets, kept answers that show one) per key ' +
          'id, in all and per column, while the re-sealing job moves them onto the current key. `npm run cli -- encryption-status` ' +
          'calls this while the service runs on the embedded database.',
        security: [{ adminToken: [] }],
        response: { 200: answer(EncryptionStatusSchema, 'The counts', { status: { summary: 'A rotation under way', value: ENCRYPTION_STATUS_EXAMPLE } }), ...adminProblems() },
      },
    },
    async () => encryptionStatus(deps.database.db, deps.context.keyRing.current.id, deps.context.keyRing.ids),
  );
}
