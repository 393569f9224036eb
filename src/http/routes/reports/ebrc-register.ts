import type { Api, Deps } from '../../deps.ts';
import { customerEbrcRegister, platformEbrcRegister } from '../../../services/reports/ebrc-register.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { IdParams } from '../../../schemas/platform-customers.ts';
import { problems } from '../../../schemas/problems.ts';
import { requireDateRange } from '../date-range.ts';
import { sendDownload } from '../download.ts';
import { PLATFORM_REGISTER_EXAMPLE, REGISTER_EXAMPLE, reportAnswer, ReportQuery } from '../../../schemas/reports.ts';

const REGISTER_DESCRIPTION =
  'One row per eBRC dated within `fromDate`..`toDate` (inclusive, on `ebrcDate`), newest first as the eBRC list: ' +
  'the eBRC (number, date, `status` generated or cancelled, `source` this_service or elsewhere, the `requestId` that ' +
  'made it here), the invoice and shipping bill its request line carried (number, date, port code, bill number, ' +
  'invoice currency and value; empty for an eBRC made elsewhere), the IRM (number, issue date, IFSC, AD code, purpose ' +
  'code, remitter and country), the realised value in the IRM\'s currency and the deductions. Then the totals per ' +
  'currency of the eBRCs that stand (cancelled ones are listed but not counted): in CSV a second section after an ' +
  'empty line, in XLSX a second sheet ("Totals"), in json `totals`. Amounts are decimal text with two places, codes ' +
  'text (leading zeros kept), dates YYYY-MM-DD. CSV is UTF-8 with a header row; a cell that would start with ' +
  "= + - @, a tab or a carriage return gets a leading single quote, so that no spreadsheet program evaluates it; XLSX " +
  'cells are text cells, which are never evaluated. Read from the stored register (it never asks the authority) and ' +
  'streamed: a connection closed before the end means the file is incomplete (ask again).';

export function ebrcRegisterRoutes(app: Api, deps: Deps): void {
  app.get(
    '/platform-customers/:id/reports/ebrc-register',
    {
      schema: {
        tags: ['Reports'],
        operationId: 'getEbrcRegister',
        summary: "The customer's eBRC register, for GST refunds and audits",
        description: `${REGISTER_DESCRIPTION} Named \`<IEC>-ebrc-register-<fromDate>-<toDate>.<format>\` (the customer id while the IEC is unknown).`,
        security: [{ apiKey: [] }],
        params: IdParams,
        querystring: ReportQuery,
        response: {
          200: reportAnswer({
            description: 'The register, as an attachment',
            fileName: '0599001001-ebrc-register-2026-11-01-2026-11-30.csv',
            sheets: 'the sheet "eBRC register", then the sheet "Totals"',
            ...REGISTER_EXAMPLE,
          }),
          ...problems(404),
        },
      },
    },
    async (request, reply) => {
      requireDateRange(request.query);
      const report = await customerEbrcRegister(deps.context, platformOf(request), request.params.id, request.query);
      return sendDownload(request, reply, report, 'eBRC register');
    },
  );

  app.get(
    '/reports/ebrc-register',
    {
      schema: {
        tags: ['Reports'],
        operationId: 'getPlatformEbrcRegister',
        summary: 'The eBRC register of every customer of the platform',
        description:
          `${REGISTER_DESCRIPTION} Every customer of the platform, one after the other (by customer id), each row starting ` +
          'with the customer\'s `platformCustomerId`, `customerName` and `iecCode`; the totals are over all of them. ' +
          'Named `all-customers-ebrc-register-<fromDate>-<toDate>.<format>`.',
        security: [{ apiKey: [] }],
        querystring: ReportQuery,
        response: {
          200: reportAnswer({
            description: 'The register of every customer, as an attachment',
            fileName: 'all-customers-ebrc-register-2026-11-01-2026-11-30.csv',
            sheets: 'the sheet "eBRC register", then the sheet "Totals"',
            ...PLATFORM_REGISTER_EXAMPLE,
          }),
          ...problems(),
        },
      },
    },
    async (request, reply) => {
      requireDateRange(request.query);
      const report = await platformEbrcRegister(deps.context, platformOf(request), request.query);
      return sendDownload(request, reply, report, 'eBRC register');
    },
  );
}
