import type { Api, Deps } from '../../deps.ts';
import { listEbrcs } from '../../../services/ebrcs.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer } from '../../../schemas/common.ts';
import { EBRC_EXAMPLES, EbrcListQuery, EbrcPageSchema } from '../../../schemas/ebrcs.ts';
import { IdParams } from '../../../schemas/platform-customers.ts';
import { problems } from '../../../schemas/problems.ts';
import { requireDateRange } from '../date-range.ts';

export function listEbrcsRoute(app: Api, deps: Deps): void {
  app.get(
    '/platform-customers/:id/ebrcs',
    {
      schema: {
        tags: ['eBRCs'],
        operationId: 'listEbrcs',
        summary: "List the customer's eBRCs",
        description:
          "The customer's eBRC register: the eBRCs generated through this service and those the authority reports for " +
          "the customer's IEC, each once, with `source` (`this_service` | `elsewhere`) and `status` (`generated` | " +
          "`cancelled`); `requestId` is null unless this customer's request made it. Newest `ebrcDate` first, then by " +
          '`ebrcNumber`. `fromDate` and `toDate` filter `ebrcDate`, inclusive. The authority is asked on every call: ' +
          'the register is brought up to date with it (new eBRCs, cancellations: `ebrc.updated`) before the page is read; ' +
          'the customer must have validated credentials (409), and when the authority is down or slow the answer is ' +
          '502 or 504, never a list read without asking it. eBRCs generated here stay visible meanwhile in the request ' +
          'list and the status operation. An eBRC of the authority\'s answer that cannot be read (a date that is not a ' +
          'date, an amount with more than two decimals, a field the register needs left out) is logged for the ' +
          'operators and not taken into the register (one already there keeps what it had); the others are.',
        security: [{ apiKey: [] }],
        params: IdParams,
        querystring: EbrcListQuery,
        response: { 200: answer(EbrcPageSchema, "A page of the customer's eBRCs, newest first, and how many match", EBRC_EXAMPLES.ebrcPage), ...problems(404, 409, 422, 502, 504) },
      },
    },
    async (request) => {
      requireDateRange(request.query);
      return listEbrcs(deps.context, platformOf(request), request.params.id, request.query);
    },
  );
}
