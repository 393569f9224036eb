import type { Api, Deps } from '../../deps.ts';
import { auditSourceOf } from '../../audit-source.ts';
import { storeApiCredentials } from '../../../services/authority-api-credentials.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer, withExamples } from '../../../schemas/common.ts';
import { ApiCredentialSetBody, IdParams, PLATFORM_CUSTOMER_EXAMPLES, PlatformCustomerRef } from '../../../schemas/platform-customers.ts';
import { problems } from '../../../schemas/problems.ts';

export function putAuthorityApiCredentialsRoute(app: Api, deps: Deps): void {
  app.put(
    '/platform-customers/:id/authority-api-credentials',
    {
      config: { audit: 'authority_credentials.store' },
      schema: {
        tags: ['Platform customers'],
        operationId: 'putAuthorityApiCredentials',
        summary: "Store the customer's API credential set for the authority",
        description:
          "The set the exporter downloads from the authority's portal for its IEC, as it is (client_Id, client_secret, x-Api-Key, " +
          'dgftpublicKey, userprivateKey) or in these names (clientId, clientSecret, apiKey, authorityPublicKey, userPrivateKey); ' +
          'keys as base64 DER, PEM or a .cer certificate. It replaces the set stored before, is kept encrypted whole (AES-256-GCM), ' +
          'and is never returned: the customer shows only its IEC, client id and envelope profile. A malformed key is a 400 naming its field.',
        security: [{ apiKey: [] }],
        params: IdParams,
        body: withExamples(ApiCredentialSetBody, PLATFORM_CUSTOMER_EXAMPLES.apiCredentials.request),
        response: { 200: answer(PlatformCustomerRef, 'The customer, with its authorityApiCredentials', PLATFORM_CUSTOMER_EXAMPLES.apiCredentials.stored), ...problems(404, 413, 415) },
      },
    },
    async (request) =>
      storeApiCredentials(deps.context, platformOf(request), request.params.id, request.body, deps.config.authorityEnvelopeProfile, auditSourceOf(request)),
  );
}
