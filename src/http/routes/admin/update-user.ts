import type { Api, Deps } from '../../deps.ts';
import { auditSourceOf } from '../../audit-source.ts';
import { updateConsoleUser } from '../../../services/console-users.ts';
import { ADMIN_EXAMPLES, ConsoleUserParams, ConsoleUserSchema, UpdateConsoleUserBody } from '../../../schemas/admin.ts';
import { answer, withExamples } from '../../../schemas/common.ts';
import { adminProblems } from '../../../schemas/problems.ts';

export function updateUserRoute(app: Api, deps: Deps): void {
  app.patch(
    '/users/:id',
    {
      config: { audit: ['console_user.update', 'console_user.disable', 'console_user.enable', 'console_user.two_factor_reset'] },
      schema: {
        tags: ['Admin'],
        operationId: 'updateConsoleUser',
        summary: "Change a console user's role, disable or enable it, or reset its second factor",
        description:
          '`{"role": "viewer"}`: its role (`owner`, `operator` or `viewer`) from its next page on. ' +
          '`{"disabled": true}`: the user cannot sign in any more, and its console sessions are ended at once (it is ' +
          'signed out on its next page). `{"disabled": false}`: it can sign in again. `{"twoFactor": null}`: its second ' +
          'factor and recovery codes are forgotten and its sessions ended (a lost phone); it signs in with the password ' +
          'alone, or is sent to set one up again when its platform requires it. Fields may be combined; setting what is ' +
          'already set changes nothing.',
        security: [{ adminToken: [] }],
        params: ConsoleUserParams,
        body: withExamples(UpdateConsoleUserBody, ADMIN_EXAMPLES.updateUser.request),
        response: { 200: answer(ConsoleUserSchema, 'The user, changed', ADMIN_EXAMPLES.updateUser.updated), ...adminProblems([413, 415]) },
      },
    },
    async (request) => updateConsoleUser(deps.database.db, request.params.id, request.body, auditSourceOf(request)),
  );
}
