import type { Api, Deps } from '../../deps.ts';
import { auditSourceOf } from '../../audit-source.ts';
import { sendTestEvent } from '../../../services/webhook-endpoints.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer, EMPTY_BODY_EXAMPLES, EmptyBody, withExamples } from '../../../schemas/common.ts';
import { EventRef } from '../../../schemas/events.ts';
import { problems } from '../../../schemas/problems.ts';
import { WEBHOOK_ENDPOINT_EXAMPLES, WebhookEndpointParams } from '../../../schemas/webhook-endpoints.ts';

export function testWebhookEndpointRoute(app: Api, deps: Deps): void {
  app.post(
    '/webhook-endpoints/:id/test',
    {
      config: { audit: 'webhook_endpoint.test' },
      schema: {
        tags: ['Webhooks'],
        operationId: 'testWebhookEndpoint',
        summary: 'Send a test event to a webhook endpoint',
        description:
          'Records a `webhook.test` event and delivers it to this endpoint alone, now, as any event is delivered (signed, ' +
          'retried on failure); follow it in the endpoint\'s deliveries. The endpoint must be enabled (409). No body, or `{}`.',
        security: [{ apiKey: [] }],
        params: WebhookEndpointParams,
        body: withExamples(EmptyBody, EMPTY_BODY_EXAMPLES),
        response: { 202: answer(EventRef, 'The webhook.test event, on its way', WEBHOOK_ENDPOINT_EXAMPLES.testEvent), ...problems(404, 409, 413, 415, 422) },
      },
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request, reply) => {
      const event = await sendTestEvent(deps.database.db, deps.outbox, platformOf(request), request.params.id, auditSourceOf(request));
      return reply.code(202).send(event);
    },
  );
}
