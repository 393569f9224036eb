import type { Api, Deps } from '../../deps.ts';
import { auditSourceOf } from '../../audit-source.ts';
import { createCustomer, shownCustomer } from '../../../services/customers.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { commitLinkOf } from '../../plugins/idempotency.ts';
import { answer, withExamples } from '../../../schemas/common.ts';
import { CreatePlatformCustomerBody, PLATFORM_CUSTOMER_EXAMPLES, PlatformCustomerRef } from '../../../schemas/platform-customers.ts';
import { problems } from '../../../schemas/problems.ts';

export function createPlatformCustomerRoute(app: Api, deps: Deps): void {
  app.post(
    '/platform-customers/',
    {
      schema: {
        tags: ['Platform customers'],
        operationId: 'createPlatformCustomer',
        summary: 'Create a platform customer',
        description: 'Registers an exporter under the platform that owns the API key. Emails are unique per platform, ignoring case.',
        security: [{ apiKey: [] }],
        body: withExamples(CreatePlatformCustomerBody, PLATFORM_CUSTOMER_EXAMPLES.createCustomer.request),
        response: { 201: answer(PlatformCustomerRef, 'The customer, created', PLATFORM_CUSTOMER_EXAMPLES.createCustomer.created), ...problems(409, 413, 415, 422) },
      },
      config: {
        audit: 'platform_customer.create',
        replayFromResource: async (platformId, customerId) => {
          const customer = await shownCustomer(deps.database.db, platformId, customerId);
          return customer && { statusCode: 201, body: customer };
        },
      },
    },
    async (request, reply) => {
      const customer = await createCustomer(deps.database.db, platformOf(request), request.body, auditSourceOf(request), commitLinkOf(request));
      return reply.code(201).send(customer);
    },
  );
}
