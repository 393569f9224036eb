import { Type } from 'typebox';
import { REQUEST_STATUSES, type RequestStatus } from '../domain/request-state.ts';
import { DateTime, EXAMPLE_CUSTOMER_ID, EXAMPLE_EBRC_NUMBER, EXAMPLE_PLATFORM_ID, EXAMPLE_REQUEST_ID, IsoDate, Money, Nullable, PageQuery, Text, type Examples } from './common.ts';

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

export const MAX_LINES = 999;
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

/** One line mapping 12,500 USD of the IRM above to an invoice: a push the sandbox accepts (ackStatus Validated). */
export const EXAMPLE_PUSH_LINE = {
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

export const EXAMPLE_LINE_STATUS = {
  serialNo: 1,
  irmNumber: 'SBINIR0599001001001804',
  sbCumInvoiceNumber: '4120031',
  status: 'GENERATED' as const,
  ebrcNumber: EXAMPLE_EBRC_NUMBER,
  ebrcDate: '2026-11-25',
  errorDetails: [],
};

const EXAMPLE_ACK_ID = 'ACK202611250000000001';

export const GENEBRC_EXAMPLES = {
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
} satisfies Record<string, Examples | Record<string, Examples>>;
