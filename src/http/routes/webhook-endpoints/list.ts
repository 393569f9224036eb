import type { Api, Deps } from '../../deps.ts';
import { listWebhookEndpoints } from '../../../services/webhook-endpoints.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer } from '../../../schemas/common.ts';
import { problems } from '../../../schemas/problems.ts';
import { WEBHOOK_ENDPOINT_EXAMPLES, WebhookEndpointListQuery, WebhookEndpointListSchema } from '../../../schemas/webhook-endpoints.ts';

export function listWebhookEndpointsRoute(app: Api, deps: Deps): void {
  app.get(
    '/webhook-endpoints',
    {
      schema: {
        tags: ['Webhooks'],
        operationId: 'listWebhookEndpoints',
        summary: 'List webhook endpoints',
        description: 'Newest first. Secrets are never shown.',
        security: [{ apiKey: [] }],
        querystring: WebhookEndpointListQuery,
        response: { 200: answer(WebhookEndpointListSchema, "A page of the platform's webhook endpoints, newest first, and how many there are", WEBHOOK_ENDPOINT_EXAMPLES.endpointList), ...problems() },
      },
    },
    async (request) => listWebhookEndpoints(deps.database.db, platformOf(request), request.query),
  );
}
