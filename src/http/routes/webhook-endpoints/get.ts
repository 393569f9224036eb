import type { Api, Deps } from '../../deps.ts';
import { getWebhookEndpoint } from '../../../services/webhook-endpoints.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer } from '../../../schemas/common.ts';
import { problems } from '../../../schemas/problems.ts';
import { WEBHOOK_ENDPOINT_EXAMPLES, WebhookEndpointParams, WebhookEndpointRef } from '../../../schemas/webhook-endpoints.ts';

export function getWebhookEndpointRoute(app: Api, deps: Deps): void {
  app.get(
    '/webhook-endpoints/:id',
    {
      schema: {
        tags: ['Webhooks'],
        operationId: 'getWebhookEndpoint',
        summary: 'Get a webhook endpoint',
        security: [{ apiKey: [] }],
        params: WebhookEndpointParams,
        response: { 200: answer(WebhookEndpointRef, 'The endpoint', WEBHOOK_ENDPOINT_EXAMPLES.endpoint), ...problems(404) },
      },
    },
    async (request) => getWebhookEndpoint(deps.database.db, platformOf(request), request.params.id),
  );
}
