import type { Measured } from './load.ts';
import type { CpuShares, HeapFigures } from './processes.ts';
import type { PushOutcomes } from './pushes.ts';
import type { Seeded, Volumes } from './seed.ts';

export type ScenarioKind = 'reference' | 'read' | 'list' | 'push';

export type ScenarioResult = {
  key: string;
  title: string;
  kind: ScenarioKind;
  request: string;
  connections: number;
  measured: Measured;
  peakRssBytes: number;
  cpu?: CpuShares;
  /** The service's V8 heap right after the scenario, from its /metrics. */
  heapAfter?: HeapFigures;
  /** Pushes only. */
  lines?: number;
  outcomes?: PushOutcomes;
  linesPerSecond?: number;
};

export type BackendResult = {
  backend: 'postgres' | 'embedded';
  /** 1-minute load average of the machine before and after the scenarios: other work skews the figures. */
  loadAverage: { before: number; after: number };
  /** The service at rest after the setup, before the first scenario. */
  idle: { rssBytes: number; heap: HeapFigures | undefined };
  /** After the push scenarios: requests still open, and how fast the poller settled them (no new pushes). */
  poller?: { openAfterPushes: number; settledPerSecond: number; seconds: number };
  volumes: Volumes;
  seeded: Pick<Seeded, 'counts' | 'steps' | 'seconds'>;
  serviceStartSeconds: number;
  pushSetup: { customers: number; pushableIrms: number; seconds: number };
  scenarios: ScenarioResult[];
};

export type MachineFacts = {
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  kernel: string;
  node: string;
  postgres: string;
  pglite: string;
  commit: string;
};

export type RunResult = {
  mode: 'full' | 'quick';
  startedAt: string;
  seconds: number;
  machine: MachineFacts;
  settings: {
    seconds: number;
    warmupSeconds: number;
    readConnections: number;
    quietWaitSeconds: number;
    quietBudgetSeconds: number;
    serviceEnv: Record<string, string>;
    /** The sandbox authority's settings besides its storage and port; absent in runs made before it was a program of its own. */
    sandboxEnv?: Record<string, string>;
  };
  backends: BackendResult[];
};

export const TARGETS = {
  customerThroughputShare: 0.8,
  listP99Multiple: 3,
  push999P50Ms: 250,
  linesPerSecond: 20_000,
  peakRssMb: 300,
};

const MB = 1024 * 1024;

const int = (value: number): string => (Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : 'n/a');
const ms = (value: number): string => (!Number.isFinite(value) ? 'n/a' : value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2));
const mb = (bytes: number): string => (bytes > 0 ? (bytes / MB).toFixed(0) : 'n/a');
const times = (value: number): string => (Number.isFinite(value) ? `${value.toFixed(2)}×` : 'n/a');
const percent = (value: number): string => (Number.isFinite(value) ? `${(value * 100).toFixed(0)}%` : 'n/a');

/**
 * The bare route's figures, the yardstick of every ratio: measured twice in the PostgreSQL run
 * (first, and again before the pushes); the faster of the two is this machine's limit.
 */
export function referenceOf(run: RunResult): ScenarioResult | undefined {
  const references = run.backends.flatMap((backend) => backend.scenarios.filter((scenario) => scenario.kind === 'reference'));
  return references.reduce<ScenarioResult | undefined>((best, scenario) => (!best || scenario.measured.rps > best.measured.rps ? scenario : best), undefined);
}

/** Reads: throughput as a share of the bare route's. Lists: p99 as a multiple of the bare route's. */
export function ratioOf(scenario: ScenarioResult, reference: ScenarioResult | undefined): string {
  if (!reference) return 'n/a';
  switch (scenario.kind) {
    case 'reference':
      return scenario === reference ? 'the reference (the faster bare run)' : `${percent(scenario.measured.rps / reference.measured.rps)} of req/s`;
    case 'read':
      return `${percent(scenario.measured.rps / reference.measured.rps)} of req/s`;
    case 'list':
      return `${times(scenario.measured.p99 / reference.measured.p99)} p99`;
    case 'push':
      return `${times(scenario.measured.p50 / reference.measured.p50)} p50`;
  }
}

function pushNote(scenario: ScenarioResult): string {
  if (!scenario.outcomes) return '';
  const { validated, failed, other, failureCodes } = scenario.outcomes;
  const codes = Object.entries(failureCodes).map(([code, count]) => `${code} ×${count}`).join(', ');
  return `${int(scenario.linesPerSecond ?? 0)} lines/s; ${int(validated)} Validated, ${int(failed)} Failed, ${int(other)} other${codes ? ` (${codes})` : ''}`;
}

function notes(scenario: ScenarioResult): string {
  const parts: string[] = [];
  if (scenario.kind === 'push') parts.push(pushNote(scenario));
  if (scenario.measured.non2xx > 0) parts.push(`${int(scenario.measured.non2xx)} non-2xx`);
  if (scenario.measured.errors > 0) parts.push(`${int(scenario.measured.errors)} errors`);
  if (scenario.measured.timeouts > 0) parts.push(`${int(scenario.measured.timeouts)} timeouts`);
  if (scenario.cpu) {
    const groups = Object.entries(scenario.cpu.groups).filter(([, share]) => share >= 0.01).sort((a, b) => b[1] - a[1]);
    parts.push(`CPU: ${groups.map(([group, share]) => `${group} ${percent(share)}`).join(', ')}${scenario.cpu.other >= 0.05 ? `, **other work ${percent(scenario.cpu.other)}**` : ''}`);
  }
  return parts.join('; ');
}

export function scenarioTable(backend: BackendResult, reference: ScenarioResult | undefined): string {
  const rows = backend.scenarios.map((scenario) =>
    `| ${scenario.title} | ${scenario.connections} | ${int(scenario.measured.rps)} | ${ms(scenario.measured.p50)} | ${ms(scenario.measured.p99)} | ` +
      `${mb(scenario.peakRssBytes)} | ${scenario.heapAfter ? `${mb(scenario.heapAfter.heapUsed)} / ${mb(scenario.heapAfter.heapTotal)}` : '–'} | ` +
      `${ratioOf(scenario, reference)} | ${notes(scenario)} |`,
  );
  return [
    '| scenario | conns | req/s | p50 ms | p99 ms | peak RSS MB | heap after MB | ratio to bare route | notes |',
    '|---|--:|--:|--:|--:|--:|--:|---|---|',
    ...rows,
  ].join('\n');
}

export type TargetRow = { target: string; measured: string; met: boolean; verdict: string };

/** The issue's targets, judged on the PostgreSQL run. */
export function evaluateTargets(run: RunResult): TargetRow[] {
  const postgres = run.backends.find((backend) => backend.backend === 'postgres');
  const reference = referenceOf(run);
  if (!postgres || !reference) return [];
  const byKey = new Map(postgres.scenarios.map((scenario) => [scenario.key, scenario]));
  const rows: TargetRow[] = [];

  const customer = byKey.get('customer-by-id');
  if (customer) {
    const share = customer.measured.rps / reference.measured.rps;
    const met = share >= TARGETS.customerThroughputShare;
    rows.push({
      target: `GET /platform-customers/{id} ≥ ${percent(TARGETS.customerThroughputShare)} of the bare route's req/s`,
      measured: `${percent(share)} (${int(customer.measured.rps)} vs ${int(reference.measured.rps)} req/s)`,
      met,
      verdict: met
        ? 'met'
        : `missed by ${((TARGETS.customerThroughputShare - share) * 100).toFixed(0)} points: needs ${int(reference.measured.rps * TARGETS.customerThroughputShare)} req/s, ` +
          `${percent(reference.measured.rps * TARGETS.customerThroughputShare / customer.measured.rps - 1)} more`,
    });
  }

  const limit = reference.measured.p99 * TARGETS.listP99Multiple;
  for (const list of postgres.scenarios.filter((scenario) => scenario.kind === 'list')) {
    const multiple = list.measured.p99 / reference.measured.p99;
    const met = multiple <= TARGETS.listP99Multiple;
    rows.push({
      target: `${list.title}: p99 ≤ ${TARGETS.listP99Multiple}× the bare route's (≤ ${ms(limit)} ms)`,
      measured: `${ms(list.measured.p99)} ms (${times(multiple)})`,
      met,
      verdict: met ? 'met' : `missed: ${times(list.measured.p99 / limit)} the limit (${ms(list.measured.p99 - limit)} ms over)`,
    });
  }

  const push999 = byKey.get('push-999');
  if (push999) {
    const met = push999.measured.p50 <= TARGETS.push999P50Ms && (push999.outcomes?.validated ?? 0) > 0;
    rows.push({
      target: `999-line push acknowledged in ≤ ${TARGETS.push999P50Ms} ms at p50 (1 connection)`,
      measured: `${ms(push999.measured.p50)} ms`,
      met,
      verdict: met ? 'met' : `missed: ${times(push999.measured.p50 / TARGETS.push999P50Ms)} the target (${ms(push999.measured.p50 - TARGETS.push999P50Ms)} ms over)`,
    });
  }

  const concurrent = postgres.scenarios.filter((scenario) => scenario.kind === 'push' && scenario.connections > 1);
  const best = concurrent.reduce<ScenarioResult | undefined>(
    (top, scenario) => ((scenario.linesPerSecond ?? 0) > (top?.linesPerSecond ?? -1) ? scenario : top),
    undefined,
  );
  if (best) {
    const rate = best.linesPerSecond ?? 0;
    const met = rate >= TARGETS.linesPerSecond;
    rows.push({
      target: `≥ ${int(TARGETS.linesPerSecond)} lines/s acknowledged (Validated) under concurrent pushes`,
      measured: `${int(rate)} lines/s (${best.title}, ${best.connections} connections)`,
      met,
      verdict: met ? 'met' : `missed: ${percent(rate / TARGETS.linesPerSecond)} of the target, ${times(TARGETS.linesPerSecond / rate)} short`,
    });
  }

  const peak = Math.max(0, ...postgres.scenarios.filter((scenario) => scenario.kind !== 'reference').map((scenario) => scenario.peakRssBytes));
  if (peak > 0) {
    const peakMb = peak / MB;
    const worst = postgres.scenarios.find((scenario) => scenario.peakRssBytes === peak);
    const met = peakMb <= TARGETS.peakRssMb;
    rows.push({
      target: `Peak RSS of the service under load on PostgreSQL ≤ ${TARGETS.peakRssMb} MB`,
      measured: `${mb(peak)} MB (${worst?.title ?? ''})`,
      met,
      verdict: met ? 'met' : `missed by ${(peakMb - TARGETS.peakRssMb).toFixed(0)} MB (${times(peakMb / TARGETS.peakRssMb)})`,
    });
  }
  return rows;
}

export function targetsTable(rows: readonly TargetRow[]): string {
  return [
    '| target | measured | result |',
    '|---|---|---|',
    ...rows.map((row) => `| ${row.target} | ${row.measured} | ${row.met ? '**met**' : `**${row.verdict}**`} |`),
  ].join('\n');
}

function volumesText(backend: BackendResult): string {
  const { counts, steps, seconds } = backend.seeded;
  const stepText = steps.map((step) => `${step.name} ${step.seconds.toFixed(1)} s`).join(', ');
  return [
    `- Seeded: ${int(counts.customers)} customers, ${int(counts.irms)} IRMs (one customer holds ${int(backend.volumes.bigCustomerIrms)}), ` +
      `${int(counts.requests)} GenEBRC requests (the big customer holds ${int(backend.volumes.bigCustomerRequests)}) with ${int(counts.lines)} lines.`,
    `- Seeding took ${seconds.toFixed(1)} s (${stepText}).`,
    `- Machine load (1-minute average) ${backend.loadAverage.before.toFixed(2)} before the scenarios (seeding included), ` +
      `${backend.loadAverage.after.toFixed(2)} after; the CPU notes show how much of each scenario's time went to other work.`,
    `- The service at rest before the scenarios: RSS ${mb(backend.idle.rssBytes)} MB` +
      (backend.idle.heap ? `, V8 heap ${mb(backend.idle.heap.heapUsed)} MB used of ${mb(backend.idle.heap.heapTotal)} MB, external ${mb(backend.idle.heap.external)} MB.` : '.'),
    `- Service start ${backend.serviceStartSeconds.toFixed(1)} s; push setup (${backend.pushSetup.customers} customers created and verified ` +
      `through the API, their sandbox IRMs pulled: ${int(backend.pushSetup.pushableIrms)} pushable) ${backend.pushSetup.seconds.toFixed(1)} s.`,
  ].join('\n');
}

export function renderReport(run: RunResult): string {
  const reference = referenceOf(run);
  const { machine, settings } = run;
  const sections: string[] = [
    `# Benchmark, ${run.mode} run of ${run.startedAt}`,
    '',
    `Made by \`npm run bench${run.mode === 'quick' ? ' -- --quick' : ''}\` in ${(run.seconds / 60).toFixed(1)} minutes. ` +
      'Every figure is measured in this one run on this machine; the ratios compare with the bare route measured in the same run.',
    '',
    '## Machine',
    '',
    `- ${machine.cores} cores (${machine.cpuModel}), ${machine.memoryGiB.toFixed(0)} GiB memory, Linux ${machine.kernel}`,
    `- Node ${machine.node}; ${machine.postgres}; PGlite ${machine.pglite}`,
    `- Commit ${machine.commit}`,
    `- Load generator, service, sandbox authority, bare route and PostgreSQL share the machine (loopback only).`,
    '',
    '## Method',
    '',
    `- autocannon, ${settings.seconds} s per scenario${settings.warmupSeconds > 0 ? ` after ${settings.warmupSeconds} s of warm-up (pushes: the first only)` : ', no warm-up'}, ${settings.readConnections} connections for reads ` +
      'and lists, fewer for pushes (column conns). req/s counts 2xx answers; p50 and p99 are exact percentiles of the 2xx answers\' latencies.',
    '- CPU (notes): where the machine\'s two cores went during the scenario, as shares of the machine\'s CPU time (100% = both cores ' +
      'busy all the time): the load generator (autocannon in the benchmark\'s process), the service, the bare route, the database (PostgreSQL ' +
      'sessions of the benchmark database; PGlite runs inside the service), the sandbox authority (its process, and its PostgreSQL ' +
      'sessions as "sandbox database") and, in bold when 5% or more, other work on the machine, which lowers that scenario\'s figures.',
    ...(settings.quietBudgetSeconds > 0
      ? [`- Shared machine: before each scenario the benchmark waits (up to ${settings.quietWaitSeconds} s) for a second in which other work takes ` +
        'under 10% of the CPU, and repeats a scenario that other work disturbed by 10% or more (at most twice), keeping the least disturbed ' +
        `attempt; ${(settings.quietBudgetSeconds / 60).toFixed(0)} minutes of such waiting at most per run.`]
      : []),
    '- Heap after: the service\'s V8 heap used / total right after the scenario (its /metrics); the rest of the RSS is code, ' +
      'buffers outside the heap and memory V8 keeps for reuse.',
    '- Peak RSS: the service process\'s VmHWM over the scenario (reset before it through /proc/<pid>/clear_refs) and VmRSS sampled every 100 ms. ' +
      'On PostgreSQL it excludes the database server; on the embedded database it includes PGlite.',
    '- Ratio: reads, share of the bare route\'s req/s; lists, p99 as a multiple of the bare route\'s p99; pushes, p50 as a multiple of the bare route\'s p50 (for scale only).',
    '- The bare route (bench/bare-server.ts): Fastify and `select * from platform_customers where id = $1` over a pg pool of 10, nothing else. ' +
      'It runs first and again before the pushes; the faster of the two runs is the reference.',
    `- Service environment: ${Object.entries(settings.serviceEnv).map(([name, value]) => `\`${name}=${value}\``).join(', ')}, ` +
      '`AUTHORITY_URL` the sandbox authority\'s.',
    ...(settings.sandboxEnv
      ? ['- The sandbox authority: the separate program of `npm run sandbox` (sandbox/main.ts) in a process of its own, reached by the service over ' +
        'the authority\'s wire protocol; its storage is the schema authority_sandbox of the benchmark\'s PostgreSQL database, or its own ' +
        `embedded folder in the embedded run. Its environment: ${Object.entries(settings.sandboxEnv).map(([name, value]) => `\`${name}=${value}\``).join(', ')}. ` +
        'The seeded customers hold the API credential sets it issued to its accounts (POST /sandbox/issueApiCredentials), sealed as a credential check stores them.']
      : []),
    '- Lists page with limit 100 for IRMs (and page 1 once more at the default, 10) and the API default (10) for customers and GenEBRC ' +
      'requests. "dates" filters one year of issue dates, ' +
      'a third of the big customer\'s IRMs. Pushes map 0.01 from each of distinct, pushable IRMs of four customers verified with the sandbox accounts ' +
      'demo.exporter, bulk.exporter, vostro.exporter and services.exporter; each line quotes the IRM\'s available amount as it is at that moment.',
    '',
  ];
  for (const backend of run.backends) {
    sections.push(
      `## ${backend.backend === 'postgres' ? 'PostgreSQL' : 'Embedded database (PGlite)'}`,
      '',
      volumesText(backend),
      '',
      scenarioTable(backend, reference),
      '',
      ...(backend.poller
        ? [`After the pushes, ${int(backend.poller.openAfterPushes)} accepted requests were still open (waiting for the poller to fetch the ` +
          `authority's answer); over the next ${backend.poller.seconds} s, with no new pushes, the poller settled ` +
          `${backend.poller.settledPerSecond.toFixed(1)} requests/s.`, '']
        : []),
    );
  }
  const targets = evaluateTargets(run);
  if (targets.length > 0) {
    sections.push('## Targets (PostgreSQL run)', '', targetsTable(targets), '', 'Why the missed targets are missed, and what would close them: docs/performance.md.', '');
  }
  return sections.join('\n');
}

/** The summary that docs/performance.md carries for the latest full run. */
export function renderSummary(run: RunResult, reportPath: string): string {
  const reference = referenceOf(run);
  const postgres = run.backends.find((backend) => backend.backend === 'postgres');
  const embedded = run.backends.find((backend) => backend.backend === 'embedded');
  const embeddedByKey = new Map(embedded?.scenarios.map((scenario) => [scenario.key, scenario]) ?? []);
  const lines = [
    `Latest full run: ${run.startedAt}, ${run.machine.cores} cores, ${run.machine.memoryGiB.toFixed(0)} GiB, Node ${run.machine.node}, ` +
      `${run.machine.postgres.split(' on ')[0]}; report [${reportPath}](../${reportPath}).`,
    '',
  ];
  if (postgres) {
    lines.push(
      `PostgreSQL: ${int(postgres.seeded.counts.irms)} IRMs over ${int(postgres.seeded.counts.customers)} customers (big customer ${int(postgres.volumes.bigCustomerIrms)}), ` +
        `${int(postgres.seeded.counts.requests)} GenEBRC requests, seeded in ${postgres.seeded.seconds.toFixed(0)} s.` +
        (embedded ? ` Embedded: ${int(embedded.seeded.counts.irms)} IRMs (big customer ${int(embedded.volumes.bigCustomerIrms)}), ${int(embedded.seeded.counts.requests)} requests.` : ''),
      '',
      '| scenario | conns | PostgreSQL req/s | p50 ms | p99 ms | peak RSS MB | ratio to bare route | embedded req/s | embedded p99 ms |',
      '|---|--:|--:|--:|--:|--:|---|--:|--:|',
      ...postgres.scenarios.map((scenario) => {
        const other = embeddedByKey.get(scenario.key);
        const pushed = scenario.kind === 'push' ? ` (${int(scenario.linesPerSecond ?? 0)} lines/s)` : '';
        return `| ${scenario.title} | ${scenario.connections} | ${int(scenario.measured.rps)}${pushed} | ${ms(scenario.measured.p50)} | ${ms(scenario.measured.p99)} | ` +
          `${mb(scenario.peakRssBytes)} | ${ratioOf(scenario, reference)} | ${other ? int(other.measured.rps) : '–'} | ${other ? ms(other.measured.p99) : '–'} |`;
      }),
      '',
      targetsTable(evaluateTargets(run)),
    );
  }
  return lines.join('\n');
}
