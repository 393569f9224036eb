import type { Api, Deps } from '../../deps.ts';
import { requireApiKey } from '../../../services/platforms.ts';
import { ADMIN_EXAMPLES, AdminApiKeySchema, ApiKeyParams } from '../../../schemas/admin.ts';
import { answer } from '../../../schemas/common.ts';
import { adminProblems } from '../../../schemas/problems.ts';

export function getKeyRoute(app: Api, deps: Deps): void {
  app.get(
    '/api-keys/:id',
    {
      schema: {
        tags: ['Admin'],
        operationId: 'getApiKey',
        summary: 'Get an API key',
        description: 'The key by its id, whichever platform it is of: its prefix, when it was last used and when it was revoked, never the key nor its hash.',
        security: [{ adminToken: [] }],
        params: ApiKeyParams,
        response: { 200: answer(AdminApiKeySchema, 'The API key', ADMIN_EXAMPLES.key), ...adminProblems() },
      },
    },
    async (request) => requireApiKey(deps.database.db, request.params.id),
  );
}
