import { Type, type Static, type TSchema } from 'typebox';
import { EVENT_TYPES, type EventType } from '../domain/events.ts';
import { REQUEST_STATUSES, type RequestStatus } from '../domain/request-state.ts';
import { ERROR_TABLE, type ErrorCode } from '../errors.ts';

/** A schema that also takes null, written as a JSON type list so validation errors stay readable. */
export function Nullable<T extends TSchema>(schema: T, options: Record<string, unknown> = {}) {
  const base = schema as unknown as { type: string };
  return Type.Unsafe<Static<T> | null>({ ...schema, ...options, type: [base.type, 'null'] });
}

export const DateTime = Type.String({ format: 'date-time' });
export const IsoDate = Type.String({ format: 'date', description: 'YYYY-MM-DD, UTC, inclusive', examples: ['2025-09-15'] });

export const FieldErrorSchema = Type.Object({
  path: Type.String({ description: 'JSON pointer to the field, e.g. /ebrcBulkGenDtos/3/irmDt' }),
  code: Type.String({ description: "A stable code; the authority's ERR code where it has one" }),
  message: Type.String(),
});

export const ProblemSchema = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.Unsafe<ErrorCode>({ type: 'string', enum: Object.keys(ERROR_TABLE) }),
    requestId: Type.String(),
    errors: Type.Optional(Type.Array(FieldErrorSchema)),
  },
  { $id: 'Problem', description: 'RFC 9457 problem details (application/problem+json)' },
);

export const ProblemRef = Type.Unsafe<Static<typeof ProblemSchema>>(Type.Ref('Problem'));

const STATUS_CODES_BY_STATUS = Object.entries(ERROR_TABLE).reduce<Record<number, string[]>>((byStatus, [code, { status }]) => {
  (byStatus[status] ??= []).push(code);
  return byStatus;
}, {});

/** A success response's schema with the description the OpenAPI reference shows for it (else "Default Response"). */
export function answer<T extends TSchema>(schema: T, description: string): T {
  // @fastify/swagger reads x-response-description from the resolved schema; a reference is described in place.
  return { ...schema, 'x-response-description': description, ...('$ref' in schema ? { description } : {}) };
}

/** The standard error responses of an authenticated operation, plus the ones it names, as problem documents. */
export function problems(...statuses: number[]) {
  const all = [...new Set([400, 401, 429, 500, ...statuses])].sort();
  return Object.fromEntries(
    all.map((status) => [
      status,
      {
        description: `Problem: ${(STATUS_CODES_BY_STATUS[status] ?? []).map((code) => `\`${code}\``).join(', ')}`,
        content: { 'application/problem+json': { schema: ProblemRef } },
      },
    ]),
  ) as unknown as Record<number, typeof ProblemRef>;
}

/** The highest page a list serves: far beyond any real list, and its offset well within the database's integers. */
export const MAX_PAGE = 1_000_000;

export const PageQuery = {
  page: Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1, description: `Page number, from 1 to ${MAX_PAGE}` }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 10, description: 'Items per page, 1 to 100' }),
};

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100, description: 'The platform customer id' }) });

export const PlatformCustomerSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    email: Type.String({ format: 'email' }),
    type: Type.Literal('customer'),
    companyName: Type.String(),
    address: Nullable(Type.String()),
    platformId: Type.String({ format: 'uuid', description: 'The platform that owns this customer' }),
    isActive: Type.Boolean(),
    iecCode: Nullable(Type.String(), { description: "The customer's IEC, once the authority has told it" }),
    authorityVerifiedAt: Nullable(Type.String({ format: 'date-time' }), {
      description: 'When the authority credentials were last validated; null until then',
    }),
    authorityCredentialsStatus: Type.Union([Type.Literal('unverified'), Type.Literal('valid'), Type.Literal('invalid')], {
      description:
        'unverified until a credential check succeeds; valid after one; invalid once the authority refuses the stored credentials ' +
        '(IRM refresh, push and eBRCs then answer 409 customer_not_verified until a new check succeeds)',
    }),
    authorityApiCredentials: Nullable(
      Type.Object({
        iecCode: Type.String(),
        clientId: Type.String(),
        envelopeProfile: Type.String({ description: 'spec-sha256 or java-pbkdf2' }),
        updatedAt: DateTime,
      }),
      { description: 'What is shown of the stored API credential set: never a secret or a key. Null until one is stored.' },
    ),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { $id: 'PlatformCustomer' },
);
export type PlatformCustomer = Static<typeof PlatformCustomerSchema>;
export const PlatformCustomerRef = Type.Unsafe<PlatformCustomer>(Type.Ref('PlatformCustomer'));

const NonBlank = '\\S';

export const CreatePlatformCustomerBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, pattern: NonBlank }),
    email: Type.String({ format: 'email', maxLength: 254 }),
    type: Type.Optional(Type.Literal('customer', { default: 'customer' })),
    companyName: Type.String({ minLength: 1, maxLength: 200, pattern: NonBlank }),
    address: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
  },
  { additionalProperties: false },
);

export const CustomerListQuery = Type.Object(
  {
    ...PageQuery,
    search: Type.Optional(
      Type.String({ maxLength: 200, description: 'Case-insensitive partial match on name or email; % and _ match themselves' }),
    ),
  },
  { additionalProperties: false },
);

export const CustomerListSchema = Type.Object({
  items: Type.Array(PlatformCustomerRef),
  meta: Type.Object({
    totalItems: Type.Integer(),
    itemsPerPage: Type.Integer(),
    totalPages: Type.Integer(),
    currentPage: Type.Integer(),
  }),
});



/**
 * An API credential set as the authority's portal gives it (client_Id, client_secret, x-Api-Key, dgftpublicKey,
 * userprivateKey) or in this service's names; keys as base64 DER, PEM or a .cer certificate. Read field by field by
 * the credential set's own parser, which names the field of any problem.
 */
export const ApiCredentialSetBody = Type.Object(
  {
    iecCode: Type.String({ minLength: 1, maxLength: 20, description: 'The IEC the set belongs to' }),
    clientId: Type.Optional(Type.String({ maxLength: 500 })),
    client_Id: Type.Optional(Type.String({ maxLength: 500 })),
    clientSecret: Type.Optional(Type.String({ maxLength: 500 })),
    client_secret: Type.Optional(Type.String({ maxLength: 500 })),
    apiKey: Type.Optional(Type.String({ maxLength: 500 })),
    'x-Api-Key': Type.Optional(Type.String({ maxLength: 500 })),
    authorityPublicKey: Type.Optional(Type.String({ maxLength: 20_000 })),
    dgftpublicKey: Type.Optional(Type.String({ maxLength: 20_000 })),
    userPrivateKey: Type.Optional(Type.String({ maxLength: 20_000 })),
    userprivateKey: Type.Optional(Type.String({ maxLength: 20_000 })),
    envelopeProfile: Type.Optional(Type.Union([Type.Literal('spec-sha256'), Type.Literal('java-pbkdf2')])),
  },
  { additionalProperties: false },
);

export const CheckCredentialsBody = Type.Object(
  {
    authorityUsername: Type.String({ minLength: 1, maxLength: 200 }),
    authorityPassword: Type.String({ minLength: 1, maxLength: 200, writeOnly: true }),
  },
  { additionalProperties: false },
);

const Money = Type.Number({ description: 'Amount with at most two decimals, never negative (number(16,2))' });
const Text = (maxLength: number, description?: string) => Type.String({ maxLength, ...(description ? { description } : {}) });

export const IrmSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    irmNumber: Type.String(),
    irmIssueDate: Type.String({ format: 'date' }),
    irmStatus: Type.Union([Type.Literal('fresh'), Type.Literal('partially_utilised'), Type.Literal('utilised')]),
    ifscCode: Type.String(),
    remittanceAdCode: Type.String(),
    remittanceDate: Type.String({ format: 'date' }),
    remittanceFCC: Type.String(),
    remittanceFCCAmount: Money,
    ormAmountFCC: Money,
    irmAvailableAmt: Money,
    irmUtilizedAmt: Money,
    iecCode: Type.String(),
    panNumber: Type.String(),
    remitterName: Type.String(),
    remitterCountry: Type.String(),
    purposeOfRemittance: Type.String(),
    subjectType: Type.Literal('USER'),
    userId: Type.String(),
    platformCustomerId: Type.String(),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { $id: 'Irm' },
);

export const IrmRefreshQuery = Type.Object(
  {
    platformCustomerId: Type.String({ minLength: 1, maxLength: 100 }),
    ...PageQuery,
    irmNumber: Type.Optional(Type.String({ minLength: 1, maxLength: 50, description: 'Only this IRM number' })),
    fromDate: Type.Optional(IsoDate),
    toDate: Type.Optional(IsoDate),
  },
  { additionalProperties: false },
);

export const EmptyBody = Type.Object({}, { additionalProperties: false, description: 'An empty object' });

export const IrmPageSchema = Type.Object({
  data: Type.Array(Type.Unsafe(Type.Ref('Irm'))),
  meta: Type.Object({ total: Type.Integer(), page: Type.Integer(), limit: Type.Integer(), totalPages: Type.Integer() }),
});

const NullableMoney = Nullable(Money);
const NullableText = (maxLength: number) => Nullable(Type.String({ maxLength }));

/** A push line (interface 2.4). Formats the schema cannot say are checked by the domain, with the authority's ERR codes. */
export const PushLineSchema = Type.Object(
  {
    serialNo: Type.Integer({ description: '1 to 999, unique in the push (ERR10, ERR11)' }),
    uploadType: Type.Union([Type.Integer(), Type.String({ maxLength: 20 })], { description: "Equal to the push's uploadType" }),
    branchSlNo: Type.Integer({ description: 'IEC branch serial, 0 to 999' }),
    irmIfscCode: Text(50, 'IFSC, exactly 11 characters (ERR14)'),
    irmAdCode: Text(50, 'AD code, exactly 7 characters (ERR16)'),
    irmNumber: Type.String({ minLength: 1, maxLength: 50 }),
    irmDt: Text(20, 'ddMMyyyy or YYYY-MM-DD (ERR17); shown as ddMMyyyy'),
    irmFCC: Text(10, '3-letter currency code'),
    irmPurposeCode: Text(10, 'RBI purpose code, e.g. P0103'),
    irmRemitAmtFCC: Type.Number({ description: "The IRM's available amount now (ERR23)" }),
    sbCumInvoiceNumber: Type.String({ minLength: 1, maxLength: 50 }),
    sbCumInvoiceDate: Text(20, 'ddMMyyyy or YYYY-MM-DD (ERR28)'),
    portCode: Text(20, '6-character port code from the port master (ERR29, ERR30)'),
    billNo: Text(50, 'At most 20 characters (ERR31)'),
    sbCumInvoiceFCC: Text(10, '3-letter currency code'),
    sbCumInvoiceValueinFCC: Type.Number(),
    mappedIRMAmountFCC: Type.Number({ description: 'Amount of the IRM mapped to this invoice (ERR38)' }),
    isVostro: Type.Optional(NullableText(5)),
    vostroType: Type.Optional(NullableText(10)),
    mappedORMAmountFCC: Type.Optional(NullableMoney),
    isThirdPartyExport: Type.Optional(NullableText(5)),
    commissionValDeduct: Type.Optional(NullableMoney),
    commissionValInfo: Type.Optional(NullableMoney),
    discountValDeduct: Type.Optional(NullableMoney),
    discountValInfo: Type.Optional(NullableMoney),
    insuranceValDeduct: Type.Optional(NullableMoney),
    insuranceValInfo: Type.Optional(NullableMoney),
    otherDeductionDeduct: Type.Optional(NullableMoney),
    otherdeductionsInfo: Type.Optional(NullableMoney),
    freightValDeduct: Type.Optional(NullableMoney),
    freightValInfo: Type.Optional(NullableMoney),
    sacCode1: Type.Optional(NullableText(20)),
    sacCode2: Type.Optional(NullableText(20)),
    serviceTypeModesValue: Type.Optional(Nullable(Type.Integer())),
    isGstAvail: Type.Optional(NullableText(5)),
    gstinInvoiceNumber: Type.Optional(NullableText(50)),
    gstinInvoiceDate: Type.Optional(NullableText(20)),
  },
  { additionalProperties: false },
);

const MAX_LINES = 999;
/** What recordResCount may be at all (a 32-bit integer at the authority and here); another count than the lines' is ERR08. */
const MAX_RECORD_COUNT = 2_147_483_647;

export const PushBodySchema = Type.Object(
  {
    platformCustomerId: Type.String({ minLength: 1, maxLength: 100 }),
    recordResCount: Type.Integer({
      minimum: 0,
      maximum: MAX_RECORD_COUNT,
      description: 'The number of lines sent (ERR08 when it differs); at most 2147483647, what the authority stores',
    }),
    uploadType: Type.Union([Type.String({ maxLength: 20 }), Type.Integer()], {
      description: '101-104 as a string or number, or DIRECT_EXPORT/GOODS (101), SOFTEX (102), SERVICES (103), DEEMED_EXPORT (104); shown as the code string',
    }),
    decalarationFlag: Type.String({ maxLength: 1, description: 'Y (spelled so on the wire)' }),
    ebrcBulkGenDtos: Type.Array(PushLineSchema, { minItems: 1, maxItems: MAX_LINES }),
  },
  { additionalProperties: false },
);

const ErrorDetailSchema = Type.Object({
  serialNo: Nullable(Type.Integer()),
  field: Nullable(Type.String()),
  code: Type.String({ description: "The authority's ERR code where one exists" }),
  message: Type.String(),
});

export const PushAckSchema = Type.Object({
  authorityAckId: Nullable(Type.String()),
  requestId: Type.String({ maxLength: 50 }),
  ackStatus: Type.Union([Type.Literal('Validated'), Type.Literal('Failed')]),
  recordResCount: Type.Integer(),
  errorDetails: Type.Array(ErrorDetailSchema),
});

export const StatusBody = Type.Object(
  { platformCustomerId: Type.String({ minLength: 1, maxLength: 100 }), requestId: Type.String({ minLength: 1, maxLength: 50 }) },
  { additionalProperties: false },
);

const REQUEST_STATUS = Type.Unsafe<RequestStatus>({ type: 'string', enum: [...REQUEST_STATUSES] });

export const LineStatusSchema = Type.Object({
  serialNo: Type.Integer(),
  irmNumber: Type.String(),
  sbCumInvoiceNumber: Type.String(),
  status: Type.Union([Type.Literal('PENDING'), Type.Literal('GENERATED'), Type.Literal('FAILED')]),
  ebrcNumber: Nullable(Type.String()),
  ebrcDate: Nullable(Type.String({ format: 'date' })),
  errorDetails: Type.Array(ErrorDetailSchema),
});

export const StatusSchema = Type.Object({
  requestId: Type.String(),
  authorityAckId: Nullable(Type.String()),
  status: REQUEST_STATUS,
  recordResCount: Type.Integer(),
  recordProCount: Type.Integer(),
  recordFailCount: Type.Integer(),
  processedAt: Nullable(DateTime),
  ebrcBulkGenStatusList: Type.Array(LineStatusSchema),
  errorDetails: Type.Array(ErrorDetailSchema),
});

export const RequestListQuery = Type.Object(
  {
    platformCustomerId: Type.String({ minLength: 1, maxLength: 100 }),
    requestId: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
    status: Type.Optional(REQUEST_STATUS),
    fromDate: Type.Optional(IsoDate),
    toDate: Type.Optional(IsoDate),
    ...PageQuery,
  },
  { additionalProperties: false },
);

export const RequestRecordSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  userId: Nullable(Type.String()),
  platformCustomerId: Nullable(Type.String()),
  requestId: Type.String(),
  iecNumber: Type.String(),
  recordResCount: Type.Integer(),
  uploadType: Type.String(),
  decalarationFlag: Nullable(Type.String()),
  ebrcBulkGenDtos: Type.Array(Type.Record(Type.String(), Type.Unknown())),
  ebrcBulkGenStatusList: Nullable(Type.Array(LineStatusSchema)),
  authorityAckId: Nullable(Type.String()),
  status: REQUEST_STATUS,
  errorDetails: Type.Object({ errors: Type.Array(ErrorDetailSchema) }),
  processedAt: Nullable(DateTime),
  createdAt: DateTime,
  updatedAt: DateTime,
});

export const EbrcSchema = Type.Object(
  {
    ebrcNumber: Type.String({ examples: ['EBRC202611220000000001'] }),
    ebrcDate: Type.String({ format: 'date', description: 'YYYY-MM-DD' }),
    irmNumber: Type.String(),
    sbCumInvoiceNumber: Type.String(),
    sbCumInvoiceDate: Type.String({ format: 'date', description: 'YYYY-MM-DD' }),
    realisedValueFCC: Money,
    currency: Type.String({ description: "The IRM's currency, in which the value was realised" }),
    iecCode: Type.String(),
    requestId: Nullable(Type.String(), {
      description: 'The GenEBRC request of this service that generated it; null when it was generated elsewhere',
    }),
    status: Type.String({ description: "The authority's status word (GENERATED while only this service knows of it)" }),
  },
  { $id: 'Ebrc' },
);

export const EbrcListQuery = Type.Object(
  {
    ...PageQuery,
    fromDate: Type.Optional(IsoDate),
    toDate: Type.Optional(IsoDate),
    irmNumber: Type.Optional(Type.String({ minLength: 1, maxLength: 50, description: 'Only eBRCs of this IRM' })),
    sbCumInvoiceNumber: Type.Optional(Type.String({ minLength: 1, maxLength: 50, description: 'Only eBRCs of this shipping bill or invoice' })),
  },
  { additionalProperties: false },
);

export const EbrcPageSchema = Type.Object({
  data: Type.Array(Type.Unsafe(Type.Ref('Ebrc'))),
  meta: Type.Object({ total: Type.Integer(), page: Type.Integer(), limit: Type.Integer(), totalPages: Type.Integer() }),
});

export const EbrcParams = Type.Object({
  id: IdParams.properties.id,
  ebrcNumber: Type.String({ minLength: 1, maxLength: 50, description: 'The eBRC number' }),
});

/** A PDF answer, for the OpenAPI document (the body is bytes, not serialised from a schema). */
export function pdfAnswer(description: string) {
  return { description, content: { 'application/pdf': { schema: { type: 'string', format: 'binary' } } } } as unknown as TSchema;
}

// ---- Events and webhooks (contract 9) ----

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

/** A customers'-style envelope (contract 2) around a list of `items`. */
function ItemsPage<T extends TSchema>(items: T) {
  return Type.Object({
    items: Type.Array(items),
    meta: Type.Object({
      totalItems: Type.Integer(),
      itemsPerPage: Type.Integer(),
      totalPages: Type.Integer(),
      currentPage: Type.Integer(),
    }),
  });
}

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

const WEBHOOK_URL = Type.String({
  minLength: 1,
  maxLength: 2048,
  format: 'uri',
  description:
    'https://, or http:// for a public host; a host that is or resolves to a loopback, private, link-local or internal address is refused (400 webhook_url_not_allowed)',
  examples: ['https://platform.example/webhooks/ebrc'],
});
const WEBHOOK_DESCRIPTION = Nullable(Type.String({ maxLength: 500 }), { description: 'A note of your own, up to 500 characters' });
const ENABLED_EVENTS = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
  minItems: 1,
  maxItems: 20,
  description: `The event types to receive (${EVENT_TYPES.join(', ')}), or ["*"] for every type. Duplicates are dropped; "*" beside other types means every type. An unknown type is a 400 (code unknown_event_type).`,
  examples: [['genebrc.request.processed', 'ebrc.generated'], ['*']],
});
const WEBHOOK_STATUS = Type.Union([Type.Literal('enabled'), Type.Literal('disabled')], {
  description: 'disabled: nothing is delivered to it (by its platform, or after every delivery failed for 5 days)',
});

export const WebhookEndpointSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    url: Type.String(),
    description: Nullable(Type.String()),
    enabledEvents: Type.Array(Type.String()),
    status: WEBHOOK_STATUS,
    disabledReason: Nullable(Type.String(), {
      description: 'Why it is disabled ("disabled by the platform", or its deliveries failing); null while enabled. A field this service adds to the contract\'s.',
    }),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { $id: 'WebhookEndpoint', description: 'A webhook endpoint; its signing secret is never shown here' },
);
export type WebhookEndpoint = Static<typeof WebhookEndpointSchema>;
export const WebhookEndpointRef = Type.Unsafe<WebhookEndpoint>(Type.Ref('WebhookEndpoint'));

const WEBHOOK_SECRET = Type.String({
  description:
    'The signing secret: "whsec_" and the base64 of 32 random bytes. Shown only in this answer; keep it to verify the webhook-signature header (Standard Webhooks).',
  examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
});

export const CreatedWebhookEndpointSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  url: Type.String(),
  description: Nullable(Type.String()),
  enabledEvents: Type.Array(Type.String()),
  status: Type.Literal('enabled'),
  secret: WEBHOOK_SECRET,
  createdAt: DateTime,
});
export type CreatedWebhookEndpoint = Static<typeof CreatedWebhookEndpointSchema>;

export const WebhookSecretSchema = Type.Object({ secret: WEBHOOK_SECRET });

export const CreateWebhookEndpointBody = Type.Object(
  { url: WEBHOOK_URL, description: Type.Optional(WEBHOOK_DESCRIPTION), enabledEvents: ENABLED_EVENTS },
  { additionalProperties: false },
);
export type NewWebhookEndpoint = Static<typeof CreateWebhookEndpointBody>;

export const UpdateWebhookEndpointBody = Type.Object(
  {
    url: Type.Optional(WEBHOOK_URL),
    description: Type.Optional(WEBHOOK_DESCRIPTION),
    enabledEvents: Type.Optional(ENABLED_EVENTS),
    status: Type.Optional(WEBHOOK_STATUS),
  },
  { additionalProperties: false, description: 'At least one field; those left out stay as they are' },
);
export type WebhookEndpointChanges = Static<typeof UpdateWebhookEndpointBody>;

export const WebhookEndpointParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100, description: 'The webhook endpoint id' }) });

export const WebhookEndpointListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });
export const WebhookEndpointListSchema = ItemsPage(WebhookEndpointRef);

export const WebhookDeliverySchema = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The attempt' }),
  eventId: Type.String(),
  eventType: Type.String(),
  attempt: Type.Integer({ description: '1 for the first attempt to deliver the event to this endpoint, then 2, 3, …' }),
  status: Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')]),
  responseStatus: Nullable(Type.Integer(), { description: "The receiver's HTTP status; null when none came (a timeout, a refused connection)" }),
  responseBody: Nullable(Type.String(), { description: "The start of the receiver's answer, at most 1 KiB. A field this service adds to the contract's." }),
  durationMs: Nullable(Type.Integer()),
  error: Nullable(Type.String(), { description: 'Why the attempt failed, when it did' }),
  createdAt: DateTime,
  nextAttemptAt: Nullable(DateTime, { description: 'Pending: when it is due. Failed: when the next attempt is due; null when none follows' }),
});
export type WebhookDelivery = Static<typeof WebhookDeliverySchema>;

export const WebhookDeliveryListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });
export const WebhookDeliveryListSchema = ItemsPage(WebhookDeliverySchema);

export const RedeliverBody = Type.Object(
  { eventId: Type.String({ minLength: 1, maxLength: 100, description: "One of the platform's events (evt_…)" }) },
  { additionalProperties: false },
);

export const SHARED_SCHEMAS = [ProblemSchema, PlatformCustomerSchema, IrmSchema, EbrcSchema, WebhookEndpointSchema, EventSchema];
