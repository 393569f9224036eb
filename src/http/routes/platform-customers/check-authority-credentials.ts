import type { Api, Deps } from '../../deps.ts';
import { auditSourceOf } from '../../audit-source.ts';
import { checkAuthorityCredentials } from '../../../services/authority-credentials.ts';
import { shownCustomer } from '../../../services/customers.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { commitLinkOf } from '../../plugins/idempotency.ts';
import { answer, withExamples } from '../../../schemas/common.ts';
import { CheckCredentialsBody, IdParams, PLATFORM_CUSTOMER_EXAMPLES, PlatformCustomerRef } from '../../../schemas/platform-customers.ts';
import { problems } from '../../../schemas/problems.ts';

export function checkAuthorityCredentialsRoute(app: Api, deps: Deps): void {
  app.post(
    '/platform-customers/:id/check-authority-credentials',
    {
      schema: {
        tags: ['Platform customers'],
        operationId: 'checkAuthorityCredentials',
        summary: "Validate the customer's authority credentials",
        description:
          'Checks the credentials with the authority. Against the sandbox (AUTHORITY_MODE=sandbox) the username and ' +
          'password log in there and the API credential set it issues is stored; against the real authority ' +
          '(AUTHORITY_MODE=dgft) the set stored with PUT …/authority-api-credentials is used (409 ' +
          '`authority_api_credentials_missing` without one). The set must take a token and read the IEC\'s IRMs. When it ' +
          'does, the customer gets its `iecCode` and `authorityVerifiedAt`, and everything is kept encrypted ' +
          '(AES-256-GCM) for later calls. When it does not, nothing stored changes. The password is never returned.',
        security: [{ apiKey: [] }],
        params: IdParams,
        body: withExamples(CheckCredentialsBody, PLATFORM_CUSTOMER_EXAMPLES.checkCredentials.request),
        response: { 200: answer(PlatformCustomerRef, 'The authority accepted the credentials: the customer, now verified, with its IEC', PLATFORM_CUSTOMER_EXAMPLES.checkCredentials.verified), ...problems(404, 409, 413, 415, 422, 502, 504) },
      },
      config: {
        audit: 'platform_customer.verify',
        replayFromResource: async (platformId, customerId) => {
          const customer = await shownCustomer(deps.database.db, platformId, customerId);
          return customer && { statusCode: 200, body: customer };
        },
      },
    },
    async (request) =>
      checkAuthorityCredentials(deps.context, platformOf(request), request.params.id, request.body, auditSourceOf(request), commitLinkOf(request)),
  );
}
