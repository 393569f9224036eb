import type { FastifyReply, FastifyRequest } from 'fastify';
import { auditSourceOf } from '../../audit-source.ts';
import { requireCustomer } from '../../../services/customers.ts';
import { toCustomer } from '../../../services/customer-view.ts';
import { refreshIrms, type IrmPageQuery, type IrmRecord } from '../../../services/irms.ts';
import type { Api, Deps } from '../../deps.ts';
import { requireDateRange } from '../../routes/date-range.ts';
import { IrmRefreshQuery } from '../../../schemas/irms.ts';
import { formFields, optional, text, validated, type FormFields, type Problem } from '../forms.ts';
import type { ConsolePage } from '../page.ts';
import { helpers } from '../helpers.ts';
import { failureOf, platformOf, queryOf, render } from '../render.ts';

const PAGE_SIZE = 20;

const NOTICES: Record<string, string> = {
  refreshed: 'The IRMs were pulled from the authority just now.',
  recent: 'The IRMs were pulled from the authority moments ago, so they were not pulled again: refresh again in a little while.',
};

const FILTER_LABELS = { irmNumber: 'IRM number', fromDate: 'Issued from', toDate: 'Issued to', page: 'Page' };

type Filters = { irmNumber: string; fromDate: string; toDate: string };

function filtersOf(fields: FormFields): Filters {
  return { irmNumber: optional(fields, 'irmNumber') ?? '', fromDate: optional(fields, 'fromDate') ?? '', toDate: optional(fields, 'toDate') ?? '' };
}

/** The filters and page, checked by the API's own schema (IrmRefreshQuery) and date-range rule. */
function checkedQuery(customerId: string, filters: Filters, page: string): IrmPageQuery {
  const checked = validated<IrmPageQuery & { platformCustomerId: string }>(
    IrmRefreshQuery,
    {
      platformCustomerId: customerId,
      ...(filters.irmNumber === '' ? {} : { irmNumber: filters.irmNumber }),
      ...(filters.fromDate === '' ? {} : { fromDate: filters.fromDate }),
      ...(filters.toDate === '' ? {} : { toDate: filters.toDate }),
      page,
      limit: String(PAGE_SIZE),
    },
    'query',
  );
  requireDateRange(checked);
  const { platformCustomerId: _customer, ...query } = checked;
  return query;
}

/** An IRM as a row shows it: the record, and how much of it is mapped (utilised) out of the amount remitted. */
function rowOf(irm: IrmRecord) {
  const remitted = irm.remittanceFCCAmount;
  const mapped = irm.irmUtilizedAmt;
  const share = remitted > 0 ? Math.min(1, Math.max(0, mapped / remitted)) : 0;
  const rounded = Math.round(share * 100);
  // A little mapped is never "0%", nor nearly all "100%".
  const percent = share > 0 && rounded === 0 ? '<1' : share < 1 && rounded === 100 ? '>99' : String(rounded);
  return { ...irm, mapped, remitted, percent };
}

/**
 * The page: the customer's IRMs through the API's IRM list (refreshIrms: a verified customer, pulled from the
 * authority unless a pull is recent, then the stored IRMs, filtered and paged as the API pages them).
 */
async function showIrms(request: FastifyRequest, reply: FastifyReply, deps: Deps): Promise<FastifyReply> {
  const platformId = platformOf(request);
  const { id } = request.params as { id: string };
  // Another platform's customer (or none) is the 404 page.
  const row = await requireCustomer(deps.database.db, platformId, id);
  const customer = toCustomer(row);
  const query = queryOf(request);
  const filters = filtersOf(query);
  const notice = NOTICES[text(query, 'notice')] ?? null;
  let list: { items: ReturnType<typeof rowOf>[]; total: number; page: number; totalPages: number } | null = null;
  let problem: Problem | null = null;
  try {
    const checked = checkedQuery(customer.id, filters, optional(query, 'page') ?? '1');
    const answer = await refreshIrms(deps.context, deps.irmPuller, platformId, customer.id, checked, null);
    list = { items: answer.data.map(rowOf), total: answer.meta.total, page: answer.meta.page, totalPages: answer.meta.totalPages };
  } catch (error) {
    problem = failureOf(request, error, FILTER_LABELS);
    if (problem.code === 'not_found') throw error;
  }
  // Read again: the list may have pulled just now.
  const pulledAt = (await requireCustomer(deps.database.db, platformId, id)).irms_pulled_at ?? row.irms_pulled_at;
  return render(
    request,
    reply,
    'irms/list',
    { title: `IRMs of ${customer.name}`, customer, filters, list, problem, notice, pulledAt: pulledAt?.toISOString() ?? null, intervalSeconds: deps.config.irmRefreshIntervalSeconds },
    problem?.status ?? 200,
  );
}

export const irmsPage: ConsolePage = {
  routes(app: Api, deps: Deps): void {
    app.get('/customers/:id/irms', async (request, reply) => showIrms(request, reply, deps));

    // Refresh: POST /api/v1/irm/refresh's operation, with the filters shown; then the page again (303).
    app.post('/customers/:id/irms/refresh', { config: { audit: 'irm.refresh' } }, async (request, reply) => {
      const platformId = platformOf(request);
      const { id } = request.params as { id: string };
      const customer = toCustomer(await requireCustomer(deps.database.db, platformId, id));
      const filters = filtersOf(formFields(request.body));
      const before = (await requireCustomer(deps.database.db, platformId, id)).irms_pulled_at;
      try {
        await refreshIrms(deps.context, deps.irmPuller, platformId, customer.id, checkedQuery(customer.id, filters, '1'), auditSourceOf(request));
      } catch (error) {
        const problem = failureOf(request, error, FILTER_LABELS);
        if (problem.code === 'not_found') throw error;
        return render(
          request,
          reply,
          'irms/list',
          { title: `IRMs of ${customer.name}`, customer, filters, list: null, problem, notice: null, pulledAt: before?.toISOString() ?? null, intervalSeconds: deps.config.irmRefreshIntervalSeconds },
          problem.status,
        );
      }
      // Pulled now, or not (a pull within IRM_REFRESH_INTERVAL_SECONDS is reused, as the API reuses it).
      const after = (await requireCustomer(deps.database.db, platformId, id)).irms_pulled_at;
      const pulled = after !== null && (before === null || after.getTime() !== before.getTime());
      return reply.redirect(helpers.href(`/console/customers/${customer.id}/irms`, { ...filters, notice: pulled ? 'refreshed' : 'recent' }), 303);
    });
  },
};
