import { Type, type TSchema } from 'typebox';
import { EXAMPLE_EBRC_NUMBER, EXAMPLE_REQUEST_ID, IsoDate } from './common.ts';

/** A report's query (contract 16): the format and the period. */
export const ReportQuery = Type.Object(
  {
    format: Type.Unsafe<'csv' | 'xlsx' | 'json'>({
      type: 'string',
      enum: ['csv', 'xlsx', 'json'],
      default: 'csv',
      description: 'The file format: csv (the default), xlsx or json',
    }),
    fromDate: Type.Optional(IsoDate),
    toDate: Type.Optional(IsoDate),
  },
  { additionalProperties: false },
);

/** A report's 200 answer in its three formats, sent as an attachment (the body is not serialised from a schema). */
export function reportAnswer(report: { description: string; fileName: string; csv: string; json: unknown; sheets: string }): TSchema {
  return {
    description: report.description,
    headers: {
      'Content-Disposition': {
        type: 'string',
        description:
          'attachment; filename="<IEC>-<report>-<fromDate>-<toDate>.<format>": fromDate is `start` when not given, toDate today (UTC)',
        examples: [`attachment; filename="${report.fileName}"`],
      },
    },
    content: {
      'text/csv': { schema: { type: 'string' }, example: report.csv },
      'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': {
        schema: { type: 'string', format: 'binary' },
        example: `(an XLSX workbook: ${report.sheets}; every cell text)`,
      },
      'application/json': {
        schema: {
          type: 'object',
          required: ['rows', 'totals'],
          properties: { rows: { type: 'array', items: { type: 'object' } }, totals: { type: 'array', items: { type: 'object' } } },
        },
        example: report.json,
      },
    },
  } as unknown as TSchema;
}

/** One eBRC of the register, as the examples of the OpenAPI document show it. */
const REGISTER_ROW = {
  ebrcNumber: EXAMPLE_EBRC_NUMBER,
  ebrcDate: '2026-11-25',
  status: 'generated',
  source: 'this_service',
  requestId: EXAMPLE_REQUEST_ID,
  sbCumInvoiceNumber: '4120031',
  sbCumInvoiceDate: '2026-11-23',
  portCode: 'INNSA1',
  billNo: '4120031',
  sbCumInvoiceFCC: 'USD',
  sbCumInvoiceValueinFCC: '12500.00',
  irmNumber: 'SBINIR0599001001001804',
  irmDt: '2026-11-23',
  irmIfscCode: 'SBIN0004266',
  irmAdCode: '0002331',
  irmPurposeCode: 'P0103',
  remitterName: 'Globex Trading LLC',
  remitterCountry: 'US',
  currency: 'USD',
  realisedValueFCC: '12500.00',
  commissionValDeduct: null,
  commissionValInfo: null,
  discountValDeduct: null,
  discountValInfo: null,
  insuranceValDeduct: null,
  insuranceValInfo: null,
  freightValDeduct: null,
  freightValInfo: null,
  otherDeductionDeduct: null,
  otherdeductionsInfo: null,
};

const REGISTER_TOTALS = [{ currency: 'USD', count: 1, realisedValue: '12500.00' }];

function csvOf(rows: readonly Record<string, unknown>[], totals: readonly Record<string, unknown>[]): string {
  const line = (values: readonly unknown[]): string => values.map((value) => (value === null ? '' : String(value))).join(',');
  return [
    line(Object.keys(rows[0]!)),
    ...rows.map((row) => line(Object.values(row))),
    '',
    line(Object.keys(totals[0]!)),
    ...totals.map((total) => line(Object.values(total))),
    '',
  ].join('\n');
}

export const REGISTER_EXAMPLE = {
  csv: csvOf([REGISTER_ROW], REGISTER_TOTALS),
  json: { rows: [REGISTER_ROW], totals: REGISTER_TOTALS },
};

const PLATFORM_REGISTER_ROW = {
  platformCustomerId: '0b9f5a52-3c1e-4d8a-9f57-2f6a1c7d9e10',
  customerName: 'Acme Exports',
  iecCode: '0599001001',
  ...REGISTER_ROW,
};

export const PLATFORM_REGISTER_EXAMPLE = {
  csv: csvOf([PLATFORM_REGISTER_ROW], REGISTER_TOTALS),
  json: { rows: [PLATFORM_REGISTER_ROW], totals: REGISTER_TOTALS },
};

const UTILISATION_ROW = {
  irmNumber: 'SBINIR0599001001001804',
  irmIssueDate: '2026-11-23',
  remittanceDate: '2026-11-22',
  irmStatus: 'partially_utilised',
  ifscCode: 'SBIN0004266',
  remittanceAdCode: '0002331',
  purposeOfRemittance: 'P0103',
  remitterName: 'Globex Trading LLC',
  remitterCountry: 'US',
  currency: 'USD',
  remittedValue: '40118.96',
  utilisedValue: '12500.00',
  availableValue: '27618.96',
  realisedValue: '12500.00',
  ebrcCount: '1',
};

const UTILISATION_TOTALS = [
  { currency: 'USD', count: 1, remittedValue: '40118.96', utilisedValue: '12500.00', availableValue: '27618.96', realisedValue: '12500.00' },
];

export const UTILISATION_EXAMPLE = {
  csv: csvOf([{ ...UTILISATION_ROW, ebrcs: `${EXAMPLE_EBRC_NUMBER} 12500.00` }], UTILISATION_TOTALS),
  json: {
    rows: [{ ...UTILISATION_ROW, ebrcs: [{ ebrcNumber: EXAMPLE_EBRC_NUMBER, ebrcDate: '2026-11-25', realisedValue: '12500.00', status: 'generated' }] }],
    totals: UTILISATION_TOTALS,
  },
};
