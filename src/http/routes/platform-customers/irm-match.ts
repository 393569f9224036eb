import type { Api, Deps } from '../../deps.ts';
import { matchIrms } from '../../../services/irm-matching.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer, withExamples } from '../../../schemas/common.ts';
import { MATCH_EXAMPLES, MatchAnswerSchema, MatchBodySchema } from '../../../schemas/irm-matching.ts';
import { IdParams } from '../../../schemas/platform-customers.ts';
import { problems } from '../../../schemas/problems.ts';

export function matchIrmsRoute(app: Api, deps: Deps): void {
  app.post(
    '/platform-customers/:id/irm/match',
    {
      schema: {
        tags: ['IRMs'],
        operationId: 'matchIrms',
        summary: "Propose which of the customer's IRMs pay which invoices, with pushes ready to send",
        description:
          "Matches up to 5,000 invoices against the customer's stored IRMs that can be mapped (a balance above 0, in the " +
          "invoices' currencies), as an accountant would: amounts (exact, or short by bank charges up to `chargeTolerance`, " +
          'default 2% capped at 50 units), remitter against buyer name (legal suffixes, case and punctuation ignored), ' +
          'country, and dates (by `remittanceDate`: an advance P0103 on or before the invoice, any other IRM on or after it ' +
          'within `maxDaysAfterInvoice`, default 365). One IRM may pay several invoices and several IRMs one invoice, never ' +
          "beyond an IRM's balance, and by the authority's rules (one bank per invoice; one purpose code apart from P0103). " +
          'Each allocation has a `confidence` (0-1) and its `reasons`; `pushes` are push bodies of at most 999 lines that ' +
          'hold every allocation once and pass the push\'s checks: send them to POST /genebrc/push-irm in their order. ' +
          'Nothing is stored and no balance changes (a customer that never pulled its IRMs pulls them first, as a push ' +
          'does; POST /irm/refresh brings newer ones). The customer must have validated credentials (409). See docs/matching.md.',
        security: [{ apiKey: [] }],
        params: IdParams,
        body: withExamples(MatchBodySchema, MATCH_EXAMPLES.request),
        response: {
          200: answer(MatchAnswerSchema, 'The proposed allocations, what is left unpaid and unused, and the pushes that carry the allocations', MATCH_EXAMPLES.answer),
          ...problems(404, 409, 413, 415, 502, 504),
        },
      },
    },
    async (request) => matchIrms(deps.context, deps.irmPuller, platformOf(request), request.params.id, request.body),
  );
}
