import type { Api, Deps } from '../../deps.ts';
import { requireCustomer } from '../../../services/customers.ts';
import { toCustomer } from '../../../services/customer-view.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer } from '../../../schemas/common.ts';
import { IdParams, PLATFORM_CUSTOMER_EXAMPLES, PlatformCustomerRef } from '../../../schemas/platform-customers.ts';
import { problems } from '../../../schemas/problems.ts';

export function getPlatformCustomerRoute(app: Api, deps: Deps): void {
  app.get(
    '/platform-customers/:id',
    {
      schema: {
        tags: ['Platform customers'],
        operationId: 'getPlatformCustomer',
        summary: 'Get a platform customer',
        security: [{ apiKey: [] }],
        params: IdParams,
        response: { 200: answer(PlatformCustomerRef, 'The customer', PLATFORM_CUSTOMER_EXAMPLES.customer), ...problems(404) },
      },
    },
    async (request) => toCustomer(await requireCustomer(deps.database.db, platformOf(request), request.params.id)),
  );
}
