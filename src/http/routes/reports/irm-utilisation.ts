import type { Api, Deps } from '../../deps.ts';
import { irmUtilisation } from '../../../services/reports/irm-utilisation.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { IdParams } from '../../../schemas/platform-customers.ts';
import { problems } from '../../../schemas/problems.ts';
import { requireDateRange } from '../date-range.ts';
import { sendDownload } from '../download.ts';
import { reportAnswer, ReportQuery, UTILISATION_EXAMPLE } from '../../../schemas/reports.ts';

export function irmUtilisationRoute(app: Api, deps: Deps): void {
  app.get(
    '/platform-customers/:id/reports/irm-utilisation',
    {
      schema: {
        tags: ['Reports'],
        operationId: 'getIrmUtilisationReport',
        summary: "How much of each of the customer's IRMs is used, and by which eBRCs",
        description:
          'One row per IRM issued within `fromDate`..`toDate` (inclusive, on `irmIssueDate`), newest first as the IRM ' +
          'list: the IRM (number, dates, status, IFSC, AD code, purpose code, remitter and country, currency), the ' +
          'remitted, utilised and available amounts, what its eBRCs realised (those that stand), and the eBRCs it was ' +
          'mapped to (in CSV and XLSX one cell, `<ebrcNumber> <amount>` separated by `; `, a cancelled one marked ' +
          '`cancelled`; in json a list of `{ebrcNumber, ebrcDate, realisedValue, status}`). Then the totals per ' +
          'currency of the IRMs not cancelled: in CSV a second section after an empty line, in XLSX a second sheet ' +
          '("Totals"), in json `totals`. Amounts are decimal text with two places, codes text. The amounts are those ' +
          'stored at the last pull or reconciliation: the report reads the store, never the authority. Formula-looking ' +
          'CSV cells get a leading single quote. Named `<IEC>-irm-utilisation-<fromDate>-<toDate>.<format>`, streamed.',
        security: [{ apiKey: [] }],
        params: IdParams,
        querystring: ReportQuery,
        response: {
          200: reportAnswer({
            description: 'The report, as an attachment',
            fileName: '0599001001-irm-utilisation-2026-11-01-2026-11-30.csv',
            sheets: 'the sheet "IRM utilisation", then the sheet "Totals"',
            ...UTILISATION_EXAMPLE,
          }),
          ...problems(404),
        },
      },
    },
    async (request, reply) => {
      requireDateRange(request.query);
      const report = await irmUtilisation(deps.context, platformOf(request), request.params.id, request.query);
      return sendDownload(request, reply, report, 'IRM utilisation report');
    },
  );
}
