import type { Api, Deps } from '../../deps.ts';
import { auditSourceOf } from '../../audit-source.ts';
import { updateWebhookEndpoint } from '../../../services/webhook-endpoints.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer, withExamples } from '../../../schemas/common.ts';
import { problems } from '../../../schemas/problems.ts';
import { UpdateWebhookEndpointBody, WEBHOOK_ENDPOINT_EXAMPLES, WebhookEndpointParams, WebhookEndpointRef } from '../../../schemas/webhook-endpoints.ts';

export function updateWebhookEndpointRoute(app: Api, deps: Deps): void {
  const context = { db: deps.database.db, vault: deps.context.vault, config: deps.config };
  app.patch(
    '/webhook-endpoints/:id',
    {
      config: { audit: 'webhook_endpoint.update' },
      schema: {
        tags: ['Webhooks'],
        operationId: 'updateWebhookEndpoint',
        summary: 'Change a webhook endpoint',
        description:
          'Changes the fields sent (at least one). A new `url` is checked as at creation. `status: "disabled"` stops ' +
          'deliveries to it (`disabledReason` "disabled by the platform"); `status: "enabled"` starts them again and ' +
          'clears the reason and the failure clock (an endpoint is disabled after every delivery failed for 5 days). ' +
          '`description: null` removes the description.',
        security: [{ apiKey: [] }],
        params: WebhookEndpointParams,
        body: withExamples(UpdateWebhookEndpointBody, WEBHOOK_ENDPOINT_EXAMPLES.updateEndpoint.request),
        response: { 200: answer(WebhookEndpointRef, 'The endpoint, changed', WEBHOOK_ENDPOINT_EXAMPLES.updateEndpoint.updated), ...problems(404, 413, 415) },
      },
    },
    async (request) => updateWebhookEndpoint(context, platformOf(request), request.params.id, request.body, auditSourceOf(request)),
  );
}
