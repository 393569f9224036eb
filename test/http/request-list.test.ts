import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { before, test } from 'node:test';
import Fastify from 'fastify';
import { sql, type Kysely } from 'kysely';
import { Type } from 'typebox';
import { RequestRecordSchema } from '../../src/schemas/genebrc-requests.ts';
import { LINES_PER_READ } from '../../src/services/genebrc/list.ts';
import { linesOfRequest, type RequestRow } from '../../src/store/requests.ts';
import type { Schema } from '../../src/store/schema.ts';
import { describeEachBackend, expectProblem, type Harness } from '../support/harness.ts';
import { lineFor, pushBody, usableIrms, verifiedCustomer } from '../support/workflow.ts';

const DAY_MS = 86_400_000;
const STORED_STATUSES = ['SUBMITTING', 'PENDING', 'PROCESSED', 'PARTIALLY_PROCESSED', 'ERRORED', 'FAILED'];

async function newCustomer(h: Harness, email: string): Promise<string> {
  const created = await h.request('POST', '/api/v1/platform-customers/', { body: { name: 'Lister', email, companyName: 'Lister Exports' } });
  assert.equal(created.status, 201, created.text);
  return created.body.id;
}

/**
 * Requests of the customer with `sizes[n]` lines each, stored set-based: every status (final ones with per-line
 * results, FAILED ones with error details whose keys are not in the schema's order and carry one more), every third
 * request at the same instant as the one before, over several UTC days.
 */
async function seedRequests(db: Kysely<Schema>, platformId: string, customerId: string, sizes: number[]): Promise<void> {
  const tag = `${customerId.slice(0, 8)}${Math.random().toString(36).slice(2, 6)}`;
  await sql`
    insert into genebrc_requests (id, platform_id, platform_customer_id, request_id, iec_number, record_res_count, upload_type,
      declaration_flag, status, authority_ack_id, error_details, processed_at, created_at)
    select gen_random_uuid(), ${platformId}::uuid, ${customerId}::uuid, 'EBRCGWLIST' || ${tag} || '-' || g, '0599001001',
      (${sizes}::int[])[g], '101', 'Y', status,
      case when status in ('SUBMITTING', 'FAILED') then null else 'ACK-' || ${tag} || '-' || g end,
      case when status = 'FAILED'
        then jsonb_build_array(jsonb_build_object('message', 'IRM not found "' || g || '"', 'code', 'ERR18', 'field', 'irmNumber',
          'serialNo', 1, 'hint', 'not in the schema'))
        else '[]' end,
      case when status in ('SUBMITTING', 'PENDING') then null else timestamptz '2026-01-02 10:00:00.123Z' - g * interval '1 minute' end,
      timestamptz '2026-01-03 00:00:00Z' - ((g / 3) * interval '9 hours')
    from generate_series(1, cardinality(${sizes}::int[])) g,
      lateral (select (${STORED_STATUSES}::text[])[1 + g % 6] as status) s`.execute(db);
  await sql`
    insert into genebrc_request_lines (request_id, line_index, serial_no, irm_id, irm_number, sb_cum_invoice_number, mapped_amount,
      reserved, payload, status, ebrc_number, ebrc_date, error_details)
    select r.id, i, i + 1, null, 'IRM' || r.request_id || '-' || i, lpad(i::text, 7, '0'), (i + 1) * 0.25, false,
      jsonb_build_object('serialNo', i + 1, 'uploadType', 101, 'irmNumber', 'IRM' || r.request_id || '-' || i,
        'irmRemitAmtFCC', 12345.67, 'mappedIRMAmountFCC', (i + 1) * 0.25, 'billNo', 'B "' || i || '" ✓', 'isVostro', null),
      outcome.status,
      case when outcome.status = 'GENERATED' then 'EBRC' || r.request_id || '-' || i end,
      case when outcome.status = 'GENERATED' then date '2026-01-02' end,
      case when outcome.status = 'FAILED'
        then jsonb_build_array(jsonb_build_object('code', 'ERR40', 'message', 'Bill not found.', 'serialNo', i + 1, 'field', 'billNo'))
        else '[]' end
    from genebrc_requests r, generate_series(0, r.record_res_count - 1) i,
      lateral (select case
        when r.status in ('SUBMITTING', 'PENDING') then 'PENDING'
        when r.status = 'PROCESSED' or (r.status = 'PARTIALLY_PROCESSED' and i % 2 = 0) then 'GENERATED'
        else 'FAILED' end as status) outcome
    where r.platform_customer_id = ${customerId}::uuid and r.request_id like 'EBRCGWLIST' || ${tag} || '-%'`.execute(db);
}

type Filter = { requestId?: string; status?: string; fromDate?: string; toDate?: string };

/** The records exactly as the list built them before it streamed (GenebrcService.list, one statement per page). */
function oldRecord(row: RequestRow, lines: Awaited<ReturnType<typeof linesOfRequest>>) {
  const entries = lines.map((line) => ({
    serialNo: line.serialNo,
    irmNumber: line.irmNumber,
    sbCumInvoiceNumber: line.sbCumInvoiceNumber,
    status: line.status,
    ebrcNumber: line.ebrcNumber,
    ebrcDate: line.ebrcDate,
    errorDetails: line.errorDetails,
  }));
  return {
    id: row.id,
    userId: row.platform_id,
    platformCustomerId: row.platform_customer_id,
    requestId: row.request_id,
    iecNumber: row.iec_number,
    recordResCount: row.record_res_count,
    uploadType: row.upload_type,
    decalarationFlag: row.declaration_flag,
    ebrcBulkGenDtos: lines.map((line) => line.payload),
    ebrcBulkGenStatusList: entries.every((entry) => entry.status === 'PENDING') ? null : entries,
    authorityAckId: row.authority_ack_id,
    status: row.status === 'SUBMITTING' ? 'PENDING' : row.status,
    errorDetails: { errors: row.error_details },
    processedAt: row.processed_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** The route's response schema and Fastify's serializer for it, as the old route answered. */
async function schemaSerializer(): Promise<(records: unknown[]) => Promise<string>> {
  const app = Fastify();
  let pending: unknown[] = [];
  app.get('/', { schema: { response: { 200: Type.Array(RequestRecordSchema) } } }, async () => pending);
  await app.ready();
  return async (records) => {
    pending = records;
    return (await app.inject('/')).body;
  };
}

/** What the list answered before streaming, for one page: the text and the total. */
async function oldPage(
  db: Kysely<Schema>,
  serialize: (records: unknown[]) => Promise<string>,
  customerId: string,
  filter: Filter,
  page: number,
  limit: number,
): Promise<{ text: string; total: number }> {
  let query = db.selectFrom('genebrc_requests').selectAll().where('platform_customer_id', '=', customerId);
  if (filter.requestId) query = query.where('request_id', '=', filter.requestId);
  if (filter.status) query = query.where('status', 'in', filter.status === 'PENDING' ? ['PENDING', 'SUBMITTING'] : [filter.status]);
  if (filter.fromDate) query = query.where('created_at', '>=', new Date(`${filter.fromDate}T00:00:00Z`));
  if (filter.toDate) query = query.where('created_at', '<', new Date(Date.parse(`${filter.toDate}T00:00:00Z`) + DAY_MS));
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
  const shown = rows.slice((page - 1) * limit, page * limit);
  const records = [];
  for (const row of shown) records.push(oldRecord(row, await linesOfRequest(db, row.id)));
  return { text: await serialize(records), total: rows.length };
}

type RawAnswer = { status: number; headers: http.IncomingHttpHeaders; chunks: number; body: string; error: Error | undefined };

/** A GET over a real connection, keeping how the body came (chunks) and whether the connection broke. */
function rawGet(port: number, path: string, apiKey: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path, headers: { 'x-api-key': apiKey } }, (response) => {
      const parts: Buffer[] = [];
      let error: Error | undefined;
      response.on('data', (part: Buffer) => parts.push(part));
      response.on('error', (failure) => (error = failure));
      response.on('close', () => {
        resolve({ status: response.statusCode!, headers: response.headers, chunks: parts.length, body: Buffer.concat(parts).toString('utf8'), error });
      });
    });
    request.on('error', reject);
  });
}

describeEachBackend('GenEBRC list pages', (h) => {
  let port: number;

  before(async () => {
    await h.service.app.listen({ port: 0, host: '127.0.0.1' });
    port = (h.service.app.server.address() as AddressInfo).port;
  });

  test('a customer\'s pages are its platform\'s alone, however often they were read: another platform gets 404 after them, and the id in capitals is the same customer', async () => {
    const customerId = await newCustomer(h, 'owned-pages@example.com');
    await seedRequests(h.database.db, h.platformA.id, customerId, [1, 2, 1]);
    const list = (id: string, key?: string) => h.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: id, limit: '2' }, ...(key ? { key } : {}) });
    const own = await list(customerId);
    assert.equal(own.status, 200, own.text);
    assert.equal(own.headers['x-total-count'], '3');
    assert.equal(own.body.length, 2);
    const upper = await list(customerId.toUpperCase());
    assert.equal(upper.status, 200, upper.text);
    assert.equal(upper.headers['x-total-count'], '3', 'the counts are kept by the stored id');
    assert.deepEqual(upper.body, own.body);

    const foreign = expectProblem(await list(customerId, h.platformB.apiKey), 404, 'not_found');
    expectProblem(await list(customerId.toUpperCase(), h.platformB.apiKey), 404, 'not_found');
    const missing = expectProblem(await list('00000000-0000-4000-8000-000000000000', h.platformB.apiKey), 404, 'not_found');
    assert.equal(foreign.title, missing.title);
    expectProblem(await h.request('GET', '/api/v1/events', { key: h.platformB.apiKey, query: { platformCustomerId: customerId } }), 404, 'not_found');
    assert.equal((await list(customerId)).status, 200, 'the owner still reads it');
  });

  test('every page equals what the list answered before streaming: order, fields, filters, deep pages from either end', async () => {
    const { db } = h.database;
    const customerId = await verifiedCustomer(h, 'streamed-pages@example.com');
    // One request as a real push stores it (its line results from the sandbox), among seeded ones of every size.
    const [a, b] = await usableIrms(h, customerId, 2);
    const pushed = await h.request('POST', '/api/v1/genebrc/push-irm', {
      body: pushBody(customerId, [lineFor(a, 1, 10.25), lineFor(b, 2, 5, { billNo: 'SANDBOX-FAIL' })]),
    });
    assert.equal(pushed.body.ackStatus, 'Validated', pushed.text);
    const status = await h.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: customerId, requestId: pushed.body.requestId } });
    assert.equal(status.body.status, 'PARTIALLY_PROCESSED', status.text);
    const sizes = [0, 1, 999, 3, 999, 999, 40, 2, 999, 500, 1, 0, 999, 7, 998, 999, 1, 1, 250, 999, 5, 999, 999, 12, 0, 999, 3];
    await seedRequests(db, h.platformA.id, customerId, sizes);

    const serialize = await schemaSerializer();
    const someRequest = (await db.selectFrom('genebrc_requests').select('request_id').where('platform_customer_id', '=', customerId).where('record_res_count', '=', 999).executeTakeFirstOrThrow()).request_id;
    const filters: Filter[] = [
      {},
      { status: 'PENDING' },
      { status: 'FAILED' },
      { status: 'PARTIALLY_PROCESSED' },
      { fromDate: '2026-01-01', toDate: '2026-01-02' },
      { toDate: '2025-12-31' },
      { requestId: someRequest },
      { requestId: pushed.body.requestId },
      { requestId: someRequest, status: 'FAILED' },
    ];
    let streamed = 0;
    for (const filter of filters) {
      for (const limit of [1, 3, 7, 100]) {
        const { total } = await oldPage(db, serialize, customerId, filter, 1, limit);
        const lastPage = Math.max(1, Math.ceil(total / limit));
        for (let page = 1; page <= lastPage + 1; page += 1) {
          const expected = await oldPage(db, serialize, customerId, filter, page, limit);
          const answer = await h.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: customerId, ...filter, page, limit } });
          const what = `${JSON.stringify(filter)}, page ${page} of ${limit}`;
          assert.equal(answer.status, 200, `${what}: ${answer.text.slice(0, 300)}`);
          assert.equal(answer.headers['content-type'], 'application/json; charset=utf-8', what);
          assert.equal(answer.headers['x-total-count'], String(expected.total), what);
          assert.ok(answer.text === expected.text, `${what}: the text differs from the old answer`);
          const lines = (JSON.parse(answer.text) as { ebrcBulkGenDtos: unknown[] }[]).reduce((sum, record) => sum + record.ebrcBulkGenDtos.length, 0);
          if (lines > LINES_PER_READ) streamed += 1;
        }
      }
    }
    assert.ok(streamed >= 10, `only ${streamed} of the pages compared were streamed`);
  });

  test('a final request\'s stored record is what the status operation and the list answer for it, and only final ones have one', async () => {
    const { db } = h.database;
    const customerId = await verifiedCustomer(h, 'stored-records@example.com');
    const storedRecord = async (requestId: string) =>
      (
        await db
          .selectFrom('genebrc_request_records as stored')
          .innerJoin('genebrc_requests as request', 'request.id', 'stored.request_id')
          .select('stored.record')
          .where('request.request_id', '=', requestId)
          .executeTakeFirst()
      )?.record;
    const [a, b] = await usableIrms(h, customerId, 2);
    // Processed through the status operation (the lifecycle's finish), and refused at once (the lifecycle's refuse).
    const pushed = await h.request('POST', '/api/v1/genebrc/push-irm', {
      body: pushBody(customerId, [lineFor(a, 1, 3.5), lineFor(b, 2, 1.25, { billNo: 'SANDBOX-FAIL' })]),
    });
    assert.equal(pushed.body.ackStatus, 'Validated', pushed.text);
    assert.equal(await storedRecord(pushed.body.requestId), undefined, 'no record while the request is open');
    const refused = await h.request('POST', '/api/v1/genebrc/push-irm', { body: { ...pushBody(customerId, [lineFor(a, 1, 1)]), recordResCount: 2 } });
    assert.equal(refused.body.ackStatus, 'Failed', refused.text);
    const status = await h.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: customerId, requestId: pushed.body.requestId } });
    assert.equal(status.body.status, 'PARTIALLY_PROCESSED', status.text);

    const serialize = await schemaSerializer();
    for (const requestId of [pushed.body.requestId, refused.body.requestId]) {
      // Stored by the lifecycle, before the list has shown the request.
      const stored = await storedRecord(requestId);
      assert.ok(stored, `request ${requestId} has its record`);
      const answer = await h.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: customerId, requestId } });
      assert.equal(answer.status, 200, answer.text);
      const record = JSON.parse(stored);
      assert.deepEqual(
        {
          requestId: record.requestId,
          authorityAckId: record.authorityAckId,
          status: record.status,
          recordResCount: record.recordResCount,
          processedAt: record.processedAt,
          ebrcBulkGenStatusList: record.ebrcBulkGenStatusList,
          errorDetails: record.errorDetails.errors,
        },
        {
          requestId: answer.body.requestId,
          authorityAckId: answer.body.authorityAckId,
          status: answer.body.status,
          recordResCount: answer.body.recordResCount,
          processedAt: answer.body.processedAt,
          ebrcBulkGenStatusList: answer.body.ebrcBulkGenStatusList,
          errorDetails: answer.body.errorDetails,
        },
        `request ${requestId}: the stored record says what the status operation says`,
      );
      // The text exactly as the response schema's serializer makes it of the request as stored now.
      const row = await db.selectFrom('genebrc_requests').selectAll().where('request_id', '=', requestId).executeTakeFirstOrThrow();
      assert.equal(`[${stored}]`, await serialize([oldRecord(row, await linesOfRequest(db, row.id))]));
      const listed = await h.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: customerId, requestId } });
      assert.equal(listed.text, `[${stored}]`);
    }
    assert.equal((await storedRecord(refused.body.requestId)) !== undefined && JSON.parse((await storedRecord(refused.body.requestId))!).status, 'FAILED');
  });

  test('requests of every state, final before stored records or not: every page is the old text, and a final request is rendered once', async () => {
    const { db } = h.database;
    const serialize = await schemaSerializer();
    // A small deterministic generator: the runs are the same every time, and differ from one another.
    let seed = 0x2f6e2b1;
    const random = (n: number) => {
      seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
      return seed % n;
    };
    for (let run = 0; run < 4; run += 1) {
      const customerId = await newCustomer(h, `every-state-${run}@example.com`);
      const sizes = Array.from({ length: 6 + random(20) }, () => (random(8) === 0 ? 0 : 1 + random(30)));
      await seedRequests(db, h.platformA.id, customerId, sizes);
      const rows = await db.selectFrom('genebrc_requests').select(['id', 'status']).where('platform_customer_id', '=', customerId).execute();
      assert.deepEqual(new Set(rows.map((row) => row.status)), new Set(STORED_STATUSES), `run ${run}: every state`);
      const storedIds = async () =>
        new Set(
          (
            await db
              .selectFrom('genebrc_request_records as stored')
              .innerJoin('genebrc_requests as request', 'request.id', 'stored.request_id')
              .select('request.id')
              .where('request.platform_customer_id', '=', customerId)
              .execute()
          ).map((row) => row.id),
        );
      assert.equal((await storedIds()).size, 0, 'seeded as final before stored records: none yet');
      const filters: Filter[] = [{}, { status: STORED_STATUSES[2 + random(4)]! }, { status: 'PENDING' }];
      // Twice: the first time renders the final requests (and stores them), the second copies what was stored.
      for (const pass of ['rendered', 'stored']) {
        for (const filter of filters) {
          const limit = 1 + random(8);
          const { total } = await oldPage(db, serialize, customerId, filter, 1, limit);
          for (let page = 1; page <= Math.max(1, Math.ceil(total / limit)); page += 1) {
            const expected = await oldPage(db, serialize, customerId, filter, page, limit);
            const answer = await h.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: customerId, ...filter, page, limit } });
            const what = `run ${run}, ${pass}, ${JSON.stringify(filter)}, page ${page} of ${limit}`;
            assert.equal(answer.status, 200, `${what}: ${answer.text.slice(0, 300)}`);
            assert.equal(answer.headers['x-total-count'], String(expected.total), what);
            assert.ok(answer.text === expected.text, `${what}: the text differs from the old answer`);
          }
        }
      }
      const stored = await storedIds();
      const final = rows.filter((row) => !['SUBMITTING', 'PENDING'].includes(row.status));
      assert.deepEqual(stored, new Set(final.map((row) => row.id)), `run ${run}: exactly the final requests have a stored record`);
    }
  });

  test('a page of 100 requests of 999 lines comes back chunked, and whole', async () => {
    const { db } = h.database;
    const customerId = await newCustomer(h, 'large-pages@example.com');
    await seedRequests(db, h.platformA.id, customerId, Array.from({ length: 100 }, () => 999));
    const order = await db
      .selectFrom('genebrc_requests')
      .select('request_id')
      .where('platform_customer_id', '=', customerId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();

    const answer = await rawGet(port, `/api/v1/genebrc?platformCustomerId=${customerId}&limit=100`, h.platformA.apiKey);
    assert.equal(answer.error, undefined);
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(answer.headers['content-length'], undefined, 'no length: the answer is streamed');
    assert.equal(answer.headers['transfer-encoding'], 'chunked');
    assert.equal(answer.headers['x-total-count'], '100');
    assert.ok(answer.chunks > 10, `${answer.chunks} chunks`);
    const records = JSON.parse(answer.body) as { requestId: string; ebrcBulkGenDtos: { serialNo: number }[]; ebrcBulkGenStatusList: unknown[] | null }[];
    assert.deepEqual(
      records.map((record) => record.requestId),
      order.map((row) => row.request_id),
    );
    for (const record of records) {
      assert.equal(record.ebrcBulkGenDtos.length, 999);
      assert.deepEqual([record.ebrcBulkGenDtos[0]!.serialNo, record.ebrcBulkGenDtos[998]!.serialNo], [1, 999]);
    }

    // A page that fits one read is still one string, with its length.
    const small = await rawGet(port, `/api/v1/genebrc?platformCustomerId=${customerId}&limit=2`, h.platformA.apiKey);
    assert.equal(small.status, 200);
    assert.equal(small.headers['content-length'], String(Buffer.byteLength(small.body)));
    assert.equal((JSON.parse(small.body) as unknown[]).length, 2);
  });

  test('an error once the answer has begun breaks the connection; one before it is a 500 problem', async () => {
    const { db } = h.database;
    const customerId = await newCustomer(h, 'broken-pages@example.com');
    await seedRequests(db, h.platformA.id, customerId, [999, 999, 999, 999, 999]);
    const [newest, , , , oldest] = await db
      .selectFrom('genebrc_requests')
      .select('id')
      .where('platform_customer_id', '=', customerId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
    // Stored data the list cannot show (error details that are not a list): its record fails to render. A final
    // request's record, once rendered, is stored and never rendered again (a final request never changes), so the
    // stored record goes too: the list renders the corrupted request anew.
    const corrupt = async (id: string) => {
      await db.updateTable('genebrc_requests').set({ error_details: sql`'{"errors": "not a list"}'::jsonb` }).where('id', '=', id).execute();
      await db.deleteFrom('genebrc_request_records').where('request_id', '=', id).execute();
    };
    const path = `/api/v1/genebrc?platformCustomerId=${customerId}&limit=100`;

    await corrupt(oldest!.id);
    const broken = await rawGet(port, path, h.platformA.apiKey);
    assert.equal(broken.status, 200);
    assert.ok(broken.error, 'the connection broke');
    assert.ok(broken.body.startsWith('[{'), 'the first records were sent');
    assert.throws(() => JSON.parse(broken.body), SyntaxError, 'what came is not a complete answer');

    await corrupt(newest!.id);
    const refused = await rawGet(port, path, h.platformA.apiKey);
    assert.equal(refused.error, undefined);
    expectProblem({ status: refused.status, headers: refused.headers, body: JSON.parse(refused.body), text: refused.body }, 500, 'internal_error');
    assert.equal(refused.headers['x-total-count'], undefined, 'a problem, not a page');

    // The service goes on answering.
    const after = await rawGet(port, `/api/v1/genebrc?platformCustomerId=${customerId}&limit=1&page=2`, h.platformA.apiKey);
    assert.equal(after.status, 200);
    assert.equal((JSON.parse(after.body) as unknown[]).length, 1);
  });
});
