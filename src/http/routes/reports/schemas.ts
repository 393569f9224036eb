import { Type, type TSchema } from 'typebox';
import { IsoDate } from '../../schemas.ts';

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
