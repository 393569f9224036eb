import type { Api, Deps } from '../../deps.ts';
import { auditSourceOf } from '../../audit-source.ts';
import { setConsoleUserDisabled } from '../../../services/console-users.ts';
import { ADMIN_EXAMPLES, adminProblems, answer, ConsoleUserParams, ConsoleUserSchema, UpdateConsoleUserBody, withExamples } from '../../schemas.ts';

export function updateUserRoute(app: Api, deps: Deps): void {
  app.patch(
    '/users/:id',
    {
      config: { audit: ['console_user.disable', 'console_user.enable'] },
      schema: {
        tags: ['Admin'],
        operationId: 'updateConsoleUser',
        summary: 'Disable or enable a console user',
        description:
          '`{"disabled": true}`: the user cannot sign in any more, and its console sessions are ended at once (it is ' +
          'signed out on its next page). `{"disabled": false}`: it can sign in again. Setting what is already set changes nothing.',
        security: [{ adminToken: [] }],
        params: ConsoleUserParams,
        body: withExamples(UpdateConsoleUserBody, ADMIN_EXAMPLES.updateUser.request),
        response: { 200: answer(ConsoleUserSchema, 'The user, changed', ADMIN_EXAMPLES.updateUser.updated), ...adminProblems([413, 415]) },
      },
    },
    async (request) => setConsoleUserDisabled(deps.database.db, request.params.id, request.body.disabled, auditSourceOf(request)),
  );
}
