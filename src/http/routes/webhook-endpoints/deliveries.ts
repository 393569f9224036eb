import type { Api, Deps } from '../../deps.ts';
import { listWebhookDeliveries } from '../../../services/webhook-endpoints.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer } from '../../../schemas/common.ts';
import { problems } from '../../../schemas/problems.ts';
import { WEBHOOK_ENDPOINT_EXAMPLES, WebhookDeliveryListQuery, WebhookDeliveryListSchema, WebhookEndpointParams } from '../../../schemas/webhook-endpoints.ts';

export function listWebhookDeliveriesRoute(app: Api, deps: Deps): void {
  app.get(
    '/webhook-endpoints/:id/deliveries',
    {
      schema: {
        tags: ['Webhooks'],
        operationId: 'listWebhookDeliveries',
        summary: "List a webhook endpoint's delivery attempts",
        description:
          'One row per attempt, newest first: a failed delivery retried is several rows (`attempt` 1, 2, …). ' +
          '`responseBody` keeps the first 1 KiB of what the receiver answered.',
        security: [{ apiKey: [] }],
        params: WebhookEndpointParams,
        querystring: WebhookDeliveryListQuery,
        response: { 200: answer(WebhookDeliveryListSchema, "A page of the endpoint's delivery attempts, newest first, and how many there are", WEBHOOK_ENDPOINT_EXAMPLES.deliveryList), ...problems(404) },
      },
    },
    async (request) => listWebhookDeliveries(deps.database.db, platformOf(request), request.params.id, request.query),
  );
}
