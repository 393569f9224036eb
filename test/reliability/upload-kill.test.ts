import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { SPREADSHEET_COLUMNS } from '../../src/domain/spreadsheet-columns.ts';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { backends, type Backend, type TestResponse } from '../support/harness.ts';
import { killRun } from '../support/kill-run.ts';
import { assertEventsMatchChanges, assertLedgerConsistent, statusFigures } from '../support/invariants.ts';
import { reportFigures, scaled } from '../support/reliability.ts';
import { cents, firstRefresh, lineFor, sleep, usableIrms, verifiedCustomer } from '../support/workflow.ts';

/**
 * A kill during an upload (contract 11: "A killed service resumes an upload where it stopped, pushing no row twice"):
 * `node src/main.ts` is sent a CSV of 3,000 rows (four rows on each of 750 IRMs, each row mapping 1.00 to its own
 * 7-digit invoice number: four pushes of at most 999 lines) and killed with SIGKILL while the upload is validating or
 * pushing: once soon after the 202, once while rowsDone is between 0 and rowCount (seen by polling GET; the moment
 * a push's request is stored and not yet at the authority is one of the places it lands), and on the
 * long scale more at random moments of the pushing; now and then the restart is killed too. After each kill the
 * service's database is read to see where the kill landed (which push was stored, and whether its outcome was
 * recorded), then the service is started again on the same data, until the upload is completed. Then checked through
 * the API and in both databases: every row was pushed exactly once (no invoice number twice across all the customer's
 * requests, here and at the authority), the upload's requests are all the customer's requests, the balances moved by
 * exactly the rows pushed, one bulk_upload.completed event carries the upload as GET shows it, and every change has
 * its event.
 *
 * The sandbox holds each stored push PUSH_ANSWER_DELAY_MS before acknowledging it, as a slow authority would: without
 * it the last pushes finished on the embedded database before a kill seen to be due could land. The kills still
 * come at random moments within that, and the figures say where each one landed.
 *
 * A kill after a push's request is committed (SUBMITTING, linked to the upload) but before the authority has stored
 * the push leaves a request the authority never received: reconciliation fails it (authority_not_received), and the
 * upload sends that push again as a new request. So every push ends Validated, and besides the upload's requests the
 * customer may have such never-received FAILED requests, whose lines never reached the authority (counted in the
 * figures).
 */

const IRMS = 750;
const ROWS_PER_IRM = 4;
const ROWS = IRMS * ROWS_PER_IRM;
const MAX_PUSH_LINES = 999;
/** Kills at random moments of the pushing, beyond the two every run makes. */
const EXTRA_KILLS = scaled(0, 3);
const COMPLETE_TIMEOUT_MS = scaled(120_000, 240_000);
const FIRST_INVOICE = 6_000_000;
/** How long the sandbox holds each push before acknowledging it: a push takes at least this long. */
const PUSH_ANSWER_DELAY_MS = 400;

type Row = Record<string, unknown>;

function csvOf(rows: readonly Row[]): string {
  const cell = (value: unknown) => (value === null || value === undefined ? '' : String(value));
  return [SPREADSHEET_COLUMNS.join(','), ...rows.map((row) => SPREADSHEET_COLUMNS.map((column) => cell(row[column])).join(','))].join('\r\n') + '\r\n';
}

/** The multipart POST the JSON-only httpClient cannot send. */
async function postUpload(base: string, apiKey: string, customerId: string, fileName: string, content: string): Promise<TestResponse> {
  const form = new FormData();
  form.append('platformCustomerId', customerId);
  form.append('uploadType', '101');
  form.append('decalarationFlag', 'Y');
  form.append('file', new Blob([content], { type: 'text/csv' }), fileName);
  const response = await fetch(new URL('/api/v1/genebrc/uploads', base), {
    method: 'POST',
    headers: { 'x-api-key': apiKey },
    body: form,
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: Object.fromEntries(response.headers), body, text };
}

/** Where a kill landed, read from the service's database once the process is gone. */
type Landing = { phase: 'validating' | 'pushing' | 'finished'; rowsDone: number; description: string; storedWithoutOutcome: string | null };

async function landingOf(scratch: { dataDir: string; databaseUrl?: string | undefined }, uploadId: string): Promise<Landing> {
  const database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir });
  try {
    const upload = await database.db
      .selectFrom('bulk_uploads')
      .select(['status', 'row_count', 'rows_done'])
      .where('id', '=', uploadId)
      .executeTakeFirstOrThrow();
    const pushes = await database.db
      .selectFrom('bulk_upload_pushes as push')
      .leftJoin('genebrc_requests as request', 'request.id', 'push.request_id')
      .select(['push.push_index', 'push.request_id', 'push.ack_status', 'request.status as request_status'])
      .where('push.upload_id', '=', uploadId)
      .orderBy('push.push_index')
      .execute();
    if (upload.status === 'validating') return { phase: 'validating', rowsDone: 0, description: 'validating', storedWithoutOutcome: null };
    if (upload.status !== 'pushing') return { phase: 'finished', rowsDone: upload.rows_done, description: `too late (${upload.status})`, storedWithoutOutcome: null };
    const recorded = pushes.filter((push) => push.ack_status !== null).length;
    const pending = pushes.find((push) => push.request_id !== null && push.ack_status === null);
    // A push stored but without its outcome: SUBMITTING means the kill came while it was on its way to the authority
    // (or about to go), PENDING/FAILED that the answer was stored but not yet recorded on the upload.
    const storedWithoutOutcome = pending ? `push ${pending.push_index + 1} stored ${pending.request_status}, outcome not recorded` : null;
    const where = storedWithoutOutcome ?? (recorded === 0 ? 'planned, first push not stored' : `between pushes (push ${recorded + 1} not stored yet)`);
    return {
      phase: 'pushing',
      rowsDone: upload.rows_done,
      description: `pushing rowsDone=${upload.rows_done}/${upload.row_count}, ${recorded}/${pushes.length} pushes recorded, ${where}`,
      storedWithoutOutcome,
    };
  } finally {
    await database.close();
  }
}

async function sqlRows(database: Database, text: string, values: unknown[] = []): Promise<Record<string, any>[]> {
  const result = await database.executor.executeSql(text, values);
  return (Array.isArray(result) ? result.at(-1)?.rows ?? [] : result.rows) as Record<string, any>[];
}

async function uploadKillRun(backend: Backend, t: TestContext): Promise<void> {
  const options = {
    platformName: 'Upload kill platform',
    sandbox: { pushAnswerDelayMs: PUSH_ANSWER_DELAY_MS },
    env: { AUTHORITY_TIMEOUT_MS: '3000' },
  };
  await killRun(backend, t, options, async ({ seed, random, scratch, sandbox, service, startedAt: started }) => {
    const client = service.client;

    const customerId = await verifiedCustomer(client, `upload-kill-${backend}@example.com`);
    await firstRefresh(client, customerId);
    const refreshMs = Date.now() - started;
    const irms = await usableIrms(client, customerId, IRMS);
    const availableBefore = new Map<string, bigint>(irms.map((irm) => [irm.irmNumber as string, cents(irm.irmAvailableAmt)]));
    const rows: Row[] = [];
    for (const irm of irms) {
      for (let i = 0; i < ROWS_PER_IRM; i++) {
        const invoice = String(FIRST_INVOICE + rows.length + 1);
        rows.push({ ...lineFor(irm, rows.length + 1, 1), serialNo: null, uploadType: null, sbCumInvoiceNumber: invoice, billNo: `B${invoice}` });
      }
    }
    // Spreadsheet row r (the header is row 1) is rows[r - 2].
    const rowOfInvoice = new Map(rows.map((row, index) => [row.sbCumInvoiceNumber as string, index + 2]));
    const setupMs = Date.now() - started;

    const uploadStarted = Date.now();
    const accepted = await postUpload(service.base, service.apiKey, customerId, 'lines.csv', csvOf(rows));
    assert.equal(accepted.status, 202, accepted.text);
    const uploadId: string = accepted.body.id;

    const landings: Landing[] = [];
    const missed: string[] = [];
    let polls = 0;
    // After each restart: how long until GET shows the upload moving again (another status, more rows done).
    const resumeMs: number[] = [];
    let resuming: { at: number; landing: Landing } | undefined;
    const getUpload = async () => {
      const answer = await client.request('GET', `/api/v1/genebrc/uploads/${uploadId}`);
      assert.equal(answer.status, 200, answer.text);
      polls++;
      if (resuming && (answer.body.status !== (resuming.landing.phase === 'validating' ? 'validating' : 'pushing') || answer.body.rowsDone !== resuming.landing.rowsDone)) {
        resumeMs.push(Date.now() - resuming.at);
        resuming = undefined;
      }
      return answer.body;
    };
    const killAndRestart = async (): Promise<void> => {
      await service.kill();
      const landing = await landingOf(scratch, uploadId);
      landings.push(landing);
      t.diagnostic(`kill ${landings.length}: ${landing.description}`);
      // Now and then the next start is killed too, before it is ready (migrations, the recovery of the upload job).
      await service.restart();
      if (landing.phase !== 'finished') resuming = { at: Date.now(), landing };
    };

    // Kill 1: soon after the 202 (validating, or the first push).
    await sleep(random.int(0, 400));
    await killAndRestart();

    // Kill 2 (and the extra ones): once rows are done but not all of them, a moment later.
    for (let kill = 0; kill < 1 + EXTRA_KILLS; kill++) {
      const deadline = Date.now() + COMPLETE_TIMEOUT_MS;
      let upload = await getUpload();
      // The second kill waits for rows done with at least two full pushes still to come (the one under way and one
      // after it: at least 2 × PUSH_ANSWER_DELAY_MS of pushing), so that it cuts one of them off rather than finding
      // the upload completed; an extra one waits for the upload to have moved since the last restart, so that it does
      // not land where the last one did.
      const partway = (body: any) =>
        body.status === 'pushing' &&
        (kill === 0 ? body.rowsDone > 0 && body.rowsDone <= body.rowCount - 2 * MAX_PUSH_LINES : resuming === undefined && body.rowsDone < body.rowCount);
      while (!partway(upload) && upload.status !== 'completed') {
        assert.ok(Date.now() < deadline, `upload ${uploadId} is still ${upload.status} (rowsDone ${upload.rowsDone})`);
        await sleep(25);
        upload = await getUpload();
      }
      if (upload.status === 'completed') {
        missed.push(`kill ${landings.length + missed.length + 1}: the upload completed first`);
        break;
      }
      await sleep(kill === 0 ? random.int(0, PUSH_ANSWER_DELAY_MS) : random.int(0, 2_000));
      await killAndRestart();
    }

    // No more kills: the upload completes, and the poller settles its requests.
    const deadline = Date.now() + COMPLETE_TIMEOUT_MS;
    let done = await getUpload();
    while (done.status !== 'completed') {
      assert.notEqual(done.status, 'rejected', JSON.stringify(done.errors.slice(0, 3)));
      assert.ok(Date.now() < deadline, `upload ${uploadId} is still ${done.status} (rowsDone ${done.rowsDone}) ${COMPLETE_TIMEOUT_MS} ms after the last start`);
      await sleep(100);
      done = await getUpload();
    }
    const uploadMs = Date.now() - uploadStarted;
    for (;;) {
      const open = await client.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: customerId, status: 'PENDING', limit: 1 } });
      assert.equal(open.status, 200, open.text);
      if (open.headers['x-total-count'] === '0') break;
      assert.ok(Date.now() < deadline, `${open.headers['x-total-count']} requests still open`);
      await sleep(250);
    }
    // Through the API: the upload as GET shows it, and its one bulk_upload.completed event.
    done = await getUpload();
    const listed = await client.request('GET', '/api/v1/events', { query: { type: 'bulk_upload.completed', platformCustomerId: customerId, limit: 100 } });
    assert.equal(listed.status, 200, listed.text);
    const listedEvents = listed.body.items.filter((item: any) => item.data.id === uploadId);
    await service.stop();

    assert.equal(done.status, 'completed');
    assert.equal(done.rowCount, ROWS, 'rowCount is the rows sent');
    assert.equal(done.rowsDone, done.rowCount, 'rowsDone is rowCount');
    assert.equal(done.requests.length, Math.ceil(ROWS / MAX_PUSH_LINES), JSON.stringify(done.requests.map((r: any) => r.rows.length)));
    const allRows = done.requests.flatMap((request: any) => request.rows as number[]).sort((a: number, b: number) => a - b);
    assert.deepEqual(allRows, Array.from({ length: ROWS }, (_, i) => i + 2), "the upload's requests hold every row exactly once");
    assert.equal(new Set(done.requests.map((request: any) => request.requestId)).size, done.requests.length, 'each push its own request');
    assert.deepEqual(done.requests.filter((request: any) => request.ackStatus !== 'Validated'), [], 'every push is Validated: one the authority never received is sent again');
    assert.deepEqual(done.errors, [], 'no row failed');
    assert.equal(listedEvents.length, 1, 'the API lists one bulk_upload.completed event of the upload');
    // rowsGenerated grows as the authority processes the requests, after the upload completed and its event was written.
    assert.deepEqual({ ...listedEvents[0].data, rowsGenerated: null }, { ...done, rowsGenerated: null }, "the event's data is the upload as GET answers it");
    assert.ok(listedEvents[0].data.rowsGenerated <= done.rowsGenerated);

    const validatedRows = new Set<number>(done.requests.flatMap((request: any) => request.rows as number[]));
    const database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir });
    let figures: Record<string, number | string>;
    let neverReceivedRequests = 0;
    try {
      const eventFigures = await assertEventsMatchChanges(database);
      const ledger = await assertLedgerConsistent(database, sandbox.database, { exactEbrcSequence: true });

      // The customer's requests are exactly the upload's, and each holds the rows the upload says, in order.
      // The customer's requests are the upload's, and the pushes a kill left unsent to the authority (failed as never
      // received, then sent again): their lines never reached the authority, so they are not a row pushed twice.
      const requests = await sqlRows(database, 'select id, request_id, status, error_details from genebrc_requests where platform_customer_id = $1', [customerId]);
      const neverReceived = new Set(
        requests
          .filter((r) => r.status === 'FAILED' && r.error_details.length === 1 && r.error_details[0].code === 'authority_not_received')
          .map((r) => r.request_id as string),
      );
      assert.deepEqual(
        requests.map((r) => r.request_id).filter((id) => !neverReceived.has(id)).sort(),
        done.requests.map((r: any) => r.requestId).sort(),
        "the customer's requests are the upload's, beside those the authority never received",
      );
      neverReceivedRequests = neverReceived.size;
      const lines = (
        await sqlRows(
          database,
          `select r.request_id, l.line_index, l.serial_no, l.irm_number, l.sb_cum_invoice_number, l.mapped_amount::text as mapped, l.status
             from genebrc_request_lines l join genebrc_requests r on r.id = l.request_id
            where r.platform_customer_id = $1 order by r.request_id, l.line_index`,
          [customerId],
        )
      ).filter((line) => !neverReceived.has(line.request_id));
      const perInvoice = new Map<string, number>();
      for (const line of lines) perInvoice.set(line.sb_cum_invoice_number, (perInvoice.get(line.sb_cum_invoice_number) ?? 0) + 1);
      const twice = [...perInvoice].filter(([, n]) => n > 1).map(([invoice]) => invoice);
      assert.deepEqual(twice.slice(0, 10), [], `${twice.length} invoice numbers are in more than one line of the customer's requests: rows pushed twice`);
      const strangers = [...perInvoice.keys()].filter((invoice) => !rowOfInvoice.has(invoice));
      assert.deepEqual(strangers.slice(0, 10), [], 'no line that is not a row of the file');
      const absent = [...rowOfInvoice.keys()].filter((invoice) => !perInvoice.has(invoice));
      assert.deepEqual(absent.slice(0, 10), [], `${absent.length} rows of the file are in no request`);
      const byRequest = Map.groupBy(lines, (line) => line.request_id as string);
      for (const request of done.requests) {
        const stored = byRequest.get(request.requestId) ?? [];
        assert.deepEqual(
          stored.map((line) => rowOfInvoice.get(line.sb_cum_invoice_number)),
          request.rows,
          `request ${request.requestId} holds the rows the upload lists for it, in order`,
        );
        assert.deepEqual(stored.map((line) => line.serial_no), stored.map((_, i) => i + 1), `request ${request.requestId}: serial numbers 1..n`);
      }

      // At the authority: each row of a Validated push received exactly once, nothing else of this customer.
      const theirLines = await sandbox.database.db
        .selectFrom('authority_sandbox.request_lines')
        .select(['request_id', 'sb_cum_invoice_number'])
        .execute();
      const theirs = theirLines.filter((line) => rowOfInvoice.has(line.sb_cum_invoice_number));
      const theirPerInvoice = Map.groupBy(theirs, (line) => line.sb_cum_invoice_number);
      const theirTwice = [...theirPerInvoice].filter(([, list]) => list.length > 1).map(([invoice]) => invoice);
      assert.deepEqual(theirTwice.slice(0, 10), [], `${theirTwice.length} rows reached the authority twice`);
      assert.deepEqual(
        theirs.map((line) => rowOfInvoice.get(line.sb_cum_invoice_number)!).sort((a, b) => a - b),
        [...validatedRows].sort((a, b) => a - b),
        'the authority received exactly the rows of the Validated pushes',
      );

      // Every IRM's available amount went down by exactly its rows pushed (1.00 each).
      const after = await sqlRows(database, 'select irm_number, irm_available_amt::text as available from irms where platform_customer_id = $1', [customerId]);
      const availableAfter = new Map(after.map((irm) => [irm.irm_number as string, cents(irm.available)]));
      const mappedPerIrm = new Map<string, bigint>();
      for (const [index, row] of rows.entries()) {
        if (!validatedRows.has(index + 2)) continue;
        mappedPerIrm.set(row.irmNumber as string, (mappedPerIrm.get(row.irmNumber as string) ?? 0n) + 100n);
      }
      const wrong: string[] = [];
      for (const [irmNumber, before] of availableBefore) {
        const expected = before - (mappedPerIrm.get(irmNumber) ?? 0n);
        if (availableAfter.get(irmNumber) !== expected) wrong.push(`${irmNumber}: ${availableAfter.get(irmNumber)} cents, expected ${expected}`);
      }
      assert.deepEqual(wrong.slice(0, 10), [], `${wrong.length} IRMs' available amounts did not go down by exactly their rows`);

      // Exactly one bulk_upload.completed event of the upload, carrying it as GET answers it.
      const events = await database.db
        .selectFrom('events')
        .select(['id', 'type', 'platform_customer_id', 'data'])
        .where('type', '=', 'bulk_upload.completed')
        .execute();
      const ours = events.filter((event) => (event.data as { id?: string }).id === uploadId);
      assert.equal(ours.length, 1, 'exactly one bulk_upload.completed event of the upload');
      assert.equal(ours[0]!.platform_customer_id, customerId);
      // rowsGenerated is as of the upload's completion, the upload's grows as the authority processes its requests.
      assert.deepEqual({ ...(ours[0]!.data as object), rowsGenerated: null }, { ...done, rowsGenerated: null }, "the stored event's data is the upload as GET answers it");
      assert.equal(events.length, 1, 'no other upload finished');

      const byStatus: Record<string, number> = {};
      for (const request of requests) byStatus[request.status] = (byStatus[request.status] ?? 0) + 1;
      figures = {
        'pushes (lines each)': done.requests.map((r: any) => r.rows.length).join(', '),
        'pushes sent again (stored by a killed process, never received by the authority)': neverReceivedRequests,
        'rows pushed (Validated)': validatedRows.size,
        'final statuses': statusFigures(byStatus),
        'lines generated (each eBRC once)': ledger.generatedLines,
        'events checked against their changes': eventFigures.events,
      };
    } finally {
      await database.close();
    }

    const logs = service.logs();
    const errorLines = logs.split('\n').filter((line) => /"level":(50|60)/.test(line));
    assert.deepEqual(errorLines.filter((line) => /unhandled error/.test(line)), [], 'no request failed unexpectedly');
    const unfinishedLandings = landings.filter((landing) => landing.phase !== 'finished');
    assert.ok(unfinishedLandings.length >= 2, `at least two kills landed while the upload was unfinished: ${landings.map((l) => l.description).join('; ')}`);

    reportFigures(t, `a kill during an upload [${backend}]`, {
      seed,
      rows: ROWS,
      IRMs: IRMS,
      kills: landings.length,
      'kills while validating': landings.filter((l) => l.phase === 'validating').length,
      'kills while pushing': landings.filter((l) => l.phase === 'pushing').length,
      'kills with a push stored but its outcome not recorded': landings.filter((l) => l.storedWithoutOutcome !== null).length,
      'kills too late (upload finished)': landings.filter((l) => l.phase === 'finished').length,
      'kills during a restart': service.killsDuringStart,
      'planned kills missed (the upload completed first)': missed.length,
      'where each kill landed': landings.map((l, i) => `#${i + 1} ${l.description}`).join(' | '),
      ...figures,
      'ms from each restart to the upload moving again': resumeMs.join(', '),
      'GET polls': polls,
      'error log lines': errorLines.length,
      'setup ms (first refresh)': refreshMs,
      'setup ms (first refresh, IRM pages, file)': setupMs,
      'upload ms (202 to completed, kills and restarts included)': uploadMs,
      'run ms': Date.now() - started,
    });
  });
}

describe('SIGKILL while a spreadsheet upload is validated and pushed', { concurrency: true }, () => {
  for (const backend of backends()) {
    test(`the upload completes after restarts, every row pushed exactly once [${backend}]`, (t) => uploadKillRun(backend, t));
  }
});
