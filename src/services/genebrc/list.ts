import { Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { isFinal, visibleStatus, type StoredRequestStatus } from '../../domain/request-state.ts';
import type { RequestListQuery as RequestListQuerySchema } from '../../schemas/genebrc-requests.ts';
import * as store from '../../store/requests.ts';
import type { Schema } from '../../store/schema.ts';
import { requireCustomerId } from '../customers.ts';
import { offsetOf } from '../pages.ts';
import { errorDetail, recordJson } from './views.ts';

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

/** The list of a customer's GenEBRC requests (GET /genebrc): the read side of the workflow, apart from its writes. */
export class RequestList {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  /** The page's requests by the query's filters, with their lines when they fit `lineBudget`, and the total. */
  async #read(platformId: string, query: RequestListQuery, lineBudget: number) {
    return store.listRequests(this.#db, {
      customerId: await requireCustomerId(this.#db, platformId, query.platformCustomerId),
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
    if (rows.every((row) => row.record !== null || row.lines !== null)) return { total, body: `[${(await this.#texts(rows)).join(',')}]` };
    const batches = batchesWithin(rows, LINES_PER_READ);
    // The first batch is read and rendered before the answer starts, so that an error there is answered as a problem.
    const first = await this.#batchTexts(batches.next().value!);
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
      for (const text of await this.#batchTexts(batch)) yield `,${text}`;
    }
    yield ']';
  }

  /**
   * The batch's records, its requests read again in one statement (a record never mixes a request's status before a
   * change with its lines after it), in the page's order.
   */
  async #batchTexts(batch: readonly store.PageRequest[]): Promise<string[]> {
    const read = new Map((await store.requestsForPage(this.#db, batch.map((row) => row.id))).map((request) => [request.id, request]));
    return this.#texts(
      batch.map(({ id }) => {
        const request = read.get(id);
        // Requests are never deleted; should one be missing all the same, the answer must not look complete.
        if (!request) throw new Error(`Request ${id} of a list page was not found when its lines were read`);
        return request;
      }),
    );
  }

  /**
   * The records of requests read with their stored record or their lines: a stored record as it is, the others
   * rendered. A final request rendered here (final before migration 0025 stored records) has its record stored, so
   * that the next page that shows it only copies it (docs/decisions.md, "Stored records of final requests").
   */
  async #texts(requests: readonly store.RecordOrLines[]): Promise<string[]> {
    const rendered: { id: string; record: string }[] = [];
    const texts = requests.map((request) => {
      if (request.record !== null) return request.record;
      if (request.lines === null) throw new Error(`Request ${request.id} was read with neither its record nor its lines`);
      const text = recordJson(request as store.ListedRequest);
      if (isFinal(request.status as StoredRequestStatus)) rendered.push({ id: request.id, record: text });
      return text;
    });
    await store.storeRecords(this.#db, rendered);
    return texts;
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
