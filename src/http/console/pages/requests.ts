import { Readable } from 'node:stream';
import type { Static } from 'typebox';
import { REQUEST_STATUSES } from '../../../domain/request-state.ts';
import { notFound } from '../../../errors.ts';
import { listCustomers, requireCustomer } from '../../../services/customers.ts';
import { toCustomer } from '../../../services/customer-view.ts';
import type { RequestListQuery as RequestListQueryType, RequestSummary } from '../../../services/genebrc/list.ts';
import type { Api, Deps } from '../../deps.ts';
import { requireDateRange } from '../../routes/date-range.ts';
import { RequestListQuery, type RequestRecordSchema } from '../../../schemas/genebrc-requests.ts';
import { optional, validated, type Problem } from '../forms.ts';
import type { ConsolePage } from '../page.ts';
import { failureOf, platformOf, queryOf, render } from '../render.ts';

const PAGE_SIZE = 20;
const REQUESTS = '/console/requests';
/** The customers the picker offers: the newest ones (others are reached from their own page). */
const PICKER_SIZE = 100;

type RequestRecord = Static<typeof RequestRecordSchema>;
type ErrorDetail = RequestRecord['errorDetails']['errors'][number];

/** The list operation's answer for one request (GET /api/v1/genebrc?requestId=…), read as the API sends it. */
async function recordOf(deps: Deps, platformId: string, customerId: string, requestId: string): Promise<RequestRecord | null> {
  const { body } = await deps.requestList.page(platformId, { platformCustomerId: customerId, requestId, page: 1, limit: 1 });
  let json = '';
  if (body instanceof Readable) for await (const chunk of body) json += String(chunk);
  else json = body;
  const records = JSON.parse(json) as RequestRecord[];
  return records[0] ?? null;
}

/** A line of a request as the page shows it: what was pushed, and its outcome with every error that names it. */
function linesOf(record: RequestRecord) {
  const outcomes = new Map((record.ebrcBulkGenStatusList ?? []).map((entry) => [entry.serialNo, entry]));
  return record.ebrcBulkGenDtos.map((payload) => {
    const serialNo = Number(payload.serialNo);
    const outcome = outcomes.get(serialNo);
    const errors: ErrorDetail[] = [...(outcome?.errorDetails ?? [])];
    for (const error of record.errorDetails.errors) {
      const known = errors.some((seen) => seen.code === error.code && seen.field === error.field && seen.message === error.message);
      if (error.serialNo === serialNo && !known) errors.push(error);
    }
    const status = outcome?.status ?? (record.status === 'FAILED' ? 'FAILED' : 'PENDING');
    return {
      serialNo,
      invoice: String(payload.sbCumInvoiceNumber ?? ''),
      invoiceDate: String(payload.sbCumInvoiceDate ?? ''),
      irmNumber: String(payload.irmNumber ?? ''),
      amount: payload.mappedIRMAmountFCC as number | undefined,
      currency: String(payload.irmFCC ?? ''),
      status,
      ebrcNumber: outcome?.ebrcNumber ?? null,
      ebrcDate: outcome?.ebrcDate ?? null,
      errors,
    };
  });
}

export const requestsPage: ConsolePage = {
  nav: { label: 'Requests', href: REQUESTS },
  routes(app: Api, deps: Deps): void {
    app.get('/requests', async (request, reply) => {
      const platformId = platformOf(request);
      const query = queryOf(request);
      const filters = {
        customer: optional(query, 'customer') ?? '',
        status: optional(query, 'status') ?? '',
        requestId: optional(query, 'requestId') ?? '',
        fromDate: optional(query, 'fromDate') ?? '',
        toDate: optional(query, 'toDate') ?? '',
      };
      const customers = await listCustomers(deps.database.db, platformId, { page: 1, limit: PICKER_SIZE });
      let customer = null;
      let list: { total: number; items: RequestSummary[]; page: number; totalPages: number } | null = null;
      let problem: Problem | null = null;
      if (filters.customer !== '') {
        // Another platform's customer is not found: the 404 page.
        customer = toCustomer(await requireCustomer(deps.database.db, platformId, filters.customer));
        try {
          const checked = validated<RequestListQueryType>(
            RequestListQuery,
            {
              platformCustomerId: customer.id,
              ...(filters.requestId === '' ? {} : { requestId: filters.requestId }),
              ...(filters.status === '' ? {} : { status: filters.status }),
              ...(filters.fromDate === '' ? {} : { fromDate: filters.fromDate }),
              ...(filters.toDate === '' ? {} : { toDate: filters.toDate }),
              page: optional(query, 'page') ?? '1',
              limit: String(PAGE_SIZE),
            },
            'query',
          );
          requireDateRange(checked);
          const { total, items } = await deps.requestList.summaries(platformId, checked);
          list = { total, items, page: checked.page, totalPages: Math.ceil(total / PAGE_SIZE) };
        } catch (error) {
          problem = failureOf(request, error, { requestId: 'Request id', status: 'Status', fromDate: 'From', toDate: 'To', page: 'Page' });
        }
      }
      return render(
        request,
        reply,
        'requests/list',
        { title: 'Requests', customers: customers.items, moreCustomers: customers.meta.totalItems > customers.items.length, customer, filters, statuses: REQUEST_STATUSES, list, problem },
        problem?.status ?? 200,
      );
    });

    app.get('/requests/:customerId/:requestId', async (request, reply) => {
      const platformId = platformOf(request);
      const { customerId, requestId } = request.params as { customerId: string; requestId: string };
      const customer = toCustomer(await requireCustomer(deps.database.db, platformId, customerId));
      const record = await recordOf(deps, platformId, customer.id, requestId);
      if (record === null) throw notFound(`Request ${requestId} of ${customer.name}`);
      const lines = linesOf(record);
      const counts = {
        generated: lines.filter((line) => line.status === 'GENERATED').length,
        failed: lines.filter((line) => line.status === 'FAILED').length,
        pending: lines.filter((line) => line.status === 'PENDING').length,
      };
      const requestErrors = record.errorDetails.errors.filter((error) => error.serialNo === null);
      return render(request, reply, 'requests/detail', { title: `Request ${record.requestId}`, customer, record, lines, counts, requestErrors });
    });
  },
};
