import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { before, test } from 'node:test';
import { parse as parseCsv } from 'csv-parse/sync';
import { stringify as stringifyCsv } from 'csv-stringify/sync';
import ExcelJS from 'exceljs';
import { sql } from 'kysely';
import type { Authority } from '../../src/authority/authority.ts';
import { unguardCellText } from '../../src/domain/spreadsheet-cells.ts';
import { IRM_SIDE_COLUMNS, SPREADSHEET_COLUMNS, type SpreadsheetColumn } from '../../src/domain/spreadsheet-columns.ts';
import { readRows, validateRows } from '../../src/services/spreadsheets/read.ts';
import { IRM_READ_BATCH } from '../../src/store/irms.ts';
import { describeEachBackend, expectProblem, type Harness } from '../support/harness.ts';
import { cents, firstRefresh, lineFor, pushBody, usableIrms, verifiedCustomer } from '../support/workflow.ts';

/**
 * GET /api/v1/platform-customers/{id}/irm/template (contract 11): the header row, one row per mappable IRM with the
 * IRM side as text, the filters, the answer's headers, the errors, a failure midway, the formula guard, and a round
 * trip through the upload reader.
 */

const DEMO_IEC = '0599001001';
const XLSX_TYPE = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
const BANNED = ['P0101', 'P0108'];

/** IRMs the authority reports as cancelled (irmStatus C), to one pull only: the wrapper marks them so in its answer. */
const cancelledAtTheAuthority = new Set<string>();

function withCancelledIrms(adapter: Authority): Authority {
  return {
    ...adapter,
    async fetchIrms(credentials, query, options) {
      const fetched = await adapter.fetchIrms(credentials, query, options);
      return { ...fetched, irms: fetched.irms.map((irm) => (cancelledAtTheAuthority.has(irm.irmNumber) ? { ...irm, irmStatus: 'C' } : irm)) };
    },
  };
}

const templateUrl = (customerId: string) => `/api/v1/platform-customers/${customerId}/irm/template`;

type Download = { status: number; headers: Record<string, unknown>; bytes: Buffer; text: string };

async function download(h: Harness, customerId: string, query: Record<string, string> = {}, apiKey = h.platformA.apiKey): Promise<Download> {
  const response = await h.service.app.inject({ method: 'GET', url: templateUrl(customerId), query, headers: { 'x-api-key': apiKey } });
  return { status: response.statusCode, headers: response.headers, bytes: response.rawPayload, text: response.body };
}

type Row = Record<SpreadsheetColumn, string>;

function csvRows(file: Download): { header: string[]; rows: Row[] } {
  const [header = [], ...records] = parseCsv(file.bytes, { relax_column_count: false }) as string[][];
  return { header, rows: records.map((record) => Object.fromEntries(header.map((column, i) => [column, record[i] ?? ''])) as Row) };
}

async function xlsxSheet(bytes: Buffer): Promise<ExcelJS.Worksheet> {
  const workbook = new ExcelJS.Workbook();
  await workbook.xlsx.load(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
  assert.equal(workbook.worksheets.length, 1);
  return workbook.worksheets[0]!;
}

async function xlsxRows(bytes: Buffer): Promise<{ header: string[]; rows: Row[] }> {
  const sheet = await xlsxSheet(bytes);
  const all: string[][] = [];
  sheet.eachRow({ includeEmpty: false }, (row) => {
    all.push(Array.from({ length: SPREADSHEET_COLUMNS.length }, (_, i) => {
      const value = row.getCell(i + 1).value;
      return value === null || value === undefined ? '' : String(value);
    }));
  });
  const [header = [], ...records] = all;
  return { header, rows: records.map((record) => Object.fromEntries(header.map((column, i) => [column, record[i] ?? ''])) as Row) };
}

/** Every IRM of the customer as the list shows it now, in the list's order. */
async function listedIrms(h: Harness, customerId: string, apiKey = h.platformA.apiKey): Promise<any[]> {
  const all: any[] = [];
  for (let page = 1; ; page++) {
    const answer = await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: customerId, limit: 100, page }, body: {}, key: apiKey });
    assert.equal(answer.status, 200, answer.text);
    all.push(...answer.body.data);
    if (page >= answer.body.meta.totalPages) return all;
  }
}

/** What the template must hold of an IRM, worked out from the list's fields (not from the service's own code). */
function expectedRow(irm: any): Row {
  const [year, month, day] = (irm.irmIssueDate as string).split('-');
  const row = Object.fromEntries(SPREADSHEET_COLUMNS.map((column) => [column, ''])) as Row;
  const available = cents(irm.irmAvailableAmt);
  return Object.assign(row, {
    irmNumber: irm.irmNumber,
    irmDt: `${day}${month}${year}`,
    irmIfscCode: irm.ifscCode,
    irmAdCode: irm.remittanceAdCode,
    irmFCC: irm.remittanceFCC,
    irmPurposeCode: irm.purposeOfRemittance,
    irmRemitAmtFCC: `${available / 100n}.${String(available % 100n).padStart(2, '0')}`,
  });
}

const mappable = (irm: any) => irm.irmAvailableAmt > 0 && !BANNED.includes(irm.purposeOfRemittance);

function utcDays(before: Date, after: Date): string[] {
  return [...new Set([before, after].map((at) => at.toISOString().slice(0, 10).replaceAll('-', '')))];
}

/** The template over a real connection, for what inject cannot show: a body cut off before its end. */
async function downloadOverTheWire(h: Harness, customerId: string, format: string): Promise<{ status: number; received: Buffer; complete: boolean; error: string | null }> {
  const address = h.service.app.server.address() as AddressInfo | null;
  const port = address?.port ?? (await h.service.app.listen({ port: 0, host: '127.0.0.1' }), (h.service.app.server.address() as AddressInfo).port);
  return new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path: `${templateUrl(customerId)}?format=${format}`, headers: { 'x-api-key': h.platformA.apiKey } }, (response) => {
      const chunks: Buffer[] = [];
      let error: string | null = null;
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', (cause) => (error = cause.message));
      response.on('close', () => resolve({ status: response.statusCode ?? 0, received: Buffer.concat(chunks), complete: response.complete, error }));
    });
    request.on('error', reject);
  });
}

describeEachBackend(
  'the IRM template',
  (h: Harness) => {
    let customerId: string;
    let partial: { irmNumber: string; before: number; mapped: number };
    let fullyMapped: string;
    let irms: any[];

    before(async () => {
      customerId = await verifiedCustomer(h, 'template@demo-exports.example');
      await firstRefresh(h, customerId);
      const [a, b] = await usableIrms(h, customerId, 2);
      partial = { irmNumber: a.irmNumber, before: a.irmAvailableAmt, mapped: 100.25 };
      fullyMapped = b.irmNumber;
      const ack = await h.request('POST', '/api/v1/genebrc/push-irm', {
        body: pushBody(customerId, [lineFor(a, 1, partial.mapped), lineFor(b, 2, b.irmAvailableAmt)]),
      });
      assert.equal(ack.body?.ackStatus, 'Validated', ack.text);
      irms = await listedIrms(h, customerId);
    });

    test('CSV: the header is the push line, one row per mappable IRM in the list order, the IRM side as text', async () => {
      const started = new Date();
      const file = await download(h, customerId);
      assert.equal(file.status, 200, file.text.slice(0, 500));
      assert.equal(file.headers['content-type'], 'text/csv; charset=utf-8');
      const days = utcDays(started, new Date());
      assert.ok(
        days.some((day) => file.headers['content-disposition'] === `attachment; filename="irm-template-${DEMO_IEC}-${day}.csv"`),
        String(file.headers['content-disposition']),
      );
      assert.equal(file.text.split('\n')[0], SPREADSHEET_COLUMNS.join(','), 'the header row, exactly');
      const { header, rows } = csvRows(file);
      assert.deepEqual(header, [...SPREADSHEET_COLUMNS]);
      assert.deepEqual(rows, irms.filter(mappable).map(expectedRow));

      // What is left out, and why.
      const shown = new Set(rows.map((row) => row.irmNumber));
      const banned = irms.filter((irm) => BANNED.includes(irm.purposeOfRemittance));
      assert.ok(banned.length > 0, 'the demo account has P0101/P0108 IRMs');
      for (const irm of banned) assert.ok(!shown.has(irm.irmNumber), `${irm.irmNumber} (${irm.purposeOfRemittance}) is left out`);
      assert.equal(irms.find((irm) => irm.irmNumber === fullyMapped)?.irmStatus, 'utilised');
      assert.ok(!shown.has(fullyMapped), 'a fully mapped IRM is left out');

      // The partly mapped IRM shows what is still available, as decimal text.
      const partialRow = rows.find((row) => row.irmNumber === partial.irmNumber)!;
      const left = cents(partial.before) - cents(partial.mapped);
      assert.equal(partialRow.irmRemitAmtFCC, `${left / 100n}.${String(left % 100n).padStart(2, '0')}`);

      // Codes keep their leading zeros (the sandbox's HDFC and SBI AD codes start with 0), in the file's text itself.
      const zeros = rows.filter((row) => row.irmAdCode.startsWith('0'));
      assert.ok(zeros.length > 0, 'some AD codes start with 0');
      assert.ok(file.text.includes(`,${zeros[0]!.irmAdCode},`));
      for (const row of rows) assert.match(row.irmDt, /^\d{8}$/);
    });

    test('XLSX: the same rows as text cells in text-formatted columns', async () => {
      const file = await download(h, customerId, { format: 'xlsx' });
      assert.equal(file.status, 200);
      assert.equal(file.headers['content-type'], XLSX_TYPE);
      assert.match(String(file.headers['content-disposition']), new RegExp(`^attachment; filename="irm-template-${DEMO_IEC}-\\d{8}\\.xlsx"$`));
      const { header, rows } = await xlsxRows(file.bytes);
      assert.deepEqual(header, [...SPREADSHEET_COLUMNS]);
      assert.deepEqual(rows, irms.filter(mappable).map(expectedRow));
      const sheet = await xlsxSheet(file.bytes);
      const adCode = sheet.getRow(2).getCell(SPREADSHEET_COLUMNS.indexOf('irmAdCode') + 1);
      for (const column of IRM_SIDE_COLUMNS) {
        const cell = sheet.getRow(2).getCell(SPREADSHEET_COLUMNS.indexOf(column) + 1);
        assert.equal(cell.type, ExcelJS.ValueType.String, column);
        assert.equal(cell.numFmt, '@', column);
      }
      assert.equal(typeof adCode.value, 'string');
    });

    test("the OpenAPI document's CSV example is a template: the header row and a row of the same width", async () => {
      const doc = await h.request('GET', '/openapi.json', { key: null });
      const operation = doc.body.paths['/api/v1/platform-customers/{id}/irm/template'].get;
      assert.equal(operation.operationId, 'getIrmTemplate');
      const media = operation.responses['200'].content;
      assert.deepEqual(Object.keys(media).sort(), ['application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 'text/csv']);
      const [header, ...records] = parseCsv(media['text/csv'].example) as string[][];
      assert.deepEqual(header, [...SPREADSHEET_COLUMNS]);
      assert.equal(records.length, 1);
      assert.equal(records[0]!.length, SPREADSHEET_COLUMNS.length);
    });

    test('HEAD: the headers, no body', async () => {
      const response = await h.service.app.inject({ method: 'HEAD', url: templateUrl(customerId), query: { format: 'xlsx' }, headers: { 'x-api-key': h.platformA.apiKey } });
      assert.equal(response.statusCode, 200);
      assert.equal(response.headers['content-type'], XLSX_TYPE);
      assert.match(String(response.headers['content-disposition']), /^attachment; filename="irm-template-0599001001-\d{8}\.xlsx"$/);
      assert.equal(response.rawPayload.length, 0);
    });

    test("the IRM list's filters apply", async () => {
      const dates = [...new Set(irms.filter(mappable).map((irm) => irm.irmIssueDate as string))].sort();
      const fromDate = dates[Math.floor(dates.length / 3)]!;
      const toDate = dates[Math.floor((2 * dates.length) / 3)]!;
      const ranged = csvRows(await download(h, customerId, { fromDate, toDate }));
      const expected = irms.filter((irm) => mappable(irm) && irm.irmIssueDate >= fromDate && irm.irmIssueDate <= toDate);
      assert.ok(expected.length > 0 && expected.length < irms.filter(mappable).length);
      assert.deepEqual(ranged.rows, expected.map(expectedRow));

      const one = csvRows(await download(h, customerId, { irmNumber: partial.irmNumber, format: 'csv' }));
      assert.deepEqual(one.rows.map((row) => row.irmNumber), [partial.irmNumber]);

      // A filter that finds only an IRM that cannot be mapped: the header alone.
      const none = await download(h, customerId, { irmNumber: fullyMapped, format: 'xlsx' });
      assert.equal(none.status, 200);
      const noneRows = await xlsxRows(none.bytes);
      assert.deepEqual(noneRows.header, [...SPREADSHEET_COLUMNS]);
      assert.deepEqual(noneRows.rows, []);

      expectProblem(await h.request('GET', templateUrl(customerId), { query: { fromDate: toDate, toDate: fromDate } }), 400, 'validation_failed');
    });

    test('errors: another platform\'s customer is 404, format=pdf and unknown parameters are 400, an unverified customer 409', async () => {
      expectProblem(await h.request('GET', templateUrl(customerId), { key: h.platformB.apiKey }), 404, 'not_found');
      expectProblem(await h.request('GET', templateUrl('3689a0da-30aa-468e-b66d-e2faa29c8e79')), 404, 'not_found');
      const pdf = expectProblem(await h.request('GET', templateUrl(customerId), { query: { format: 'pdf' } }), 400, 'validation_failed');
      assert.deepEqual(pdf.errors.map((error: any) => error.path), ['/format']);
      expectProblem(await h.request('GET', templateUrl(customerId), { query: { page: 2 } }), 400, 'validation_failed');
      expectProblem(await h.request('GET', templateUrl(customerId), { query: { fromDate: '2026-02-30' } }), 400, 'validation_failed');
      const created = await h.request('POST', '/api/v1/platform-customers/', { body: { name: 'New', email: 'unverified@template.example', companyName: 'New Exports' } });
      expectProblem(await h.request('GET', templateUrl(created.body.id)), 409, 'customer_not_verified');
    });

    test('a customer that never pulled gets its IRMs pulled first; an IRM the authority reports cancelled is left out', async () => {
      const cancelled = irms.filter(mappable).find((irm) => irm.irmNumber !== partial.irmNumber)!;
      cancelledAtTheAuthority.add(cancelled.irmNumber);
      try {
        // Platform B's customer of the same exporter, never refreshed.
        const created = await h.request('POST', '/api/v1/platform-customers/', {
          body: { name: 'Demo', email: 'template@demo-exports.example', companyName: 'Demo Exports' },
          key: h.platformB.apiKey,
        });
        assert.equal(created.status, 201, created.text);
        const checked = await h.request('POST', `/api/v1/platform-customers/${created.body.id}/check-authority-credentials`, {
          body: { authorityUsername: 'demo.exporter', authorityPassword: 'Sandbox@123' },
          key: h.platformB.apiKey,
        });
        assert.equal(checked.status, 200, checked.text);
        let file = await download(h, created.body.id, {}, h.platformB.apiKey);
        for (let attempt = 1; file.status === 504 && attempt < 10; attempt++) file = await download(h, created.body.id, {}, h.platformB.apiKey);
        assert.equal(file.status, 200, file.text.slice(0, 500));
        const { rows } = csvRows(file);
        const theirs = await listedIrms(h, created.body.id, h.platformB.apiKey);
        assert.ok(theirs.length > IRM_READ_BATCH, 'the pull happened before the rows were read');
        const stored = theirs.find((irm) => irm.irmNumber === cancelled.irmNumber);
        assert.equal(stored?.irmStatus, 'cancelled', 'the cancelled IRM is stored as the authority says');
        assert.equal(stored?.irmAvailableAmt, 0);
        assert.deepEqual(rows, theirs.filter(mappable).map(expectedRow));
        assert.ok(!rows.some((row) => row.irmNumber === cancelled.irmNumber), 'the cancelled IRM is left out');
        // The first customer's template, from its own store, still has it.
        assert.ok(csvRows(await download(h, customerId)).rows.some((row) => row.irmNumber === cancelled.irmNumber));
      } finally {
        cancelledAtTheAuthority.delete(cancelled.irmNumber);
      }
    });

    test('cells that would start a formula are guarded in CSV and plain strings in XLSX; the guard reads back', async () => {
      const target = irms.filter(mappable).at(-1)!;
      const hostile = { ifsc_code: '=HYPERLINK("http://x")', remittance_ad_code: '+0012345', remittance_fcc: '@SUM(A1)', purpose_of_remittance: 'P0103' };
      const original = await h.database.db.selectFrom('irms').selectAll().where('irm_number', '=', target.irmNumber).where('platform_customer_id', '=', customerId).executeTakeFirstOrThrow();
      await h.database.db.updateTable('irms').set(hostile).where('id', '=', original.id).execute();
      try {
        const file = await download(h, customerId, { irmNumber: target.irmNumber });
        assert.equal(file.status, 200);
        const line = file.text.split('\n')[1]!;
        assert.ok(line.includes(`"'=HYPERLINK(""http://x"")"`), line);
        assert.ok(line.includes(`,'+0012345,`), line);
        assert.ok(line.includes(`,'@SUM(A1),`), line);
        const { rows } = csvRows(file);
        for (const [column, field] of [['irmIfscCode', 'ifsc_code'], ['irmAdCode', 'remittance_ad_code'], ['irmFCC', 'remittance_fcc']] as const) {
          assert.equal(rows[0]![column], `'${hostile[field]}`);
          assert.equal(unguardCellText(rows[0]![column]), hostile[field], 'the upload reads the guarded cell back as the original text');
        }

        const xlsx = await download(h, customerId, { irmNumber: target.irmNumber, format: 'xlsx' });
        const sheet = await xlsxSheet(xlsx.bytes);
        for (const [column, field] of [['irmIfscCode', 'ifsc_code'], ['irmAdCode', 'remittance_ad_code'], ['irmFCC', 'remittance_fcc']] as const) {
          const cell = sheet.getRow(2).getCell(SPREADSHEET_COLUMNS.indexOf(column) + 1);
          assert.equal(cell.type, ExcelJS.ValueType.String, `${column} is a string cell, never a formula`);
          assert.equal(cell.value, hostile[field]);
          assert.equal(unguardCellText(String(cell.value)), hostile[field]);
        }
      } finally {
        await h.database.db.updateTable('irms').set({
          ifsc_code: original.ifsc_code,
          remittance_ad_code: original.remittance_ad_code,
          remittance_fcc: original.remittance_fcc,
          purpose_of_remittance: original.purpose_of_remittance,
        }).where('id', '=', original.id).execute();
      }
    });

    for (const format of ['csv', 'xlsx'] as const) {
      test(`${format}: a round trip, the invoice side filled in, passes the upload's row checks`, async () => {
        const file = await download(h, customerId, { format });
        const { rows } = format === 'csv' ? csvRows(file) : await xlsxRows(file.bytes);
        assert.ok(rows.length > IRM_READ_BATCH);
        const filled = rows.map((row, i) => ({
          ...row,
          branchSlNo: '0',
          sbCumInvoiceNumber: String(1_000_000 + i),
          sbCumInvoiceDate: row.irmDt,
          portCode: 'INNSA1',
          billNo: `B${i}`,
          sbCumInvoiceFCC: row.irmFCC,
          sbCumInvoiceValueinFCC: row.irmRemitAmtFCC,
          mappedIRMAmountFCC: row.irmRemitAmtFCC,
          isVostro: row.irmFCC === 'INR' ? 'Y' : 'N',
        }));
        let upload: Buffer;
        if (format === 'csv') {
          upload = Buffer.from(stringifyCsv([[...SPREADSHEET_COLUMNS], ...filled.map((row) => SPREADSHEET_COLUMNS.map((column) => row[column]))]));
        } else {
          // As an exporter would: the downloaded workbook, the invoice cells typed in, saved.
          const workbook = new ExcelJS.Workbook();
          await workbook.xlsx.load(file.bytes.buffer.slice(file.bytes.byteOffset, file.bytes.byteOffset + file.bytes.byteLength) as ArrayBuffer);
          const sheet = workbook.worksheets[0]!;
          filled.forEach((row, i) => {
            for (const column of SPREADSHEET_COLUMNS) {
              if (row[column] !== '' && !(IRM_SIDE_COLUMNS as readonly string[]).includes(column)) sheet.getRow(i + 2).getCell(SPREADSHEET_COLUMNS.indexOf(column) + 1).value = row[column];
            }
          });
          upload = Buffer.from(await workbook.xlsx.writeBuffer());
        }
        const { lines, problems } = await validateRows(readRows(format, Readable.from([upload])), { uploadType: '101' });
        assert.deepEqual(problems, []);
        assert.equal(lines.length, rows.length);
        lines.forEach(({ row, line }, i) => {
          assert.equal(row, i + 2);
          assert.equal(line.irmNumber, rows[i]!.irmNumber);
          assert.equal(line.irmAdCode, rows[i]!.irmAdCode);
          assert.equal(line.irmDt, rows[i]!.irmDt);
          assert.equal(line.irmRemitAmtFCC, Number(rows[i]!.irmRemitAmtFCC));
        });
      });
    }

    for (const format of ['csv', 'xlsx'] as const) {
      test(`${format}: a failure after the answer has begun cuts the transfer short, never a shorter file that looks whole`, async () => {
        const ordered = irms; // the list's order is the template's
        assert.ok(ordered.length > IRM_READ_BATCH + 10);
        const broken = ordered[IRM_READ_BATCH + 5]!;
        const id = (await h.database.db.selectFrom('irms').select('id').where('irm_number', '=', broken.irmNumber).where('platform_customer_id', '=', customerId).executeTakeFirstOrThrow()).id;
        // An amount no code path can read (numeric NaN passes both balance checks): the second batch fails.
        await sql`update irms set irm_available_amt = 'NaN', remittance_fcc_amount = 'NaN' where id = ${id}`.execute(h.database.db);
        // A pull would set the IRM back to the authority's figures (contract 13): the download must read the store as broken.
        await h.database.db.updateTable('platform_customers').set({ irms_pulled_at: new Date() }).where('id', '=', customerId).execute();
        try {
          const wire = await downloadOverTheWire(h, customerId, format);
          assert.equal(wire.status, 200, 'the answer had begun');
          assert.equal(wire.complete, false, 'the body was cut off before its end');
          assert.ok(wire.received.length > 0);
          if (format === 'csv') {
            const text = wire.received.toString('utf8');
            assert.ok(text.startsWith(SPREADSHEET_COLUMNS.join(',')));
            assert.ok(!text.includes(broken.irmNumber));
          }
        } finally {
          await sql`update irms set irm_available_amt = ${broken.irmAvailableAmt}, remittance_fcc_amount = ${broken.remittanceFCCAmount} where id = ${id}`.execute(h.database.db);
        }
        // The service goes on answering.
        assert.equal((await download(h, customerId, { format })).status, 200);
      });
    }
  },
  { authority: withCancelledIrms },
);
