import type { Api, Deps } from '../../deps.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer, withExamples } from '../../../schemas/common.ts';
import { GENEBRC_EXAMPLES, StatusBody, StatusSchema } from '../../../schemas/genebrc-requests.ts';
import { problems } from '../../../schemas/problems.ts';

export function statusRoute(app: Api, deps: Deps): void {
  app.post(
    '/genebrc/status',
    {
      schema: {
        tags: ['eBRC generation'],
        operationId: 'getGenebrcStatus',
        summary: "A request's processing status and its eBRC numbers (sandbox mode)",
        description:
          'PENDING requests are also checked with the authority before answering. Status: FAILED (refused at ' +
          'acknowledgement), PENDING, then PROCESSED (every line generated), PARTIALLY_PROCESSED or ERRORED (none).',
        security: [{ apiKey: [] }],
        body: withExamples(StatusBody, GENEBRC_EXAMPLES.status.request),
        response: { 200: answer(StatusSchema, "The request's status and each line's outcome, eBRC numbers included once generated", GENEBRC_EXAMPLES.status.answer), ...problems(404, 413, 415) },
      },
    },
    async (request) => deps.progress.status(platformOf(request), request.body),
  );
}
