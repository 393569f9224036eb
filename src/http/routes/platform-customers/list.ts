import type { Api, Deps } from '../../deps.ts';
import { listCustomers } from '../../../services/customers.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer } from '../../../schemas/common.ts';
import { CustomerListQuery, CustomerListSchema, PLATFORM_CUSTOMER_EXAMPLES } from '../../../schemas/platform-customers.ts';
import { problems } from '../../../schemas/problems.ts';

export function listPlatformCustomersRoute(app: Api, deps: Deps): void {
  app.get(
    '/platform-customers',
    {
      schema: {
        tags: ['Platform customers'],
        operationId: 'listPlatformCustomers',
        summary: 'List platform customers',
        description: 'Newest first. `search` matches part of the name or email, ignoring case.',
        security: [{ apiKey: [] }],
        querystring: CustomerListQuery,
        response: { 200: answer(CustomerListSchema, "A page of the platform's customers, newest first, and how many match", PLATFORM_CUSTOMER_EXAMPLES.customerList), ...problems() },
      },
    },
    async (request) => listCustomers(deps.database.db, platformOf(request), request.query),
  );
}
