import { Type, type Static } from 'typebox';
import { SPREADSHEET_COLUMNS } from '../domain/spreadsheet-columns.ts';
import { DateTime, EXAMPLE_CUSTOMER_ID, EXAMPLE_REQUEST_ID, ItemsPage, Nullable, PageQuery, type Examples } from './common.ts';
import { EXAMPLE_PUSH_LINE } from './genebrc-requests.ts';

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

export const EXAMPLE_COMPLETED_UPLOAD = {
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

export const UPLOAD_EXAMPLES = {
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
} satisfies Record<string, Examples | Record<string, Examples>>;
