import { auditSourceOf } from '../../audit-source.ts';
import type { Api, Deps } from '../../deps.ts';
import { setPlatformRequiresTwoFactor } from '../../../services/platforms.ts';
import { UpdatePlatformBody } from '../../../schemas/console-users.ts';
import { AdminPlatformSchema, ADMIN_EXAMPLES, PlatformParams } from '../../../schemas/admin.ts';
import { answer, withExamples } from '../../../schemas/common.ts';
import { adminProblems } from '../../../schemas/problems.ts';

export function updatePlatformRoute(app: Api, deps: Deps): void {
  app.patch(
    '/platforms/:id',
    {
      config: { audit: 'platform.update' },
      schema: {
        tags: ['Admin'],
        operationId: 'updatePlatform',
        summary: 'Require (or stop requiring) two-factor sign-in of a platform\'s console users',
        description:
          '`{"requireTwoFactor": true}`: every console user of the platform must sign in with a code from an ' +
          'authenticator app after the password; a user who has not set one up is sent to do so, before any other ' +
          'page, at its next page. `false`: each user chooses.',
        security: [{ adminToken: [] }],
        params: PlatformParams,
        body: withExamples(UpdatePlatformBody, ADMIN_EXAMPLES.updatePlatform.request),
        response: { 200: answer(AdminPlatformSchema, 'The platform, changed', ADMIN_EXAMPLES.updatePlatform.updated), ...adminProblems([413, 415]) },
      },
    },
    async (request) => setPlatformRequiresTwoFactor(deps.database.db, request.params.id, request.body.requireTwoFactor, auditSourceOf(request)),
  );
}
