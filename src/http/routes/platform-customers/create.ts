import type { Api, Deps } from '../../app.ts';
import { createCustomer } from '../../../services/customers.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer, CreatePlatformCustomerBody, PlatformCustomerRef, problems } from '../../schemas.ts';

export function createPlatformCustomerRoute(app: Api, deps: Deps): void {
  app.post(
    '/platform-customers/',
    {
      schema: {
        tags: ['Platform customers'],
        summary: 'Create a platform customer',
        description: 'Registers an exporter under the platform that owns the API key. Emails are unique per platform, ignoring case.',
        security: [{ apiKey: [] }],
        body: CreatePlatformCustomerBody,
        response: { 201: answer(PlatformCustomerRef, 'The customer, created'), ...problems(409, 413, 415, 422) },
      },
    },
    async (request, reply) => {
      const customer = await createCustomer(deps.database.db, platformOf(request), request.body);
      return reply.code(201).send(customer);
    },
  );
}
