import { sql, type Kysely, type Selectable } from 'kysely';
import { readNewestFirst } from './paging.ts';
import type { ErrorDetail } from '../domain/push-rules.ts';
import type { BulkUploadProblem, BulkUploadsTable, Schema } from './schema.ts';

export type UploadRow = Omit<Selectable<BulkUploadsTable>, 'file_content'>;

/** A planned push of an upload, with the public requestId of the request it became (null until it was stored). */
export type UploadPushRow = {
  push_index: number;
  spreadsheet_rows: number[];
  request_id: string | null;
  public_request_id: string | null;
  ack_status: 'Validated' | 'Failed' | null;
  errors: BulkUploadProblem[];
};

const UPLOAD_COLUMNS = [
  'id',
  'platform_id',
  'platform_customer_id',
  'status',
  'file_name',
  'file_sha256',
  'upload_type',
  'declaration_flag',
  'row_count',
  'rows_done',
  'errors',
  'created_at',
  'updated_at',
] as const;

/** Uploads of one platform (or customer) counted for a list's total; people upload files, so this is rarely reached. */
const UPLOADS_COUNTED_AT_MOST = 100_000;

export type NewUpload = {
  id: string;
  platformId: string;
  customerId: string;
  fileName: string;
  fileSha256: string;
  fileContent: Uint8Array;
  uploadType: string;
  declarationFlag: string;
};

export async function insertUpload(db: Kysely<Schema>, upload: NewUpload): Promise<UploadRow> {
  return db
    .insertInto('bulk_uploads')
    .values({
      id: upload.id,
      platform_id: upload.platformId,
      platform_customer_id: upload.customerId,
      status: 'validating',
      file_name: upload.fileName,
      file_sha256: upload.fileSha256,
      file_content: upload.fileContent,
      upload_type: upload.uploadType,
      declaration_flag: upload.declarationFlag,
    })
    .returning(UPLOAD_COLUMNS)
    .executeTakeFirstOrThrow();
}

/** Holds the customer's row for the caller's transaction: one upload of a file at a time per customer. */
export async function lockCustomerForUpload(db: Kysely<Schema>, customerId: string): Promise<void> {
  await db.selectFrom('platform_customers').select('id').where('id', '=', customerId).forUpdate().execute();
}

/** The customer's latest upload of this file since `since` that was not rejected. */
export async function findSameFile(db: Kysely<Schema>, customerId: string, fileSha256: string, since: Date): Promise<UploadRow | undefined> {
  return db
    .selectFrom('bulk_uploads')
    .select(UPLOAD_COLUMNS)
    .where('platform_customer_id', '=', customerId)
    .where('file_sha256', '=', fileSha256)
    .where('created_at', '>=', since)
    .where('status', '!=', 'rejected')
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
}

export async function findUpload(db: Kysely<Schema>, platformId: string, id: string): Promise<UploadRow | undefined> {
  return db.selectFrom('bulk_uploads').select(UPLOAD_COLUMNS).where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

/** The upload by id alone, for its job. */
export async function findUploadForWork(db: Kysely<Schema>, id: string): Promise<UploadRow | undefined> {
  return db.selectFrom('bulk_uploads').select(UPLOAD_COLUMNS).where('id', '=', id).executeTakeFirst();
}

/** The file of an upload still being validated (null once checked). */
export async function readUploadFile(db: Kysely<Schema>, id: string): Promise<Uint8Array | null> {
  const row = await db.selectFrom('bulk_uploads').select('file_content').where('id', '=', id).executeTakeFirst();
  return row?.file_content ?? null;
}

/** A page of uploads, newest first, and how many there are. */
export async function listUploads(
  db: Kysely<Schema>,
  query: { platformId: string; customerId?: string | undefined; offset: number; limit: number },
): Promise<{ rows: UploadRow[]; total: number }> {
  let matching = db.selectFrom('bulk_uploads').where('platform_id', '=', query.platformId);
  if (query.customerId !== undefined) matching = matching.where('platform_customer_id', '=', query.customerId);
  return readNewestFirst(db, query, matching, (uploads) => uploads.select(UPLOAD_COLUMNS), UPLOADS_COUNTED_AT_MOST);
}

/** The pushes of these uploads, in order, with the public requestId of each one stored. */
export async function pushesOf(db: Kysely<Schema>, uploadIds: readonly string[]): Promise<Map<string, UploadPushRow[]>> {
  const byUpload = new Map<string, UploadPushRow[]>(uploadIds.map((id) => [id, []]));
  if (uploadIds.length === 0) return byUpload;
  const rows = await db
    .selectFrom('bulk_upload_pushes as push')
    .leftJoin('genebrc_requests as request', 'request.id', 'push.request_id')
    .select(['push.upload_id', 'push.push_index', 'push.spreadsheet_rows', 'push.request_id', 'request.request_id as public_request_id', 'push.ack_status', 'push.errors'])
    .where('push.upload_id', 'in', uploadIds)
    .orderBy('push.upload_id')
    .orderBy('push.push_index')
    .execute();
  for (const { upload_id, ...push } of rows) byUpload.get(upload_id)?.push(push);
  return byUpload;
}

/** How a pushed request's lines ended so far: counts by line status, and the failed lines with their errors. */
export type LineOutcomes = { generated: number; failed: { serialNo: number; errorDetails: ErrorDetail[] }[] };

/**
 * The line outcomes of these requests (by internal id): one statement counting each request's lines by status, with
 * the failed lines' errors (a request's failed lines are the few its processing refused, or all of a refused push).
 */
export async function lineOutcomesOf(db: Kysely<Schema>, requestIds: readonly string[]): Promise<Map<string, LineOutcomes>> {
  const outcomes = new Map<string, LineOutcomes>();
  if (requestIds.length === 0) return outcomes;
  const rows = await db
    .selectFrom('genebrc_request_lines')
    .select([
      'request_id',
      sql<number>`count(*) filter (where status = 'GENERATED')::int`.as('generated'),
      sql<{ serialNo: number; errorDetails: ErrorDetail[] }[]>`coalesce(json_agg(json_build_object('serialNo', serial_no, 'errorDetails', error_details) order by serial_no) filter (where status = 'FAILED'), '[]')`.as('failed'),
    ])
    .where('request_id', 'in', [...requestIds])
    .groupBy('request_id')
    .execute();
  for (const row of rows) outcomes.set(row.request_id, { generated: Number(row.generated), failed: row.failed });
  return outcomes;
}

/** Moves a validating upload to rejected with its problems; false when it had moved already. */
export async function rejectUpload(db: Kysely<Schema>, id: string, rowCount: number, problems: readonly BulkUploadProblem[]): Promise<boolean> {
  const result = await db
    .updateTable('bulk_uploads')
    .set({ status: 'rejected', row_count: rowCount, errors: JSON.stringify(problems), file_content: null, updated_at: new Date() })
    .where('id', '=', id)
    .where('status', '=', 'validating')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** A push as planned: its lines' spreadsheet rows, and its lines as JSON (made where the file was checked). */
export type PlannedPush = { rows: number[]; linesJson: string };

/** Stores an upload's pushes and moves it from validating to pushing, dropping its file; false when it had moved. */
export async function planUpload(db: Kysely<Schema>, id: string, rowCount: number, pushes: readonly PlannedPush[]): Promise<boolean> {
  const result = await db
    .updateTable('bulk_uploads')
    .set({ status: 'pushing', row_count: rowCount, file_content: null, updated_at: new Date() })
    .where('id', '=', id)
    .where('status', '=', 'validating')
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) return false;
  for (const [index, push] of pushes.entries()) {
    await db
      .insertInto('bulk_upload_pushes')
      .values({ upload_id: id, push_index: index, spreadsheet_rows: JSON.stringify(push.rows), lines: push.linesJson })
      .execute();
  }
  return true;
}

/** The next push of the upload without a stored request, with its lines. */
export async function nextUnsentPush(db: Kysely<Schema>, uploadId: string): Promise<{ push_index: number; spreadsheet_rows: number[]; lines: Record<string, unknown>[] } | undefined> {
  return db
    .selectFrom('bulk_upload_pushes')
    .select(['push_index', 'spreadsheet_rows', 'lines'])
    .where('upload_id', '=', uploadId)
    .where('request_id', 'is', null)
    .where('ack_status', 'is', null)
    .orderBy('push_index')
    .limit(1)
    .executeTakeFirst();
}

/** Pushes stored as requests whose acknowledgement the upload has not recorded (a kill came between the two). */
export async function unacknowledgedPushes(db: Kysely<Schema>, uploadId: string): Promise<{ push_index: number; request_id: string; spreadsheet_rows: number[] }[]> {
  const rows = await db
    .selectFrom('bulk_upload_pushes')
    .select(['push_index', 'request_id', 'spreadsheet_rows'])
    .where('upload_id', '=', uploadId)
    .where('request_id', 'is not', null)
    .where('ack_status', 'is', null)
    .orderBy('push_index')
    .execute();
  return rows.map((row) => ({ ...row, request_id: row.request_id! }));
}

/** Links a planned push to the request it became, in the transaction that stores the request. */
export async function linkPush(db: Kysely<Schema>, uploadId: string, pushIndex: number, requestId: string): Promise<void> {
  await db.updateTable('bulk_upload_pushes').set({ request_id: requestId }).where('upload_id', '=', uploadId).where('push_index', '=', pushIndex).execute();
}

/** Unlinks a planned push from a request the authority never received, so that the push is sent again. */
export async function unlinkPush(db: Kysely<Schema>, uploadId: string, pushIndex: number, requestId: string): Promise<void> {
  await db
    .updateTable('bulk_upload_pushes')
    .set({ request_id: null })
    .where('upload_id', '=', uploadId)
    .where('push_index', '=', pushIndex)
    .where('request_id', '=', requestId)
    .where('ack_status', 'is', null)
    .execute();
}

/**
 * Records a push's outcome (its lines are the request's now, so they are dropped here) and counts its rows done,
 * once: a push whose outcome is recorded already changes nothing.
 */
export async function recordPushOutcome(
  db: Kysely<Schema>,
  uploadId: string,
  pushIndex: number,
  outcome: { ackStatus: 'Validated' | 'Failed'; errors: readonly BulkUploadProblem[]; rows: number },
): Promise<void> {
  const recorded = await db
    .updateTable('bulk_upload_pushes')
    .set({ ack_status: outcome.ackStatus, errors: JSON.stringify(outcome.errors), lines: '[]' })
    .where('upload_id', '=', uploadId)
    .where('push_index', '=', pushIndex)
    .where('ack_status', 'is', null)
    .executeTakeFirst();
  if (recorded.numUpdatedRows === 0n) return;
  await db
    .updateTable('bulk_uploads')
    .set({ rows_done: sql`rows_done + ${outcome.rows}`, updated_at: new Date() })
    .where('id', '=', uploadId)
    .execute();
}

/** Moves a pushing upload whose every push has its outcome to completed; the upload as it is then, or undefined. */
export async function completeUpload(db: Kysely<Schema>, uploadId: string): Promise<UploadRow | undefined> {
  return db
    .updateTable('bulk_uploads')
    .set({ status: 'completed', updated_at: new Date() })
    .where('id', '=', uploadId)
    .where('status', '=', 'pushing')
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('bulk_upload_pushes').select('push_index').where('upload_id', '=', uploadId).where('ack_status', 'is', null))),
    )
    .returning(UPLOAD_COLUMNS)
    .executeTakeFirst();
}

/** Uploads not finished yet (validating or pushing), oldest first. */
export async function unfinishedUploadIds(db: Kysely<Schema>, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('bulk_uploads')
    .select('id')
    .where('status', 'in', ['validating', 'pushing'])
    .orderBy('created_at')
    .limit(limit)
    .execute();
  return rows.map((row) => row.id);
}
