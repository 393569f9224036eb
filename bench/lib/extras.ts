/**
 * The measurements bench/run.ts makes after the push scenarios: webhook deliveries (bench/webhooks.ts as a child
 * process), a spreadsheet upload's rows per second, and IRM-to-invoice matching (the engine, and the HTTP route of the
 * benchmarked service on customers seeded with the matching test set's IRMs).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CredentialSet } from '../../src/authority/protocol/credentials.ts';
import { matchInvoices } from '../../src/domain/matching.ts';
import { SPREADSHEET_COLUMNS } from '../../src/domain/spreadsheet-columns.ts';
import type { Database } from '../../src/store/database.ts';
import { markIrmsPulled, UPSERT_BATCH, insertIrms } from '../../src/store/irms.ts';
import { authorityIrmsOf, generateMatchingDataset, matchRequestBody, precisionRecall } from '../../test/support/matching-dataset.ts';
import { lineFor } from '../../test/support/workflow.ts';
import type { ApiClient, ApiIrm } from './api.ts';
import { formatCount, log } from './progress.ts';
import { insertVerifiedCustomer } from './seed.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

// ---------------------------------------------------------------------------------------------------------------------
// Webhooks: bench/webhooks.ts as a child process

export type WebhookFigures = {
  /** bench/webhooks.ts's flags besides the backend's. */
  args: string[];
  /** Deliveries per second (first to last arrival) of the 999-line requests' events, settled one after the other. */
  requestBurstPerSecond: number;
  requestBurst: { pushes: number; events: number; seconds: number; changeToLastMs: number[] };
  /** Deliveries per second of the test-event burst. */
  testBurstPerSecond: number;
  testBurst: { events: number; concurrency: number };
  /** Change to delivery on an idle service, every event of the latency phases (ms). */
  idle: { count: number; p50: number; p99: number; max: number };
  notArrived: number;
  duplicates: number;
  badSignatures: number;
  seconds: number;
  logFile: string;
};

type WebhookResultFile = {
  seconds: number;
  settings: { burstConcurrency: number };
  latency: { all: { count: number; p50: number; p99: number; max: number } };
  throughput: {
    testBurst: { events: number; eventsPerSecond: number };
    requestBurst: { pushes: number; events: number; seconds: number; eventsPerSecond: number; each: { changeToLastSeconds: number }[] };
  };
  totals: { notArrived: number; duplicates: number; badSignatures: number };
};

/**
 * Runs `node bench/webhooks.ts` for one backend with the flags given and reads the figures it writes to
 * bench/results/webhooks-<backend>.json. That file belongs to `npm run bench:webhooks`: what it held before is put
 * back afterwards (the figures are kept in this run's own results). Its output goes to `logDir`.
 */
export async function runWebhookBench(backend: 'postgres' | 'embedded', args: readonly string[], logDir: string): Promise<WebhookFigures> {
  const resultFile = path.join(ROOT, 'bench', 'results', `webhooks-${backend}.json`);
  const before = fs.existsSync(resultFile) ? fs.readFileSync(resultFile) : undefined;
  fs.mkdirSync(logDir, { recursive: true });
  const logFile = path.join(logDir, `webhooks-${backend}.log`);
  const output = fs.openSync(logFile, 'w');
  const flags = [backend === 'postgres' ? '--skip-embedded' : '--skip-postgres', ...args];
  const child = spawn(process.execPath, [path.join(ROOT, 'bench', 'webhooks.ts'), ...flags], { cwd: ROOT, env: process.env, stdio: ['ignore', output, output] });
  fs.closeSync(output);
  // SIGTERM lets it stop the sandbox and service it started.
  const stopChild = (): void => void child.kill('SIGTERM');
  process.once('exit', stopChild);
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (exitCode) => resolve(exitCode));
    });
    if (code !== 0) throw new Error(`bench/webhooks.ts ${flags.join(' ')} exited with code ${code}; see ${logFile}`);
    const result = JSON.parse(fs.readFileSync(resultFile, 'utf8')) as WebhookResultFile;
    const { testBurst, requestBurst } = result.throughput;
    return {
      args: [...args],
      requestBurstPerSecond: requestBurst.eventsPerSecond,
      requestBurst: {
        pushes: requestBurst.pushes,
        events: requestBurst.events,
        seconds: requestBurst.seconds,
        changeToLastMs: requestBurst.each.map((each) => Math.round(each.changeToLastSeconds * 1000)),
      },
      testBurstPerSecond: testBurst.eventsPerSecond,
      testBurst: { events: testBurst.events, concurrency: result.settings.burstConcurrency },
      idle: { count: result.latency.all.count, p50: result.latency.all.p50, p99: result.latency.all.p99, max: result.latency.all.max },
      notArrived: result.totals.notArrived,
      duplicates: result.totals.duplicates,
      badSignatures: result.totals.badSignatures,
      seconds: result.seconds,
      logFile: path.relative(ROOT, logFile),
    };
  } finally {
    process.removeListener('exit', stopChild);
    if (before) fs.writeFileSync(resultFile, before);
    else fs.rmSync(resultFile, { force: true });
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// A spreadsheet upload

export type UploadFigures = {
  rows: number;
  /** Distinct IRMs the rows map (rows per IRM: rows / irms, rounded up). */
  irms: number;
  status: string;
  /** From the 202 to GET showing the upload completed. */
  seconds: number;
  rowsPerSecond: number;
  /** The POST itself (the file read and stored, the 202). */
  acceptMs: number;
  pushes: number;
  validatedRows: number;
  failedRows: number;
};

type UploadAnswer = { id: string; status: string; rowCount: number | null; rowsDone: number; requests: { ackStatus: string | null; rows: number[] }[]; errors: unknown[] };

/** Purpose codes a goods push (uploadType 101) may map without further rules (as bench/lib/pushes.ts). */
const PUSHABLE_PURPOSES = new Set(['P0102', 'P0103']);
const FIRST_INVOICE = 7_000_000;
const MAPPED = 0.01;

function csvOf(rows: readonly Record<string, unknown>[]): string {
  const cell = (value: unknown) => (value === null || value === undefined ? '' : String(value));
  return [SPREADSHEET_COLUMNS.join(','), ...rows.map((row) => SPREADSHEET_COLUMNS.map((column) => cell(row[column])).join(','))].join('\r\n') + '\r\n';
}

/**
 * Uploads a CSV of `rows` lines (uploadType 101) for the customer, on its pushable IRMs as the service lists them now
 * (goods purposes, not INR, a balance left): each row maps 0.01 to an invoice number of its own, an IRM's rows quoting
 * its available amount. Then polls GET /genebrc/uploads/{id} until it is completed (or rejected, or `timeoutMs`).
 */
export async function measureUpload(api: ApiClient, customerId: string, irms: readonly ApiIrm[], rows: number, timeoutMs: number): Promise<UploadFigures> {
  const usable = irms.filter((irm) => PUSHABLE_PURPOSES.has(irm.purposeOfRemittance) && irm.remittanceFCC !== 'INR');
  if (usable.length === 0) throw new Error('the upload customer has no pushable IRMs');
  const perIrm = Math.ceil(rows / usable.length);
  const chosen = usable.filter((irm) => Math.round(irm.irmAvailableAmt * 100) >= (perIrm + 1) * MAPPED * 100).slice(0, Math.ceil(rows / perIrm));
  if (chosen.length * perIrm < rows) throw new Error(`only ${chosen.length} IRMs with a balance for ${perIrm} rows each; ${rows} rows wanted`);
  const lines: Record<string, unknown>[] = [];
  for (const irm of chosen) {
    for (let index = 0; index < perIrm && lines.length < rows; index++) {
      const invoice = String(FIRST_INVOICE + lines.length + 1);
      lines.push({ ...lineFor(irm, lines.length + 1, MAPPED), serialNo: null, uploadType: null, sbCumInvoiceNumber: invoice, billNo: `B${invoice}` });
    }
  }
  const form = new FormData();
  form.append('platformCustomerId', customerId);
  form.append('uploadType', '101');
  form.append('decalarationFlag', 'Y');
  form.append('file', new Blob([csvOf(lines)], { type: 'text/csv' }), `bench-${Date.now()}.csv`);
  const postedAt = performance.now();
  const response = await fetch(`${api.baseUrl}/api/v1/genebrc/uploads`, { method: 'POST', headers: { 'x-api-key': api.apiKey }, body: form, signal: AbortSignal.timeout(60_000) });
  const text = await response.text();
  const acceptedAt = performance.now();
  if (response.status !== 202) throw new Error(`POST /genebrc/uploads answered ${response.status}, expected 202: ${text.slice(0, 500)}`);
  const accepted = JSON.parse(text) as UploadAnswer;
  let upload = accepted;
  let doneAt = acceptedAt;
  const deadline = acceptedAt + timeoutMs;
  while (upload.status !== 'completed' && upload.status !== 'rejected') {
    if (performance.now() > deadline) throw new Error(`upload ${accepted.id} still ${upload.status} (${upload.rowsDone} of ${upload.rowCount ?? '?'} rows) after ${timeoutMs / 1000} s`);
    await sleep(100);
    upload = await api.expect<UploadAnswer>(200, 'GET', `/api/v1/genebrc/uploads/${accepted.id}`);
    doneAt = performance.now();
  }
  if (upload.status === 'rejected') throw new Error(`upload ${accepted.id} was rejected: ${JSON.stringify(upload.errors).slice(0, 500)}`);
  const rowsOf = (ack: string) => upload.requests.filter((request) => request.ackStatus === ack).reduce((sum, request) => sum + request.rows.length, 0);
  const seconds = (doneAt - acceptedAt) / 1000;
  return {
    rows: lines.length,
    irms: chosen.length,
    status: upload.status,
    seconds,
    rowsPerSecond: lines.length / seconds,
    acceptMs: acceptedAt - postedAt,
    pushes: upload.requests.length,
    validatedRows: rowsOf('Validated'),
    failedRows: rowsOf('Failed'),
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// Matching

/** The sets of bench/matching.ts that the run times: 350 invoices (seed 1) and 5,000 (seed 4). */
export const MATCHING_SETS = [
  { invoices: 350, seed: 1 },
  { invoices: 5_000, seed: 4 },
] as const;

export type MatchingEngineFigures = {
  invoices: number;
  seed: number;
  irms: number;
  truePairs: number;
  proposed: number;
  precision: number;
  recall: number;
  runs: number;
  medianMs: number;
  minMs: number;
  maxMs: number;
};

export type MatchingHttpFigures = {
  invoices: number;
  irmsStored: number;
  requestKb: number;
  answerKb: number;
  allocations: number;
  runs: number;
  medianMs: number;
  minMs: number;
  maxMs: number;
};

/** A matching customer seeded before the service starts: its stored IRMs are the set's, the request its invoices. */
export type MatchingCustomer = { invoices: number; customerId: string; irmsStored: number; body: string };

export function median(values: readonly number[]): number {
  const sorted = values.toSorted((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** matchInvoices on each set: precision and recall against the set's answers, the median of `runs` runs after a warm-up. */
export function measureMatchingEngine(runs: number): MatchingEngineFigures[] {
  return MATCHING_SETS.map((set) => {
    const data = generateMatchingDataset(set);
    const input = { irms: data.irms, invoices: data.invoices };
    const quality = precisionRecall(matchInvoices(input).allocations, data.truth);
    const times: number[] = [];
    for (let run = 0; run < runs; run++) {
      const started = performance.now();
      matchInvoices(input);
      times.push(performance.now() - started);
    }
    return {
      invoices: set.invoices,
      seed: set.seed,
      irms: data.irms.length,
      truePairs: data.truth.size,
      proposed: quality.proposed,
      precision: quality.precision,
      recall: quality.recall,
      runs,
      medianMs: median(times),
      minMs: Math.min(...times),
      maxMs: Math.max(...times),
    };
  });
}



/**
 * Into the seeded database, before the service starts (the embedded one is the service's alone once it runs): for each
 * matching set a customer verified with `account` whose stored IRMs are the set's, pulled now.
 */
export async function seedMatchingCustomers(
  database: Database,
  platformId: string,
  encryptionKey: Buffer,
  account: { username: string; set: CredentialSet; panNumber: string },
): Promise<MatchingCustomer[]> {
  const customers: MatchingCustomer[] = [];
  for (const set of MATCHING_SETS) {
    const data = generateMatchingDataset(set);
    const customerId = await insertVerifiedCustomer(database, platformId, encryptionKey, account.username, account.set, {
      name: `Bench matching ${set.invoices}`,
      email: `bench+matching-${set.invoices}@matching.example`,
      companyName: `Bench Matching ${set.invoices} Exports`,
    });
    const irms = authorityIrmsOf(data, { iecCode: account.set.iecCode, panNumber: account.panNumber });
    for (let start = 0; start < irms.length; start += UPSERT_BATCH) {
      await insertIrms(database.db, { platformId, customerId }, irms.slice(start, start + UPSERT_BATCH));
    }
    await markIrmsPulled(database.db, customerId, new Date());
    customers.push({ invoices: set.invoices, customerId, irmsStored: irms.length, body: JSON.stringify(matchRequestBody(data.invoices)) });
  }
  return customers;
}

/** POST /platform-customers/{id}/irm/match for each matching customer: one warm-up, then the median of `runs`. */
export async function measureMatchingRoute(api: ApiClient, customers: readonly MatchingCustomer[], runs: number): Promise<MatchingHttpFigures[]> {
  const figures: MatchingHttpFigures[] = [];
  for (const customer of customers) {
    const send = async () => {
      const started = performance.now();
      const response = await fetch(`${api.baseUrl}/api/v1/platform-customers/${customer.customerId}/irm/match`, {
        method: 'POST',
        headers: api.headers,
        body: customer.body,
        signal: AbortSignal.timeout(120_000),
      });
      const text = await response.text();
      const elapsed = performance.now() - started;
      if (response.status !== 200) throw new Error(`the match of ${customer.invoices} invoices answered ${response.status}: ${text.slice(0, 500)}`);
      return { elapsed, text };
    };
    const first = await send();
    const times: number[] = [];
    for (let run = 0; run < runs; run++) times.push((await send()).elapsed);
    const answer = JSON.parse(first.text) as { allocations: unknown[] };
    figures.push({
      invoices: customer.invoices,
      irmsStored: customer.irmsStored,
      requestKb: Buffer.byteLength(customer.body) / 1024,
      answerKb: Buffer.byteLength(first.text) / 1024,
      allocations: answer.allocations.length,
      runs,
      medianMs: median(times),
      minMs: Math.min(...times),
      maxMs: Math.max(...times),
    });
    log(`  matching route, ${formatCount(customer.invoices)} invoices (${formatCount(customer.irmsStored)} IRMs stored): median ${median(times).toFixed(0)} ms of ${runs}`);
  }
  return figures;
}
