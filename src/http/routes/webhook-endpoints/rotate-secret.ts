import type { Api, Deps } from '../../deps.ts';
import { auditSourceOf } from '../../audit-source.ts';
import { replayRotatedSecret, rotateWebhookSecret } from '../../../services/webhook-endpoints.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { commitLinkOf } from '../../plugins/idempotency.ts';
import { answer, EMPTY_BODY_EXAMPLES, EmptyBody, withExamples } from '../../../schemas/common.ts';
import { problems } from '../../../schemas/problems.ts';
import { WEBHOOK_ENDPOINT_EXAMPLES, WebhookEndpointParams, WebhookSecretSchema } from '../../../schemas/webhook-endpoints.ts';

export function rotateWebhookSecretRoute(app: Api, deps: Deps): void {
  const context = { db: deps.database.db, vault: deps.context.vault, config: deps.config };
  app.post(
    '/webhook-endpoints/:id/rotate-secret',
    {
      schema: {
        tags: ['Webhooks'],
        operationId: 'rotateWebhookEndpointSecret',
        summary: "Rotate a webhook endpoint's signing secret",
        description:
          'Makes a new signing secret, shown in this answer alone. For 24 hours the old secret keeps signing beside the ' +
          'new one (`webhook-signature` then carries two signatures, space-separated), so that receivers can switch ' +
          'without losing a delivery; a second rotation within them drops the oldest secret. No body, or `{}`.',
        security: [{ apiKey: [] }],
        params: WebhookEndpointParams,
        body: withExamples(EmptyBody, EMPTY_BODY_EXAMPLES),
        response: { 200: answer(WebhookSecretSchema, 'The new signing secret', WEBHOOK_ENDPOINT_EXAMPLES.secret), ...problems(404, 409, 413, 415, 422) },
      },
      preValidation: async (request) => {
        request.body ??= {};
      },
      config: {
        audit: 'webhook_endpoint.rotate_secret',
        answerHoldsSecret: true,
        replayFromResource: async (platformId, endpointId) => {
          const rotated = await replayRotatedSecret(context, platformId, endpointId);
          return rotated && { statusCode: 200, body: rotated };
        },
      },
    },
    async (request, reply) => {
      const rotated = await rotateWebhookSecret(context, platformOf(request), request.params.id, auditSourceOf(request), commitLinkOf(request));
      return reply.header('cache-control', 'no-store').send(rotated);
    },
  );
}
