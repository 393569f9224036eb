import type { Api, Deps } from '../../deps.ts';
import { requirePlatform } from '../../../services/platforms.ts';
import { AdminPlatformSchema, ADMIN_EXAMPLES, adminProblems, answer, PlatformParams } from '../../schemas.ts';

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
