import type { Api, Deps } from '../../deps.ts';
import { listPlatformKeys } from '../../../services/platforms.ts';
import { ADMIN_EXAMPLES, AdminApiKeyListSchema, AdminListQuery, PlatformParams } from '../../../schemas/admin.ts';
import { answer } from '../../../schemas/common.ts';
import { adminProblems } from '../../../schemas/problems.ts';

export function listKeysRoute(app: Api, deps: Deps): void {
  app.get(
    '/platforms/:id/api-keys',
    {
      schema: {
        tags: ['Admin'],
        operationId: 'listApiKeys',
        summary: "List a platform's API keys",
        description: 'Newest first, revoked ones included. Each shows its prefix, when it was last used and when it was revoked: never the key nor its hash.',
        security: [{ adminToken: [] }],
        params: PlatformParams,
        querystring: AdminListQuery,
        response: { 200: answer(AdminApiKeyListSchema, "A page of the platform's keys, newest first", ADMIN_EXAMPLES.keyList), ...adminProblems() },
      },
    },
    async (request) => listPlatformKeys(deps.database.db, request.params.id, request.query),
  );
}
