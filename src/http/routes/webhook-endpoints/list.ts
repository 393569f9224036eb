import type { Api, Deps } from '../../deps.ts';
import { listWebhookEndpoints } from '../../../services/webhook-endpoints.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer, MORE_EXAMPLES, problems, WebhookEndpointListQuery, WebhookEndpointListSchema } from '../../schemas.ts';

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
        response: { 200: answer(WebhookEndpointListSchema, "A page of the platform's webhook endpoints, newest first, and how many there are", MORE_EXAMPLES.endpointList), ...problems() },
      },
    },
    async (request) => listWebhookEndpoints(deps.database.db, platformOf(request), request.query),
  );
}
