import type { Api, Deps } from '../../deps.ts';
import { auditSourceOf } from '../../audit-source.ts';
import { createConsoleUser } from '../../../services/console-users.ts';
import { ADMIN_EXAMPLES, ConsoleUserSchema, CreateConsoleUserBody, PlatformParams } from '../../../schemas/admin.ts';
import { answer, withExamples } from '../../../schemas/common.ts';
import { adminProblems } from '../../../schemas/problems.ts';

export function createUserRoute(app: Api, deps: Deps): void {
  app.post(
    '/platforms/:id/users',
    {
      config: { audit: 'console_user.create' },
      schema: {
        tags: ['Admin'],
        operationId: 'createConsoleUser',
        summary: 'Create a console user for a platform',
        description:
          "A user of the web console (/console), who signs in with this e-mail and password and sees only this platform. " +
          'E-mail addresses are unique across every platform, ignoring case (409 `console_user_email_taken`); the password ' +
          'needs at least 12 characters and is stored only as an scrypt hash. `role`: `owner`, `operator` or `viewer`; ' +
          "without it, the platform's first user is its owner and the others are operators.",
        security: [{ adminToken: [] }],
        params: PlatformParams,
        body: withExamples(CreateConsoleUserBody, ADMIN_EXAMPLES.createUser.request),
        response: {
          201: answer(ConsoleUserSchema, 'The user', ADMIN_EXAMPLES.createUser.created),
          ...adminProblems([409, 413, 415], { 400: ADMIN_EXAMPLES.createUser.refused, 409: ADMIN_EXAMPLES.createUser.taken }),
        },
      },
    },
    async (request, reply) => reply.code(201).send(await createConsoleUser(deps.database.db, request.params.id, request.body, auditSourceOf(request))),
  );
}
