import type { Api, Deps } from '../../deps.ts';
import { requirePlatform } from '../../../services/platforms.ts';
import { ADMIN_EXAMPLES, AdminPlatformSchema, PlatformParams } from '../../../schemas/admin.ts';
import { answer } from '../../../schemas/common.ts';
import { adminProblems } from '../../../schemas/problems.ts';

export function getPlatformRoute(app: Api, deps: Deps): void {
  app.get(
    '/platforms/:id',
    {
      schema: {
        tags: ['Admin'],
        operationId: 'getPlatform',
        summary: 'Get a platform',
        security: [{ adminToken: [] }],
        params: PlatformParams,
        response: { 200: answer(AdminPlatformSchema, 'The platform', ADMIN_EXAMPLES.platform), ...adminProblems() },
      },
    },
    async (request) => requirePlatform(deps.database.db, request.params.id),
  );
}
