import type { Api, Deps } from '../../deps.ts';
import { auditSourceOf } from '../../audit-source.ts';
import { redeliverEvent, shownDelivery } from '../../../services/webhook-endpoints.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { commitLinkOf } from '../../plugins/idempotency.ts';
import { answer, withExamples } from '../../../schemas/common.ts';
import { problems } from '../../../schemas/problems.ts';
import { RedeliverBody, WEBHOOK_ENDPOINT_EXAMPLES, WebhookDeliverySchema, WebhookEndpointParams } from '../../../schemas/webhook-endpoints.ts';

export function redeliverRoute(app: Api, deps: Deps): void {
  app.post(
    '/webhook-endpoints/:id/redeliver',
    {
      schema: {
        tags: ['Webhooks'],
        operationId: 'redeliverWebhookEvent',
        summary: 'Deliver an event to a webhook endpoint again',
        description:
          'Schedules a new delivery attempt, due now, of one of the platform\'s events to this endpoint (retried on ' +
          'failure like any delivery), whichever types the endpoint subscribes to. The endpoint must be enabled (409).',
        security: [{ apiKey: [] }],
        params: WebhookEndpointParams,
        body: withExamples(RedeliverBody, WEBHOOK_ENDPOINT_EXAMPLES.redeliver.request),
        response: { 202: answer(WebhookDeliverySchema, 'The new attempt, as the deliveries log shows it', WEBHOOK_ENDPOINT_EXAMPLES.redeliver.scheduled), ...problems(404, 409, 413, 415, 422) },
      },
      config: {
        audit: 'event.redeliver',
        replayFromResource: async (platformId, attemptId) => {
          const delivery = await shownDelivery(deps.database.db, platformId, attemptId);
          return delivery && { statusCode: 202, body: delivery };
        },
      },
    },
    async (request, reply) => {
      const delivery = await redeliverEvent(
        deps.database.db,
        deps.deliveries,
        platformOf(request),
        request.params.id,
        request.body.eventId,
        auditSourceOf(request),
        commitLinkOf(request),
      );
      return reply.code(202).send(delivery);
    },
  );
}
