import type { Api, Deps } from '../../deps.ts';
import { auditSourceOf } from '../../audit-source.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer, EMPTY_BODY_EXAMPLES, EmptyBody, withExamples } from '../../../schemas/common.ts';
import { IdParams } from '../../../schemas/platform-customers.ts';
import { problems } from '../../../schemas/problems.ts';
import { RECONCILIATION_EXAMPLES, ReconciliationListQuery, ReconciliationListSchema, ReconciliationRef } from '../../../schemas/reconciliations.ts';

export function reconcileRoutes(app: Api, deps: Deps): void {
  app.post(
    '/platform-customers/:id/reconcile',
    {
      config: { audit: 'reconciliation.request' },
      schema: {
        tags: ['Platform customers'],
        operationId: 'reconcilePlatformCustomer',
        summary: "Reconcile the customer's IRMs and eBRCs with the authority now",
        description:
          "Starts a reconciliation run and answers it at once, `running`: the customer's IRMs are pulled (each updated in place; " +
          '`irm.updated` for changes made elsewhere) and its eBRC register brought up to date with everything the authority ' +
          'reports (`ebrc.updated`); the finished run raises `reconciliation.completed`. One runs at a time per customer: ' +
          "409 `reconciliation_running` while one does (the schedule's included). The customer must be verified (409). No body, or `{}`.",
        security: [{ apiKey: [] }],
        params: IdParams,
        body: withExamples(EmptyBody, EMPTY_BODY_EXAMPLES),
        response: { 202: answer(ReconciliationRef, 'The run, started', RECONCILIATION_EXAMPLES.reconciliation), ...problems(404, 409, 413, 415, 422) },
      },
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request, reply) => reply.code(202).send(await deps.reconciliations.request(platformOf(request), request.params.id, auditSourceOf(request))),
  );

  app.get(
    '/platform-customers/:id/reconciliations',
    {
      schema: {
        tags: ['Platform customers'],
        operationId: 'listReconciliations',
        summary: "List the customer's reconciliation runs",
        description: 'Newest first, scheduled and requested alike, with what each changed (or why it failed).',
        security: [{ apiKey: [] }],
        params: IdParams,
        querystring: ReconciliationListQuery,
        response: { 200: answer(ReconciliationListSchema, "A page of the customer's runs, newest first, and how many there are", RECONCILIATION_EXAMPLES.reconciliationList), ...problems(404) },
      },
    },
    async (request) => deps.reconciliations.list(platformOf(request), request.params.id, request.query),
  );
}
