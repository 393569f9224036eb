import type { Api, Deps } from '../../deps.ts';
import { listConsoleUsers } from '../../../services/console-users.ts';
import { ADMIN_EXAMPLES, AdminListQuery, ConsoleUserListSchema, PlatformParams } from '../../../schemas/admin.ts';
import { answer } from '../../../schemas/common.ts';
import { adminProblems } from '../../../schemas/problems.ts';

export function listUsersRoute(app: Api, deps: Deps): void {
  app.get(
    '/platforms/:id/users',
    {
      schema: {
        tags: ['Admin'],
        operationId: 'listConsoleUsers',
        summary: "List a platform's console users",
        description: 'Newest first, disabled ones included.',
        security: [{ adminToken: [] }],
        params: PlatformParams,
        querystring: AdminListQuery,
        response: { 200: answer(ConsoleUserListSchema, "A page of the platform's console users, newest first", ADMIN_EXAMPLES.userList), ...adminProblems() },
      },
    },
    async (request) => listConsoleUsers(deps.database.db, request.params.id, request.query),
  );
}
