import type { Api, Deps } from '../../deps.ts';
import { auditSourceOf } from '../../audit-source.ts';
import { createPlatformWithKey } from '../../../services/platforms.ts';
import { ADMIN_EXAMPLES, AdminCreatedPlatformSchema, CreatePlatformBody } from '../../../schemas/admin.ts';
import { answer, withExamples } from '../../../schemas/common.ts';
import { adminProblems } from '../../../schemas/problems.ts';

export function createPlatformRoute(app: Api, deps: Deps): void {
  app.post(
    '/platforms',
    {
      config: { audit: ['platform.create', 'api_key.issue'] },
      schema: {
        tags: ['Admin'],
        operationId: 'createPlatform',
        summary: 'Create a platform and its first API key',
        description:
          'A new platform (a tenant: its customers, requests, webhooks and console users are its own) with its first API ' +
          'key, shown in this answer only: only its SHA-256 hash is stored. Issue more keys with POST …/api-keys.',
        security: [{ adminToken: [] }],
        body: withExamples(CreatePlatformBody, ADMIN_EXAMPLES.createPlatform.request),
        response: { 201: answer(AdminCreatedPlatformSchema, 'The platform and its API key (shown this once)', ADMIN_EXAMPLES.createPlatform.created), ...adminProblems([413, 415]) },
      },
    },
    async (request, reply) => {
      const { platform, apiKey } = await createPlatformWithKey(deps.database.db, request.body.name, auditSourceOf(request));
      return reply.code(201).header('cache-control', 'no-store').send({ platform, apiKey });
    },
  );
}
