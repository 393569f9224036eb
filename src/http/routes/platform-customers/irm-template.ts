import type { Api, Deps } from '../../deps.ts';
import { irmTemplate } from '../../../services/irm-template.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { IrmTemplateQuery, spreadsheetAnswer } from '../../../schemas/irms.ts';
import { IdParams } from '../../../schemas/platform-customers.ts';
import { problems } from '../../../schemas/problems.ts';
import { requireDateRange } from '../date-range.ts';
import { sendDownload } from '../download.ts';

export function irmTemplateRoute(app: Api, deps: Deps): void {
  app.get(
    '/platform-customers/:id/irm/template',
    {
      schema: {
        tags: ['IRMs'],
        operationId: 'getIrmTemplate',
        summary: "A spreadsheet of the customer's mappable IRMs, to fill in with invoices and upload",
        description:
          'CSV (the default) or XLSX with `format`. The header row is the request line\'s fields in the order of a push ' +
          "line; then one row per IRM a push can map (an available balance, not cancelled, a purpose code other than " +
          'P0101/P0108), newest `irmIssueDate` first, with the IRM side filled in as text: `irmNumber`, `irmDt` ' +
          '(ddMMyyyy, as a push takes it), `irmIfscCode`, `irmAdCode` (leading zeros kept), `irmFCC`, `irmPurposeCode` ' +
          'and `irmRemitAmtFCC`, which is the amount still available. The exporter fills in the other columns. ' +
          'The IRM list\'s filters apply (`irmNumber`; `fromDate` and `toDate` on `irmIssueDate`, inclusive); it is not ' +
          'paged. Like the list, it needs validated credentials (409) and pulls the IRMs from the authority first unless ' +
          'a pull is recent (502/504 when the authority fails). Sent as an attachment named ' +
          '`irm-template-<IEC>-<YYYYMMDD>.csv|xlsx`, streamed: a connection closed before the end means the file is ' +
          'incomplete (ask again). CSV cells that would start with = + - @, a tab or a carriage return get a leading ' +
          "single quote, so that no spreadsheet program evaluates them; the upload reads them back without it.",
        security: [{ apiKey: [] }],
        params: IdParams,
        querystring: IrmTemplateQuery,
        response: { 200: spreadsheetAnswer('The template, as an attachment'), ...problems(404, 409, 502, 504) },
      },
    },
    async (request, reply) => {
      requireDateRange(request.query);
      const template = await irmTemplate(deps.context, deps.irmPuller, platformOf(request), request.params.id, request.query);
      return sendDownload(request, reply, template, 'IRM template');
    },
  );
}
