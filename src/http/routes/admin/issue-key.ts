import type { Api, Deps } from '../../deps.ts';
import { auditSourceOf } from '../../audit-source.ts';
import { issuePlatformKey } from '../../../services/platforms.ts';
import { ADMIN_EXAMPLES, AdminIssuedKeySchema, PlatformParams } from '../../../schemas/admin.ts';
import { answer, EmptyBody, withExamples } from '../../../schemas/common.ts';
import { adminProblems } from '../../../schemas/problems.ts';

export function issueKeyRoute(app: Api, deps: Deps): void {
  app.post(
    '/platforms/:id/api-keys',
    {
      config: { audit: 'api_key.issue' },
      schema: {
        tags: ['Admin'],
        operationId: 'issueApiKey',
        summary: 'Issue another API key for a platform',
        description: 'The new key is shown in this answer only: only its SHA-256 hash and its prefix are stored. The other keys keep working. No body, or `{}`.',
        security: [{ adminToken: [] }],
        params: PlatformParams,
        body: withExamples(EmptyBody, ADMIN_EXAMPLES.issueKey.request),
        response: { 201: answer(AdminIssuedKeySchema, 'The new API key (shown this once)', ADMIN_EXAMPLES.issueKey.issued), ...adminProblems([413, 415]) },
      },
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request, reply) => {
      const issued = await issuePlatformKey(deps.database.db, request.params.id, auditSourceOf(request));
      return reply.code(201).header('cache-control', 'no-store').send(issued);
    },
  );
}
