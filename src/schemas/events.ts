import { Type, type Static } from 'typebox';
import { EVENT_TYPES, type EventType } from '../domain/events.ts';
import { EXAMPLE_CUSTOMER_ID, EXAMPLE_EVENT_ID, EXAMPLE_WEBHOOK_ENDPOINT_ID, IsoDate, ItemsPage, Nullable, PageQuery, type Examples } from './common.ts';
import { EBRC_EXAMPLES } from './ebrcs.ts';
import { EXAMPLE_LINE_STATUS, GENEBRC_EXAMPLES } from './genebrc-requests.ts';
import { EXAMPLE_IRM } from './irms.ts';
import { EXAMPLE_CUSTOMER } from './platform-customers.ts';
import { RECONCILIATION_EXAMPLES } from './reconciliations.ts';
import { EXAMPLE_COMPLETED_UPLOAD } from './uploads.ts';

// ---- Events (contract 9) ----

const EVENT_TYPE = Type.Unsafe<EventType>({ type: 'string', enum: [...EVENT_TYPES], description: 'An event type' });

export const EventSchema = Type.Object(
  {
    id: Type.String({ description: '"evt_" and random characters; the webhook-id header of its deliveries', examples: ['evt_3q9c0f2kXbYp1nV7uLr8TzQmWd4sHa6e'] }),
    type: Type.String({ description: `One of: ${EVENT_TYPES.join(', ')}` }),
    timestamp: Type.String({ format: 'date-time', description: 'When the change it reports was committed (ISO 8601, UTC)' }),
    platformCustomerId: Nullable(Type.String(), { description: 'The customer it concerns; null for an event of the platform itself (webhook.test)' }),
    data: Type.Unknown({ description: "What changed: the request's status answer, the customer, the IRM, the eBRC, …" }),
  },
  { $id: 'Event', description: 'An event, as GET /api/v1/events shows it and webhooks deliver it' },
);
export const EventRef = Type.Unsafe<Static<typeof EventSchema>>(Type.Ref('Event'));

export const EventListSchema = ItemsPage(EventRef);

export const EventListQuery = Type.Object(
  {
    ...PageQuery,
    type: Type.Optional(EVENT_TYPE),
    platformCustomerId: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: "Only this customer's events" })),
    fromDate: Type.Optional(IsoDate),
    toDate: Type.Optional(IsoDate),
  },
  { additionalProperties: false },
);

export const EventParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100, description: 'The event id (evt_…)' }) });

const EXAMPLE_EVENT = {
  id: EXAMPLE_EVENT_ID,
  type: 'platform_customer.verified',
  timestamp: '2026-11-25T01:37:04.174Z',
  platformCustomerId: EXAMPLE_CUSTOMER_ID,
  data: EXAMPLE_CUSTOMER,
};

export const EXAMPLE_TEST_EVENT = {
  id: 'evt_7Hk2LmQ9pRt4VwX8yZ1aB3cD5eF6gJ0n',
  type: 'webhook.test',
  timestamp: '2026-11-25T02:05:00.000Z',
  platformCustomerId: null,
  data: {
    endpointId: EXAMPLE_WEBHOOK_ENDPOINT_ID,
    url: 'https://platform.example/webhooks/ebrc',
    message: 'A test event sent to check that this endpoint receives and verifies deliveries.',
  },
};

export const EVENT_EXAMPLES = {
  event: { event: { summary: 'A customer became verified', value: EXAMPLE_EVENT } },
  eventList: {
    page: { summary: 'The newest events', value: { items: [EXAMPLE_EVENT], meta: { totalItems: 1, itemsPerPage: 10, totalPages: 1, currentPage: 1 } } },
  },
} satisfies Record<string, Examples | Record<string, Examples>>;

const EXAMPLE_PROCESSED_STATUS = GENEBRC_EXAMPLES.status.answer.processed.value;
const EXAMPLE_EBRC = EBRC_EXAMPLES.ebrcPage.page.value.data[0]!;

/** A second line of the example request, failed at processing by the authority (ERR40), its amount released. */
const EXAMPLE_FAILED_LINE_STATUS = {
  serialNo: 2,
  irmNumber: 'SBINIR0599001001001804',
  sbCumInvoiceNumber: '4120032',
  status: 'FAILED' as const,
  ebrcNumber: null,
  ebrcDate: null,
  errorDetails: [{ serialNo: 2, field: null, code: 'ERR40', message: 'The authority could not generate an eBRC for this line.' }],
};

/** One example body per event type (OpenAPI `webhooks`): what a delivery's `platformCustomerId` and `data` are. */
export const EVENT_TYPE_EXAMPLES: Readonly<Record<EventType, { summary: string; timestamp: string; platformCustomerId: string | null; data: unknown }>> = {
  'genebrc.request.acknowledged': {
    summary: 'Accepted: PENDING with its acknowledgement id',
    timestamp: '2026-11-25T01:38:00.000Z',
    platformCustomerId: EXAMPLE_CUSTOMER_ID,
    data: {
      ...EXAMPLE_PROCESSED_STATUS,
      status: 'PENDING',
      recordProCount: 0,
      processedAt: null,
      ebrcBulkGenStatusList: [{ ...EXAMPLE_LINE_STATUS, status: 'PENDING', ebrcNumber: null, ebrcDate: null }],
    },
  },
  'genebrc.request.failed': {
    summary: 'Refused at acknowledgement: the available amount changed (ERR23)',
    timestamp: '2026-11-25T01:38:00.000Z',
    platformCustomerId: EXAMPLE_CUSTOMER_ID,
    data: {
      ...EXAMPLE_PROCESSED_STATUS,
      authorityAckId: null,
      status: 'FAILED',
      recordProCount: 0,
      recordFailCount: 1,
      processedAt: '2026-11-25T01:38:00.000Z',
      ebrcBulkGenStatusList: [
        {
          ...EXAMPLE_LINE_STATUS,
          status: 'FAILED',
          ebrcNumber: null,
          ebrcDate: null,
          errorDetails: [{ serialNo: 1, field: 'irmRemitAmtFCC', code: 'ERR23', message: 'irmRemitAmtFCC 40118.96 is not the available amount of IRM SBINIR0599001001001804 (27618.96).' }],
        },
      ],
      errorDetails: [{ serialNo: 1, field: 'irmRemitAmtFCC', code: 'ERR23', message: 'irmRemitAmtFCC 40118.96 is not the available amount of IRM SBINIR0599001001001804 (27618.96).' }],
    },
  },
  'genebrc.request.processed': {
    summary: 'Processed: every line has its eBRC',
    timestamp: '2026-11-25T01:38:10.000Z',
    platformCustomerId: EXAMPLE_CUSTOMER_ID,
    data: EXAMPLE_PROCESSED_STATUS,
  },
  'genebrc.request.partially_processed': {
    summary: 'Partially processed: one line generated, one failed',
    timestamp: '2026-11-25T01:38:10.000Z',
    platformCustomerId: EXAMPLE_CUSTOMER_ID,
    data: {
      ...EXAMPLE_PROCESSED_STATUS,
      status: 'PARTIALLY_PROCESSED',
      recordResCount: 2,
      recordProCount: 1,
      recordFailCount: 1,
      ebrcBulkGenStatusList: [EXAMPLE_LINE_STATUS, EXAMPLE_FAILED_LINE_STATUS],
    },
  },
  'genebrc.request.errored': {
    summary: 'Errored: every line failed',
    timestamp: '2026-11-25T01:38:10.000Z',
    platformCustomerId: EXAMPLE_CUSTOMER_ID,
    data: {
      ...EXAMPLE_PROCESSED_STATUS,
      status: 'ERRORED',
      recordProCount: 0,
      recordFailCount: 1,
      ebrcBulkGenStatusList: [{ ...EXAMPLE_FAILED_LINE_STATUS, serialNo: 1, sbCumInvoiceNumber: '4120031', errorDetails: [{ ...EXAMPLE_FAILED_LINE_STATUS.errorDetails[0]!, serialNo: 1 }] }],
    },
  },
  'platform_customer.verified': {
    summary: 'A customer verified with the authority, with its IEC',
    timestamp: '2026-11-25T01:37:04.174Z',
    platformCustomerId: EXAMPLE_CUSTOMER_ID,
    data: EXAMPLE_CUSTOMER,
  },
  'platform_customer.credentials_invalid': {
    summary: "The authority refused the customer's stored credentials",
    timestamp: '2026-11-26T08:00:00.000Z',
    platformCustomerId: EXAMPLE_CUSTOMER_ID,
    data: { ...EXAMPLE_CUSTOMER, authorityCredentialsStatus: 'invalid', updatedAt: '2026-11-26T08:00:00.000Z' },
  },
  'irm.received': {
    summary: 'A new IRM from a pull',
    timestamp: '2026-11-25T01:37:04.577Z',
    platformCustomerId: EXAMPLE_CUSTOMER_ID,
    data: EXAMPLE_IRM,
  },
  'irm.updated': {
    summary: 'An IRM used on the portal: 12,500 of its available amount gone',
    timestamp: '2026-11-26T04:00:01.000Z',
    platformCustomerId: EXAMPLE_CUSTOMER_ID,
    data: {
      ...EXAMPLE_IRM,
      irmStatus: 'partially_utilised',
      irmAvailableAmt: 27618.96,
      irmUtilizedAmt: 12500,
      updatedAt: '2026-11-26T04:00:01.000Z',
      changes: [
        { field: 'irmAvailableAmt', from: '40118.96', to: '27618.96' },
        { field: 'irmUtilizedAmt', from: '0.00', to: '12500.00' },
        { field: 'irmStatus', from: 'fresh', to: 'partially_utilised' },
      ],
    },
  },
  'ebrc.generated': {
    summary: 'An eBRC generated for line 1',
    timestamp: '2026-11-25T01:38:10.000Z',
    platformCustomerId: EXAMPLE_CUSTOMER_ID,
    data: EXAMPLE_EBRC,
  },
  'ebrc.updated': {
    summary: 'An eBRC cancelled on the portal',
    timestamp: '2026-11-27T09:15:00.000Z',
    platformCustomerId: EXAMPLE_CUSTOMER_ID,
    data: { ...EXAMPLE_EBRC, status: 'cancelled', changes: [{ field: 'status', from: 'generated', to: 'cancelled' }] },
  },
  'bulk_upload.completed': {
    summary: 'An upload completed: one push, Validated',
    timestamp: '2026-11-25T03:00:02.000Z',
    platformCustomerId: EXAMPLE_CUSTOMER_ID,
    data: EXAMPLE_COMPLETED_UPLOAD,
  },
  'reconciliation.completed': {
    summary: 'A scheduled run that found one IRM used on the portal',
    timestamp: '2026-11-26T04:00:02.000Z',
    platformCustomerId: EXAMPLE_CUSTOMER_ID,
    data: {
      ...RECONCILIATION_EXAMPLES.reconciliation.started.value,
      trigger: 'schedule',
      status: 'completed',
      finishedAt: '2026-11-26T04:00:02.000Z',
      irmsUpdated: 1,
    },
  },
  'webhook.test': {
    summary: 'A test event',
    timestamp: EXAMPLE_TEST_EVENT.timestamp,
    platformCustomerId: null,
    data: EXAMPLE_TEST_EVENT.data,
  },
};
