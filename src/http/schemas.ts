import { Type, type Static, type TSchema } from 'typebox';
import { SPREADSHEET_COLUMNS } from '../domain/spreadsheet-columns.ts';
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
export function answer<T extends TSchema>(schema: T, description: string, examples?: Examples): T {
  // @fastify/swagger reads x-response-description from the resolved schema; a reference is described in place. Named
  // examples (x-examples) become the response's media `examples` in the OpenAPI document.
  return {
    ...schema,
    'x-response-description': description,
    ...('$ref' in schema ? { description } : {}),
    ...(examples === undefined ? {} : { 'x-examples': examples }),
  };
}

/** Named OpenAPI examples (media `examples`): a request example and the answer it gets share a name. */
export type Examples = Record<string, { summary: string; description?: string; value: unknown }>;

/** A request body schema with its named examples for the OpenAPI document (the validator ignores `x-examples`). */
export function withExamples<T extends TSchema>(schema: T, examples: Examples): T {
  return { ...schema, 'x-examples': examples };
}

/** What a problem of this code looks like, for the document's examples. */
export function problemExample(code: ErrorCode, detail: string, errors?: Static<typeof FieldErrorSchema>[]) {
  const { status, title } = ERROR_TABLE[code];
  return {
    type: `https://ebrc-gateway.dev/problems/${code}`,
    title,
    status,
    detail,
    code,
    requestId: 'b3f1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
    ...(errors ? { errors } : {}),
  };
}

/** A plausible detail for each status's example (its first code in the error table otherwise). */
const PROBLEM_EXAMPLES: Record<number, ReturnType<typeof problemExample>> = {
  400: problemExample('validation_failed', 'The request has an invalid field: /email must match format "email".', [
    { path: '/email', code: 'format', message: 'must match format "email"' },
  ]),
  401: problemExample('api_key_missing', 'Send your API key in the x-api-key header.'),
  404: problemExample('not_found', 'Platform customer was not found.'),
  429: problemExample('rate_limited', 'Too many requests for this API key; retry after the time in Retry-After.'),
  500: problemExample('internal_error', 'Something went wrong on our side; the request id identifies it for support.'),
};

function exampleProblemOf(status: number) {
  const known = PROBLEM_EXAMPLES[status];
  if (known) return known;
  const code = (STATUS_CODES_BY_STATUS[status] ?? [])[0] as ErrorCode | undefined;
  return code === undefined ? undefined : problemExample(code, `${ERROR_TABLE[code].title}.`);
}

/** The standard error responses of an authenticated operation, plus the ones it names, as problem documents. */
export function problems(...statuses: number[]) {
  const all = [...new Set([400, 401, 429, 500, 503, ...statuses])].sort();
  return Object.fromEntries(
    all.map((status) => [
      status,
      {
        // The admin token's codes are the admin API's alone (adminProblems).
        description: `Problem: ${(STATUS_CODES_BY_STATUS[status] ?? []).filter((code) => !code.startsWith('admin_')).map((code) => `\`${code}\``).join(', ')}`,
        content: { 'application/problem+json': { schema: ProblemRef, example: exampleProblemOf(status) } },
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
    irmStatus: Type.Union([Type.Literal('fresh'), Type.Literal('partially_utilised'), Type.Literal('utilised'), Type.Literal('cancelled')], {
      description: 'fresh: nothing used; utilised: nothing available; cancelled: the authority cancelled it (C), nothing available, never mapped',
    }),
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

/** The IRM list's filters, which the spreadsheet template takes too (contract 11). */
export const IrmFilterQuery = {
  irmNumber: Type.Optional(Type.String({ minLength: 1, maxLength: 50, description: 'Only this IRM number' })),
  fromDate: Type.Optional(IsoDate),
  toDate: Type.Optional(IsoDate),
};

export const IrmRefreshQuery = Type.Object(
  {
    platformCustomerId: Type.String({ minLength: 1, maxLength: 100 }),
    ...PageQuery,
    ...IrmFilterQuery,
  },
  { additionalProperties: false },
);

export const IrmTemplateQuery = Type.Object(
  {
    format: Type.Unsafe<'csv' | 'xlsx'>({ type: 'string', enum: ['csv', 'xlsx'], default: 'csv', description: 'The file format: csv (the default) or xlsx' }),
    ...IrmFilterQuery,
  },
  { additionalProperties: false },
);

/** The template's header row and one IRM's row as the CSV has them, for the OpenAPI document. */
const TEMPLATE_CSV_EXAMPLE = [
  'serialNo,uploadType,branchSlNo,irmIfscCode,irmAdCode,irmNumber,irmDt,irmFCC,irmPurposeCode,irmRemitAmtFCC,' +
    'sbCumInvoiceNumber,sbCumInvoiceDate,portCode,billNo,sbCumInvoiceFCC,sbCumInvoiceValueinFCC,mappedIRMAmountFCC,' +
    'isVostro,vostroType,mappedORMAmountFCC,isThirdPartyExport,commissionValDeduct,commissionValInfo,discountValDeduct,' +
    'discountValInfo,insuranceValDeduct,insuranceValInfo,otherDeductionDeduct,otherdeductionsInfo,freightValDeduct,' +
    'freightValInfo,sacCode1,sacCode2,serviceTypeModesValue,isGstAvail,gstinInvoiceNumber,gstinInvoiceDate',
  ',,,SBIN0004266,0002331,SBINIR0599001001001804,23112026,USD,P0103,40118.96,,,,,,,,,,,,,,,,,,,,,,,,,,,',
  '',
].join('\n');

/** The template's 200 answer: CSV text or an XLSX workbook, sent as an attachment (the body is not serialised from a schema). */
export function spreadsheetAnswer(description: string) {
  return {
    description,
    headers: {
      'Content-Disposition': {
        type: 'string',
        description: 'attachment; filename="irm-template-<IEC>-<YYYYMMDD>.csv" (or .xlsx): the IEC, and the UTC day it was made',
        examples: ['attachment; filename="irm-template-0599001001-20261125.csv"'],
      },
    },
    content: {
      'text/csv': { schema: { type: 'string' }, example: TEMPLATE_CSV_EXAMPLE },
      'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': {
        schema: { type: 'string', format: 'binary' },
        example: '(an XLSX workbook: one sheet, "eBRC lines", the same rows as the CSV, every cell text)',
      },
    },
  } as unknown as TSchema;
}

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
      description: "This customer's GenEBRC request that generated it; null when it was generated elsewhere or by another customer's request",
    }),
    source: Type.Union([Type.Literal('this_service'), Type.Literal('elsewhere')], {
      description: 'this_service: generated by a request of this service (any customer\'s); elsewhere: on the portal, by the bank or another platform',
    }),
    status: Type.Union([Type.Literal('generated'), Type.Literal('cancelled')], {
      description: 'cancelled once the authority reports it cancelled (on the portal within 120 days, or by the bank)',
    }),
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
  return {
    description,
    content: { 'application/pdf': { schema: { type: 'string', format: 'binary' }, example: '%PDF-1.7 … (a one-page PDF, about 3 KB)' } },
  } as unknown as TSchema;
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
export function ItemsPage<T extends TSchema>(items: T) {
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

// ---- Spreadsheet uploads (contract 11) ----

export const UploadProblemSchema = Type.Object({
  row: Nullable(Type.Integer(), { description: 'The row as the spreadsheet numbers it (the header is row 1); null for the file as a whole or a whole request' }),
  column: Nullable(Type.String(), { description: 'The column by its header (a push line field); null when no one column is at fault' }),
  code: Type.String({ description: "The push's own code for the problem: a field check's code or the authority's ERR code" }),
  message: Type.String(),
});

export const BulkUploadSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    platformCustomerId: Type.String({ format: 'uuid' }),
    status: Type.Union([Type.Literal('validating'), Type.Literal('rejected'), Type.Literal('pushing'), Type.Literal('completed')], {
      description: 'validating, then rejected (nothing pushed) or pushing, then completed (even when some pushes were Failed)',
    }),
    fileName: Type.String(),
    fileSha256: Type.String({ description: "The file's SHA-256, hex: the same file for the same customer within 24 h answers this upload" }),
    rowCount: Nullable(Type.Integer(), { description: 'Rows below the header (blank rows not counted); null while validating' }),
    rowsDone: Type.Integer({ description: 'Rows whose push has its acknowledgement' }),
    rowsValidated: Type.Integer({ description: 'Rows in pushes the authority acknowledged Validated' }),
    rowsFailed: Type.Integer({ description: 'Rows that failed: in pushes refused at acknowledgement, or lines that failed at processing' }),
    rowsGenerated: Type.Integer({ description: 'Rows whose line became an eBRC' }),
    errors: Type.Array(UploadProblemSchema, {
      description:
        'Why it was rejected (every problem, up to 1,000); else an entry for every failed row with its code: the rule failures of its ' +
        'Failed pushes (a refusal that names no row repeated on each row of its push), and the lines that failed at processing',
    }),
    requests: Type.Array(
      Type.Object({
        requestId: Type.String({ description: 'An ordinary GenEBRC request: follow it with POST /api/v1/genebrc/status' }),
        ackStatus: Type.Union([Type.Literal('Validated'), Type.Literal('Failed'), Type.Null()], {
          description: "The push's acknowledgement; null while the authority's answer is awaited",
        }),
        rows: Type.Array(Type.Integer(), { description: 'The spreadsheet rows of its lines, in serialNo order (1..n)' }),
      }),
    ),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { $id: 'BulkUpload', description: 'A spreadsheet upload and its progress' },
);
export const BulkUploadRef = Type.Unsafe<Static<typeof BulkUploadSchema>>(Type.Ref('BulkUpload'));

export const UploadFormBody = Type.Object(
  {
    platformCustomerId: Type.String({ minLength: 1, maxLength: 100, description: 'The customer the rows are for' }),
    uploadType: Type.String({ minLength: 1, maxLength: 20, description: 'As in a push: 101-104 or DIRECT_EXPORT, SOFTEX, …; rows may leave uploadType empty' }),
    decalarationFlag: Type.String({ maxLength: 1, description: 'Y: the exporter declares the mapping true (as in a push)' }),
    file: Type.String({
      format: 'binary',
      description: 'The filled-in template: CSV (UTF-8) or XLSX (the first sheet), at most 10 MiB and 50,000 rows below the header',
    }),
  },
  { additionalProperties: false },
);

export const UploadListQuery = Type.Object(
  { ...PageQuery, platformCustomerId: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: "Only this customer's uploads" })) },
  { additionalProperties: false },
);
export const UploadListSchema = ItemsPage(BulkUploadRef);
export const UploadParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100, description: 'The upload id' }) });

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

export const SHARED_SCHEMAS = [ProblemSchema, PlatformCustomerSchema, IrmSchema, EbrcSchema, WebhookEndpointSchema, EventSchema, BulkUploadSchema, ReconciliationSchema];

// ---- Examples for the OpenAPI document (contract 12) ----
// Realistic values, in the shapes the service answers: test/http/openapi-examples.test.ts sends every request example
// to a service (with the ids it made substituted for these) and checks every answer example against its schema.

export const EXAMPLE_CUSTOMER_ID = '3689a0da-30aa-468e-b66d-e2faa29c8e79';
const EXAMPLE_PLATFORM_ID = '65ab7b55-c2ea-44b4-a1d5-8fd7c5ab5855';
export const EXAMPLE_REQUEST_ID = 'EBRCGW202611250D5929735E94E798AB';
export const EXAMPLE_EBRC_NUMBER = 'EBRC202611250000000001';
export const EXAMPLE_WEBHOOK_ENDPOINT_ID = '0b7c6a4e-2f3d-4c1b-9a8e-5d6f7a8b9c0d';
export const EXAMPLE_EVENT_ID = 'evt_3q9c0f2kXbYp1nV7uLr8TzQmWd4sHa6e';

const EXAMPLE_NEW_CUSTOMER = {
  id: EXAMPLE_CUSTOMER_ID,
  name: 'Asha Mehta',
  email: 'accounts@mehta-exports.example',
  type: 'customer' as const,
  companyName: 'Mehta Exports Pvt Ltd',
  address: '14 Nehru Place, New Delhi 110019',
  platformId: EXAMPLE_PLATFORM_ID,
  isActive: true,
  iecCode: null,
  authorityVerifiedAt: null,
  authorityCredentialsStatus: 'unverified' as const,
  authorityApiCredentials: null,
  createdAt: '2026-11-25T01:37:03.935Z',
  updatedAt: '2026-11-25T01:37:03.935Z',
};

export const EXAMPLE_CUSTOMER: PlatformCustomer = {
  ...EXAMPLE_NEW_CUSTOMER,
  iecCode: '0599001001',
  authorityVerifiedAt: '2026-11-25T01:37:04.174Z',
  authorityCredentialsStatus: 'valid',
  authorityApiCredentials: {
    iecCode: '0599001001',
    clientId: 'sandbox-0599001001-c291e853',
    envelopeProfile: 'spec-sha256',
    updatedAt: '2026-11-25T01:37:04.174Z',
  },
  updatedAt: '2026-11-25T01:37:04.174Z',
};

export const EXAMPLES = {
  createCustomer: {
    request: {
      customer: {
        summary: 'An exporter',
        value: { name: 'Asha Mehta', email: 'accounts@mehta-exports.example', companyName: 'Mehta Exports Pvt Ltd', address: '14 Nehru Place, New Delhi 110019' },
      },
    },
    created: { customer: { summary: 'Created, not yet verified with the authority', value: EXAMPLE_NEW_CUSTOMER } },
  },
  customer: { customer: { summary: 'A verified customer', value: EXAMPLE_CUSTOMER } },
  customerList: {
    page: {
      summary: 'The first page',
      value: { items: [EXAMPLE_CUSTOMER], meta: { totalItems: 1, itemsPerPage: 10, totalPages: 1, currentPage: 1 } },
    },
  },
  checkCredentials: {
    request: {
      sandbox: {
        summary: 'A sandbox test account',
        description: 'demo.exporter signs in at the sandbox with Sandbox@123 (AUTHORITY_MODE=sandbox)',
        value: { authorityUsername: 'demo.exporter', authorityPassword: 'Sandbox@123' },
      },
    },
    verified: { sandbox: { summary: 'Verified: the customer with its IEC', value: EXAMPLE_CUSTOMER } },
  },
  apiCredentials: {
    request: {
      portalNames: {
        summary: 'The set as the authority portal gives it',
        description: 'Keys as base64 DER (these are example keys, made for this document)',
        value: {
          iecCode: '0599001001',
          client_Id: 'dgft-0599001001-client',
          client_secret: 'c2VjcmV0LWV4YW1wbGUtb25seQ',
          'x-Api-Key': 'a1b2c3d4e5f60718293a4b5c6d7e8f90',
          dgftpublicKey: 'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAtPcEcxPRaSZ7reyXuvsl7rbGYROsttEei8CLyeBKzhzIhWj8aFoqqhFWdvXtk0+u/8NA5cbtbbnJgX6EK33+GC0mpndui7zBSdWCCbHZacyUOThTqJOPlODZ/sDizj5egaYazuFWOcdI0ejI10OGOOvpOn/dRK+uijfE9BPJKE1V/rSknKcty4HZyEDBU+V7CEX1qCFKGudvwlmRc/PDNU0SJh6qe/nSYKeYLJS/5liEcujLHruqxhLO1hn35v7CRjH/piAZ9CPK+7B1zqlRlW4lOQsQyV8ecgl+SSJpnNHUfTUT/e8UBn/vJUIZarciYy69U9P83aurZkNPG5bfIQIDAQAB',
          userprivateKey: 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC09wRzE9FpJnut7Je6+yXutsZhE6y20R6LwIvJ4ErOHMiFaPxoWiqqEVZ29e2TT67/w0Dlxu1tucmBfoQrff4YLSamd26LvMFJ1YIJsdlpzJQ5OFOok4+U4Nn+wOLOPl6BphrO4VY5x0jR6MjXQ4Y46+k6f91Er66KN8T0E8koTVX+tKScpy3LgdnIQMFT5XsIRfWoIUoa52/CWZFz88M1TRImHqp7+dJgp5gslL/mWIRy6Mseu6rGEs7WGffm/sJGMf+mIBn0I8r7sHXOqVGVbiU5CxDJXx5yCX5JImmc0dR9NRP97xQGf+8lQhlqtyJjLr1T0/zdq6tmQ08blt8hAgMBAAECggEAJDu5VllHeqhL5z0R/ExBAhTyj4li8Y/Zb93zn04bbD1zINMuhq5XEIo8J8GB+hbgUTGFEvzLmUazxAvS5uppL+oKbRZIug3nHaN0UACeKYLewr42cfBptUN4Inv4bZcrUQYzI+0WWKdAO1dCr2dDvq3tmtrzMMeESQR1mPFFO545HxMZPkWRQeGP8wYqUQBjpmKF1MRB5a8udpGM3MG93lFeCtum6M0PjmI1lNzgM7TfpuVMtUFfKViMDg0dsh7TJ8CggfOOjUkfWS0eG5RwiGXEwweWqK8o0VOa0s1dDwJc+k1J+fDV66JQFN9QN/9lZz5XeIr2+7+GUV0V7YQZKQKBgQD9LbNV0kX497Rz0yTNI5dlxBH+TUrbdwzASS9HIijupUDBGSGjQhuIjJs2lpCBisLTYO8xk5ufml/+SyvHkZbUIR1C/UILj5kwsg70GbTeSrR+ZKdVMJq6U53GXXzpKpSH3EJ0CuTVnwuIRSBRqyj6PrY3oeMDP8sW0H031f9WwwKBgQC2+0v7nZIbDAMNS85R7V/m279L/+xFAi4GpTd9WYGUnDydSdL4i9i9pVkNmO8dJEZNOf1Gdl2lR5A3iiqOJhsAAQg++E7FS3V7OR3zUKC27vypqZRbGUwlXiEwtrHfkOFVRx9BqCXVH4oGDDIRlagxnIkXVWuKjmqCYpfeLRZ8SwKBgQCMzMCiZtlxN1jM3UznJPcKqnsTQSrzWIbn3QuE9NNsvMyBVxek8pvbWc7sEdn1oRTud0cu/BcdML5X7rg/OZF3EZ9zZOM5CLg6I5w7VpyGz2cHr7R7pRc3rk7dRZq1FXAbCnyOioxu3Q+NzlvF73lPilbOI6LbaLvqSTKKPeHN/wKBgDuoTMqZQgRtcyVHnNnbMZQ7+u+VXfvVzRm/jgrhPr0r/xss8Yq1VZHnMdScEwGGTSFqkagCeV+kqGFjO6Kiy9TBgWW+YTgz9Paa1af5lpxt6JSMRGE7KzdXrCyMtAt22fCKwqcOYl9M7Bwyp7RR/cdHCO9Bm1FOQ22FJYx7WMRnAoGAQqi6ExiU2qCc9EbzHrwMRR8I3cqHKbrfQgl1SFkOIT05gLmWx6GsJte5S3WB6GN3XPnvrvpJ+YBN9MvMqawbEu03GIhhDLNt/1y5A5U8NkwUWg9BPwXpOIUeUsMzujofsq6NSa96GNC1ZnttaL+dl3ko+9RNXiuRCnNvym8JirE=',
        },
      },
    },
    stored: {
      portalNames: {
        summary: 'The customer, showing the stored set (never its secrets)',
        value: {
          ...EXAMPLE_NEW_CUSTOMER,
          authorityApiCredentials: { iecCode: '0599001001', clientId: 'dgft-0599001001-client', envelopeProfile: 'spec-sha256', updatedAt: '2026-11-25T01:40:12.002Z' },
          updatedAt: '2026-11-25T01:40:12.002Z',
        },
      },
    },
  },
} satisfies Record<string, Examples | Record<string, Examples>>;

const EXAMPLE_IRM = {
  id: '9d73e1e9-f21e-4698-82b1-74b8c977a7fb',
  irmNumber: 'SBINIR0599001001001804',
  irmIssueDate: '2026-11-23',
  irmStatus: 'fresh' as const,
  ifscCode: 'SBIN0004266',
  remittanceAdCode: '0002331',
  remittanceDate: '2026-11-21',
  remittanceFCC: 'USD',
  remittanceFCCAmount: 40118.96,
  ormAmountFCC: 0,
  irmAvailableAmt: 40118.96,
  irmUtilizedAmt: 0,
  iecCode: '0599001001',
  panNumber: 'AACCD1001D',
  remitterName: 'Maple Leaf Distributors Ltd',
  remitterCountry: 'CA',
  purposeOfRemittance: 'P0103',
  subjectType: 'USER' as const,
  userId: EXAMPLE_PLATFORM_ID,
  platformCustomerId: EXAMPLE_CUSTOMER_ID,
  createdAt: '2026-11-25T01:37:04.577Z',
  updatedAt: '2026-11-25T01:37:04.577Z',
};

/** One line mapping 12,500 USD of the IRM above to an invoice: a push the sandbox accepts (ackStatus Validated). */
const EXAMPLE_PUSH_LINE = {
  serialNo: 1,
  uploadType: 101,
  branchSlNo: 0,
  irmIfscCode: 'SBIN0004266',
  irmAdCode: '0002331',
  irmNumber: 'SBINIR0599001001001804',
  irmDt: '2026-11-23',
  irmFCC: 'USD',
  irmPurposeCode: 'P0103',
  irmRemitAmtFCC: 40118.96,
  sbCumInvoiceNumber: '4120031',
  sbCumInvoiceDate: '2026-11-23',
  portCode: 'INDEL4',
  billNo: 'B4120031',
  sbCumInvoiceFCC: 'USD',
  sbCumInvoiceValueinFCC: 12500,
  mappedIRMAmountFCC: 12500,
  isVostro: 'N',
};

const EXAMPLE_LINE_STATUS = {
  serialNo: 1,
  irmNumber: 'SBINIR0599001001001804',
  sbCumInvoiceNumber: '4120031',
  status: 'GENERATED' as const,
  ebrcNumber: EXAMPLE_EBRC_NUMBER,
  ebrcDate: '2026-11-25',
  errorDetails: [],
};

const EXAMPLE_ACK_ID = 'ACK202611250000000001';

const EXAMPLE_ENDPOINT = {
  id: EXAMPLE_WEBHOOK_ENDPOINT_ID,
  url: 'https://platform.example/webhooks/ebrc',
  description: 'Production receiver',
  enabledEvents: ['genebrc.request.processed', 'ebrc.generated'],
  status: 'enabled' as const,
  disabledReason: null,
  createdAt: '2026-11-25T02:00:00.000Z',
  updatedAt: '2026-11-25T02:00:00.000Z',
};

const EXAMPLE_EVENT = {
  id: EXAMPLE_EVENT_ID,
  type: 'platform_customer.verified',
  timestamp: '2026-11-25T01:37:04.174Z',
  platformCustomerId: EXAMPLE_CUSTOMER_ID,
  data: EXAMPLE_CUSTOMER,
};

const EXAMPLE_TEST_EVENT = {
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

const EXAMPLE_DELIVERY = {
  id: '5c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f',
  eventId: EXAMPLE_EVENT_ID,
  eventType: 'platform_customer.verified',
  attempt: 1,
  status: 'pending' as const,
  responseStatus: null,
  responseBody: null,
  durationMs: null,
  error: null,
  createdAt: '2026-11-25T02:06:00.000Z',
  nextAttemptAt: '2026-11-25T02:06:00.000Z',
};

/** The example push's line as a spreadsheet: the template's header and one filled-in row (CSV). */
const EXAMPLE_UPLOAD_CSV = [
  SPREADSHEET_COLUMNS.join(','),
  SPREADSHEET_COLUMNS.map((column) => {
    const value = (EXAMPLE_PUSH_LINE as Record<string, unknown>)[column];
    return value === null || value === undefined ? '' : String(value);
  }).join(','),
].join('\r\n') + '\r\n';

const EXAMPLE_UPLOAD_ID = '5d0c2f4e-8a1b-4c3d-9e7f-1a2b3c4d5e6f';
const EXAMPLE_UPLOAD_SHA256 = 'b1946ac92492d2347c6235b4d2611184e6f0c5f3f7c2a6d4e9b1c0a8f7e6d5c4';

const EXAMPLE_UPLOAD = {
  id: EXAMPLE_UPLOAD_ID,
  platformCustomerId: EXAMPLE_CUSTOMER_ID,
  status: 'validating' as const,
  fileName: 'irm-template-filled.csv',
  fileSha256: EXAMPLE_UPLOAD_SHA256,
  rowCount: null,
  rowsDone: 0,
  rowsValidated: 0,
  rowsFailed: 0,
  rowsGenerated: 0,
  errors: [],
  requests: [],
  createdAt: '2026-11-25T03:00:00.000Z',
  updatedAt: '2026-11-25T03:00:00.000Z',
};

const EXAMPLE_COMPLETED_UPLOAD = {
  ...EXAMPLE_UPLOAD,
  status: 'completed' as const,
  rowCount: 1,
  rowsDone: 1,
  rowsValidated: 1,
  rowsGenerated: 1,
  requests: [{ requestId: EXAMPLE_REQUEST_ID, ackStatus: 'Validated' as const, rows: [2] }],
  updatedAt: '2026-11-25T03:00:02.000Z',
};

const EXAMPLE_REJECTED_UPLOAD = {
  ...EXAMPLE_UPLOAD,
  id: '9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b',
  status: 'rejected' as const,
  rowCount: 2,
  errors: [
    { row: 2, column: 'sbCumInvoiceDate', code: 'ERR19', message: 'sbCumInvoiceDate must be a real date in ddMMyyyy (got "31022026").' },
    { row: 3, column: 'mappedIRMAmountFCC', code: 'required', message: 'mappedIRMAmountFCC is required.' },
  ],
  updatedAt: '2026-11-25T03:00:01.000Z',
};

export const MORE_EXAMPLES = {
  irmPage: {
    page: {
      summary: 'The first page of the IRMs',
      value: { data: [EXAMPLE_IRM], meta: { total: 1, page: 1, limit: 10, totalPages: 1 } },
    },
  },
  emptyBody: { empty: { summary: 'No fields', value: {} } },
  upload: {
    request: {
      accepted: {
        summary: "A filled-in template with one row (the example push's line)",
        description: 'Sent as multipart/form-data; `file` is the CSV or XLSX file itself',
        value: { platformCustomerId: EXAMPLE_CUSTOMER_ID, uploadType: '101', decalarationFlag: 'Y', file: EXAMPLE_UPLOAD_CSV },
      },
    },
    accepted: { accepted: { summary: 'Accepted: its rows are being checked', value: EXAMPLE_UPLOAD } },
    same: { same: { summary: 'The same file, uploaded again within 24 h', value: EXAMPLE_COMPLETED_UPLOAD } },
    completed: {
      completed: { summary: 'Completed: one push, Validated', value: EXAMPLE_COMPLETED_UPLOAD },
      rejected: { summary: 'Rejected: malformed rows, nothing pushed', value: EXAMPLE_REJECTED_UPLOAD },
    },
  },
  uploadList: {
    page: { summary: 'The newest uploads', value: { items: [EXAMPLE_COMPLETED_UPLOAD, EXAMPLE_REJECTED_UPLOAD], meta: { totalItems: 2, itemsPerPage: 10, totalPages: 1, currentPage: 1 } } },
  },
  push: {
    request: {
      validated: {
        summary: 'One line, mapping part of a fresh IRM to an invoice',
        description: "Built from the IRM as POST /irm/refresh shows it; irmRemitAmtFCC is the IRM's available amount now",
        value: { platformCustomerId: EXAMPLE_CUSTOMER_ID, recordResCount: 1, uploadType: '101', decalarationFlag: 'Y', ebrcBulkGenDtos: [EXAMPLE_PUSH_LINE] },
      },
    },
    ack: {
      validated: {
        summary: 'Accepted: pending at the authority',
        value: { authorityAckId: EXAMPLE_ACK_ID, requestId: EXAMPLE_REQUEST_ID, ackStatus: 'Validated', recordResCount: 1, errorDetails: [] },
      },
      failed: {
        summary: "Refused by the authority's rules (stored as FAILED)",
        value: {
          authorityAckId: null,
          requestId: 'EBRCGW20261125A41C07E2B9D35F6C10',
          ackStatus: 'Failed',
          recordResCount: 1,
          errorDetails: [{ serialNo: 1, field: 'mappedIRMAmountFCC', code: 'ERR38', message: "The mapped amount is more than the IRM's available amount." }],
        },
      },
    },
  },
  status: {
    request: {
      processed: { summary: 'A request pushed before', value: { platformCustomerId: EXAMPLE_CUSTOMER_ID, requestId: EXAMPLE_REQUEST_ID } },
    },
    answer: {
      processed: {
        summary: 'Processed: every line generated',
        value: {
          requestId: EXAMPLE_REQUEST_ID,
          authorityAckId: EXAMPLE_ACK_ID,
          status: 'PROCESSED',
          recordResCount: 1,
          recordProCount: 1,
          recordFailCount: 0,
          processedAt: '2026-11-25T01:38:10.000Z',
          ebrcBulkGenStatusList: [EXAMPLE_LINE_STATUS],
          errorDetails: [],
        },
      },
    },
  },
  requestList: {
    page: {
      summary: 'One request',
      value: [
        {
          id: '7e8f9a0b-1c2d-4e3f-8a4b-5c6d7e8f9a0b',
          userId: EXAMPLE_PLATFORM_ID,
          platformCustomerId: EXAMPLE_CUSTOMER_ID,
          requestId: EXAMPLE_REQUEST_ID,
          iecNumber: '0599001001',
          recordResCount: 1,
          uploadType: '101',
          decalarationFlag: 'Y',
          ebrcBulkGenDtos: [{ ...EXAMPLE_PUSH_LINE, uploadType: '101', irmDt: '23112026', sbCumInvoiceDate: '23112026' }],
          ebrcBulkGenStatusList: [EXAMPLE_LINE_STATUS],
          authorityAckId: EXAMPLE_ACK_ID,
          status: 'PROCESSED',
          errorDetails: { errors: [] },
          processedAt: '2026-11-25T01:38:10.000Z',
          createdAt: '2026-11-25T01:38:00.000Z',
          updatedAt: '2026-11-25T01:38:10.000Z',
        },
      ],
    },
  },
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
  ebrcPage: {
    page: {
      summary: "The customer's eBRCs",
      value: {
        data: [
          {
            ebrcNumber: EXAMPLE_EBRC_NUMBER,
            ebrcDate: '2026-11-25',
            irmNumber: 'SBINIR0599001001001804',
            sbCumInvoiceNumber: '4120031',
            sbCumInvoiceDate: '2026-11-23',
            realisedValueFCC: 12500,
            currency: 'USD',
            iecCode: '0599001001',
            requestId: EXAMPLE_REQUEST_ID,
            source: 'this_service',
            status: 'generated',
          },
        ],
        meta: { total: 1, page: 1, limit: 10, totalPages: 1 },
      },
    },
  },
  createEndpoint: {
    request: {
      endpoint: {
        summary: 'Processed requests and their eBRCs',
        value: { url: 'https://platform.example/webhooks/ebrc', description: 'Production receiver', enabledEvents: ['genebrc.request.processed', 'ebrc.generated'] },
      },
    },
    created: {
      endpoint: {
        summary: 'Created and enabled, with its signing secret (shown this once)',
        value: {
          id: EXAMPLE_WEBHOOK_ENDPOINT_ID,
          url: 'https://platform.example/webhooks/ebrc',
          description: 'Production receiver',
          enabledEvents: ['genebrc.request.processed', 'ebrc.generated'],
          status: 'enabled',
          secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
          createdAt: '2026-11-25T02:00:00.000Z',
        },
      },
    },
  },
  endpoint: { endpoint: { summary: 'An enabled endpoint', value: EXAMPLE_ENDPOINT } },
  endpointList: {
    page: { summary: 'The first page', value: { items: [EXAMPLE_ENDPOINT], meta: { totalItems: 1, itemsPerPage: 10, totalPages: 1, currentPage: 1 } } },
  },
  updateEndpoint: {
    request: {
      subscribe: { summary: 'Subscribe to every event type', value: { enabledEvents: ['*'], description: 'Every event' } },
    },
    updated: {
      subscribe: {
        summary: 'The endpoint, changed',
        value: { ...EXAMPLE_ENDPOINT, enabledEvents: ['*'], description: 'Every event', updatedAt: '2026-11-25T02:10:00.000Z' },
      },
    },
  },
  secret: { rotated: { summary: 'The new secret', value: { secret: 'whsec_Q2hhbmdlZFNlY3JldEV4YW1wbGVPbmx5MDE=' } } },
  testEvent: { event: { summary: 'The webhook.test event', value: EXAMPLE_TEST_EVENT } },
  deliveryList: {
    page: {
      summary: 'Two attempts',
      value: {
        items: [
          { ...EXAMPLE_DELIVERY, status: 'succeeded', responseStatus: 200, responseBody: 'ok', durationMs: 84, nextAttemptAt: null },
          {
            ...EXAMPLE_DELIVERY,
            id: '6d2e3f4a-5b6c-4d7e-8f9a-0b1c2d3e4f5a',
            status: 'failed',
            responseStatus: 503,
            responseBody: 'Service Unavailable',
            durationMs: 120,
            error: 'The endpoint answered 503',
            createdAt: '2026-11-25T02:01:00.000Z',
            nextAttemptAt: null,
          },
        ],
        meta: { totalItems: 2, itemsPerPage: 10, totalPages: 1, currentPage: 1 },
      },
    },
  },
  redeliver: {
    request: { event: { summary: 'One of the platform\'s events', value: { eventId: EXAMPLE_EVENT_ID } } },
    scheduled: { event: { summary: 'The new attempt, due now', value: EXAMPLE_DELIVERY } },
  },
  event: { event: { summary: 'A customer became verified', value: EXAMPLE_EVENT } },
  eventList: {
    page: { summary: 'The newest events', value: { items: [EXAMPLE_EVENT], meta: { totalItems: 1, itemsPerPage: 10, totalPages: 1, currentPage: 1 } } },
  },
} satisfies Record<string, Examples | Record<string, Examples>>;

// ---- Admin API (contract 10): the operator's platforms, API keys and console users, at /admin/v1 ----

export const AdminPlatformSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    createdAt: DateTime,
  },
  { description: 'A platform: a tenant of this service, with its API keys, customers and console users' },
);

export const AdminCreatedPlatformSchema = Type.Object({
  platform: AdminPlatformSchema,
  apiKey: Type.String({ description: "The platform's first API key: shown in this answer only (only its SHA-256 hash is stored)" }),
});

export const AdminApiKeySchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    platformId: Type.String({ format: 'uuid' }),
    prefix: Type.String({ description: "The key's first characters (ebrc_test_ and 6 more), to tell keys apart; never the key" }),
    createdAt: DateTime,
    lastUsedAt: Nullable(DateTime, { description: 'When a request last used it (written at most once a minute per key); null if never' }),
    revokedAt: Nullable(DateTime, { description: 'When it was revoked; null while it works' }),
  },
  { description: 'An API key, never the key itself nor its hash' },
);

export const AdminIssuedKeySchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  apiKey: Type.String({ description: 'The new API key: shown in this answer only (only its SHA-256 hash is stored)' }),
  prefix: Type.String({ description: "The key's first characters, as the key list shows them" }),
  createdAt: DateTime,
});

export const ConsoleUserSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    email: Type.String({ description: 'What the user signs in with; unique across every platform, ignoring case' }),
    platformId: Type.String({ format: 'uuid', description: 'The one platform the user sees in the console' }),
    disabled: Type.Boolean({ description: 'A disabled user cannot sign in, and was signed out when disabled' }),
    createdAt: DateTime,
  },
  { description: "A user of the web console: one of a platform's staff (never the password or its hash)" },
);

export const AdminPlatformListSchema = ItemsPage(AdminPlatformSchema);
export const AdminApiKeyListSchema = ItemsPage(AdminApiKeySchema);
export const ConsoleUserListSchema = ItemsPage(ConsoleUserSchema);

export const AdminListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });

export const CreatePlatformBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200, pattern: NonBlank, description: "The platform's name, 1 to 200 characters" }) },
  { additionalProperties: false },
);

export const CreateConsoleUserBody = Type.Object(
  {
    email: Type.String({ format: 'email', maxLength: 254, description: 'The e-mail address the user signs in with; unique across every platform, ignoring case' }),
    password: Type.String({ minLength: 12, maxLength: 1024, description: 'At least 12 characters; stored only as an scrypt hash' }),
  },
  { additionalProperties: false },
);

export const UpdateConsoleUserBody = Type.Object(
  { disabled: Type.Boolean({ description: 'true: the user cannot sign in, and its sessions end at once; false: it can again' }) },
  { additionalProperties: false },
);

export const PlatformParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100, description: 'The platform id' }) });
export const ApiKeyParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100, description: 'The API key id (not the key)' }) });
export const ConsoleUserParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100, description: 'The console user id' }) });

/**
 * The error answers of an admin operation: 400, 401 (the admin token), 404 (an unknown id, or the admin API off) and
 * 500, plus the statuses it names. `named` gives a status named examples instead of the standard one, so that a request
 * example can be answered by its namesake (test/http/openapi-examples.test.ts).
 */
export function adminProblems(statuses: number[] = [], named: Record<number, Examples> = {}) {
  const all = [...new Set([400, 401, 404, 500, 503, ...statuses])].sort();
  const standard: Record<number, ReturnType<typeof problemExample>> = {
    401: problemExample('admin_token_missing', 'Send the admin token as Authorization: Bearer <token>.'),
    404: problemExample('not_found', `Platform ${EXAMPLE_PLATFORM_ID} was not found.`),
  };
  return Object.fromEntries(
    all.map((status) => {
      const codes = (STATUS_CODES_BY_STATUS[status] ?? []).filter((code) => status !== 401 || code.startsWith('admin_'));
      const example = standard[status] ?? exampleProblemOf(status);
      const media = named[status] ? { examples: named[status] } : { example };
      return [status, { description: `Problem: ${codes.map((code) => `\`${code}\``).join(', ')}`, content: { 'application/problem+json': { schema: ProblemRef, ...media } } }];
    }),
  ) as unknown as Record<number, typeof ProblemRef>;
}

const EXAMPLE_API_KEY_ID = '8a1f3c2e-6b4d-4e9a-9c7b-2d5e8f0a1b3c';
const EXAMPLE_CONSOLE_USER_ID = 'c4e2a9b7-1d3f-4a6c-8e5b-7f9d0a2c4e6b';
const EXAMPLE_ADMIN_PLATFORM = { id: EXAMPLE_PLATFORM_ID, name: 'Acme Payments', createdAt: '2026-11-24T09:00:00.000Z' };
const EXAMPLE_ADMIN_KEY = {
  id: EXAMPLE_API_KEY_ID,
  platformId: EXAMPLE_PLATFORM_ID,
  prefix: 'ebrc_test_4Gq8Lm',
  createdAt: '2026-11-24T09:05:00.000Z',
  lastUsedAt: '2026-11-25T01:37:03.000Z',
  revokedAt: null,
};
const EXAMPLE_CONSOLE_USER = {
  id: EXAMPLE_CONSOLE_USER_ID,
  email: 'ops@acme-payments.example',
  platformId: EXAMPLE_PLATFORM_ID,
  disabled: false,
  createdAt: '2026-11-24T09:10:00.000Z',
};
const pageOf = (item: unknown) => ({ items: [item], meta: { totalItems: 1, itemsPerPage: 10, totalPages: 1, currentPage: 1 } });

export const ADMIN_EXAMPLES = {
  createPlatform: {
    request: { platform: { summary: 'A new platform', value: { name: 'Acme Payments' } } },
    created: {
      platform: {
        summary: 'The platform and its first API key (shown this once)',
        value: { platform: EXAMPLE_ADMIN_PLATFORM, apiKey: 'ebrc_test_3T79rkWNQkezDnm6JmvV19dsSquB' },
      },
    },
  },
  platform: { platform: { summary: 'A platform', value: EXAMPLE_ADMIN_PLATFORM } },
  platformList: { page: { summary: 'The first page, newest first', value: pageOf(EXAMPLE_ADMIN_PLATFORM) } },
  issueKey: {
    request: { empty: { summary: 'No fields', value: {} } },
    issued: {
      empty: {
        summary: 'The new key (shown this once)',
        value: { id: EXAMPLE_API_KEY_ID, apiKey: 'ebrc_test_4Gq8LmXw2RkP9vTnYc7HdJs5BeFa', prefix: 'ebrc_test_4Gq8Lm', createdAt: '2026-11-24T09:05:00.000Z' },
      },
    },
  },
  key: { key: { summary: 'A key in use', value: EXAMPLE_ADMIN_KEY } },
  keyList: { page: { summary: "The platform's keys, newest first", value: pageOf(EXAMPLE_ADMIN_KEY) } },
  revokeKey: {
    request: { empty: { summary: 'No fields', value: {} } },
    revoked: { empty: { summary: 'The key, revoked: refused from the next request on', value: { ...EXAMPLE_ADMIN_KEY, revokedAt: '2026-11-25T10:00:00.000Z' } } },
    already: {
      already: {
        summary: 'Revoked before',
        value: problemExample('api_key_already_revoked', `API key ${EXAMPLE_API_KEY_ID} (ebrc_test_4Gq8Lm…) was already revoked at 2026-11-25T10:00:00.000Z; nothing changed.`),
      },
    },
  },
  createUser: {
    request: {
      user: { summary: 'A console user', value: { email: 'ops@acme-payments.example', password: 'correct-horse-battery-staple' } },
    },
    created: { user: { summary: 'The user, who can sign in to the console', value: EXAMPLE_CONSOLE_USER } },
    refused: {
      shortPassword: {
        summary: 'Refused: the password is too short',
        value: problemExample('validation_failed', 'The request has an invalid field: password must be at least 12 characters long.', [
          { path: '/password', code: 'invalid_length', message: 'password must be at least 12 characters long.' },
        ]),
      },
    },
    taken: {
      taken: {
        summary: 'The e-mail address is already used',
        value: problemExample('console_user_email_taken', 'A console user with the e-mail ops@acme-payments.example already exists (e-mail addresses are unique, ignoring case).', [
          { path: '/email', code: 'console_user_email_taken', message: 'Another console user has this e-mail address.' },
        ]),
      },
    },
  },
  userList: { page: { summary: "The platform's console users, newest first", value: pageOf(EXAMPLE_CONSOLE_USER) } },
  updateUser: {
    request: { disable: { summary: 'Disable the user', value: { disabled: true } } },
    updated: { disable: { summary: 'Disabled: signed out, and cannot sign in', value: { ...EXAMPLE_CONSOLE_USER, disabled: true } } },
  },
} satisfies Record<string, Examples | Record<string, Examples>>;

// ---- Matching (contract 11): POST /platform-customers/{id}/irm/match ----

/** At most this many invoices in one match request. */
export const MAX_MATCH_INVOICES = 5_000;

const MatchInvoiceSchema = Type.Object(
  {
    sbCumInvoiceNumber: Type.String({
      minLength: 1,
      maxLength: 50,
      description: 'Unique in the request. As in a push: for uploadType 101 a shipping bill of 1-7 digits (ERR25), otherwise 1-20 characters (ERR26, ERR27)',
    }),
    sbCumInvoiceDate: Text(20, 'ddMMyyyy or YYYY-MM-DD, a real date (ERR28); the pushes carry it as ddMMyyyy'),
    sbCumInvoiceFCC: Text(10, '3-letter currency code: only IRMs in this currency can pay the invoice'),
    sbCumInvoiceValueinFCC: Type.Number({ description: 'The invoice value: above 0, at most two decimals' }),
    portCode: Text(20, '6-character port code from the port master (ERR29, ERR30)'),
    billNo: Text(50, 'At most 20 characters (ERR31)'),
    buyerName: Type.Optional(Nullable(Type.String({ maxLength: 200 }), {
      description: "Compared with each IRM's remitter name, legal suffixes (Ltd, Inc, GmbH…), case, punctuation and accents ignored. Without it an invoice is matched only one-to-one, on amount, date and country",
    })),
    buyerCountry: Type.Optional(Nullable(Type.String({ maxLength: 100 }), { description: "The buyer's country, as an ISO code (US, GB) or a name (United States); compared with the remitter's" })),
  },
  { additionalProperties: false },
);

const ChargeToleranceSchema = Type.Object(
  {
    percent: Type.Optional(Type.Number({
      minimum: 0,
      maximum: 100,
      default: 2,
      description: 'Percent of the invoice value an invoice may be short by, 0 to 100 with at most two decimals (2 = 2%); 0 accepts exact payments only',
    })),
    maxAmount: Type.Optional(Nullable(Type.Number({ description: 'An amount with at most two decimals' }), {
      default: 50,
      description: "The most an invoice may be short by, in units of the invoice's own currency; null for no cap",
    })),
  },
  {
    additionalProperties: false,
    default: { percent: 2, maxAmount: 50 },
    description: 'Bank charges: an invoice counts as paid when the IRMs mapped to it fall short of its value by at most min(percent of the value, maxAmount). Default 2% capped at 50 units',
  },
);

export const MatchBodySchema = Type.Object(
  {
    uploadType: Type.Union([Type.String({ maxLength: 20 }), Type.Integer()], {
      description: 'The eBRCs to come, as in a push: 101-104 or DIRECT_EXPORT/GOODS, SOFTEX, SERVICES, DEEMED_EXPORT. SOFTEX (102) maps only the IT service purpose codes',
    }),
    chargeTolerance: Type.Optional(ChargeToleranceSchema),
    maxDaysAfterInvoice: Type.Optional(Type.Integer({
      minimum: 1,
      maximum: 3650,
      default: 365,
      description: 'How many days after the invoice a payment may come (and, for an advance P0103, before it), 1 to 3650; by remittanceDate',
    })),
    invoices: Type.Array(MatchInvoiceSchema, { minItems: 1, maxItems: MAX_MATCH_INVOICES, description: `1 to ${MAX_MATCH_INVOICES} invoices` }),
  },
  { additionalProperties: false },
);

/** A line of a proposed push: the fields the match fills in; the optional ones (deductions, vostro, GST…) are yours to add. */
const MatchPushLineSchema = Type.Object(
  {
    serialNo: Type.Integer(),
    uploadType: Type.Integer(),
    branchSlNo: Type.Integer(),
    irmIfscCode: Type.String(),
    irmAdCode: Type.String(),
    irmNumber: Type.String(),
    irmDt: Type.String({ description: "The IRM's issue date, ddMMyyyy" }),
    irmFCC: Type.String(),
    irmPurposeCode: Type.String(),
    irmRemitAmtFCC: Type.Number({ description: "The IRM's available amount when this push is sent after the ones before it in `pushes`" }),
    sbCumInvoiceNumber: Type.String(),
    sbCumInvoiceDate: Type.String({ description: 'ddMMyyyy' }),
    portCode: Type.String(),
    billNo: Type.String(),
    sbCumInvoiceFCC: Type.String(),
    sbCumInvoiceValueinFCC: Type.Number(),
    mappedIRMAmountFCC: Type.Number(),
  },
  { additionalProperties: false },
);

const MatchPushSchema = Type.Object(
  {
    platformCustomerId: Type.String(),
    recordResCount: Type.Integer(),
    uploadType: Type.String({ description: 'The code, 101-104' }),
    decalarationFlag: Type.Literal('Y'),
    ebrcBulkGenDtos: Type.Array(MatchPushLineSchema, { maxItems: MAX_LINES }),
  },
  { additionalProperties: false, description: 'A body for POST /api/v1/genebrc/push-irm, as it is' },
);

export const MatchAnswerSchema = Type.Object({
  allocations: Type.Array(
    Type.Object({
      sbCumInvoiceNumber: Type.String(),
      irmNumber: Type.String(),
      mappedIRMAmountFCC: Money,
      confidence: Type.Number({ minimum: 0, maximum: 1, description: 'How strong the evidence is, 0 to 1 (docs/matching.md): 0.9 and above an exact amount from a same-named remitter' }),
      reasons: Type.Array(Type.String(), { description: 'Why: currency, amount, names, dates, one sentence each' }),
    }),
    { description: "Which IRM pays how much of which invoice: the invoices' order as sent" },
  ),
  unmatchedInvoices: Type.Array(Type.Object({ sbCumInvoiceNumber: Type.String(), remaining: Money }), {
    description: 'Invoices not paid in full (nothing mapped, or short by more than the charge tolerance), with what is left',
  }),
  unusedIrms: Type.Array(Type.Object({ irmNumber: Type.String(), available: Money }), {
    description: "IRMs the match considered (mappable, in the invoices' currencies, received within the dates the invoices allow) that keep a balance, with that balance",
  }),
  pushes: Type.Array(MatchPushSchema, {
    description: 'Ready push bodies of at most 999 lines, together holding every allocation once; send them in this order (an IRM split over two pushes quotes its balance after the first)',
  }),
  parameters: Type.Object(
    {
      uploadType: Type.String(),
      chargeTolerance: Type.Object({ percent: Type.Number(), maxAmount: Nullable(Type.Number()) }),
      maxDaysAfterInvoice: Type.Integer(),
    },
    { description: 'What the match applied, defaults included' },
  ),
});

/**
 * Five invoices against demo.exporter's sandbox IRMs of April 2025 (the same in every sandbox): one paid exactly, one
 * short by bank charges, an advance, two paid by one IRM; the EUR one finds no payment.
 */
const EXAMPLE_MATCH_REQUEST = {
  uploadType: '101',
  chargeTolerance: { percent: 2, maxAmount: 50 },
  maxDaysAfterInvoice: 30,
  invoices: [
    { sbCumInvoiceNumber: '4120031', sbCumInvoiceDate: '24032025', sbCumInvoiceFCC: 'USD', sbCumInvoiceValueinFCC: 11312.29, portCode: 'INNSA1', billNo: 'EXP/2025/031', buyerName: 'NORTHWIND TRADERS, INC.', buyerCountry: 'United States' },
    { sbCumInvoiceNumber: '4120032', sbCumInvoiceDate: '2025-03-25', sbCumInvoiceFCC: 'USD', sbCumInvoiceValueinFCC: 34480, portCode: 'INNSA1', billNo: 'EXP/2025/032', buyerName: 'Granite Peak Retail Corporation', buyerCountry: 'US' },
    { sbCumInvoiceNumber: '4120033', sbCumInvoiceDate: '28032025', sbCumInvoiceFCC: 'USD', sbCumInvoiceValueinFCC: 6200, portCode: 'INBOM4', billNo: 'EXP/2025/033', buyerName: 'Maple Leaf Distributors Limited', buyerCountry: 'Canada' },
    { sbCumInvoiceNumber: '4120034', sbCumInvoiceDate: '28032025', sbCumInvoiceFCC: 'USD', sbCumInvoiceValueinFCC: 5184.68, portCode: 'INBOM4', billNo: 'EXP/2025/034', buyerName: 'Maple Leaf Distributors Limited', buyerCountry: 'Canada' },
    { sbCumInvoiceNumber: '4120035', sbCumInvoiceDate: '10042025', sbCumInvoiceFCC: 'USD', sbCumInvoiceValueinFCC: 50691.25, portCode: 'INDEL4', billNo: 'EXP/2025/035', buyerName: 'Blue Harbor Imports', buyerCountry: 'US' },
    { sbCumInvoiceNumber: '4120036', sbCumInvoiceDate: '01032025', sbCumInvoiceFCC: 'EUR', sbCumInvoiceValueinFCC: 9800, portCode: 'INDEL4', billNo: 'EXP/2025/036', buyerName: 'Van der Berg Groothandel B.V.', buyerCountry: 'Netherlands' },
  ],
};

export const MATCH_EXAMPLES = {
  request: {
    matched: {
      summary: 'Six invoices: exact, short by bank charges, two paid by one IRM, an advance, and one unpaid',
      description: "Against the sandbox account demo.exporter's IRMs (every sandbox has them)",
      value: EXAMPLE_MATCH_REQUEST,
    },
  },
  answer: {
    matched: {
      summary: 'Five invoices paid by four IRMs, in one push; the EUR invoice unpaid',
      description: 'unusedIrms is shortened here to its first 3 entries (the sandbox answers 72: every USD and EUR IRM with a balance received within the 30 days the invoices allow)',
      value: {
        allocations: [
          {
            sbCumInvoiceNumber: '4120031',
            irmNumber: 'HDFCIR0599001001000007',
            mappedIRMAmountFCC: 11312.29,
            confidence: 0.99,
            reasons: [
              'same currency USD',
              'IRM balance 11312.29 equals the invoice value',
              'remitter "Northwind Traders Inc" is buyer "NORTHWIND TRADERS, INC." once legal suffixes, case and punctuation are ignored',
              "remitter country US is the buyer's",
              'received 2025-04-01, 8 days after invoice date 2025-03-24',
            ],
          },
          {
            sbCumInvoiceNumber: '4120032',
            irmNumber: 'ICICIR0599001001000013',
            mappedIRMAmountFCC: 34445.18,
            confidence: 0.9,
            reasons: [
              'same currency USD',
              'IRM balance 34445.18 is the invoice value 34480.00 less 34.82 of bank charges (tolerance 50.00)',
              'remitter "Granite Peak Retail Corp" is buyer "Granite Peak Retail Corporation" once legal suffixes, case and punctuation are ignored',
              "remitter country US is the buyer's",
              'received 2025-04-03, 9 days after invoice date 2025-03-25',
            ],
          },
          {
            sbCumInvoiceNumber: '4120033',
            irmNumber: 'ICICIR0599001001000025',
            mappedIRMAmountFCC: 6200,
            confidence: 0.84,
            reasons: [
              'same currency USD',
              'IRM balance 11384.68 settles 2 invoices totalling 11384.68 exactly',
              'remitter "Maple Leaf Distributors Ltd" is buyer "Maple Leaf Distributors Limited" once legal suffixes, case and punctuation are ignored',
              "remitter country CA is the buyer's",
              'received 2025-04-08, 11 days after invoice date 2025-03-28',
            ],
          },
          {
            sbCumInvoiceNumber: '4120034',
            irmNumber: 'ICICIR0599001001000025',
            mappedIRMAmountFCC: 5184.68,
            confidence: 0.84,
            reasons: [
              'same currency USD',
              'IRM balance 11384.68 settles 2 invoices totalling 11384.68 exactly',
              'remitter "Maple Leaf Distributors Ltd" is buyer "Maple Leaf Distributors Limited" once legal suffixes, case and punctuation are ignored',
              "remitter country CA is the buyer's",
              'received 2025-04-08, 11 days after invoice date 2025-03-28',
            ],
          },
          {
            sbCumInvoiceNumber: '4120035',
            irmNumber: 'ICICIR0599001001000005',
            mappedIRMAmountFCC: 50691.25,
            confidence: 0.99,
            reasons: [
              'same currency USD',
              'IRM balance 50691.25 equals the invoice value',
              'remitter "Blue Harbor Imports LLC" is buyer "Blue Harbor Imports" once legal suffixes, case and punctuation are ignored',
              "remitter country US is the buyer's",
              'advance (P0103) received 2025-04-02, 8 days before invoice date 2025-04-10',
            ],
          },
        ],
        unmatchedInvoices: [{ sbCumInvoiceNumber: '4120036', remaining: 9800 }],
        unusedIrms: [
          { irmNumber: 'ICICIR0599001001000000', available: 1358.87 },
          { irmNumber: 'ICICIR0599001001000001', available: 27892.68 },
          { irmNumber: 'ICICIR0599001001000003', available: 59727.28 },
        ],
        pushes: [
          {
            platformCustomerId: EXAMPLE_CUSTOMER_ID,
            recordResCount: 5,
            uploadType: '101',
            decalarationFlag: 'Y',
            ebrcBulkGenDtos: [
              {
                serialNo: 1,
                uploadType: 101,
                branchSlNo: 0,
                irmIfscCode: 'ICIC0000104',
                irmAdCode: '6390004',
                irmNumber: 'ICICIR0599001001000025',
                irmDt: '09042025',
                irmFCC: 'USD',
                irmPurposeCode: 'P0102',
                irmRemitAmtFCC: 11384.68,
                sbCumInvoiceNumber: '4120033',
                sbCumInvoiceDate: '28032025',
                portCode: 'INBOM4',
                billNo: 'EXP/2025/033',
                sbCumInvoiceFCC: 'USD',
                sbCumInvoiceValueinFCC: 6200,
                mappedIRMAmountFCC: 6200,
              },
              {
                serialNo: 2,
                uploadType: 101,
                branchSlNo: 0,
                irmIfscCode: 'ICIC0000104',
                irmAdCode: '6390004',
                irmNumber: 'ICICIR0599001001000025',
                irmDt: '09042025',
                irmFCC: 'USD',
                irmPurposeCode: 'P0102',
                irmRemitAmtFCC: 11384.68,
                sbCumInvoiceNumber: '4120034',
                sbCumInvoiceDate: '28032025',
                portCode: 'INBOM4',
                billNo: 'EXP/2025/034',
                sbCumInvoiceFCC: 'USD',
                sbCumInvoiceValueinFCC: 5184.68,
                mappedIRMAmountFCC: 5184.68,
              },
              {
                serialNo: 3,
                uploadType: 101,
                branchSlNo: 0,
                irmIfscCode: 'HDFC0000240',
                irmAdCode: '0510002',
                irmNumber: 'HDFCIR0599001001000007',
                irmDt: '03042025',
                irmFCC: 'USD',
                irmPurposeCode: 'P0102',
                irmRemitAmtFCC: 11312.29,
                sbCumInvoiceNumber: '4120031',
                sbCumInvoiceDate: '24032025',
                portCode: 'INNSA1',
                billNo: 'EXP/2025/031',
                sbCumInvoiceFCC: 'USD',
                sbCumInvoiceValueinFCC: 11312.29,
                mappedIRMAmountFCC: 11312.29,
              },
              {
                serialNo: 4,
                uploadType: 101,
                branchSlNo: 0,
                irmIfscCode: 'ICIC0000104',
                irmAdCode: '6390004',
                irmNumber: 'ICICIR0599001001000013',
                irmDt: '05042025',
                irmFCC: 'USD',
                irmPurposeCode: 'P0102',
                irmRemitAmtFCC: 34445.18,
                sbCumInvoiceNumber: '4120032',
                sbCumInvoiceDate: '25032025',
                portCode: 'INNSA1',
                billNo: 'EXP/2025/032',
                sbCumInvoiceFCC: 'USD',
                sbCumInvoiceValueinFCC: 34480,
                mappedIRMAmountFCC: 34445.18,
              },
              {
                serialNo: 5,
                uploadType: 101,
                branchSlNo: 0,
                irmIfscCode: 'ICIC0000104',
                irmAdCode: '6390004',
                irmNumber: 'ICICIR0599001001000005',
                irmDt: '02042025',
                irmFCC: 'USD',
                irmPurposeCode: 'P0103',
                irmRemitAmtFCC: 50691.25,
                sbCumInvoiceNumber: '4120035',
                sbCumInvoiceDate: '10042025',
                portCode: 'INDEL4',
                billNo: 'EXP/2025/035',
                sbCumInvoiceFCC: 'USD',
                sbCumInvoiceValueinFCC: 50691.25,
                mappedIRMAmountFCC: 50691.25,
              },
            ],
          },
        ],
        parameters: { uploadType: '101', chargeTolerance: { percent: 2, maxAmount: 50 }, maxDaysAfterInvoice: 30 },
      },
    },
  },
} satisfies Record<string, Examples>;

const EXAMPLE_PROCESSED_STATUS = MORE_EXAMPLES.status.answer.processed.value;
const EXAMPLE_EBRC = MORE_EXAMPLES.ebrcPage.page.value.data[0]!;

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
export const EVENT_EXAMPLES: Readonly<Record<EventType, { summary: string; timestamp: string; platformCustomerId: string | null; data: unknown }>> = {
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
      ...MORE_EXAMPLES.reconciliation.started.value,
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
