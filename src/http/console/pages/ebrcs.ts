import type { Api, Deps } from '../../deps.ts';
import { requireCustomer } from '../../../services/customers.ts';
import { toCustomer } from '../../../services/customer-view.ts';
import { ebrcCertificate, listEbrcs, type Ebrc, type EbrcPageQuery } from '../../../services/ebrcs.ts';
import { requireDateRange } from '../../routes/date-range.ts';
import { EbrcListQuery, EbrcParams } from '../../../schemas/ebrcs.ts';
import { optional, validated, type Problem } from '../forms.ts';
import type { ConsolePage } from '../page.ts';
import { failureOf, platformOf, queryOf, render } from '../render.ts';

const PAGE_SIZE = 20;

/** Characters kept out of the PDF's file name, as the API's certificate route keeps them out: each becomes "_". */
const UNSAFE_FILENAME_CHARACTERS = /[^A-Za-z0-9._-]/g;

const FILTER_LABELS = { fromDate: 'From', toDate: 'To', irmNumber: 'IRM number', sbCumInvoiceNumber: 'Invoice or shipping bill', page: 'Page' };

export const ebrcsPage: ConsolePage = {
  routes(app: Api, deps: Deps): void {
    // The list: GET /api/v1/platform-customers/{id}/ebrcs's operation (listEbrcs), with its filters and schema.
    app.get('/customers/:id/ebrcs', async (request, reply) => {
      const platformId = platformOf(request);
      const { id } = request.params as { id: string };
      // Another platform's customer (or none) is the 404 page.
      const customer = toCustomer(await requireCustomer(deps.database.db, platformId, id));
      const query = queryOf(request);
      const filters = {
        fromDate: optional(query, 'fromDate') ?? '',
        toDate: optional(query, 'toDate') ?? '',
        irmNumber: optional(query, 'irmNumber') ?? '',
        sbCumInvoiceNumber: optional(query, 'sbCumInvoiceNumber') ?? '',
      };
      let list: { items: Ebrc[]; total: number; page: number; totalPages: number } | null = null;
      let problem: Problem | null = null;
      try {
        const checked = validated<EbrcPageQuery>(
          EbrcListQuery,
          {
            ...Object.fromEntries(Object.entries(filters).filter(([, value]) => value !== '')),
            page: optional(query, 'page') ?? '1',
            limit: String(PAGE_SIZE),
          },
          'query',
        );
        requireDateRange(checked);
        const answer = await listEbrcs(deps.context, platformId, customer.id, checked);
        list = { items: answer.data, total: answer.meta.total, page: answer.meta.page, totalPages: answer.meta.totalPages };
      } catch (error) {
        problem = failureOf(request, error, FILTER_LABELS);
        if (problem.code === 'not_found') throw error;
      }
      return render(request, reply, 'ebrcs/list', { title: `eBRCs of ${customer.name}`, customer, filters, list, problem }, problem?.status ?? 200);
    });

    // The PDF: the certificate route's operation (ebrcCertificate), for the signed-in user's platform.
    app.get('/customers/:id/ebrcs/:ebrcNumber/certificate.pdf', async (request, reply) => {
      const params = validated<{ id: string; ebrcNumber: string }>(EbrcParams, request.params as Record<string, unknown>);
      const pdf = await ebrcCertificate(deps.context, platformOf(request), params.id, params.ebrcNumber);
      return reply
        .type('application/pdf')
        .header('cache-control', 'no-store')
        .header('content-disposition', `inline; filename="${params.ebrcNumber.replace(UNSAFE_FILENAME_CHARACTERS, '_')}.pdf"`)
        .send(pdf);
    });
  },
};
