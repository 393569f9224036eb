import type { Api, Deps } from '../../deps.ts';
import { auditSourceOf } from '../../audit-source.ts';
import { refreshIrms } from '../../../services/irms.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer, EMPTY_BODY_EXAMPLES, EmptyBody, withExamples } from '../../../schemas/common.ts';
import { IRM_EXAMPLES, IrmPageSchema, IrmRefreshQuery } from '../../../schemas/irms.ts';
import { problems } from '../../../schemas/problems.ts';
import { requireDateRange } from '../date-range.ts';

export function irmRefreshRoute(app: Api, deps: Deps): void {
  app.post(
    '/irm/refresh',
    {
      config: { audit: 'irm.refresh' },
      schema: {
        tags: ['IRMs'],
        operationId: 'refreshIrms',
        summary: "Pull the customer's IRMs from the authority and page through them",
        description:
          'Pulls the IRMs from the authority (at most once per IRM_REFRESH_INTERVAL_SECONDS per customer; concurrent ' +
          'refreshes share one call), stores them, and answers the requested page, newest `irmIssueDate` first. ' +
          '`fromDate` and `toDate` filter `irmIssueDate`, inclusive. The customer must have validated credentials (409).',
        security: [{ apiKey: [] }],
        querystring: IrmRefreshQuery,
        body: withExamples(EmptyBody, EMPTY_BODY_EXAMPLES),
        response: { 200: answer(IrmPageSchema, "A page of the customer's IRMs, newest issue date first, and how many match", IRM_EXAMPLES.irmPage), ...problems(404, 409, 413, 415, 502, 504) },
      },
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request) => {
      const { platformCustomerId, ...query } = request.query;
      requireDateRange(query);
      return refreshIrms(deps.context, deps.irmPuller, platformOf(request), platformCustomerId, query, auditSourceOf(request));
    },
  );
}
