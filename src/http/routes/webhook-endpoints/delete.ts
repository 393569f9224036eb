import { Type } from 'typebox';
import { auditSourceOf } from '../../audit-source.ts';
import type { Api, Deps } from '../../deps.ts';
import { deleteWebhookEndpoint } from '../../../services/webhook-endpoints.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer } from '../../../schemas/common.ts';
import { problems } from '../../../schemas/problems.ts';
import { WebhookEndpointParams } from '../../../schemas/webhook-endpoints.ts';

export function deleteWebhookEndpointRoute(app: Api, deps: Deps): void {
  app.delete(
    '/webhook-endpoints/:id',
    {
      config: { audit: 'webhook_endpoint.delete' },
      schema: {
        tags: ['Webhooks'],
        operationId: 'deleteWebhookEndpoint',
        summary: 'Delete a webhook endpoint',
        description: 'Deletes the endpoint for good, with its delivery log; nothing more is delivered to it.',
        security: [{ apiKey: [] }],
        params: WebhookEndpointParams,
        response: { 204: answer(Type.Null(), 'Deleted; no body'), ...problems(404) },
      },
    },
    async (request, reply) => {
      await deleteWebhookEndpoint(deps.database.db, platformOf(request), request.params.id, auditSourceOf(request));
      return reply.code(204).send(null);
    },
  );
}
