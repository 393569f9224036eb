import { Type, type TSchema } from 'typebox';
import { DateTime, EXAMPLE_CUSTOMER_ID, EXAMPLE_PLATFORM_ID, IsoDate, Money, PageQuery, type Examples } from './common.ts';

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

export const IrmPageSchema = Type.Object({
  data: Type.Array(Type.Unsafe(Type.Ref('Irm'))),
  meta: Type.Object({ total: Type.Integer(), page: Type.Integer(), limit: Type.Integer(), totalPages: Type.Integer() }),
});

export const EXAMPLE_IRM = {
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

export const IRM_EXAMPLES = {
  irmPage: {
    page: {
      summary: 'The first page of the IRMs',
      value: { data: [EXAMPLE_IRM], meta: { total: 1, page: 1, limit: 10, totalPages: 1 } },
    },
  },
} satisfies Record<string, Examples | Record<string, Examples>>;
