import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { sql, type Kysely } from 'kysely';
import type { AuthorityIrm } from '../../src/authority/authority.ts';
import { NULL_WIRE_LINE } from '../../src/domain/push-line.ts';
import { insertCustomer, listCustomers } from '../../src/store/customers.ts';
import { listIrms, insertIrms } from '../../src/store/irms.ts';
import { insertPlatform, listPlatformsPage } from '../../src/store/platforms.ts';
import { pageWindow } from '../../src/store/paging.ts';
import { applyLineResults, insertRequest, listRequests, moveRequest, requestsForPage, requestsWithLines, storeRecords, type RequestFilter } from '../../src/store/requests.ts';
import type { Schema } from '../../src/store/schema.ts';
import { describeEachBackend } from '../support/harness.ts';

const DAY_MS = 86_400_000;

function isoDay(daysAgo: number): string {
  return new Date(Date.now() - daysAgo * DAY_MS).toISOString().slice(0, 10);
}

function irm(customer: number, n: number, daysAgo: number): AuthorityIrm {
  return {
    irmNumber: `IR${customer}${String(n).padStart(6, '0')}`,
    irmStatus: 'F',
    irmIssueDate: isoDay(daysAgo),
    ifscCode: 'HDFC0000001',
    remittanceAdCode: '0510001',
    remittanceDate: isoDay(daysAgo),
    remittanceFCC: 'USD',
    remittanceFCCAmount: '100.50',
    ormAmountFCC: '0.00',
    irmAvailableAmt: '100.50',
    irmUtilizedAmt: '0.00',
    iecCode: '0599001001',
    panNumber: 'ABCDE1234F',
    remitterName: 'Remitter',
    remitterCountry: 'US',
    purposeOfRemittance: 'P0102',
  };
}

async function newCustomer(db: Kysely<Schema>, platformId: string, email: string, name = email): Promise<string> {
  const id = randomUUID();
  await insertCustomer(db, { id, platformId, name, email, type: 'customer', companyName: 'Co', address: null });
  return id;
}

/** The plain forward read the service used to do: every row in order, then the slice. */
async function irmsForward(db: Kysely<Schema>, filter: { customerId: string; irmNumber?: string; fromDate?: string; toDate?: string }) {
  let query = db.selectFrom('irms').select('id').where('platform_customer_id', '=', filter.customerId);
  if (filter.irmNumber) query = query.where('irm_number', '=', filter.irmNumber);
  if (filter.fromDate) query = query.where('irm_issue_date', '>=', filter.fromDate);
  if (filter.toDate) query = query.where('irm_issue_date', '<=', filter.toDate);
  const rows = await query.orderBy('irm_issue_date', 'desc').orderBy('irm_number').execute();
  return rows.map((row) => row.id);
}

async function requestsForward(db: Kysely<Schema>, filter: RequestFilter) {
  let query = db.selectFrom('genebrc_requests').select('id').where('platform_customer_id', '=', filter.customerId);
  if (filter.requestId) query = query.where('request_id', '=', filter.requestId);
  if (filter.status) query = query.where('status', 'in', filter.status === 'PENDING' ? ['PENDING', 'SUBMITTING'] : [filter.status]);
  if (filter.fromDate) query = query.where('created_at', '>=', new Date(`${filter.fromDate}T00:00:00Z`));
  if (filter.toDate) query = query.where('created_at', '<', new Date(Date.parse(`${filter.toDate}T00:00:00Z`) + DAY_MS));
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
  return rows.map((row) => row.id);
}

/** Every page (and one past the end) of every limit given, against the forward read. */
async function checkAllPages(
  expected: string[],
  list: (offset: number, limit: number) => Promise<{ rows: { id: string }[]; total: number }>,
  limits: number[],
  what: string,
): Promise<void> {
  for (const limit of limits) {
    const pages = Math.ceil(expected.length / limit);
    for (let page = 0; page <= pages; page += 1) {
      const offset = page * limit;
      const answer = await list(offset, limit);
      assert.equal(answer.total, expected.length, `${what}: total, limit ${limit}, offset ${offset}`);
      assert.deepEqual(
        answer.rows.map((row) => row.id),
        expected.slice(offset, offset + limit),
        `${what}: rows, limit ${limit}, offset ${offset}`,
      );
    }
    const far = await list(expected.length + 5 * limit, limit);
    assert.deepEqual({ rows: far.rows.length, total: far.total }, { rows: 0, total: expected.length }, `${what}: far past the end`);
  }
}

/** The database, and the statements run through it: a plugin sees each statement's result once (its query node is also
 * seen for each subquery built into it). */
function countingStatements(db: Kysely<Schema>): { counted: Kysely<Schema>; statements: string[] } {
  const statements: string[] = [];
  const counted = db.withPlugin({
    transformQuery: (args) => args.node,
    transformResult: async (args) => {
      statements.push(args.queryId.queryId);
      return args.result;
    },
  });
  return { counted, statements };
}

async function countsAgree(db: Kysely<Schema>): Promise<void> {
  const kept = await sql<{ customer: string; status: string; requests: number }>`
    select platform_customer_id as customer, status, requests from genebrc_request_status_counts where requests <> 0
    order by 1, 2`.execute(db);
  const counted = await sql<{ customer: string; status: string; requests: number }>`
    select platform_customer_id as customer, status, count(*)::int as requests from genebrc_requests group by 1, 2
    order by 1, 2`.execute(db);
  assert.deepEqual(kept.rows, counted.rows, 'per-status counts');
  const keptDays = await sql<{ customer: string; day: string; status: string; requests: number }>`
    select platform_customer_id as customer, created_day::text as day, status, requests from genebrc_request_day_counts
    where requests <> 0 order by 1, 2, 3`.execute(db);
  const countedDays = await sql<{ customer: string; day: string; status: string; requests: number }>`
    select platform_customer_id as customer, ((created_at at time zone 'UTC')::date)::text as day, status, count(*)::int as requests
    from genebrc_requests group by 1, 2, 3 order by 1, 2, 3`.execute(db);
  assert.deepEqual(keptDays.rows, countedDays.rows, 'per-day counts');
  const keptMonths = await sql<{ customer: string; month: string; status: string; requests: number }>`
    select platform_customer_id as customer, created_month::text as month, status, requests from genebrc_request_month_counts
    where requests <> 0 order by 1, 2, 3`.execute(db);
  const countedMonths = await sql<{ customer: string; month: string; status: string; requests: number }>`
    select platform_customer_id as customer, to_char(created_at at time zone 'UTC', 'YYYY-MM-01') as month, status, count(*)::int as requests
    from genebrc_requests group by 1, 2, 3 order by 1, 2, 3`.execute(db);
  assert.deepEqual(keptMonths.rows, countedMonths.rows, 'per-month counts');
  const keptIrmMonths = await sql<{ customer: string; month: string; irms: number }>`
    select platform_customer_id as customer, irm_month::text as month, irms from irm_month_counts order by 1, 2`.execute(db);
  const countedIrmMonths = await sql<{ customer: string; month: string; irms: number }>`
    select platform_customer_id as customer, to_char(irm_issue_date, 'YYYY-MM-01') as month, count(*)::int as irms
    from irms group by 1, 2 order by 1, 2`.execute(db);
  assert.deepEqual(keptIrmMonths.rows, countedIrmMonths.rows, 'per-month IRM counts');
  const keptIrms = await sql<{ customer: string; irms: number }>`
    select platform_customer_id as customer, irms from irm_customer_counts order by 1`.execute(db);
  const countedIrms = await sql<{ customer: string; irms: number }>`
    select platform_customer_id as customer, count(*)::int as irms from irms group by 1 order by 1`.execute(db);
  assert.deepEqual(keptIrms.rows, countedIrms.rows, 'per-customer IRM totals');
}

const STATUSES = ['SUBMITTING', 'PENDING', 'PROCESSED', 'PARTIALLY_PROCESSED', 'ERRORED', 'FAILED'];

/** Requests stored as the seed does: set-based, over many UTC days, some of them at the same instant. */
async function insertRequests(db: Kysely<Schema>, platformId: string, customerId: string, count: number, every = '7 hours'): Promise<void> {
  await sql`
    insert into genebrc_requests (id, platform_id, platform_customer_id, request_id, iec_number, record_res_count, upload_type,
      declaration_flag, status, created_at)
    select gen_random_uuid(), ${platformId}::uuid, ${customerId}::uuid, 'EBRCGWTEST' || ${customerId}::text || '-' || g, '0599001001', 1, '101', 'Y',
      (${STATUSES}::text[])[1 + g % 6],
      -- Every third request shares its instant with the one before: the id decides between them.
      timestamptz '2026-01-01 00:00:00Z' - ((g / 3) * ${every}::interval)
    from generate_series(1, ${count}::int) g`.execute(db);
}

describeEachBackend('List pages', (h) => {
  test('pageWindow reads a page past the middle from the other end, and nothing past the end', () => {
    assert.deepEqual(pageWindow(100, 0, 10), { offset: 0, limit: 10, reverse: false });
    assert.deepEqual(pageWindow(100, 40, 10), { offset: 40, limit: 10, reverse: false });
    assert.deepEqual(pageWindow(100, 50, 10), { offset: 40, limit: 10, reverse: true });
    assert.deepEqual(pageWindow(100, 90, 10), { offset: 0, limit: 10, reverse: true });
    // A short last page is read at the page's size from the far end; readPage keeps its rows only.
    assert.deepEqual(pageWindow(95, 90, 10), { offset: 0, limit: 10, reverse: true });
    assert.deepEqual(pageWindow(95, 60, 10), { offset: 25, limit: 10, reverse: true });
    assert.deepEqual(pageWindow(95, 95, 10), null);
    assert.deepEqual(pageWindow(0, 0, 10), null);
  });

  test('IRM pages, a later one read from the issue date it begins on, are the forward read, for every filter, limit and offset', async () => {
    const { db } = h.database;
    const platformId = h.platformA.id;
    const customerId = await newCustomer(db, platformId, 'irm-pages@example.com');
    const other = await newCustomer(db, platformId, 'irm-pages-other@example.com');
    // 157 IRMs over 40 days, several a day (the IRM number decides between them), inserted out of order.
    const irms = Array.from({ length: 157 }, (_, n) => irm(1, (n * 37) % 157, (n * 13) % 40));
    await insertIrms(db, { platformId, customerId }, irms.slice(0, 90));
    await insertIrms(db, { platformId, customerId }, irms.slice(90));
    // Another customer's IRMs over two years, a few a month: later pages start in other months.
    await insertIrms(db, { platformId, customerId: other }, Array.from({ length: 60 }, (_, n) => irm(2, n, (n * 13) % 730)));
    // A pull again of known IRMs updates them and counts nothing twice.
    await insertIrms(db, { platformId, customerId }, irms.slice(0, 30));
    await countsAgree(db);

    const filters = [
      { customerId },
      { customerId, fromDate: isoDay(30), toDate: isoDay(10) },
      { customerId, fromDate: isoDay(5) },
      { customerId, toDate: isoDay(35) },
      { customerId, fromDate: isoDay(500), toDate: isoDay(400) },
      { customerId, irmNumber: irms[17]!.irmNumber },
      { customerId, irmNumber: 'IR-NONE' },
      { customerId: other },
      { customerId: randomUUID() },
    ];
    for (const filter of filters) {
      const expected = await irmsForward(db, filter);
      await checkAllPages(expected, (offset, limit) => listIrms(db, { ...filter, offset, limit }), [7, 10, 100], JSON.stringify(filter));
    }
    // Whole rows, in order, from the far end too.
    const last = await listIrms(db, { customerId, offset: 150, limit: 10 });
    const forward = await db
      .selectFrom('irms')
      .selectAll()
      .where('platform_customer_id', '=', customerId)
      .orderBy('irm_issue_date', 'desc')
      .orderBy('irm_number')
      .offset(150)
      .limit(10)
      .execute();
    assert.deepEqual(last.rows, forward);
  });

  test('a later IRM page, with its total, is one statement; a page past the end reads its total on its own', async () => {
    const { db } = h.database;
    const platformId = h.platformA.id;
    const customerId = await newCustomer(db, platformId, 'irm-one-statement@example.com');
    // 25 IRMs over 5 days, 5 a day: pages of 10 begin mid-day.
    await insertIrms(db, { platformId, customerId }, Array.from({ length: 25 }, (_, n) => irm(3, n, n % 5)));
    const { counted, statements } = countingStatements(db);
    const cases = [
      { filter: { customerId }, offset: 10, rows: 10, total: 25, statements: 1 },
      { filter: { customerId }, offset: 20, rows: 5, total: 25, statements: 1 },
      { filter: { customerId, fromDate: isoDay(3), toDate: isoDay(1) }, offset: 10, rows: 5, total: 15, statements: 1 },
      { filter: { customerId }, offset: 30, rows: 0, total: 25, statements: 2 },
      { filter: { customerId, fromDate: isoDay(3), toDate: isoDay(1) }, offset: 20, rows: 0, total: 15, statements: 2 },
    ];
    for (const { filter, offset, rows, total, statements: expected } of cases) {
      statements.length = 0;
      const page = await listIrms(counted, { ...filter, offset, limit: 10 });
      const label = `${JSON.stringify(filter)} offset ${offset}`;
      assert.deepEqual({ rows: page.rows.length, total: page.total }, { rows, total }, label);
      assert.deepEqual(page.rows.map((row) => row.id), (await irmsForward(db, filter)).slice(offset, offset + 10), label);
      assert.equal(statements.length, expected, `${label}: statements`);
    }
  });

  test('a later GenEBRC page, with its total, is one statement; a page past the end reads its total on its own', async () => {
    const { db } = h.database;
    const platformId = h.platformA.id;
    const customerId = await newCustomer(db, platformId, 'request-one-statement@example.com');
    // 25 requests, three every 7 hours: pages of 10 begin mid-day.
    await insertRequests(db, platformId, customerId, 25);
    const { counted, statements } = countingStatements(db);
    const processed = (await requestsForward(db, { customerId, status: 'PROCESSED' })).length;
    const cases = [
      { filter: { customerId }, offset: 10, rows: 10, total: 25, statements: 1 },
      { filter: { customerId }, offset: 20, rows: 5, total: 25, statements: 1 },
      { filter: { customerId, status: 'PROCESSED' as const }, offset: 2, rows: processed - 2, total: processed, statements: 1 },
      { filter: { customerId }, offset: 30, rows: 0, total: 25, statements: 2 },
    ];
    for (const { filter, offset, rows, total, statements: expected } of cases) {
      statements.length = 0;
      const page = await listRequests(counted, { ...filter, offset, limit: 10, lineBudget: 2_000 });
      const label = `${JSON.stringify(filter)} offset ${offset}`;
      assert.deepEqual({ rows: page.rows.length, total: page.total }, { rows, total }, label);
      assert.deepEqual(page.rows.map((row) => row.id), (await requestsForward(db, filter)).slice(offset, offset + 10), label);
      assert.equal(statements.length, expected, `${label}: statements`);
    }
  });

  test('GenEBRC pages, a later one read from the UTC day it begins on, are the forward read, for every filter, limit and offset', async () => {
    const { db } = h.database;
    const platformId = h.platformA.id;
    const customerId = await newCustomer(db, platformId, 'request-pages@example.com');
    const other = await newCustomer(db, platformId, 'request-pages-other@example.com');
    await insertRequests(db, platformId, customerId, 131);
    // Another customer's requests over two years: later pages start in other months.
    await insertRequests(db, platformId, other, 150, '13 days');
    await countsAgree(db);
    const someRequest = await db.selectFrom('genebrc_requests').select('request_id').where('platform_customer_id', '=', customerId).executeTakeFirstOrThrow();

    const filters: RequestFilter[] = [
      { customerId },
      { customerId, status: 'PENDING' },
      { customerId, status: 'FAILED' },
      { customerId, status: 'PROCESSED', fromDate: '2025-12-20', toDate: '2025-12-28' },
      { customerId, fromDate: '2025-12-25' },
      { customerId, toDate: '2025-12-22' },
      { customerId, fromDate: '2027-01-01' },
      { customerId, requestId: someRequest.request_id },
      { customerId, requestId: someRequest.request_id, status: 'ERRORED' },
      { customerId: other },
      { customerId: other, status: 'ERRORED' },
      { customerId: randomUUID() },
    ];
    for (const filter of filters) {
      const expected = await requestsForward(db, filter);
      await checkAllPages(
        expected,
        (offset, limit) => listRequests(db, { ...filter, offset, limit, lineBudget: 2_000 }),
        [7, 10, 100],
        JSON.stringify(filter),
      );
    }
    const last = await listRequests(db, { customerId, offset: 126, limit: 10, lineBudget: 2_000 });
    const forward = await db
      .selectFrom('genebrc_requests')
      .selectAll()
      .where('platform_customer_id', '=', customerId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .offset(126)
      .limit(10)
      .execute();
    assert.deepEqual(
      last.rows.map(({ lines: _lines, line_count: _count, record: _record, ...row }) => row),
      forward,
    );
  });

  test('a listed request carries its lines in line order, as stored', async () => {
    const { db } = h.database;
    const platformId = h.platformA.id;
    const customerId = await newCustomer(db, platformId, 'request-lines@example.com');
    const ids: string[] = [];
    for (let n = 0; n < 3; n += 1) {
      const id = randomUUID();
      ids.push(id);
      const lines = Array.from({ length: n * 2 }, (_, index) => ({
        lineIndex: index,
        serialNo: 10 - index,
        irmId: null,
        irmNumber: `IRLINES${n}${index}`,
        sbCumInvoiceNumber: `${1000000 + index}`,
        mappedAmount: '10.50',
        reserved: false,
        payload: { serialNo: 10 - index, irmNumber: `IRLINES${n}${index}`, note: 'a "quoted" \\ text\n', nothing: null, amount: 10.5, isVostro: null, sacCode1: null },
        status: 'PENDING',
        errorDetails: index === 1 ? [{ serialNo: 9, field: 'billNo', code: 'ERR40', message: 'Not found.' }] : [],
      }));
      await insertRequest(
        db,
        { id, platformId, customerId, requestId: `EBRCGWLINES${id.slice(0, 18)}`, iecNumber: '0599001001', recordResCount: lines.length, uploadType: '101', declarationFlag: 'Y', status: 'PENDING', errorDetails: [], processedAt: null },
        lines,
      );
    }
    await applyLineResults(db, ids[2]!, [{ serialNo: 10, status: 'GENERATED', ebrcNumber: 'EBRC202611220000000001', ebrcDate: '2026-11-22', errorDetails: [] }]);
    // The lines as stored, row by row: what a page's lines must equal, once the fields of the 2.4 shape left out as
    // null are given back. A null of another field is kept.
    const stored = await db
      .selectFrom('genebrc_request_lines')
      .selectAll()
      .where('request_id', 'in', ids)
      .orderBy('request_id')
      .orderBy('line_index')
      .execute();
    assert.deepEqual(stored[0]!.payload, { serialNo: 10, irmNumber: stored[0]!.irm_number, note: 'a "quoted" \\ text\n', nothing: null, amount: 10.5 });
    const asListed = (requestId: string) =>
      stored
        .filter((line) => line.request_id === requestId)
        .map((line) => ({
          serialNo: line.serial_no,
          irmNumber: line.irm_number,
          sbCumInvoiceNumber: line.sb_cum_invoice_number,
          status: line.status,
          ebrcNumber: line.ebrc_number,
          ebrcDate: line.ebrc_date,
          errorDetails: line.error_details,
          payload: { ...NULL_WIRE_LINE, ...line.payload },
        }));
    for (const offset of [0, 1, 2]) {
      const { rows } = await listRequests(db, { customerId, offset, limit: 1, lineBudget: 2_000 });
      assert.deepEqual(rows[0]!.lines, asListed(rows[0]!.id));
      assert.equal(rows[0]!.line_count, asListed(rows[0]!.id).length);
    }
    const generated = (await listRequests(db, { customerId, offset: 0, limit: 1, lineBudget: 2_000 })).rows[0]!.lines![0]!;
    assert.deepEqual([generated.ebrcNumber, generated.ebrcDate], ['EBRC202611220000000001', '2026-11-22']);

    // The page's 6 lines fit a budget of 6: all read. Over a budget of 5: none read, each request's count given.
    const fits = await listRequests(db, { customerId, offset: 0, limit: 3, lineBudget: 6 });
    assert.deepEqual(
      fits.rows.map((row) => row.lines),
      fits.rows.map((row) => asListed(row.id)),
    );
    const over = await listRequests(db, { customerId, offset: 0, limit: 3, lineBudget: 5 });
    assert.deepEqual(
      over.rows.map((row) => [row.id, row.line_count, row.lines]),
      fits.rows.map((row) => [row.id, asListed(row.id).length, null]),
    );
    // What the page left out, read by id: the same rows with the same lines.
    const byId = await requestsWithLines(db, over.rows.map((row) => row.id));
    assert.deepEqual(
      over.rows.map((row) => byId.find((request) => request.id === row.id)),
      fits.rows.map(({ line_count: _count, record: _record, ...row }) => row),
    );
    assert.deepEqual(await requestsWithLines(db, []), []);

    // A request with a stored record is read with it and without its lines, on a page and by id; the others as before.
    const [kept, ...others] = fits.rows;
    await storeRecords(db, [{ id: kept!.id, record: '{"kept":"as it is"}' }]);
    await storeRecords(db, [{ id: kept!.id, record: '{"second":"ignored"}' }]);
    const withRecord = await listRequests(db, { customerId, offset: 0, limit: 3, lineBudget: 6 });
    assert.deepEqual(
      withRecord.rows.map((row) => [row.id, row.record, row.lines]),
      [[kept!.id, '{"kept":"as it is"}', null], ...others.map((row) => [row.id, null, asListed(row.id)])],
    );
    const overWithRecord = await listRequests(db, { customerId, offset: 0, limit: 3, lineBudget: 5 });
    assert.deepEqual(
      overWithRecord.rows.map((row) => [row.id, row.record, row.lines]),
      fits.rows.map((row) => [row.id, null, null]),
      'a page over its budget carries neither',
    );
    const forPage = await requestsForPage(db, fits.rows.map((row) => row.id));
    assert.deepEqual(
      fits.rows.map((row) => forPage.find((request) => request.id === row.id)),
      withRecord.rows.map(({ line_count: _count, ...row }) => row),
    );
    assert.deepEqual(await requestsForPage(db, []), []);
  });

  test('a statement of lines of which one names a request that does not exist is refused whole: nothing of it is stored', async () => {
    const { db } = h.database;
    const platformId = h.platformA.id;
    const customerId = await newCustomer(db, platformId, 'line-requests@example.com');
    const id = randomUUID();
    await insertRequest(
      db,
      { id, platformId, customerId, requestId: `EBRCGWORPHAN${id.slice(0, 18)}`, iecNumber: '0599001001', recordResCount: 1, uploadType: '101', declarationFlag: 'Y', status: 'PENDING', errorDetails: [], processedAt: null },
      [],
    );
    const insertLines = (requestIds: string[]) => sql`
      insert into genebrc_request_lines (request_id, line_index, serial_no, irm_number, sb_cum_invoice_number, mapped_amount, payload)
      select request_id, ordinality::int, ordinality::int, 'IRORPHAN', '1000', 1.00, '{}'::jsonb
      from unnest(${requestIds}::uuid[]) with ordinality as request_id`.execute(db);
    const missing = randomUUID();
    await assert.rejects(insertLines([id, missing]), (error: { code?: string }) => error.code === '23503');
    await assert.rejects(insertLines([missing]), (error: { code?: string }) => error.code === '23503');
    const stored = await db.selectFrom('genebrc_request_lines').select('request_id').where('request_id', 'in', [id, missing]).execute();
    assert.deepEqual(stored, []);
    await insertLines([id, id]);
    assert.equal((await db.selectFrom('genebrc_request_lines').select('line_index').where('request_id', '=', id).execute()).length, 2);
  });

  test('GenEBRC counts follow inserts and status changes, committed or rolled back', async () => {
    const { db } = h.database;
    const platformId = h.platformA.id;
    const customerId = await newCustomer(db, platformId, 'request-counts@example.com');
    const request = (status: string) => ({
      id: randomUUID(),
      platformId,
      customerId,
      requestId: `EBRCGWCOUNT${randomUUID().slice(0, 18)}`,
      iecNumber: '0599001001',
      recordResCount: 1,
      uploadType: '101',
      declarationFlag: 'Y',
      status,
      errorDetails: [],
      processedAt: null,
    });
    const total = async (filter: Omit<RequestFilter, 'customerId'> = {}) =>
      (await listRequests(db, { customerId, ...filter, offset: 0, limit: 1, lineBudget: 2_000 })).total;

    const a = request('SUBMITTING');
    const b = request('SUBMITTING');
    const c = request('FAILED');
    await db.transaction().execute(async (tx) => insertRequest(tx, a, []));
    await insertRequest(db, b, []);
    await insertRequest(db, c, []);
    assert.deepEqual([await total(), await total({ status: 'PENDING' }), await total({ status: 'FAILED' })], [3, 2, 1]);

    assert.ok(await moveRequest(db, a.id, 'SUBMITTING', { status: 'PENDING', authorityAckId: 'ACK-1' }), 'the move is made and its row returned');
    assert.deepEqual([await total(), await total({ status: 'PENDING' })], [3, 2], 'SUBMITTING to PENDING is still PENDING');
    await moveRequest(db, a.id, 'PENDING', { status: 'PROCESSED', processedAt: new Date() });
    await db.transaction().execute(async (tx) => {
      await moveRequest(tx, b.id, 'SUBMITTING', { status: 'PENDING' });
      await moveRequest(tx, b.id, 'PENDING', { status: 'ERRORED' });
    });
    // A change that does not touch the status, and a move that finds the request elsewhere, count nothing.
    await db.updateTable('genebrc_requests').set({ updated_at: new Date() }).where('platform_customer_id', '=', customerId).execute();
    assert.equal(await moveRequest(db, c.id, 'PENDING', { status: 'PROCESSED' }), undefined);
    // Rolled back: inserted and moved, then undone.
    await assert.rejects(
      db.transaction().execute(async (tx) => {
        const d = request('SUBMITTING');
        await insertRequest(tx, d, []);
        await moveRequest(tx, c.id, 'FAILED', { status: 'PROCESSED' });
        throw new Error('undo');
      }),
      /undo/,
    );
    // Inserted and moved in one transaction.
    const e = request('SUBMITTING');
    await db.transaction().execute(async (tx) => {
      await insertRequest(tx, e, []);
      await moveRequest(tx, e.id, 'SUBMITTING', { status: 'FAILED' });
    });
    const today = new Date().toISOString().slice(0, 10);
    assert.deepEqual(
      [
        await total(),
        await total({ status: 'PENDING' }),
        await total({ status: 'PROCESSED' }),
        await total({ status: 'ERRORED' }),
        await total({ status: 'FAILED' }),
        await total({ fromDate: today, toDate: today }),
        await total({ fromDate: today, status: 'FAILED' }),
      ],
      [4, 0, 1, 1, 2, 4, 2],
    );
    await countsAgree(db);
  });

  test('customer search counts in its page scan, and a page past the end still has the total', async () => {
    const { db } = h.database;
    const platformId = h.platformB.id;
    for (let n = 0; n < 23; n += 1) {
      await newCustomer(db, platformId, `buyer${n}@search.example`, n % 2 === 0 ? `Textiles ${n}` : `Spices ${n}`);
    }
    const all = await db.selectFrom('platform_customers').select('id').where('platform_id', '=', platformId).orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
    await checkAllPages(all.map((row) => row.id), (offset, limit) => listCustomers(db, { platformId, offset, limit }), [5, 100], 'all');
    const textiles = await db
      .selectFrom('platform_customers')
      .select('id')
      .where('platform_id', '=', platformId)
      .where('name', 'ilike', '%textiles%')
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
    assert.equal(textiles.length, 12);
    await checkAllPages(textiles.map((row) => row.id), (offset, limit) => listCustomers(db, { platformId, search: 'TEXTILES', offset, limit }), [5], 'search');
    const none = await listCustomers(db, { platformId, search: 'nothing-like-it', offset: 0, limit: 5 });
    assert.deepEqual(none, { rows: [], total: 0 });
  });

  test('a list without day counts reads a page past its middle from the far end at the page size, short last pages included', async () => {
    const { db } = h.database;
    for (let n = 0; n < 23; n += 1) await insertPlatform(db, { id: randomUUID(), name: `Paged ${n}` });
    const all = await db.selectFrom('platforms').select('id').orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
    await checkAllPages(all.map((row) => row.id), (offset, limit) => listPlatformsPage(db, { offset, limit }), [3, 7, 10], 'platforms');
  });

  test('should the kept counts fail to place a later page, it is read from the nearer end', async () => {
    const { db } = h.database;
    const platformId = h.platformA.id;
    const customerId = await newCustomer(db, platformId, 'irm-drift@example.com');
    await insertIrms(db, { platformId, customerId }, Array.from({ length: 30 }, (_, n) => irm(4, n, n * 20)));
    const expected = await irmsForward(db, { customerId });
    // Month counts that miss rows the day counts and the total still have (as a write that ran the triggers before
    // migration 0026 would leave them).
    await db.deleteFrom('irm_month_counts').where('platform_customer_id', '=', customerId).execute();
    for (const offset of [10, 20, 25]) {
      const page = await listIrms(db, { customerId, offset, limit: 10 });
      assert.deepEqual({ ids: page.rows.map((row) => row.id), total: page.total }, { ids: expected.slice(offset, offset + 10), total: 30 }, `offset ${offset}`);
    }
  });
});
