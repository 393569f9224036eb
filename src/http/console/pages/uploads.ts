import { PassThrough } from 'node:stream';
import { auditSourceOf } from '../../audit-source.ts';
import multipart from '@fastify/multipart';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { BulkUpload, UploadForm } from '../../../services/bulk-uploads.ts';
import { listCustomers, requireCustomer, shownCustomer } from '../../../services/customers.ts';
import { toCustomer, type Customer } from '../../../services/customer-view.ts';
import { irmTemplate, type IrmTemplateQuery as IrmTemplateQueryType } from '../../../services/irm-template.ts';
import type { Api, Deps } from '../../deps.ts';
import { requireDateRange } from '../../routes/date-range.ts';
import { readUploadForm, uploadedFileOf } from '../../routes/genebrc/uploads/form.ts';
import { IrmTemplateQuery } from '../../../schemas/irms.ts';
import { UploadFormBody, UploadListQuery, UploadParams } from '../../../schemas/uploads.ts';
import { formFields, optional, text, validated, type Problem } from '../forms.ts';
import { helpers } from '../helpers.ts';
import type { ConsolePage } from '../page.ts';
import { failureOf, platformOf, queryOf, redirectTo, render } from '../render.ts';

const PAGE_SIZE = 20;
const UPLOADS = '/console/uploads';
/** The customers the pickers offer: the newest ones (as the requests page offers them). */
const PICKER_SIZE = 100;

const NOTICES: Record<string, string> = {
  accepted: 'The file was accepted. Its rows are being checked, then pushed; this page follows the progress.',
  same: 'This file was already uploaded for this customer within the last 24 hours: here is that upload. Nothing was pushed again.',
};

const FORM_LABELS = { platformCustomerId: 'Customer', uploadType: 'Upload type', decalarationFlag: 'Declaration', file: 'File' };

/** The eBRC types a push takes (src/domain/upload-type.ts), as the form offers them. */
const UPLOAD_TYPES = [
  { value: '101', label: '101 · Direct export of goods' },
  { value: '102', label: '102 · Software export (SOFTEX)' },
  { value: '103', label: '103 · Services (non-IT)' },
  { value: '104', label: '104 · Deemed export' },
];

type FormState = { values: Record<string, string>; fields: Record<string, string>; problem: Problem | null };

/** How an upload stands, as people read it: a completed upload whose rows failed is shown as failed, not as a success. */
export function uploadOutcome(upload: Pick<BulkUpload, 'status' | 'rowCount' | 'rowsFailed' | 'rowsGenerated' | 'rowsValidated'>): { label: string; tone: string; what: string } {
  switch (upload.status) {
    case 'validating':
      return { label: 'Validating', tone: 'warn', what: 'Checking every row, as a push checks its lines.' };
    case 'pushing':
      return { label: 'Pushing', tone: 'warn', what: 'The rows passed the checks and are being pushed to the authority, one request after another.' };
    case 'rejected':
      return { label: 'Rejected', tone: 'bad', what: 'Some rows are malformed, so nothing was pushed. Fix the rows below and upload the file again.' };
    case 'completed':
      break;
  }
  const failed = `${upload.rowsFailed} ${upload.rowsFailed === 1 ? 'row' : 'rows'} failed`;
  if (upload.rowsFailed > 0 && upload.rowsFailed === upload.rowCount) {
    return { label: 'Failed', tone: 'bad', what: `Every row failed: nothing was generated. See the problems below, fix them and upload again.` };
  }
  if (upload.rowsFailed > 0) {
    return { label: 'Completed with failures', tone: 'warn', what: `${failed}: see the problems below. ${upload.rowsGenerated} generated so far.` };
  }
  const pending = upload.rowsValidated - upload.rowsGenerated;
  return {
    label: 'Completed',
    tone: 'good',
    what: pending > 0
      ? `Every row was pushed and accepted by the authority; ${pending} ${pending === 1 ? 'is' : 'are'} still being processed. Follow each request for the eBRCs it generated.`
      : 'Every row was pushed and generated its eBRC.',
  };
}

/** Final statuses: nothing changes any more, the page stops following it. */
const FINAL = new Set(['completed', 'rejected']);

async function listPage(request: FastifyRequest, reply: FastifyReply, deps: Deps, form?: FormState): Promise<FastifyReply> {
  const platformId = platformOf(request);
  const query = queryOf(request);
  const customerId = optional(query, 'customer') ?? '';
  // Another platform's customer is not found: the 404 page.
  const customer = customerId === '' ? null : toCustomer(await requireCustomer(deps.database.db, platformId, customerId));
  const customers = await listCustomers(deps.database.db, platformId, { page: 1, limit: PICKER_SIZE });
  let list: { items: BulkUpload[]; total: number; page: number; totalPages: number } = { items: [], total: 0, page: 1, totalPages: 0 };
  let listProblem: Problem | null = null;
  try {
    const checked = validated<{ page: number; limit: number; platformCustomerId?: string }>(
      UploadListQuery,
      { page: optional(query, 'page') ?? '1', limit: String(PAGE_SIZE), ...(customer === null ? {} : { platformCustomerId: customer.id }) },
      'query',
    );
    const answer = await deps.uploads.list(platformId, checked);
    list = { items: answer.items, total: answer.meta.totalItems, page: answer.meta.currentPage, totalPages: answer.meta.totalPages };
  } catch (error) {
    listProblem = failureOf(request, error, { page: 'Page' });
  }
  // Each upload's customer by name: the picker's, else read (an older customer).
  const names = new Map<string, string>(customers.items.map((item) => [item.id, item.name]));
  for (const item of list.items) {
    if (names.has(item.platformCustomerId)) continue;
    const shown = await shownCustomer(deps.database.db, platformId, item.platformCustomerId);
    names.set(item.platformCustomerId, shown?.name ?? item.platformCustomerId);
  }
  const create = form ?? { values: { platformCustomerId: customer?.id ?? '', uploadType: '101', decalarationFlag: '' }, fields: {}, problem: null };
  return render(
    request,
    reply,
    'uploads/list',
    {
      title: 'Uploads',
      customer,
      customers: pickerOf(customers.items, customer),
      moreCustomers: customers.meta.totalItems > customers.items.length,
      names: Object.fromEntries(names),
      outcomes: Object.fromEntries(list.items.map((item) => [item.id, uploadOutcome(item)])),
      list,
      listProblem,
      create,
      uploadTypes: UPLOAD_TYPES,
    },
    form?.problem?.status ?? listProblem?.status ?? 200,
  );
}

/** The picker's customers, with the one chosen even when it is not among the newest. */
function pickerOf(items: readonly Customer[], chosen: Customer | null): Customer[] {
  return chosen === null || items.some((item) => item.id === chosen.id) ? [...items] : [...items, chosen];
}

/** The spreadsheet rows of a request, as people read them: "Rows 2-14" or "Row 7". */
function rowsText(rows: readonly number[]): string {
  if (rows.length === 0) return '—';
  const sorted = [...rows].sort((a, b) => a - b);
  const contiguous = sorted.at(-1)! - sorted[0]! === sorted.length - 1;
  if (sorted.length === 1) return `Row ${sorted[0]}`;
  return contiguous ? `Rows ${sorted[0]}–${sorted.at(-1)}` : `${sorted.length} rows, ${sorted[0]}–${sorted.at(-1)}`;
}

/** The template (GET /api/v1/platform-customers/{id}/irm/template's operation), streamed as the API route streams it. */
async function sendTemplate(request: FastifyRequest, reply: FastifyReply, deps: Deps, customerId: string, query: IrmTemplateQueryType): Promise<FastifyReply> {
  requireDateRange(query);
  const template = await irmTemplate(deps.context, deps.irmPuller, platformOf(request), customerId, query);
  reply.type(template.contentType).header('cache-control', 'no-store').header('content-disposition', `attachment; filename="${template.fileName}"`);
  if (request.method === 'HEAD') return reply.send();
  const body = new PassThrough();
  template.write(body).catch((error: unknown) => {
    request.log.warn({ err: error }, 'the IRM template stopped before it was complete');
    body.destroy(error instanceof Error ? error : new Error(String(error)));
  });
  return reply.send(body);
}

export const uploadsPage: ConsolePage = {
  nav: { label: 'Uploads', href: UPLOADS },
  routes(app: Api, deps: Deps): void {
    app.get('/uploads', async (request, reply) => listPage(request, reply, deps));

    // The template of a customer's IRMs, with the IRM list's filters (the IRMs page links it with its own).
    app.get('/customers/:id/irm-template', async (request, reply) => {
      const { id } = request.params as { id: string };
      const query = queryOf(request);
      const checked = validated<IrmTemplateQueryType>(
        IrmTemplateQuery,
        Object.fromEntries(['format', 'irmNumber', 'fromDate', 'toDate'].flatMap((name) => {
          const value = optional(query, name);
          return value === undefined ? [] : [[name, value]];
        })),
        'query',
      );
      return sendTemplate(request, reply, deps, id, checked);
    });

    // The uploads page's template form: a customer and a format, then the template's own address.
    app.get('/uploads/template', async (request, reply) => {
      const query = queryOf(request);
      const customer = await requireCustomer(deps.database.db, platformOf(request), text(query, 'customer'));
      const format = text(query, 'format') === 'xlsx' ? 'xlsx' : 'csv';
      return reply.redirect(helpers.href(`/console/customers/${customer.id}/irm-template`, { format }), 303);
    });

    app.get('/uploads/:id', async (request, reply) => {
      const platformId = platformOf(request);
      const { id } = validated<{ id: string }>(UploadParams, request.params as Record<string, unknown>);
      const upload = await deps.uploads.get(platformId, id);
      const customer = toCustomer(await requireCustomer(deps.database.db, platformId, upload.platformCustomerId));
      const noticeKey = text(queryOf(request), 'notice');
      // “Accepted, being checked” is past once the upload is final.
      const notice = noticeKey === 'accepted' && FINAL.has(upload.status) ? null : (NOTICES[noticeKey] ?? null);
      const requests = upload.requests.map((item) => ({ ...item, rowsText: rowsText(item.rows) }));
      return render(request, reply, 'uploads/detail', {
        title: `Upload ${upload.fileName}`,
        upload,
        outcome: uploadOutcome(upload),
        customer,
        requests,
        notice,
        final: FINAL.has(upload.status),
      });
    });

    // What the detail page's script follows while the upload is checked and pushed.
    app.get('/uploads/:id/progress', async (request, reply) => {
      const { id } = validated<{ id: string }>(UploadParams, request.params as Record<string, unknown>);
      const upload = await deps.uploads.get(platformOf(request), id);
      return reply.header('cache-control', 'no-store').send({
        status: upload.status,
        rowCount: upload.rowCount,
        rowsDone: upload.rowsDone,
        requests: upload.requests.length,
        errors: upload.errors.length,
      });
    });

    // The upload form (POST /api/v1/genebrc/uploads's operation): a multipart body, in a scope of its own.
    app.register(async (child) => {
      const scope = child as unknown as Api;
      await scope.register(multipart);
      scope.post(
        '/uploads',
        {
          config: { audit: 'bulk_upload.create' },
          // Read (and its CSRF field with it) before the console's preHandler checks the token, and only for a
          // signed-in user: the session is checked before any body is read (the console's onRequest hook).
          preValidation: async (request) => {
            if (request.consoleSession === null) return;
            await readUploadForm(request);
          },
        },
        async (request, reply) => {
          const fields = formFields(request.body);
          const values = {
            platformCustomerId: text(fields, 'platformCustomerId'),
            uploadType: text(fields, 'uploadType'),
            decalarationFlag: text(fields, 'decalarationFlag'),
          };
          try {
            const form = validated<UploadForm & { file: string }>(UploadFormBody, {
              platformCustomerId: values.platformCustomerId,
              uploadType: values.uploadType,
              // An unticked box sends nothing: the push's own check then says the declaration is missing (ERR36).
              decalarationFlag: values.decalarationFlag,
              ...(fields.file === undefined ? {} : { file: text(fields, 'file') }),
            });
            const { created, upload } = await deps.uploads.accept(platformOf(request), form, uploadedFileOf(request), auditSourceOf(request));
            return redirectTo(reply, `${UPLOADS}/${upload.id}`, created ? 'accepted' : 'same');
          } catch (error) {
            const problem = failureOf(request, error, FORM_LABELS);
            // Another platform's customer (or none) is a 404 page, not a form error.
            if (problem.code === 'not_found') throw error;
            return listPage(request, reply, deps, { values, fields: problem.fields, problem });
          }
        },
      );
    });
  },
};
