import type { Api, Deps } from '../../deps.ts';
import { auditSourceOf } from '../../audit-source.ts';
import { createWebhookEndpoint, replayCreatedWebhookEndpoint } from '../../../services/webhook-endpoints.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { commitLinkOf } from '../../plugins/idempotency.ts';
import { answer, withExamples } from '../../../schemas/common.ts';
import { problems } from '../../../schemas/problems.ts';
import { CreatedWebhookEndpointSchema, CreateWebhookEndpointBody, WEBHOOK_ENDPOINT_EXAMPLES } from '../../../schemas/webhook-endpoints.ts';

export function createWebhookEndpointRoute(app: Api, deps: Deps): void {
  const context = { db: deps.database.db, vault: deps.context.vault, config: deps.config };
  app.post(
    '/webhook-endpoints',
    {
      schema: {
        tags: ['Webhooks'],
        operationId: 'createWebhookEndpoint',
        summary: 'Create a webhook endpoint',
        description:
          'Registers a URL to which the platform\'s events of the `enabledEvents` types are delivered (Standard Webhooks: ' +
          '`webhook-id`, `webhook-timestamp`, `webhook-signature` headers). The answer holds the signing secret ' +
          '(`whsec_…`), shown this once and stored encrypted. The URL must be https://, or http:// for a public host; a ' +
          'host that is or resolves to a loopback, private, link-local or internal address is refused with 400 ' +
          '`webhook_url_not_allowed` (unless the service runs with WEBHOOK_ALLOW_PRIVATE_URLS=true).',
        security: [{ apiKey: [] }],
        body: withExamples(CreateWebhookEndpointBody, WEBHOOK_ENDPOINT_EXAMPLES.createEndpoint.request),
        response: { 201: answer(CreatedWebhookEndpointSchema, 'The endpoint, created and enabled, with its signing secret', WEBHOOK_ENDPOINT_EXAMPLES.createEndpoint.created), ...problems(409, 413, 415, 422) },
      },
      config: {
        audit: 'webhook_endpoint.create',
        answerHoldsSecret: true,
        replayFromResource: async (platformId, endpointId) => {
          const created = await replayCreatedWebhookEndpoint(context, platformId, endpointId);
          return created && { statusCode: 201, body: created };
        },
      },
    },
    async (request, reply) => {
      const created = await createWebhookEndpoint(context, platformOf(request), request.body, auditSourceOf(request), commitLinkOf(request));
      return reply.code(201).header('cache-control', 'no-store').send(created);
    },
  );
}
