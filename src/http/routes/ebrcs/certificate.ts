import type { Api, Deps } from '../../deps.ts';
import { ebrcCertificate } from '../../../services/ebrcs.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { EbrcParams, pdfAnswer } from '../../../schemas/ebrcs.ts';
import { problems } from '../../../schemas/problems.ts';

/** Characters kept out of the quoted filename of Content-Disposition: each becomes "_". */
const UNSAFE_FILENAME_CHARACTERS = /[^A-Za-z0-9._-]/g;

export function ebrcCertificateRoute(app: Api, deps: Deps): void {
  app.get(
    '/platform-customers/:id/ebrcs/:ebrcNumber/certificate.pdf',
    {
      schema: {
        tags: ['eBRCs'],
        operationId: 'getEbrcCertificate',
        summary: 'A one-page PDF summary of one eBRC',
        description:
          'The exporter, the eBRC, the IRM (remitter, country, purpose code) when it is stored here, and the request ' +
          'and line that generated it when it was generated here. It says at the top and in its footer that it is ' +
          "not the authority's own print. Like the list, it asks the authority (409 for an unverified customer, " +
          '502/504 when the authority fails); an eBRC number that neither knows for this customer is 404.',
        security: [{ apiKey: [] }],
        params: EbrcParams,
        response: { 200: pdfAnswer('The PDF, shown inline'), ...problems(404, 409, 422, 502, 504) },
      },
    },
    async (request, reply) => {
      const { id, ebrcNumber } = request.params;
      const pdf = await ebrcCertificate(deps.context, platformOf(request), id, ebrcNumber);
      return reply
        .type('application/pdf')
        .header('content-disposition', `inline; filename="${ebrcNumber.replace(UNSAFE_FILENAME_CHARACTERS, '_')}.pdf"`)
        .send(pdf);
    },
  );
}
