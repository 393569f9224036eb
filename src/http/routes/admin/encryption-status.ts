import { Type } from 'typebox';
import type { Api, Deps } from '../../deps.ts';
import { encryptionStatus } from '../../../services/sealed-values.ts';
import { adminProblems, answer } from '../../schemas.ts';

const Count = Type.Integer({ minimum: 0 });

const EncryptionStatusSchema = Type.Object(
  {
    currentKeyId: Type.String({ description: 'The key new values are sealed with: the first of ENCRYPTION_KEYS' }),
    keys: Type.Array(
      Type.Object({
        keyId: Type.String(),
        values: Count,
        current: Type.Boolean(),
        inRing: Type.Boolean({ description: "Whether this process's key ring holds the key" }),
      }),
      { description: 'Every key of the ring, and every key id a sealed value names, with how many values use it' },
    ),
    columns: Type.Array(
      Type.Object({
        table: Type.String(),
        column: Type.String(),
        what: Type.String(),
        keys: Type.Record(Type.String(), Count, { description: 'Sealed values of the column per key id' }),
      }),
    ),
  },
  { description: 'How many sealed values use each key of the ring; a key other than the current one can be dropped once it counts 0' },
);

const EXAMPLE = {
  currentKeyId: '2026-11',
  keys: [
    { keyId: '2026-11', values: 1180, current: true, inRing: true },
    { keyId: 'default', values: 20, current: false, inRing: true },
  ],
  columns: [
    { table: 'platform_customers', column: 'authority_credentials', what: 'authority portal logins', keys: { '2026-11': 590, default: 10 } },
    { table: 'platform_customers', column: 'authority_api_credentials', what: 'authority API credential sets', keys: { '2026-11': 590, default: 10 } },
  ],
};

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
        response: { 200: answer(EncryptionStatusSchema, 'The counts', { status: { summary: 'A rotation under way', value: EXAMPLE } }), ...adminProblems() },
      },
    },
    async () => encryptionStatus(deps.database.db, deps.context.keyRing.current.id, deps.context.keyRing.ids),
  );
}
