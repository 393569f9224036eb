import { Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { visibleStatus } from '../../domain/request-state.ts';
import type { RequestListQuery as RequestListQuerySchema, RequestRecordSchema } from '../../schemas/genebrc-requests.ts';
import * as store from '../../store/requests.ts';
import type { Schema } from '../../store/schema.ts';
import { requireCustomer } from '../customers.ts';
import { offsetOf } from '../pages.ts';
import { errorDetail, lineEntry } from './views.ts';

/**
 * The most lines one query of a list page reads (two 999-line requests). A page whose lines all fit is read by its
 * page query and sent as one string; a larger one is read in batches of consecutive requests within this budget and
 * streamed, so that the memory an answer takes is bounded by this and not by the page (docs/decisions.md, "Status and
 * list").
 */
export const LINES_PER_READ = 2_000;

export type RequestListQuery = Static<typeof RequestListQuerySchema>;

/** A page of the list: the JSON array of its records, as one string or as a stream of text. */
export type RequestListPage = { total: number; body: string | Readable };

/** A listed request without its lines (the web console's list): its status as clients see it, and its line count. */
export type RequestSummary = {
  requestId: string;
  authorityAckId: string | null;
  status: ReturnType<typeof visibleStatus>;
  recordResCount: number;
  lineCount: number;
  errorDetails: ReturnType<typeof errorDetail>[];
  processedAt: Date | null;
  createdAt: Date;
};

/** A listed request, the interface's 2.3 shape. */
type RequestRecord = Static<typeof RequestRecordSchema>;

/** The list of a customer's GenEBRC requests (GET /genebrc): the read side of the workflow, apart from its writes. */
export class RequestList {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  /** The page's requests by the query's filters, with their lines when they fit `lineBudget`, and the total. */
  async #read(platformId: string, query: RequestListQuery, lineBudget: number) {
    const customer = await requireCustomer(this.#db, platformId, query.platformCustomerId);
    return store.listRequests(this.#db, {
      customerId: customer.id,
      requestId: query.requestId,
      status: query.status,
      fromDate: query.fromDate,
      toDate: query.toDate,
      offset: offsetOf(query),
      limit: query.limit,
      lineBudget,
    });
  }

  async page(platformId: string, query: RequestListQuery): Promise<RequestListPage> {
    const { rows, total } = await this.#read(platformId, query, LINES_PER_READ);
    const readWhole = rows.filter((row): row is store.PageRequest & store.ListedRequest => row.lines !== null);
    if (readWhole.length === rows.length) return { total, body: `[${readWhole.map(recordJson).join(',')}]` };
    const batches = batchesWithin(rows, LINES_PER_READ);
    // The first batch is read and rendered before the answer starts, so that an error there is answered as a problem.
    const first = (await this.#withLines(batches.next().value!)).map(recordJson);
    // One record a chunk, and at most one chunk waiting: the response's backpressure holds the next reads back.
    return { total, body: Readable.from(this.#streamedRecords(first, batches), { highWaterMark: 1 }) };
  }

  /**
   * A page of the customer's requests as `page` finds them (the same filters, order and totals), without their lines:
   * for lists that show each request's status and size, and its lines only on demand.
   */
  async summaries(platformId: string, query: RequestListQuery): Promise<{ total: number; items: RequestSummary[] }> {
    // Every request has a line, so no page fits a budget of none: no line is read.
    const { rows, total } = await this.#read(platformId, query, 0);
    const items = rows.map((row) => ({
      requestId: row.request_id,
      authorityAckId: row.authority_ack_id,
      status: visibleStatus(row.status),
      recordResCount: row.record_res_count,
      lineCount: row.line_count,
      errorDetails: row.error_details.map(errorDetail),
      processedAt: row.processed_at,
      createdAt: row.created_at,
    }));
    return { total, items };
  }

  /** The page's records as JSON text: the first batch's, rendered already, then the others' a batch at a time. */
  async *#streamedRecords(first: readonly string[], rest: Iterable<store.PageRequest[]>): AsyncGenerator<string> {
    yield `[${first.join(',')}`;
    for (const batch of rest) {
      for (const request of await this.#withLines(batch)) yield `,${recordJson(request)}`;
    }
    yield ']';
  }

  /**
   * The batch's requests read again with their lines, in one statement (a record never mixes a request's status
   * before a change with its lines after it), in the page's order.
   */
  async #withLines(batch: readonly store.PageRequest[]): Promise<store.ListedRequest[]> {
    const read = new Map((await store.requestsWithLines(this.#db, batch.map((row) => row.id))).map((request) => [request.id, request]));
    return batch.map(({ id }) => {
      const request = read.get(id);
      // Requests are never deleted; should one be missing all the same, the answer must not look complete.
      if (!request) throw new Error(`Request ${id} of a list page was not found when its lines were read`);
      return request;
    });
  }
}

/** Consecutive runs of the page's requests whose lines add up to at most `budget` (a larger request alone). */
function* batchesWithin(rows: readonly store.PageRequest[], budget: number): Generator<store.PageRequest[]> {
  let batch: store.PageRequest[] = [];
  let lines = 0;
  for (const row of rows) {
    if (batch.length > 0 && lines + row.line_count > budget) {
      yield batch;
      batch = [];
      lines = 0;
    }
    batch.push(row);
    lines += row.line_count;
  }
  if (batch.length > 0) yield batch;
}

/**
 * A request as the list shows it, serialized: the same text as the response schema's serializer makes of it, by
 * JSON.stringify over objects built in the schema's field order (five times faster on a 999-line request).
 */
function recordJson(request: store.ListedRequest): string {
  const entries = request.lines.map(lineEntry);
  const record: RequestRecord = {
    id: request.id,
    userId: request.platform_id,
    platformCustomerId: request.platform_customer_id,
    requestId: request.request_id,
    iecNumber: request.iec_number,
    recordResCount: request.record_res_count,
    uploadType: request.upload_type,
    decalarationFlag: request.declaration_flag,
    ebrcBulkGenDtos: request.lines.map((line) => line.payload),
    ebrcBulkGenStatusList: entries.every((entry) => entry.status === 'PENDING') ? null : entries,
    authorityAckId: request.authority_ack_id,
    status: visibleStatus(request.status),
    errorDetails: { errors: request.error_details.map(errorDetail) },
    processedAt: request.processed_at?.toISOString() ?? null,
    createdAt: request.created_at.toISOString(),
    updatedAt: request.updated_at.toISOString(),
  };
  return JSON.stringify(record);
}
