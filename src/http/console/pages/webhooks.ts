import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuditAction } from '../../../domain/audit.ts';
import type { AuditSource } from '../../../services/audit.ts';
import { auditSourceOf } from '../../audit-source.ts';
import { ALL_EVENTS, EVENT_TYPES } from '../../../domain/events.ts';
import {
  createWebhookEndpoint,
  getWebhookEndpoint,
  listWebhookDeliveries,
  listWebhookEndpoints,
  redeliverEvent,
  rotateWebhookSecret,
  sendTestEvent,
  updateWebhookEndpoint,
  type WebhookContext,
} from '../../../services/webhook-endpoints.ts';
import type { Api, Deps } from '../../deps.ts';
import { CreateWebhookEndpointBody, type NewWebhookEndpoint, RedeliverBody, WebhookDeliveryListQuery, WebhookEndpointListQuery } from '../../../schemas/webhook-endpoints.ts';
import { formFields, list, optional, text, validated, type Problem } from '../forms.ts';
import type { ConsolePage } from '../page.ts';
import { failureOf, platformOf, queryOf, redirectTo, render } from '../render.ts';

const WEBHOOKS = '/console/webhooks';
const PAGE_SIZE = 20;

const NOTICES: Record<string, string> = {
  'test-sent': 'A webhook.test event is on its way to this endpoint: it shows in the deliveries below within seconds (refresh the page).',
  redelivered: 'A new delivery attempt is scheduled now: it shows in the deliveries below.',
  enabled: 'The endpoint is enabled: events are delivered to it again.',
  disabled: 'The endpoint is disabled: nothing is delivered to it until you enable it.',
};

const ENDPOINT_LABELS = { url: 'URL', description: 'Description', enabledEvents: 'Events' };

type FormState = { values: { url: string; description: string; events: string[] }; fields: Record<string, string>; problem: Problem | null };

function contextOf(deps: Deps): WebhookContext {
  return { db: deps.database.db, vault: deps.context.vault, config: deps.config };
}

async function listPage(request: FastifyRequest, reply: FastifyReply, deps: Deps, create?: FormState): Promise<FastifyReply> {
  const query = queryOf(request);
  const checked = validated<{ page: number; limit: number }>(WebhookEndpointListQuery, { page: optional(query, 'page') ?? '1', limit: String(PAGE_SIZE) }, 'query');
  const page = await listWebhookEndpoints(deps.database.db, platformOf(request), checked);
  const form = create ?? { values: { url: '', description: '', events: [ALL_EVENTS] }, fields: {}, problem: null };
  return render(request, reply, 'webhooks/list', { title: 'Webhooks', page, create: form, eventTypes: EVENT_TYPES, allEvents: ALL_EVENTS }, form.problem?.status ?? 200);
}

async function detailPage(request: FastifyRequest, reply: FastifyReply, deps: Deps, problem: Problem | null = null): Promise<FastifyReply> {
  const platformId = platformOf(request);
  const { id } = request.params as { id: string };
  const endpoint = await getWebhookEndpoint(deps.database.db, platformId, id);
  const query = queryOf(request);
  const checked = validated<{ page: number; limit: number }>(WebhookDeliveryListQuery, { page: optional(query, 'page') ?? '1', limit: String(PAGE_SIZE) }, 'query');
  const deliveries = await listWebhookDeliveries(deps.database.db, platformId, endpoint.id, checked);
  const notice = problem === null ? (NOTICES[text(query, 'notice')] ?? null) : null;
  return render(request, reply, 'webhooks/detail', { title: 'Webhook endpoint', endpoint, deliveries, notice, problem }, problem?.status ?? 200);
}

/** The signing secret, shown once (after a creation or a rotation): never cached, never shown again. */
function secretPage(request: FastifyRequest, reply: FastifyReply, data: { endpointId: string; url: string; secret: string; rotated: boolean }, status: number) {
  return render(request, reply, 'webhooks/secret', { title: data.rotated ? 'New signing secret' : 'Endpoint created', ...data }, status);
}

export const webhooksPage: ConsolePage = {
  nav: { label: 'Webhooks', href: WEBHOOKS },
  routes(app: Api, deps: Deps): void {
    const context = contextOf(deps);

    app.get('/webhooks', async (request, reply) => listPage(request, reply, deps));

    app.post('/webhooks', { config: { audit: 'webhook_endpoint.create' } }, async (request, reply) => {
      const fields = formFields(request.body);
      const values = { url: text(fields, 'url'), description: text(fields, 'description'), events: list(fields, 'events') };
      try {
        const input = validated<NewWebhookEndpoint>(CreateWebhookEndpointBody, {
          url: values.url,
          ...(values.description === '' ? {} : { description: values.description }),
          enabledEvents: values.events,
        });
        const created = await createWebhookEndpoint(context, platformOf(request), input, auditSourceOf(request));
        return secretPage(request, reply, { endpointId: created.id, url: created.url, secret: created.secret, rotated: false }, 201);
      } catch (error) {
        const problem = failureOf(request, error, ENDPOINT_LABELS);
        if (problem.fields.enabledEvents?.includes('at least 1')) problem.fields.enabledEvents = 'Choose at least one event type, or all events.';
        return listPage(request, reply, deps, { values, fields: problem.fields, problem });
      }
    });

    app.get('/webhooks/:id', async (request, reply) => detailPage(request, reply, deps));

    /** An action on an endpoint: done, then back to its page with a notice; a failure is shown on its page. */
    const action = (
      path: string,
      audit: AuditAction,
      run: (platformId: string, id: string, fields: ReturnType<typeof formFields>, source: AuditSource) => Promise<string>,
    ) =>
      app.post(`/webhooks/:id/${path}`, { config: { audit } }, async (request, reply) => {
        const { id } = request.params as { id: string };
        try {
          const notice = await run(platformOf(request), id, formFields(request.body), auditSourceOf(request));
          return redirectTo(reply, `${WEBHOOKS}/${id}`, notice);
        } catch (error) {
          const problem = failureOf(request, error);
          if (problem.code === 'not_found') throw error;
          return detailPage(request, reply, deps, problem);
        }
      });

    action('test', 'webhook_endpoint.test', async (platformId, id, _fields, source) => {
      await sendTestEvent(deps.database.db, deps.outbox, platformId, id, source);
      return 'test-sent';
    });
    action('redeliver', 'event.redeliver', async (platformId, id, fields, source) => {
      const { eventId } = validated<{ eventId: string }>(RedeliverBody, { eventId: text(fields, 'eventId') });
      await redeliverEvent(deps.database.db, deps.deliveries, platformId, id, eventId, source);
      return 'redelivered';
    });
    action('status', 'webhook_endpoint.update', async (platformId, id, fields, source) => {
      const status = text(fields, 'status') === 'enabled' ? 'enabled' : 'disabled';
      await updateWebhookEndpoint(context, platformId, id, { status }, source);
      return status;
    });

    app.post('/webhooks/:id/rotate', { config: { audit: 'webhook_endpoint.rotate_secret' } }, async (request, reply) => {
      const { id } = request.params as { id: string };
      const platformId = platformOf(request);
      const endpoint = await getWebhookEndpoint(deps.database.db, platformId, id);
      const { secret } = await rotateWebhookSecret(context, platformId, endpoint.id, auditSourceOf(request));
      return secretPage(request, reply, { endpointId: endpoint.id, url: endpoint.url, secret, rotated: true }, 200);
    });
  },
};
