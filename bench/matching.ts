/**
 * `npm run bench:matching`: how long IRM-to-invoice matching takes, on the generated test set of
 * test/support/matching-dataset.ts (buyers whose remitter names differ by legal suffix, case and punctuation; exact,
 * short-by-charges, partial, grouped, advance and recurring payments; decoys), and how good its proposals are.
 *
 * 1. The engine alone (matchInvoices in src/domain/matching.ts): 350 invoices (seeds 1-3, ~400 IRMs) and 5,000
 *    invoices (seed 4, ~6,000 IRMs), precision and recall against the set's known answers, the median time of
 *    several runs after a warm-up.
 * 2. The HTTP route, POST /api/v1/platform-customers/{id}/irm/match, over a real connection: a service on a scratch
 *    database (embedded; `--postgres` adds the PostgreSQL at TEST_DATABASE_URL, default
 *    postgres://postgres@127.0.0.1:5432/test, where a database is created and dropped) with the sandbox authority
 *    beside it, a customer verified with demo.exporter whose stored IRMs are replaced by the set's (the cancelled
 *    decoys left out: the authority's list never carries them), then the set's invoices sent as JSON. The time is the
 *    client's, from sending the body to having read the answer: validation, the IRM query, the match, the pushes and
 *    the JSON both ways.
 *
 * Options: --runs N (engine runs per size, default 5), --http-runs N (default 5), --postgres, --skip-http.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { matchInvoices } from '../src/domain/matching.ts';
import { markIrmsPulled, UPSERT_BATCH, insertIrms } from '../src/store/irms.ts';
import { startHarness, type Backend } from '../test/support/harness.ts';
import { authorityIrmsOf, generateMatchingDataset, matchRequestBody, precisionRecall } from '../test/support/matching-dataset.ts';

const { values: flags } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    'http-runs': { type: 'string', default: '5' },
    postgres: { type: 'boolean', default: false },
    'skip-http': { type: 'boolean', default: false },
  },
});
const RUNS = Number(flags.runs);
const HTTP_RUNS = Number(flags['http-runs']);

const SETS = [
  { invoices: 350, seed: 1 },
  { invoices: 350, seed: 2 },
  { invoices: 350, seed: 3 },
  { invoices: 5_000, seed: 4 },
];
/** The sets the HTTP route is timed on. */
const HTTP_SETS = [SETS[0]!, SETS[3]!];

function median(values: readonly number[]): number {
  const sorted = values.toSorted((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const ms = (value: number): string => (value >= 100 ? value.toFixed(0) : value.toFixed(1));

function engine(): void {
  console.log(`\n### The engine: matchInvoices, median of ${RUNS} runs after one warm-up\n`);
  console.log('| invoices | seed | IRMs | true pairs | proposed | precision | recall | median | min | max |');
  console.log('|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const set of SETS) {
    const data = generateMatchingDataset(set);
    const input = { irms: data.irms, invoices: data.invoices };
    const result = matchInvoices(input);
    const quality = precisionRecall(result.allocations, data.truth);
    const times: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const started = performance.now();
      matchInvoices(input);
      times.push(performance.now() - started);
    }
    console.log(
      `| ${set.invoices.toLocaleString('en')} | ${set.seed} | ${data.irms.length.toLocaleString('en')} | ${data.truth.size.toLocaleString('en')} | ` +
        `${quality.proposed.toLocaleString('en')} | ${quality.precision.toFixed(4)} | ${quality.recall.toFixed(4)} | ` +
        `${ms(median(times))} ms | ${ms(Math.min(...times))} ms | ${ms(Math.max(...times))} ms |`,
    );
  }
}



async function http(backend: Backend): Promise<void> {
  const h = await startHarness(backend);
  try {
    const address = await h.service.app.listen({ port: 0, host: '127.0.0.1' });
    console.log(`\n### The HTTP route on the ${backend} database: median of ${HTTP_RUNS} requests after one warm-up\n`);
    console.log('| invoices | IRMs stored | request | answer | allocations | pushes | median | min | max |');
    console.log('|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
    for (const [index, set] of HTTP_SETS.entries()) {
      const data = generateMatchingDataset(set);
      // A customer of its own per set, verified with the sandbox, its IRMs the set's.
      const created = await h.request('POST', '/api/v1/platform-customers/', {
        body: { name: 'Bench', email: `bench-matching-${index}@example.com`, companyName: 'Bench Exports' },
      });
      const checked = await h.request('POST', `/api/v1/platform-customers/${created.body.id}/check-authority-credentials`, {
        body: { authorityUsername: 'demo.exporter', authorityPassword: 'Sandbox@123' },
      });
      if (checked.status !== 200) throw new Error(`the credential check answered ${checked.status}: ${checked.text}`);
      const customerId: string = created.body.id;
      const irms = authorityIrmsOf(data);
      for (let start = 0; start < irms.length; start += UPSERT_BATCH) {
        await insertIrms(h.database.db, { platformId: h.platformA.id, customerId }, irms.slice(start, start + UPSERT_BATCH));
      }
      await markIrmsPulled(h.database.db, customerId, new Date());

      const body = JSON.stringify(matchRequestBody(data.invoices));
      const send = async () => {
        const started = performance.now();
        const response = await fetch(`${address}/api/v1/platform-customers/${customerId}/irm/match`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': h.platformA.apiKey },
          body,
        });
        const text = await response.text();
        const elapsed = performance.now() - started;
        if (response.status !== 200) throw new Error(`the match answered ${response.status}: ${text.slice(0, 500)}`);
        return { elapsed, text };
      };
      const first = await send();
      const times: number[] = [];
      for (let run = 0; run < HTTP_RUNS; run++) times.push((await send()).elapsed);
      const answer = JSON.parse(first.text) as { allocations: unknown[]; pushes: unknown[] };
      const kb = (bytes: number) => `${(bytes / 1024).toFixed(0)} KB`;
      console.log(
        `| ${set.invoices.toLocaleString('en')} | ${irms.length.toLocaleString('en')} | ${kb(Buffer.byteLength(body))} | ${kb(Buffer.byteLength(first.text))} | ` +
          `${answer.allocations.length.toLocaleString('en')} | ${answer.pushes.length} | ${ms(median(times))} ms | ${ms(Math.min(...times))} ms | ${ms(Math.max(...times))} ms |`,
      );
    }
  } finally {
    await h.stop();
  }
}

console.log(
  `# Matching benchmark\n\n${new Date().toISOString()}, Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'CPU'}, ` +
    `${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, load average ${os.loadavg()[0]!.toFixed(1)} (a busy machine slows every figure)`,
);
engine();
if (!flags['skip-http']) {
  await http('embedded');
  if (flags.postgres) await http('postgres');
}
