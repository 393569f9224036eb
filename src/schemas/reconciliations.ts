import { Type, type Static } from 'typebox';
import { DateTime, EXAMPLE_CUSTOMER_ID, ItemsPage, Nullable, PageQuery, type Examples } from './common.ts';

export const ReconciliationSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    platformCustomerId: Type.String({ format: 'uuid' }),
    trigger: Type.Union([Type.Literal('schedule'), Type.Literal('request')]),
    status: Type.Union([Type.Literal('running'), Type.Literal('completed'), Type.Literal('failed')]),
    startedAt: DateTime,
    finishedAt: Nullable(DateTime),
    irmsUpdated: Type.Integer({ description: 'IRMs the authority changed outside this service (each raised irm.updated)' }),
    irmsCancelled: Type.Integer({ description: 'Of those, IRMs the authority cancelled' }),
    ebrcsDiscovered: Type.Integer({ description: 'eBRCs the register did not hold (made elsewhere, or by another customer\'s request)' }),
    ebrcsCancelled: Type.Integer({ description: 'eBRCs that became cancelled' }),
    error: Nullable(Type.String(), { description: 'Why a failed run failed (the authority down, the credentials refused, …)' }),
  },
  { $id: 'Reconciliation', description: "A run that brought a customer's IRMs and eBRCs up to date with the authority" },
);
export const ReconciliationRef = Type.Unsafe<Static<typeof ReconciliationSchema>>(Type.Ref('Reconciliation'));
export const ReconciliationListSchema = ItemsPage(ReconciliationRef);
export const ReconciliationListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });

export const RECONCILIATION_EXAMPLES = {
  reconciliation: {
    started: {
      summary: 'A run started on request',
      value: {
        id: '5f0c2a7e-8d1b-4c3a-9e2f-7a6b5c4d3e2f',
        platformCustomerId: EXAMPLE_CUSTOMER_ID,
        trigger: 'request',
        status: 'running',
        startedAt: '2026-11-25T04:00:00.000Z',
        finishedAt: null,
        irmsUpdated: 0,
        irmsCancelled: 0,
        ebrcsDiscovered: 0,
        ebrcsCancelled: 0,
        error: null,
      },
    },
  },
  reconciliationList: {
    page: {
      summary: "The customer's runs",
      value: {
        items: [
          {
            id: '5f0c2a7e-8d1b-4c3a-9e2f-7a6b5c4d3e2f',
            platformCustomerId: EXAMPLE_CUSTOMER_ID,
            trigger: 'schedule',
            status: 'completed',
            startedAt: '2026-11-25T04:00:00.000Z',
            finishedAt: '2026-11-25T04:00:03.000Z',
            irmsUpdated: 2,
            irmsCancelled: 1,
            ebrcsDiscovered: 1,
            ebrcsCancelled: 0,
            error: null,
          },
        ],
        meta: { totalItems: 1, itemsPerPage: 10, totalPages: 1, currentPage: 1 },
      },
    },
  },
} satisfies Record<string, Examples | Record<string, Examples>>;
