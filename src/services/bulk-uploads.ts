import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { recordAudit, SYSTEM_SOURCE, type AuditSource } from './audit.ts';
import type { Static } from 'typebox';
import { checkPushMessage } from '../domain/push-message.ts';
import { AppError, ERROR_TABLE } from '../errors.ts';
import type { BulkUploadSchema } from '../schemas/uploads.ts';
import type { BulkUploadProblem, Schema } from '../store/schema.ts';
import * as store from '../store/uploads.ts';
import { requireVerified, type ServiceContext } from './context.ts';
import { requireCustomer } from './customers.ts';
import { storedAcknowledgement, type PushAck } from './genebrc/views.ts';
import { NOT_RECEIVED_CODE } from './genebrc/progress.ts';
import type { PushService } from './genebrc/push.ts';
import { itemsPage, offsetOf, type PageRequest } from './pages.ts';
import { detectFormat } from './spreadsheets/read.ts';
import { checkInWorker } from './spreadsheets/worker.ts';
import type { RawLine } from '../domain/push-line.ts';

/** The port the upload jobs implement: background work on uploads, scheduled in the caller's transaction so it is never lost. */
export interface UploadScheduler {
  scheduleUpload(db: Kysely<Schema>, uploadId: string): Promise<void>;
}

/** What working an upload came to: finished (completed or rejected), or waiting on a request still unsettled. */
export type UploadProgress = 'finished' | 'waiting';

export type BulkUpload = Static<typeof BulkUploadSchema>;

export type UploadForm = { platformCustomerId: string; uploadType: string; decalarationFlag: string };

export type UploadedFile = { fileName: string; contentType: string | undefined; content: Buffer; sha256: string };

/** The same file (by SHA-256) for the same customer within this time answers the upload made of it (contract 11). */
const SAME_FILE_WINDOW_MS = 24 * 3600 * 1000;

/**
 * An upload as the API shows it, with how its rows ended so far (contract 13): rowsValidated (in pushes the authority
 * acknowledged Validated), rowsGenerated (their lines that became eBRCs), rowsFailed (in pushes refused at
 * acknowledgement, and lines that failed at processing), and an error on every failed row: a refusal that names no
 * row is repeated on each row of its push, a row of a refused push without an error of its own says why it was not
 * generated, and a line that failed at processing carries the authority's codes.
 */
function uploadView(upload: store.UploadRow, pushes: readonly store.UploadPushRow[], outcomes: ReadonlyMap<string, store.LineOutcomes>): BulkUpload {
  let rowsValidated = 0;
  let rowsGenerated = 0;
  let rowsFailed = 0;
  const errors: BulkUploadProblem[] = [...upload.errors];
  for (const push of pushes) {
    const rows = push.spreadsheet_rows;
    if (push.ack_status === 'Failed') {
      rowsFailed += rows.length;
      errors.push(...failedPushErrors(push));
    } else if (push.ack_status === 'Validated') {
      rowsValidated += rows.length;
      errors.push(...push.errors);
      const outcome = push.request_id === null ? undefined : outcomes.get(push.request_id);
      rowsGenerated += outcome?.generated ?? 0;
      rowsFailed += outcome?.failed.length ?? 0;
      for (const line of outcome?.failed ?? []) {
        const row = rows[line.serialNo - 1] ?? null;
        const details = line.errorDetails.length > 0 ? line.errorDetails : [{ field: null, code: 'line_failed', message: 'The authority did not generate this line.' }];
        errors.push(...details.map((detail) => ({ row, column: detail.field, code: detail.code, message: `Failed at processing (request ${push.public_request_id}): ${detail.message}` })));
      }
    }
  }
  return {
    id: upload.id,
    platformCustomerId: upload.platform_customer_id,
    status: upload.status,
    fileName: upload.file_name,
    fileSha256: upload.file_sha256,
    rowCount: upload.row_count,
    rowsDone: upload.rows_done,
    rowsValidated,
    rowsFailed,
    rowsGenerated,
    errors,
    requests: pushes
      .filter((push) => push.public_request_id !== null)
      .map((push) => ({ requestId: push.public_request_id!, ackStatus: push.ack_status, rows: push.spreadsheet_rows })),
    createdAt: upload.created_at.toISOString(),
    updatedAt: upload.updated_at.toISOString(),
  };
}

/** Every row of a refused push fails: its own errors, the push's errors that name no row, or why it was not generated. */
function failedPushErrors(push: store.UploadPushRow): BulkUploadProblem[] {
  const general = push.errors.filter((error) => error.row === null);
  const named = push.errors.filter((error) => error.row !== null);
  const errors: BulkUploadProblem[] = [];
  for (const row of push.spreadsheet_rows) {
    const own = named.filter((error) => error.row === row);
    errors.push(...own, ...general.map((error) => ({ ...error, row })));
    if (own.length === 0 && general.length === 0) {
      const cause = named[0];
      errors.push({
        row,
        column: null,
        code: cause?.code ?? 'request_failed',
        message: `Not generated: request ${push.public_request_id ?? ''} was refused${cause ? ` (${cause.code} on row ${cause.row})` : ''}, so none of its rows was.`,
      });
    }
  }
  return errors;
}

/** The requests of the pushes the authority acknowledged Validated: those whose lines end one by one. */
function validatedRequests(pushes: readonly store.UploadPushRow[]): string[] {
  return pushes.flatMap((push) => (push.ack_status === 'Validated' && push.request_id !== null ? [push.request_id] : []));
}

/** A push's acknowledgement as the upload reports it: each error at the spreadsheet row of its line. */
function outcomeOf(ack: PushAck, rows: readonly number[]) {
  return {
    ackStatus: ack.ackStatus,
    rows: rows.length,
    errors: ack.errorDetails.map((detail) => ({
      row: detail.serialNo === null ? null : (rows[detail.serialNo - 1] ?? null),
      column: detail.field,
      code: detail.code,
      message: detail.serialNo === null ? `Request ${ack.requestId}: ${detail.message}` : detail.message,
    })),
  };
}

/** Whether a stored push failed because the authority never received it (nothing of it reached the authority). */
function neverReceived(ack: PushAck): boolean {
  return ack.ackStatus === 'Failed' && ack.errorDetails.length === 1 && ack.errorDetails[0]!.code === NOT_RECEIVED_CODE;
}

function rowSpan(rows: readonly number[]): string {
  return rows.length === 1 ? `Row ${rows[0]}` : `Rows ${rows[0]}-${rows.at(-1)}`;
}

/**
 * Spreadsheet uploads (contract 11): takes a file, checks every row as a push checks its lines, splits the rows into
 * ordinary pushes and sends them one after another, in a background job. The upload's status moves here only:
 * validating, then rejected (with every problem) or pushing, then completed; both final moves write the
 * `bulk_upload.completed` event in their own transaction.
 */
export class BulkUploads {
  readonly #context: ServiceContext;
  readonly #push: PushService;
  readonly #scheduler: UploadScheduler;

  constructor(context: ServiceContext, push: PushService, scheduler: UploadScheduler) {
    this.#context = context;
    this.#push = push;
    this.#scheduler = scheduler;
  }

  /** Stores the upload and queues its job; the customer's upload of the same file within 24 h instead (not created). */
  async accept(platformId: string, form: UploadForm, file: UploadedFile, source: AuditSource): Promise<{ created: boolean; upload: BulkUpload }> {
    const customer = requireVerified(await requireCustomer(this.#context.db, platformId, form.platformCustomerId));
    const { problems } = checkPushMessage(form);
    if (file.content.length === 0) problems.push({ path: '/file', code: 'empty_file', message: 'The file is empty: upload the filled-in template.' });
    if (problems.length > 0) {
      throw new AppError(
        'validation_failed',
        problems.length === 1 ? `The upload has an invalid field: ${problems[0]!.message}` : `The upload has ${problems.length} invalid fields; see errors.`,
        { errors: problems },
      );
    }
    if (detectFormat({ fileName: file.fileName, contentType: file.contentType }) === null) {
      throw new AppError('unsupported_media_type', `${file.fileName} is not a spreadsheet this service reads: upload a CSV (.csv) or Excel (.xlsx) file.`);
    }
    const { db } = this.#context;
    return db.transaction().execute(async (tx) => {
      await store.lockCustomerForUpload(tx, customer.id);
      const same = await store.findSameFile(tx, customer.id, file.sha256, new Date(Date.now() - SAME_FILE_WINDOW_MS));
      if (same !== undefined) return { created: false, upload: await this.#view(tx, same) };
      const upload = await store.insertUpload(tx, {
        id: randomUUID(),
        platformId,
        customerId: customer.id,
        fileName: file.fileName,
        fileSha256: file.sha256,
        fileContent: file.content,
        uploadType: form.uploadType,
        declarationFlag: form.decalarationFlag,
      });
      await this.#scheduler.scheduleUpload(tx, upload.id);
      await recordAudit(tx, source, { platformId, action: 'bulk_upload.create', target: { type: 'bulk_upload', id: upload.id } });
      return { created: true, upload: uploadView(upload, [], new Map()) };
    });
  }

  async get(platformId: string, id: string): Promise<BulkUpload> {
    const upload = await store.findUpload(this.#context.db, platformId, id);
    if (upload === undefined) throw new AppError('not_found', `Upload ${id} not found.`);
    return this.#view(this.#context.db, upload);
  }

  async list(platformId: string, query: PageRequest & { platformCustomerId?: string | undefined }) {
    const { rows, total } = await store.listUploads(this.#context.db, {
      platformId,
      customerId: query.platformCustomerId,
      offset: offsetOf(query),
      limit: query.limit,
    });
    const pushes = await store.pushesOf(this.#context.db, rows.map((row) => row.id));
    const outcomes = await store.lineOutcomesOf(this.#context.db, validatedRequests([...pushes.values()].flat()));
    return itemsPage(rows.map((row) => uploadView(row, pushes.get(row.id) ?? [], outcomes)), total, query);
  }

  /** Works the upload as far as it goes now (its job's handler): whatever was done before a kill is not done again. */
  async run(uploadId: string): Promise<UploadProgress> {
    let upload = await store.findUploadForWork(this.#context.db, uploadId);
    if (upload?.status === 'validating') {
      await this.#validate(upload);
      upload = await store.findUploadForWork(this.#context.db, uploadId);
    }
    if (upload?.status !== 'pushing') return 'finished';
    return this.#pushAll(upload);
  }

  /**
   * Fails for good an upload whose work kept taking the service down (a poison job, src/jobs/poison.ts): one being
   * validated is rejected; one being pushed has its pushes not yet sent recorded as Failed (those already sent keep
   * their outcome) and completes once every push has one. Either way with `reason`, code processing_stopped.
   */
  async setAside(uploadId: string, reason: string): Promise<UploadProgress> {
    const upload = await store.findUploadForWork(this.#context.db, uploadId);
    if (upload === undefined) return 'finished';
    const problem = { row: null, column: null, code: 'processing_stopped', message: `This upload was stopped: ${reason}. Nothing more of it will be pushed; check the file and upload it again.` };
    const { db } = this.#context;
    if (upload.status === 'validating') {
      await db.transaction().execute(async (tx) => {
        if (!(await store.rejectUpload(tx, uploadId, 0, [problem]))) return;
        await this.#recordFinished(tx, uploadId);
      });
      this.#context.outbox.committed();
      return 'finished';
    }
    if (upload.status !== 'pushing') return 'finished';
    for (let push = await store.nextUnsentPush(db, uploadId); push !== undefined; push = await store.nextUnsentPush(db, uploadId)) {
      const { push_index: index, spreadsheet_rows: rows } = push;
      const failure = { ...problem, message: `${rowSpan(rows)} were not pushed. ${problem.message}` };
      await db.transaction().execute((tx) => store.recordPushOutcome(tx, uploadId, index, { ackStatus: 'Failed', errors: [failure], rows: rows.length }));
    }
    // Pushes already stored as requests take their outcome from the authority's answer, as ever.
    return this.#pushAll(upload);
  }

  async #view(db: ServiceContext['db'], upload: store.UploadRow): Promise<BulkUpload> {
    const pushes = (await store.pushesOf(db, [upload.id])).get(upload.id) ?? [];
    return uploadView(upload, pushes, await store.lineOutcomesOf(db, validatedRequests(pushes)));
  }

  /** Checks every row; then rejects the upload with its problems, or plans its pushes. Nothing is pushed here. */
  async #validate(upload: store.UploadRow): Promise<void> {
    const content = await store.readUploadFile(this.#context.db, upload.id);
    if (content === null) return;
    // In a worker thread with its own memory limit and deadline: a hostile file rejects its upload, nothing more.
    const { rowCount, lineCount, problems, pushes } = await checkInWorker({ file: content, fileName: upload.file_name, uploadType: upload.upload_type });
    const { db } = this.#context;
    if (problems.length > 0) {
      await db.transaction().execute(async (tx) => {
        if (!(await store.rejectUpload(tx, upload.id, rowCount, problems))) return;
        await this.#recordFinished(tx, upload.id);
      });
      this.#context.outbox.committed();
      return;
    }
    await db.transaction().execute((tx) => store.planUpload(tx, upload.id, lineCount, pushes));
  }

  /** Sends the planned pushes in order, recording each outcome; completes the upload once every push has one. */
  async #pushAll(upload: store.UploadRow): Promise<UploadProgress> {
    const { db } = this.#context;
    // Pushes stored before a kill (or an authority failure) took their answer: their outcome is the stored request's,
    // once it is settled. A request the authority never received failed without reaching it: its push is sent again.
    for (const push of await store.unacknowledgedPushes(db, upload.id)) {
      const ack = await storedAcknowledgement(db, upload.platform_id, push.request_id);
      if (ack === null) return 'waiting';
      await db.transaction().execute((tx) =>
        neverReceived(ack)
          ? store.unlinkPush(tx, upload.id, push.push_index, push.request_id)
          : store.recordPushOutcome(tx, upload.id, push.push_index, outcomeOf(ack, push.spreadsheet_rows)),
      );
    }
    for (let push = await store.nextUnsentPush(db, upload.id); push !== undefined; push = await store.nextUnsentPush(db, upload.id)) {
      const { push_index: index, spreadsheet_rows: rows } = push;
      const lines = push.lines as RawLine[];
      let ack: PushAck;
      try {
        ack = await this.#push.push(
          upload.platform_id,
          {
            platformCustomerId: upload.platform_customer_id,
            recordResCount: lines.length,
            uploadType: upload.upload_type,
            decalarationFlag: upload.declaration_flag,
            ebrcBulkGenDtos: lines,
          },
          SYSTEM_SOURCE,
          (tx, requestId) => store.linkPush(tx, upload.id, index, requestId),
        );
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        // Stored and held (the authority's answer is awaited), or the authority cannot be reached: try again later.
        if (ERROR_TABLE[error.code].status >= 500) return 'waiting';
        // Refused before anything was stored (the customer's credentials were refused since, say): these rows fail.
        const failure = { row: null, column: null, code: error.code, message: `${rowSpan(rows)} were not pushed: ${error.message}` };
        await db.transaction().execute((tx) => store.recordPushOutcome(tx, upload.id, index, { ackStatus: 'Failed', errors: [failure], rows: rows.length }));
        continue;
      }
      await db.transaction().execute((tx) => store.recordPushOutcome(tx, upload.id, index, outcomeOf(ack, rows)));
    }
    await db.transaction().execute(async (tx) => {
      if ((await store.completeUpload(tx, upload.id)) === undefined) return;
      await this.#recordFinished(tx, upload.id);
    });
    this.#context.outbox.committed();
    return 'finished';
  }

  /** The `bulk_upload.completed` event of an upload that has just reached its final status, in that transaction. */
  async #recordFinished(tx: ServiceContext['db'], uploadId: string): Promise<void> {
    const upload = (await store.findUploadForWork(tx, uploadId))!;
    await this.#context.outbox.record(tx, [
      { platformId: upload.platform_id, platformCustomerId: upload.platform_customer_id, type: 'bulk_upload.completed', data: await this.#view(tx, upload) },
    ]);
  }
}
