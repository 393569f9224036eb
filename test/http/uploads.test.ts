import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import ExcelJS from 'exceljs';
import { REQUIRED_COLUMNS, SPREADSHEET_COLUMNS } from '../../src/domain/spreadsheet-columns.ts';
import { describeEachBackend, expectProblem, type Harness, type TestResponse } from '../support/harness.ts';
import { cents, firstRefresh, irmNow, lineFor, money, sleep, usableIrms, verifiedCustomer } from '../support/workflow.ts';

type Row = Record<string, unknown>;

function csvOf(rows: readonly Row[], columns: readonly string[] = SPREADSHEET_COLUMNS): string {
  const cell = (value: unknown) => (value === null || value === undefined ? '' : String(value));
  return [columns.join(','), ...rows.map((row) => columns.map((column) => cell(row[column])).join(','))].join('\r\n') + '\r\n';
}

async function xlsxOf(rows: readonly Row[]): Promise<Buffer> {
  const workbook = new ExcelJS.Workbook();
  const sheet = workbook.addWorksheet('Lines');
  sheet.addRow([...SPREADSHEET_COLUMNS]);
  for (const row of rows) sheet.addRow(SPREADSHEET_COLUMNS.map((column) => (row[column] === null || row[column] === undefined ? null : String(row[column]))));
  return Buffer.from(await workbook.xlsx.writeBuffer());
}

function form(fields: Record<string, string>, file?: { name: string; content: string | Buffer; type?: string }): FormData {
  const data = new FormData();
  for (const [name, value] of Object.entries(fields)) data.append(name, value);
  if (file) data.append('file', new Blob([file.content], { type: file.type ?? 'text/csv' }), file.name);
  return data;
}

function upload(h: Harness, customerId: string, file: { name: string; content: string | Buffer; type?: string }, fields: Record<string, string> = {}, key?: string): Promise<TestResponse> {
  return h.request('POST', '/api/v1/genebrc/uploads', {
    body: form({ platformCustomerId: customerId, uploadType: '101', decalarationFlag: 'Y', ...fields }, file),
    ...(key === undefined ? {} : { key }),
  });
}

async function waitForUpload(h: Harness, id: string, statuses: readonly string[] = ['completed', 'rejected'], timeoutMs = 60_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await h.request('GET', `/api/v1/genebrc/uploads/${id}`);
    assert.equal(answer.status, 200, answer.text);
    if (statuses.includes(answer.body.status)) return answer.body;
    assert.ok(Date.now() < deadline, `upload ${id} is still ${answer.body.status}`);
    await sleep(100);
  }
}

/** `perIrm` rows for each IRM, each mapping 1.00 of it to its own invoice; rows leave serialNo and uploadType empty. */
let invoice = 5_000_000;

function rowsFor(irms: readonly any[], perIrm: number): Row[] {
  const rows: Row[] = [];
  for (const irm of irms) {
    for (let i = 0; i < perIrm; i++) {
      invoice++;
      rows.push({ ...lineFor(irm, invoice, 1), serialNo: null, uploadType: null, sbCumInvoiceNumber: String(invoice) });
    }
  }
  return rows;
}

describeEachBackend(
  'spreadsheet uploads',
  (h) => {
    let customerId: string;
    test('setup: a verified customer with IRMs', async () => {
      customerId = await verifiedCustomer(h, 'uploads@demo-exports.example');
      await firstRefresh(h, customerId);
    });

    test('1,200 rows are checked, split into two pushes that keep each IRM together, and pushed once each', async () => {
      const irms = await usableIrms(h, customerId, 400);
      const before = new Map<string, bigint>();
      for (const irm of irms.slice(0, 3)) before.set(irm.irmNumber, cents(irm.irmAvailableAmt));
      const rows = rowsFor(irms, 3);
      const content = csvOf(rows);
      const accepted = await upload(h, customerId, { name: 'lines.csv', content });
      assert.equal(accepted.status, 202, accepted.text);
      assert.equal(accepted.body.status, 'validating');
      assert.equal(accepted.body.fileName, 'lines.csv');
      assert.equal(accepted.body.fileSha256, createHash('sha256').update(content).digest('hex'));
      assert.equal(accepted.body.rowCount, null);

      const done = await waitForUpload(h, accepted.body.id);
      assert.equal(done.status, 'completed', JSON.stringify(done.errors.slice(0, 3)));
      assert.equal(done.rowCount, 1200);
      assert.equal(done.rowsDone, 1200);
      assert.deepEqual(done.errors, []);
      assert.equal(done.requests.length, 2);
      assert.deepEqual(done.requests.map((r: any) => r.rows.length).sort((a: number, b: number) => a - b), [201, 999]);
      assert.ok(done.requests.every((r: any) => r.ackStatus === 'Validated'));
      const allRows = done.requests.flatMap((r: any) => r.rows).sort((a: number, b: number) => a - b);
      assert.deepEqual(allRows, Array.from({ length: 1200 }, (_, i) => i + 2), 'every row once, numbered as the sheet numbers them');

      // Each request is an ordinary push whose lines are the rows given, numbered 1..n; an IRM's rows share one push.
      const pushOf = new Map<string, string>();
      for (const request of done.requests) {
        const status = await h.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: customerId, requestId: request.requestId } });
        assert.equal(status.status, 200, status.text);
        assert.equal(status.body.recordResCount, request.rows.length);
        status.body.ebrcBulkGenStatusList.forEach((line: any, index: number) => {
          assert.equal(line.serialNo, index + 1);
          const row = rows[request.rows[index] - 2]!;
          assert.equal(line.sbCumInvoiceNumber, row.sbCumInvoiceNumber);
          assert.ok(pushOf.get(line.irmNumber) === undefined || pushOf.get(line.irmNumber) === request.requestId, `IRM ${line.irmNumber} split`);
          pushOf.set(line.irmNumber, request.requestId);
        });
      }
      for (const [irmNumber, available] of before) {
        const irm = await irmNow(h, customerId, irmNumber);
        assert.equal(cents(irm.irmAvailableAmt), available - 300n, `${irmNumber} has 3.00 mapped, once`);
      }

      const events = await h.request('GET', '/api/v1/events', { query: { type: 'bulk_upload.completed', platformCustomerId: customerId } });
      const event = events.body.items.find((item: any) => item.data.id === done.id);
      assert.ok(event, 'a bulk_upload.completed event');
      // rowsGenerated grows as the authority processes the requests, after the upload completed.
      const asOf = (shown: any) => ({ ...shown, rowsGenerated: null });
      assert.deepEqual(asOf(event.data), asOf(done));

      // The same file again within 24 h answers that upload; nothing is pushed again.
      const again = await upload(h, customerId, { name: 'renamed.csv', content });
      assert.equal(again.status, 200, again.text);
      assert.deepEqual(asOf(again.body), asOf(done));
    });

    test('an XLSX file is read like a CSV one, amounts and codes as written', async () => {
      const [irm] = await usableIrms(h, customerId, 1);
      const rows = rowsFor([irm], 2).map((row, i) => ({ ...row, mappedIRMAmountFCC: i === 0 ? '0.5' : '1.25', sbCumInvoiceValueinFCC: '2' }));
      const accepted = await upload(h, customerId, { name: 'lines.xlsx', content: await xlsxOf(rows), type: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' });
      assert.equal(accepted.status, 202, accepted.text);
      const done = await waitForUpload(h, accepted.body.id);
      assert.equal(done.status, 'completed', JSON.stringify(done.errors));
      assert.equal(done.requests.length, 1);
      const after = await irmNow(h, customerId, irm.irmNumber);
      assert.equal(cents(after.irmAvailableAmt), cents(irm.irmAvailableAmt) - 175n);
    });

    test('a file with malformed rows is rejected with every problem by row and column, and nothing is pushed', async () => {
      const [irm] = await usableIrms(h, customerId, 1);
      const rows = rowsFor([irm], 3);
      rows[0]!.sbCumInvoiceDate = '31022026';
      rows[1]!.mappedIRMAmountFCC = null;
      rows[2]!.mappedIRMAmountFCC = '1.005';
      const requestCount = async () => (await h.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: customerId } })).headers['x-total-count'];
      const requestsBefore = await requestCount();
      const accepted = await upload(h, customerId, { name: 'bad.csv', content: csvOf(rows) });
      assert.equal(accepted.status, 202, accepted.text);
      const done = await waitForUpload(h, accepted.body.id);
      assert.equal(done.status, 'rejected');
      assert.equal(done.rowCount, 3);
      assert.equal(done.rowsDone, 0);
      assert.deepEqual(done.requests, []);
      const at = done.errors.map((e: any) => [e.row, e.column]);
      assert.deepEqual(at, [[2, 'sbCumInvoiceDate'], [3, 'mappedIRMAmountFCC'], [4, 'mappedIRMAmountFCC']], JSON.stringify(done.errors));
      assert.ok(done.errors.every((e: any) => typeof e.code === 'string' && e.message.length > 0));
      assert.match(done.errors[2].message, /1\.005/);
      const after = await irmNow(h, customerId, irm.irmNumber);
      assert.equal(after.irmAvailableAmt, irm.irmAvailableAmt, 'no balance moved');
      assert.equal(await requestCount(), requestsBefore, 'no request was stored');

      const events = await h.request('GET', '/api/v1/events', { query: { type: 'bulk_upload.completed', platformCustomerId: customerId } });
      assert.deepEqual(events.body.items.find((item: any) => item.data.id === done.id)?.data, done);

      // A rejected file uploaded again is checked again (a new upload).
      const again = await upload(h, customerId, { name: 'bad.csv', content: csvOf(rows) });
      assert.equal(again.status, 202);
      assert.notEqual(again.body.id, done.id);
      await waitForUpload(h, again.body.id);
    });

    test('a sheet without its optional columns is taken: only the required ones must be there', async () => {
      const [irm] = await usableIrms(h, customerId, 1);
      // The exporter deleted serialNo, uploadType and every optional column (isVostro among them).
      const accepted = await upload(h, customerId, { name: 'required-only.csv', content: csvOf(rowsFor([irm], 1), REQUIRED_COLUMNS) });
      assert.equal(accepted.status, 202, accepted.text);
      const done = await waitForUpload(h, accepted.body.id);
      assert.deepEqual(done.errors, []);
      assert.equal(done.status, 'completed');
      assert.equal(done.requests.length, 1);
      assert.equal(done.requests[0].ackStatus, 'Validated');
    });

    test('a header without all the required columns is rejected, each missing column named', async () => {
      const columns = SPREADSHEET_COLUMNS.filter((column) => column !== 'portCode' && column !== 'billNo');
      const accepted = await upload(h, customerId, { name: 'short.csv', content: csvOf([{ serialNo: 1 }], columns) });
      const done = await waitForUpload(h, accepted.body.id);
      assert.equal(done.status, 'rejected');
      assert.deepEqual(done.errors.map((e: any) => [e.row, e.column, e.code]), [[1, 'portCode', 'missing_column'], [1, 'billNo', 'missing_column']]);
    });

    test("rows that break the authority's rules fail in their push, reported on their rows with the ERR code", async () => {
      const [irm] = await usableIrms(h, customerId, 1);
      const rows = rowsFor([irm], 2);
      rows[1]!.mappedIRMAmountFCC = money(cents(irm.irmAvailableAmt) + 100n);
      rows[1]!.sbCumInvoiceValueinFCC = rows[1]!.mappedIRMAmountFCC;
      const accepted = await upload(h, customerId, { name: 'over.csv', content: csvOf(rows) });
      const done = await waitForUpload(h, accepted.body.id);
      assert.equal(done.status, 'completed');
      assert.equal(done.requests.length, 1);
      assert.equal(done.requests[0].ackStatus, 'Failed');
      assert.ok(done.errors.length > 0);
      assert.ok(done.errors.some((e: any) => e.row === 3 && /^ERR\d+$/.test(e.code)), JSON.stringify(done.errors));
    });

    test('an upload whose only push failed says so: no row validated or generated, every row failed with an error of its own', async () => {
      const [fine, over] = await usableIrms(h, customerId, 2);
      const rows = rowsFor([fine!, over!], 1);
      rows[1]!.mappedIRMAmountFCC = money(cents(over!.irmAvailableAmt) + 100n);
      rows[1]!.sbCumInvoiceValueinFCC = rows[1]!.mappedIRMAmountFCC;
      const accepted = await upload(h, customerId, { name: 'only-push-failed.csv', content: csvOf(rows) });
      const done = await waitForUpload(h, accepted.body.id);
      assert.equal(done.status, 'completed');
      assert.deepEqual([done.rowsValidated, done.rowsGenerated, done.rowsFailed], [0, 0, 2]);
      const failedRows = new Set(done.errors.map((e: any) => e.row));
      assert.deepEqual([...failedRows].sort(), [2, 3], JSON.stringify(done.errors));
      assert.ok(done.errors.every((e: any) => /^ERR\d+$/.test(e.code)), JSON.stringify(done.errors));
      assert.equal(done.requests.length, 1, 'one push held both rows');
      // Row 2 broke no rule itself: it failed with its push, and says why.
      assert.match(done.errors.find((e: any) => e.row === 2).message, /Not generated: request .* was refused \(ERR\d+ on row 3\)/);
      const listed = await h.request('GET', '/api/v1/genebrc/uploads', { query: { platformCustomerId: customerId } });
      assert.equal(listed.body.items.find((item: any) => item.id === done.id).rowsFailed, 2, 'the list says it too');
    });

    test('a row that fails at processing is counted and reported with the authority\'s code once the request is processed', async () => {
      const [irm] = await usableIrms(h, customerId, 1);
      const rows = rowsFor([irm], 2);
      rows[1]!.billNo = 'SANDBOX-FAIL';
      const accepted = await upload(h, customerId, { name: 'processing-fails.csv', content: csvOf(rows) });
      let done = await waitForUpload(h, accepted.body.id);
      assert.equal(done.requests[0].ackStatus, 'Validated');
      const deadline = Date.now() + 60_000;
      while (done.rowsGenerated + done.rowsFailed < 2) {
        assert.ok(Date.now() < deadline, `still ${JSON.stringify(done)}`);
        await sleep(200);
        done = (await h.request('GET', `/api/v1/genebrc/uploads/${done.id}`)).body;
      }
      assert.deepEqual([done.rowsValidated, done.rowsGenerated, done.rowsFailed], [2, 1, 1]);
      assert.deepEqual(done.errors.map((e: any) => [e.row, e.code]), [[3, 'ERR40']]);
    });

    test('bad forms are refused at once with the contract error shape, and nothing is stored', async () => {
      const content = csvOf(rowsFor([], 0));
      expectProblem(await upload(h, customerId, { name: 'x.csv', content }, { decalarationFlag: 'N' }), 400, 'validation_failed');
      const missingFile = await h.request('POST', '/api/v1/genebrc/uploads', { body: form({ platformCustomerId: customerId, uploadType: '101', decalarationFlag: 'Y' }) });
      const problem = expectProblem(missingFile, 400, 'validation_failed');
      assert.ok(problem.errors.some((e: any) => e.path === '/file'), missingFile.text);
      expectProblem(await upload(h, customerId, { name: 'x.pdf', content: '%PDF-1.7', type: 'application/pdf' }), 415, 'unsupported_media_type');
      expectProblem(await upload(h, customerId, { name: 'x.csv', content: '' }), 400, 'validation_failed');
      expectProblem(await upload(h, customerId, { name: 'big.csv', content: Buffer.alloc(10 * 1024 * 1024 + 1, 0x41) }), 413, 'payload_too_large');
      expectProblem(await h.request('POST', '/api/v1/genebrc/uploads', { body: { platformCustomerId: customerId, uploadType: '101', decalarationFlag: 'Y' } }), 415, 'unsupported_media_type');
      expectProblem(await upload(h, '00000000-0000-4000-8000-000000000000', { name: 'x.csv', content }), 404, 'not_found');
      expectProblem(await upload(h, customerId, { name: 'x.csv', content }, {}, h.platformB.apiKey), 404, 'not_found');
      const list = await h.request('GET', '/api/v1/genebrc/uploads', { query: { platformCustomerId: customerId } });
      assert.ok(list.body.items.every((item: any) => item.fileName !== 'x.csv' && item.fileName !== 'big.csv'));
    });

    test("uploads are the platform's own: another platform sees none of them", async () => {
      const mine = await h.request('GET', '/api/v1/genebrc/uploads');
      assert.equal(mine.status, 200);
      assert.ok(mine.body.items.length >= 4);
      assert.equal(mine.body.meta.totalItems, mine.body.items.length);
      const theirs = await h.request('GET', '/api/v1/genebrc/uploads', { key: h.platformB.apiKey });
      assert.deepEqual(theirs.body.items, []);
      expectProblem(await h.request('GET', `/api/v1/genebrc/uploads/${mine.body.items[0].id}`, { key: h.platformB.apiKey }), 404, 'not_found');
    });
  },
  { env: { RUN_POLLER: 'true', POLL_INTERVAL_SECONDS: '1' } },
);
