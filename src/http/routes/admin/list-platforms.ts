import type { Api, Deps } from '../../deps.ts';
import { listPlatformsPage } from '../../../services/platforms.ts';
import { ADMIN_EXAMPLES, AdminListQuery, AdminPlatformListSchema } from '../../../schemas/admin.ts';
import { answer } from '../../../schemas/common.ts';
import { adminProblems } from '../../../schemas/problems.ts';

export function listPlatformsRoute(app: Api, deps: Deps): void {
  app.get(
    '/platforms',
    {
      schema: {
        tags: ['Admin'],
        operationId: 'listPlatforms',
        summary: 'List platforms',
        description: 'Newest first, in the customers\' envelope (`items`, `meta`).',
        security: [{ adminToken: [] }],
        querystring: AdminListQuery,
        response: { 200: answer(AdminPlatformListSchema, 'A page of the platforms, newest first, and how many there are', ADMIN_EXAMPLES.platformList), ...adminProblems() },
      },
    },
    async (request) => listPlatformsPage(deps.database.db, request.query),
  );
}
