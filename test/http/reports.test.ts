import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { parse } from 'csv-parse/sync';
import { describeEachBackend, expectProblem, type Harness } from '../support/harness.ts';
import { cancelEbrcAtPortal, portalEbrc } from '../support/outside.ts';
import { cents, firstRefresh, lineFor, pushBody, usableIrms, verifiedCustomer } from '../support/workflow.ts';

const registerUrl = (customerId: string) => `/api/v1/platform-customers/${customerId}/reports/ebrc-register`;
const utilisationUrl = (customerId: string) => `/api/v1/platform-customers/${customerId}/reports/irm-utilisation`;

/** Formula-looking text a user typed into a request line: it must reach no spreadsheet as a formula. */
const FORMULA_BILL = '=1+cmd|"/c calc"';
const MINUS_BILL = '-2+3';

type Pushed = { customerId: string; irms: any[]; ebrcNumbers: string[]; elsewhere: string; day: string; lastDay: string };

/** The file's bytes and headers (the harness reads bodies as text). */
async function download(h: Harness, url: string, query: Record<string, string>, apiKey = h.platformA.apiKey) {
  const response = await h.service.app.inject({ method: 'GET', url, query, headers: { 'x-api-key': apiKey } });
  return { status: response.statusCode, headers: response.headers, bytes: response.rawPayload, text: response.body };
}

/** A CSV report's two sections: the rows under their header, and the totals under theirs. */
function csvSections(text: string): { rows: Record<string, string>[]; totals: Record<string, string>[] } {
  const records: string[][] = parse(text, { relax_column_count: true, skip_empty_lines: false });
  const gap = records.findIndex((record) => record.length === 1 && record[0] === '');
  assert.ok(gap > 0, 'an empty line between the rows and the totals');
  const objects = (header: string[], body: string[][]) => body.map((record) => Object.fromEntries(header.map((name, i) => [name, record[i] ?? ''])));
  return { rows: objects(records[0]!, records.slice(1, gap)), totals: objects(records[gap + 1]!, records.slice(gap + 2)) };
}

const run = promisify(execFile);

function sofficeAvailable(): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => fs.existsSync(path.join(dir, 'soffice')));
}

/** Each sheet of the XLSX as LibreOffice reads it, converted to CSV (UTF-8, every sheet: the filter's last token -1). */
async function sheetsByLibreOffice(xlsx: Buffer): Promise<Map<string, string>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-report-soffice-'));
  try {
    fs.writeFileSync(path.join(dir, 'report.xlsx'), xlsx);
    await run(
      'soffice',
      [`-env:UserInstallation=file://${dir}/profile`, '--headless', '--convert-to', 'csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,false,false,false,-1', '--outdir', dir, path.join(dir, 'report.xlsx')],
      { timeout: 120_000 },
    );
    const sheets = new Map<string, string>();
    for (const name of fs.readdirSync(dir)) {
      const match = /^report-(.+)\.csv$/.exec(name);
      if (match) sheets.set(match[1]!, fs.readFileSync(path.join(dir, name), 'utf8'));
    }
    return sheets;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Sums per currency of the eBRC list's entries over the period, in cents, read page by page. */
async function listSums(h: Harness, customerId: string, period: Record<string, string>): Promise<Map<string, { count: number; cents: bigint }>> {
  const sums = new Map<string, { count: number; cents: bigint }>();
  for (let page = 1; ; page++) {
    const answer = await h.request('GET', `/api/v1/platform-customers/${customerId}/ebrcs`, { query: { ...period, limit: 100, page } });
    assert.equal(answer.status, 200, answer.text);
    for (const ebrc of answer.body.data) {
      if (String(ebrc.status).toLowerCase() === 'cancelled') continue;
      const entry = sums.get(ebrc.currency) ?? { count: 0, cents: 0n };
      entry.count += 1;
      entry.cents += cents(ebrc.realisedValueFCC);
      sums.set(ebrc.currency, entry);
    }
    if (page >= answer.body.meta.totalPages) return sums;
  }
}

function totalsAsSums(totals: { currency: string; count: number | string; realisedValue: string }[]) {
  return new Map(totals.map((total) => [total.currency, { count: Number(total.count), cents: cents(total.realisedValue) }]));
}

describeEachBackend('Reports', (h) => {
  let pushed: Promise<Pushed> | undefined;
  const pushedOnce = (): Promise<Pushed> => (pushed ??= pushAndProcess());

  async function pushAndProcess(): Promise<Pushed> {
    const customerId = await verifiedCustomer(h, 'reports@example.com');
    await firstRefresh(h, customerId);
    const irms = await usableIrms(h, customerId, 4);
    const [a, b, c, d] = irms;
    const ack = await h.request('POST', '/api/v1/genebrc/push-irm', {
      body: pushBody(customerId, [
        lineFor(a, 1, 100.25, { billNo: FORMULA_BILL }),
        lineFor(b, 2, 12.5, { billNo: MINUS_BILL }),
        lineFor(c, 3, 7.05, { sbCumInvoiceValueinFCC: 8, commissionValDeduct: 0.95 }),
      ]),
    });
    assert.equal(ack.body?.ackStatus, 'Validated', ack.text);
    // The status operation asks the authority, which processes at once in the tests' sandbox.
    const status = await h.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: customerId, requestId: ack.body.requestId } });
    assert.equal(status.body.status, 'PROCESSED', status.text);
    const ebrcNumbers = status.body.ebrcBulkGenStatusList.map((line: any) => line.ebrcNumber);
    // Outside the service: an eBRC made on the portal, and the second one cancelled there; the eBRC list brings both
    // into the register.
    const elsewhere = await portalEbrc(h, d.irmNumber, '25.50');
    await cancelEbrcAtPortal(h, ebrcNumbers[1]);
    const listed = await h.request('GET', `/api/v1/platform-customers/${customerId}/ebrcs`, { query: { limit: 100 } });
    assert.equal(listed.status, 200, listed.text);
    const day = status.body.ebrcBulkGenStatusList[0].ebrcDate;
    // The portal's eBRC may be dated a day later (a run across midnight UTC): the period holds both days.
    const portalDay = listed.body.data.find((ebrc: any) => ebrc.ebrcNumber === elsewhere.ebrcNumber).ebrcDate;
    return { customerId, irms, ebrcNumbers, elsewhere: elsewhere.ebrcNumber, day, lastDay: portalDay > day ? portalDay : day };
  }

  test('the register in json: one row per eBRC with the line, the IRM and exact amounts; totals equal the eBRC list', async () => {
    const { customerId, irms, ebrcNumbers, elsewhere, day, lastDay } = await pushedOnce();
    const answer = await download(h, registerUrl(customerId), { format: 'json', fromDate: day, toDate: lastDay });
    assert.equal(answer.status, 200, answer.text);
    assert.match(String(answer.headers['content-type']), /^application\/json/);
    assert.equal(answer.headers['content-disposition'], `attachment; filename="0599001001-ebrc-register-${day}-${lastDay}.json"`);
    const report = JSON.parse(answer.text);
    assert.deepEqual(report.rows.map((row: any) => row.ebrcNumber), [...ebrcNumbers, elsewhere].sort());
    const cancelled = report.rows.find((row: any) => row.ebrcNumber === ebrcNumbers[1]);
    assert.deepEqual([cancelled.status, cancelled.source, cancelled.billNo], ['cancelled', 'this_service', MINUS_BILL]);
    const portal = report.rows.find((row: any) => row.ebrcNumber === elsewhere);
    assert.deepEqual(
      [portal.status, portal.source, portal.requestId, portal.realisedValueFCC, portal.billNo, portal.irmNumber, portal.irmAdCode],
      ['generated', 'elsewhere', null, '25.50', null, irms[3].irmNumber, irms[3].remittanceAdCode],
    );
    const third = report.rows.find((row: any) => row.ebrcNumber === ebrcNumbers[2]);
    const c = irms[2];
    assert.equal(third.realisedValueFCC, '7.05');
    assert.equal(third.sbCumInvoiceValueinFCC, '8.00');
    assert.equal(third.commissionValDeduct, '0.95');
    assert.equal(third.discountValDeduct, null);
    assert.equal(third.status, 'generated');
    assert.equal(third.source, 'this_service');
    assert.equal(third.irmNumber, c.irmNumber);
    assert.equal(third.irmAdCode, c.remittanceAdCode, 'codes as text, leading zeros kept');
    assert.equal(third.irmPurposeCode, c.purposeOfRemittance);
    assert.equal(third.remitterName, c.remitterName);
    assert.equal(third.portCode, 'INDEL4');
    assert.equal(third.sbCumInvoiceDate, c.irmIssueDate);
    assert.deepEqual(totalsAsSums(report.totals), await listSums(h, customerId, { fromDate: day, toDate: lastDay }));
    assert.ok(report.totals.every((total: any) => typeof total.count === 'number' && /^\d+\.\d\d$/.test(total.realisedValue)));
  });

  test('the register in CSV: a header row, formula-looking cells quoted, totals in a second section equal to the eBRC list', async () => {
    const { customerId, day } = await pushedOnce();
    const answer = await download(h, registerUrl(customerId), { fromDate: day });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.headers['content-type'], 'text/csv; charset=utf-8');
    assert.match(String(answer.headers['content-disposition']), new RegExp(`filename="0599001001-ebrc-register-${day}-\\d{4}-\\d\\d-\\d\\d\\.csv"`));
    const { rows, totals } = csvSections(answer.text);
    assert.equal(rows.length, 4);
    const bills = rows.map((row) => row.billNo).sort();
    assert.deepEqual(bills, ["'-2+3", `'${FORMULA_BILL}`, 'B3', ''].sort());
    assert.ok(rows.every((row) => /^\d+\.\d\d$/.test(row.realisedValueFCC!)));
    assert.deepEqual(totalsAsSums(totals as any), await listSums(h, customerId, { fromDate: day }));
  });

  test('the register as XLSX reads back the same values in LibreOffice, totals on a second sheet', { skip: !sofficeAvailable() && 'soffice is not installed' }, async () => {
    const { customerId, day, lastDay } = await pushedOnce();
    const [json, xlsx] = await Promise.all([
      download(h, registerUrl(customerId), { format: 'json', fromDate: day, toDate: lastDay }),
      download(h, registerUrl(customerId), { format: 'xlsx', fromDate: day, toDate: lastDay }),
    ]);
    assert.equal(xlsx.status, 200, xlsx.text);
    assert.equal(xlsx.headers['content-type'], 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
    const expected = JSON.parse(json.text);
    const sheets = await sheetsByLibreOffice(xlsx.bytes);
    const register: string[][] = parse(sheets.get('eBRC register') ?? assert.fail(`sheets: ${[...sheets.keys()]}`));
    const header = register[0]!;
    const read = register.slice(1).map((record) => Object.fromEntries(header.map((name, i) => [name, record[i] === '' ? null : record[i]])));
    // Every cell as the json has it: text cells, so LibreOffice neither evaluates the bill numbers nor turns amounts or codes into numbers.
    assert.deepEqual(read, expected.rows);
    const totals: string[][] = parse(sheets.get('Totals') ?? assert.fail('no Totals sheet'));
    assert.deepEqual(totals.slice(1).map(([currency, count, realisedValue]) => ({ currency, count: Number(count), realisedValue })), expected.totals);
  });

  test('the IRM utilisation report: each IRM with its amounts and the eBRCs mapped to it; totals over the rows', async () => {
    const { customerId, irms, ebrcNumbers } = await pushedOnce();
    const a = irms[0];
    const period = { fromDate: a.irmIssueDate, toDate: a.irmIssueDate };
    const answer = await download(h, utilisationUrl(customerId), { format: 'json', ...period });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.headers['content-disposition'], `attachment; filename="0599001001-irm-utilisation-${a.irmIssueDate}-${a.irmIssueDate}.json"`);
    const report = JSON.parse(answer.text);
    const row = report.rows.find((candidate: any) => candidate.irmNumber === a.irmNumber);
    assert.ok(row, 'the IRM of the first line is in its issue day');
    assert.equal(row.realisedValue, '100.25');
    assert.equal(row.utilisedValue, '100.25');
    assert.equal(row.remittedValue, a.remittanceFCCAmount.toFixed(2));
    assert.equal(row.irmStatus, 'partially_utilised');
    assert.deepEqual(row.ebrcs.map((ebrc: any) => [ebrc.ebrcNumber, ebrc.realisedValue]), [[ebrcNumbers[0], '100.25']]);
    // Every row issued that day, and the totals are their sums.
    const listed = await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: customerId, ...period, limit: 100 }, body: {} });
    assert.deepEqual(report.rows.map((r: any) => r.irmNumber), listed.body.data.map((irm: any) => irm.irmNumber));
    const sums = new Map<string, bigint>();
    for (const r of report.rows) sums.set(r.currency, (sums.get(r.currency) ?? 0n) + cents(r.remittedValue));
    assert.deepEqual(new Map(report.totals.map((total: any) => [total.currency, cents(total.remittedValue)])), sums);

    const csv = await download(h, utilisationUrl(customerId), period);
    const { rows } = csvSections(csv.text);
    assert.equal(rows.find((r) => r.irmNumber === a.irmNumber)?.ebrcs, `${ebrcNumbers[0]} 100.25`);

    // The IRM whose eBRC was cancelled at the portal: listed and marked, nothing realised.
    const b = irms[1];
    const ofB = JSON.parse((await download(h, utilisationUrl(customerId), { format: 'json', fromDate: b.irmIssueDate, toDate: b.irmIssueDate })).text)
      .rows.find((r: any) => r.irmNumber === b.irmNumber);
    assert.deepEqual([ofB.realisedValue, ofB.ebrcs.map((ebrc: any) => ebrc.status)], ['0.00', ['cancelled']]);
  });

  test('the platform-wide register names each row’s customer; another platform sees none of it', async () => {
    const { customerId, day, lastDay } = await pushedOnce();
    const mine = await download(h, '/api/v1/reports/ebrc-register', { format: 'json', fromDate: day, toDate: lastDay });
    assert.equal(mine.status, 200, mine.text);
    assert.match(String(mine.headers['content-disposition']), new RegExp(`filename="all-customers-ebrc-register-${day}-${lastDay}\\.json"`));
    const report = JSON.parse(mine.text);
    assert.equal(report.rows.length, 4);
    assert.ok(report.rows.every((row: any) => row.platformCustomerId === customerId && row.iecCode === '0599001001' && row.customerName === 'Demo'));

    const theirs = await download(h, '/api/v1/reports/ebrc-register', { format: 'json' }, h.platformB.apiKey);
    assert.deepEqual(JSON.parse(theirs.text), { rows: [], totals: [] });
    const csv = await download(h, '/api/v1/reports/ebrc-register', {}, h.platformB.apiKey);
    assert.deepEqual(csvSections(csv.text), { rows: [], totals: [] });
    for (const url of [registerUrl(customerId), utilisationUrl(customerId)]) {
      expectProblem(await h.request('GET', url, { key: h.platformB.apiKey }), 404, 'not_found');
    }
  });

  test('bad queries are 400 with nothing sent', async () => {
    const { customerId } = await pushedOnce();
    expectProblem(await h.request('GET', registerUrl(customerId), { query: { format: 'pdf' } }), 400, 'validation_failed');
    expectProblem(await h.request('GET', registerUrl(customerId), { query: { fromDate: '2026-02-01', toDate: '2026-01-31' } }), 400, 'validation_failed');
    expectProblem(await h.request('GET', utilisationUrl(customerId), { query: { toDate: '2026-02-30' } }), 400, 'validation_failed');
    expectProblem(await h.request('GET', '/api/v1/reports/ebrc-register', { query: { page: 1 } }), 400, 'validation_failed');
  });
});
