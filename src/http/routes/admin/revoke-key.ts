import type { Api, Deps } from '../../deps.ts';
import { auditSourceOf } from '../../audit-source.ts';
import { revokePlatformKey, type ApiKeyAuthenticator } from '../../../services/platforms.ts';
import { ADMIN_EXAMPLES, AdminApiKeySchema, ApiKeyParams } from '../../../schemas/admin.ts';
import { answer, EmptyBody, withExamples } from '../../../schemas/common.ts';
import { adminProblems } from '../../../schemas/problems.ts';

export function revokeKeyRoute(app: Api, deps: Deps, authenticator: ApiKeyAuthenticator): void {
  app.post(
    '/api-keys/:id/revoke',
    {
      config: { audit: 'api_key.revoke' },
      schema: {
        tags: ['Admin'],
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key',
        description:
          'From the next request on, this service refuses the key (401 `api_key_invalid`); other processes sharing a ' +
          'PostgreSQL database refuse it within API_KEY_CACHE_SECONDS (5 s). A key already revoked is a 409 ' +
          '`api_key_already_revoked` saying when, and nothing changes. No body, or `{}`.',
        security: [{ adminToken: [] }],
        params: ApiKeyParams,
        body: withExamples(EmptyBody, ADMIN_EXAMPLES.revokeKey.request),
        response: {
          200: answer(AdminApiKeySchema, 'The key, revoked', ADMIN_EXAMPLES.revokeKey.revoked),
          ...adminProblems([409, 413, 415], { 409: ADMIN_EXAMPLES.revokeKey.already }),
        },
      },
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request) => revokePlatformKey(deps.database.db, request.params.id, auditSourceOf(request), authenticator),
  );
}
