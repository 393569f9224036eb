import type { FastifyReply, FastifyRequest } from 'fastify';
import { auditSourceOf } from '../../audit-source.ts';
import { EVENT_TYPES } from '../../../domain/events.ts';
import { listCustomers } from '../../../services/customers.ts';
import { getEvent, listEvents, type EventListQuery as EventListQueryType } from '../../../services/events.ts';
import type { Event } from '../../../services/outbox.ts';
import { listWebhookEndpoints, redeliverEvent } from '../../../services/webhook-endpoints.ts';
import type { Api, Deps } from '../../deps.ts';
import { requireDateRange } from '../../routes/date-range.ts';
import { EventListQuery } from '../../../schemas/events.ts';
import { RedeliverBody, type WebhookEndpoint } from '../../../schemas/webhook-endpoints.ts';
import { formFields, optional, text, validated, type Problem } from '../forms.ts';
import type { ConsolePage } from '../page.ts';
import { helpers } from '../helpers.ts';
import { failureOf, platformOf, queryOf, render } from '../render.ts';

const EVENTS = '/console/events';
const PAGE_SIZE = 20;
/** The customers the filter offers: the newest ones (the API's page size at most). */
const PICKER_SIZE = 100;
/** The endpoints the redelivery form offers (the API's page size at most; a platform has a few). */
const ENDPOINTS_SHOWN = 100;

const FILTER_LABELS = { type: 'Type', platformCustomerId: 'Customer', fromDate: 'From', toDate: 'To', page: 'Page' };

/** The query checks' messages as the filters' fields say them ("Query parameter fromDate …" → "From …"). */
function filterMessages(fields: Record<string, string>): Record<string, string> {
  const shown: Record<string, string> = {};
  for (const [name, message] of Object.entries(fields)) {
    const label = (FILTER_LABELS as Record<string, string>)[name] ?? name;
    // The picker offers every type: another one came from an edited link.
    shown[name] = name === 'type' ? 'Not an event type: choose one from the list.' : message.replace(new RegExp(`^(Query parameter )?${name}\\b`), label);
  }
  return shown;
}

type Filters = { type: string; customer: string; fromDate: string; toDate: string };

function filtersOf(request: FastifyRequest): Filters {
  const query = queryOf(request);
  return {
    type: optional(query, 'type') ?? '',
    customer: optional(query, 'customer') ?? '',
    fromDate: optional(query, 'fromDate') ?? '',
    toDate: optional(query, 'toDate') ?? '',
  };
}

/** The platform's customers by id, for the filter and to name each event's customer. */
async function customersOf(deps: Deps, platformId: string) {
  const page = await listCustomers(deps.database.db, platformId, { page: 1, limit: PICKER_SIZE });
  return { items: page.items, more: page.meta.totalItems > page.items.length, names: Object.fromEntries(page.items.map((c) => [c.id, c.name])) };
}

async function listPage(request: FastifyRequest, reply: FastifyReply, deps: Deps): Promise<FastifyReply> {
  const platformId = platformOf(request);
  const filters = filtersOf(request);
  const customers = await customersOf(deps, platformId);
  let page: { items: Event[]; meta: { totalItems: number; totalPages: number; currentPage: number } } = {
    items: [],
    meta: { totalItems: 0, totalPages: 0, currentPage: 1 },
  };
  let problem: Problem | null = null;
  try {
    // The API's own query schema and date-range rule, then the API's own service.
    const checked = validated<EventListQueryType>(
      EventListQuery,
      {
        ...(filters.type === '' ? {} : { type: filters.type }),
        ...(filters.customer === '' ? {} : { platformCustomerId: filters.customer }),
        ...(filters.fromDate === '' ? {} : { fromDate: filters.fromDate }),
        ...(filters.toDate === '' ? {} : { toDate: filters.toDate }),
        page: optional(queryOf(request), 'page') ?? '1',
        limit: String(PAGE_SIZE),
      },
      'query',
    );
    requireDateRange(checked);
    page = await listEvents(deps.database.db, platformId, checked);
  } catch (error) {
    problem = failureOf(request, error, FILTER_LABELS);
    // Another platform's customer (or none) is the 404 page, as everywhere.
    if (problem.code === 'not_found') throw error;
    problem.fields = filterMessages(problem.fields);
  }
  const filtered = filters.type !== '' || filters.customer !== '' || filters.fromDate !== '' || filters.toDate !== '';
  return render(
    request,
    reply,
    'events/list',
    { title: 'Events', page, filters, filtered, eventTypes: EVENT_TYPES, customers: customers.items, moreCustomers: customers.more, customerNames: customers.names, problem },
    problem?.status ?? 200,
  );
}

async function detailPage(request: FastifyRequest, reply: FastifyReply, deps: Deps, problem: Problem | null = null, chosen = ''): Promise<FastifyReply> {
  const platformId = platformOf(request);
  const { id } = request.params as { id: string };
  const event = await getEvent(deps.database.db, platformId, id);
  const customers = await customersOf(deps, platformId);
  const endpoints = await listWebhookEndpoints(deps.database.db, platformId, { page: 1, limit: ENDPOINTS_SHOWN });
  const query = queryOf(request);
  let notice: { endpoint: WebhookEndpoint | null } | null = null;
  if (problem === null && text(query, 'notice') === 'redelivered') {
    const endpointId = text(query, 'endpoint');
    notice = { endpoint: endpoints.items.find((endpoint) => endpoint.id === endpointId) ?? null };
  }
  return render(
    request,
    reply,
    'events/detail',
    {
      title: `Event ${event.type}`,
      event,
      json: JSON.stringify(event.data, null, 2),
      customerName: event.platformCustomerId === null ? null : (customers.names[event.platformCustomerId] ?? null),
      endpoints: endpoints.items,
      enabledEndpoints: endpoints.items.filter((endpoint) => endpoint.status === 'enabled'),
      chosen,
      redelivered: notice,
      problem,
    },
    problem?.status ?? 200,
  );
}

export const eventsPage: ConsolePage = {
  nav: { label: 'Events', href: EVENTS },
  routes(app: Api, deps: Deps): void {
    app.get('/events', async (request, reply) => listPage(request, reply, deps));

    app.get('/events/:id', async (request, reply) => detailPage(request, reply, deps));

    // The same service as POST /api/v1/webhook-endpoints/{id}/redeliver: a new attempt of this event to the endpoint.
    app.post('/events/:id/redeliver', { config: { audit: 'event.redeliver' } }, async (request, reply) => {
      const platformId = platformOf(request);
      const { id } = request.params as { id: string };
      const endpointId = text(formFields(request.body), 'endpointId');
      // Another platform's event (or none) is the 404 page, before anything is done.
      const event = await getEvent(deps.database.db, platformId, id);
      try {
        if (endpointId === '') {
          return await detailPage(request, reply, deps, {
            status: 400,
            code: 'validation_failed',
            title: 'Choose an endpoint',
            detail: 'Choose the endpoint to deliver this event to.',
            fields: { endpointId: 'Choose an endpoint.' },
          });
        }
        const { eventId } = validated<{ eventId: string }>(RedeliverBody, { eventId: event.id });
        await redeliverEvent(deps.database.db, deps.deliveries, platformId, endpointId, eventId, auditSourceOf(request));
        return reply.redirect(helpers.href(`${EVENTS}/${encodeURIComponent(event.id)}`, { notice: 'redelivered', endpoint: endpointId }), 303);
      } catch (error) {
        const problem = failureOf(request, error, { eventId: 'Event' });
        return detailPage(request, reply, deps, problem, endpointId);
      }
    });
  },
};
