import type { Api, Deps } from '../../deps.ts';
import { auditSourceOf } from '../../audit-source.ts';
import type { RawLine } from '../../../domain/push-line.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { commitLinkOf } from '../../plugins/idempotency.ts';
import { answer, withExamples } from '../../../schemas/common.ts';
import { GENEBRC_EXAMPLES, PushAckSchema, PushBodySchema } from '../../../schemas/genebrc-requests.ts';
import { problems } from '../../../schemas/problems.ts';

export function pushIrmRoute(app: Api, deps: Deps): void {
  app.post(
    '/genebrc/push-irm',
    {
      schema: {
        tags: ['eBRC generation'],
        operationId: 'pushIrm',
        summary: 'Push lines to generate eBRCs (sandbox mode)',
        description:
          'Malformed pushes (types, required fields, formats, unknown fields) are refused with 400 and nothing is stored. ' +
          "A well-formed push that breaks the authority's rules answers 200 with `ackStatus: Failed` and the ERR codes, " +
          'and is stored as FAILED. An accepted push answers `ackStatus: Validated` with the authority\'s ack id; its mapped ' +
          'amounts are reserved against the IRMs at once, atomically. Follow it with POST /genebrc/status.',
        security: [{ apiKey: [] }],
        body: withExamples(PushBodySchema, GENEBRC_EXAMPLES.push.request),
        response: { 200: answer(PushAckSchema, 'The acknowledgement: Validated (pushed, now pending at the authority) or Failed (with the rules it broke)', GENEBRC_EXAMPLES.push.ack), ...problems(404, 409, 413, 415, 422, 502, 504) },
      },
      config: {
        audit: 'genebrc_request.push',
        // A push that may have reached the authority is never sent twice: see PushService.resume.
        replayFromResource: async (platformId, requestId, first) => {
          const ack = await deps.push.resume(platformId, requestId, first);
          return ack && { statusCode: 200, body: ack };
        },
      },
    },
    async (request) =>
      deps.push.push(
        platformOf(request),
        { ...request.body, ebrcBulkGenDtos: request.body.ebrcBulkGenDtos as RawLine[] },
        auditSourceOf(request),
        commitLinkOf(request),
      ),
  );
}
