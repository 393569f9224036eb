/**
 * `npm run bench:reconcile`: how long a reconciliation run takes, and what memory it holds, for a customer with 5,000
 * IRMs and 5,000 eBRCs (contract 13: under 10 s, memory flat). The service runs on a scratch database (embedded;
 * `--postgres` adds the PostgreSQL at TEST_DATABASE_URL) with the sandbox authority beside it; the customer is verified
 * with demo.exporter, and its fetchIRMDetails and fetchEBRCDetails answers are the generated 5,000 and 5,000 (the
 * authority's own time is not what is measured: its answers come from memory).
 *
 * Runs, each timed from the request to the recorded outcome: the first (every IRM and eBRC new), one after 500 IRMs
 * changed, 250 cancelled and 250 eBRCs cancelled at the authority, then five with nothing changed. The heap is read
 * after a forced collection (node --expose-gc, as the script runs itself) after each run: flat means the unchanged runs
 * end where the first ones did.
 *
 * Options: --irms N, --ebrcs N (default 5,000 each), --postgres.
 */
import { parseArgs } from 'node:util';
import { SYSTEM_SOURCE } from '../src/services/audit.ts';
import type { Authority, AuthorityEbrc, AuthorityIrm } from '../src/authority/authority.ts';
import { startHarness, type Backend } from '../test/support/harness.ts';
import { authorityIrmsOf, generateMatchingDataset } from '../test/support/matching-dataset.ts';
import { verifiedCustomer } from '../test/support/workflow.ts';

const { values: flags } = parseArgs({
  options: {
    irms: { type: 'string', default: '5000' },
    ebrcs: { type: 'string', default: '5000' },
    postgres: { type: 'boolean', default: false },
  },
});
const IRMS = Number(flags.irms);
const EBRCS = Number(flags.ebrcs);
const UNCHANGED_RUNS = 5;

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) {
  console.error('Run with node --expose-gc (npm run bench:reconcile does).');
  process.exit(2);
}

/** The authority's data for the bench customer's IEC, changed between runs as the portal and the bank would. */
const authority = { irms: [] as AuthorityIrm[], ebrcs: [] as AuthorityEbrc[] };

function generate(): void {
  const data = generateMatchingDataset({ invoices: Math.ceil(IRMS / 1.1), seed: 4 });
  const irms = authorityIrmsOf(data).map((irm) => ({ ...irm, irmStatus: 'F' }));
  while (irms.length < IRMS) irms.push(...irms.slice(0, IRMS - irms.length).map((irm) => ({ ...irm, irmNumber: `${irm.irmNumber}X` })));
  authority.irms = irms.slice(0, IRMS);
  authority.ebrcs = Array.from({ length: EBRCS }, (_, i) => {
    const irm = authority.irms[i % authority.irms.length]!;
    return {
      ebrcNumber: `EBRCBENCH${String(i).padStart(10, '0')}`,
      ebrcDate: irm.irmIssueDate,
      irmNumber: irm.irmNumber,
      sbCumInvoiceNumber: String(1_000_000 + i),
      sbCumInvoiceDate: irm.remittanceDate,
      realisedValueFCC: '10.00',
      currency: irm.remittanceFCC,
      iecCode: irm.iecCode,
      status: 'GENERATED',
    };
  });
}

function changeAtTheAuthority(): void {
  authority.irms = authority.irms.map((irm, i) => {
    if (i % 10 === 0) return { ...irm, irmAvailableAmt: '0.00', irmUtilizedAmt: irm.remittanceFCCAmount };
    if (i % 20 === 1) return { ...irm, irmStatus: 'C' };
    return irm;
  });
  authority.ebrcs = authority.ebrcs.map((ebrc, i) => (i % 20 === 0 ? { ...ebrc, status: 'CANCELLED' } : ebrc));
}

function servingTheBenchData(adapter: Authority): Authority {
  return {
    ...adapter,
    async fetchIrms(credentials, query, options) {
      return query.iecCode === '0599001001' ? { irms: authority.irms, unreadable: [] } : adapter.fetchIrms(credentials, query, options);
    },
    async fetchEbrcs(credentials, query, options) {
      return query.iecCode === '0599001001' ? { ebrcs: authority.ebrcs, unreadable: [] } : adapter.fetchEbrcs(credentials, query, options);
    },
  };
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

async function bench(backend: Backend): Promise<void> {
  generate();
  const h = await startHarness(backend, { authority: servingTheBenchData, env: { AUTHORITY_TIMEOUT_MS: '60000' } });
  try {
    const customerId = await verifiedCustomer(h, 'bench-reconcile@example.com');
    console.log(`\n### ${backend}: a customer with ${IRMS.toLocaleString('en')} IRMs and ${EBRCS.toLocaleString('en')} eBRCs\n`);
    console.log('| run | seconds | irmsUpdated | irmsCancelled | ebrcsDiscovered | ebrcsCancelled | heap after (MB) | rss after (MB) |');
    console.log('|---|--:|--:|--:|--:|--:|--:|--:|');
    const runs = ['first (all new)', 'after changes', ...Array.from({ length: UNCHANGED_RUNS }, (_, i) => `unchanged ${i + 1}`)];
    for (const [index, label] of runs.entries()) {
      if (index === 1) changeAtTheAuthority();
      const started = performance.now();
      const run = await h.service.reconciliations.request(h.platformA.id, customerId, SYSTEM_SOURCE);
      await h.service.reconciliations.settled();
      const seconds = (performance.now() - started) / 1000;
      const listed = await h.service.reconciliations.list(h.platformA.id, customerId, { page: 1, limit: 1 });
      const done = listed.items[0]!;
      if (done.id !== run.id || done.status !== 'completed') throw new Error(`run ${run.id} ended ${JSON.stringify(done)}`);
      gc!();
      const memory = process.memoryUsage();
      console.log(`| ${label} | ${seconds.toFixed(2)} | ${done.irmsUpdated} | ${done.irmsCancelled} | ${done.ebrcsDiscovered} | ${done.ebrcsCancelled} | ${mb(memory.heapUsed)} | ${mb(memory.rss)} |`);
    }
  } finally {
    await h.stop();
  }
}

await bench('embedded');
if (flags.postgres) await bench('postgres');
