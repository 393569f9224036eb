import type { MatchingEngineFigures, MatchingHttpFigures, UploadFigures, WebhookFigures } from './extras.ts';
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
  /**
   * Lists only: a page of 100 rows (the most a page holds) rather than the API's default 10. Reported beside the
   * targets, not as one: its 80 KB answer costs the machine more to send than the limit route's whole request.
   */
  fullPage?: boolean;
  peakRssBytes: number;
  cpu?: CpuShares;
  /** The service's V8 heap right after the scenario, from its /metrics. */
  heapAfter?: HeapFigures;
  /** Pushes only. */
  lines?: number;
  outcomes?: PushOutcomes;
  linesPerSecond?: number;
  /** Pushes only: the mean time of the service's push call to the authority (its /metrics), within the push's time. */
  authorityMeanMs?: number;
};

export type BackendResult = {
  backend: 'postgres' | 'embedded';
  /** 1-minute load average of the machine before and after the scenarios: other work skews the figures. */
  loadAverage: { before: number; after: number };
  /** The service at rest after the setup (push customers), idle for `idleSeconds`, before the first scenario. */
  idle: { rssBytes: number; heap: HeapFigures | undefined; idleSeconds?: number };
  /** After the push scenarios: requests still open, and how fast the poller settled them (no new pushes). */
  poller?: { openAfterPushes: number; settledPerSecond: number; seconds: number };
  volumes: Volumes;
  seeded: Pick<Seeded, 'counts' | 'steps' | 'seconds'>;
  serviceStartSeconds: number;
  pushSetup: { customers: number; pushableIrms: number; seconds: number };
  scenarios: ScenarioResult[];
  /** After the pushes: a spreadsheet upload on a push customer's IRMs, worked by the service's poller. */
  upload?: UploadFigures;
  /** After the upload: POST /platform-customers/{id}/irm/match of the service, on customers holding the sets' IRMs. */
  matchingRoute?: MatchingHttpFigures[];
  /** bench/webhooks.ts for this backend, as a child process once this backend's servers have stopped. */
  webhooks?: WebhookFigures;
  /** The measurements after the pushes that failed, by name, with the error. */
  errors?: Record<string, string>;
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
    /** Push scenarios' seconds, when they differ from `seconds`. */
    pushSeconds?: number;
    warmupSeconds: number;
    readConnections: number;
    quietWaitSeconds: number;
    quietBudgetSeconds: number;
    serviceEnv: Record<string, string>;
    /** The sandbox authority's settings besides its storage and port; absent in runs made before it was a program of its own. */
    sandboxEnv?: Record<string, string>;
  };
  backends: BackendResult[];
  /** matchInvoices in the benchmark's process, once every backend's servers have stopped. */
  matchingEngine?: MatchingEngineFigures[];
  errors?: Record<string, string>;
};

export const TARGETS = {
  /** GET customer by id: req/s at least this share of the limit route's (the faster of its two runs). */
  customerThroughputShare: 0.8,
  /** Every list page: p99 at most this multiple of the limit route's p99. */
  listP99Multiple: 3,
  /** The 999-line push on one connection: p50 under this. */
  push999P50Ms: 150,
  /** Acknowledged (Validated) lines/s under concurrent 999-line pushes, on PostgreSQL. */
  linesPerSecond: 20_000,
  /**
   * CPU per acknowledged line under concurrent 999-line pushes, on PostgreSQL, in µs: the service process's, and its
   * database sessions' (their backends' process CPU time; the sandbox's sessions are apart).
   */
  serviceCpuPerLineUs: 40,
  databaseCpuPerLineUs: 35,
  /** RSS of the service at rest, by backend. */
  restRssMb: { postgres: 300, embedded: 350 },
  /** Change to delivery of a webhook on an idle service, p99 (bench/webhooks.ts's target). */
  webhookIdleP99Ms: 1_000,
};

const MB = 1024 * 1024;

const int = (value: number): string => (Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : 'n/a');
const ms = (value: number): string =>
  !Number.isFinite(value) ? 'n/a' : value >= 1000 ? int(value) : value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
const mb = (bytes: number): string => (bytes > 0 ? (bytes / MB).toFixed(0) : 'n/a');
const times = (value: number): string => (Number.isFinite(value) ? `${value.toFixed(2)}×` : 'n/a');
const percent = (value: number): string => (Number.isFinite(value) ? `${(value * 100).toFixed(0)}%` : 'n/a');
const ratio = (value: number): string => (Number.isFinite(value) ? value.toFixed(2) : 'n/a');

export function backendName(backend: BackendResult['backend']): string {
  return backend === 'postgres' ? 'PostgreSQL' : 'embedded';
}

/**
 * A backend's limit route, the yardstick of that backend's ratios: measured twice in the backend's run (first, and
 * again before the pushes); the faster of the two is this machine's limit. bench/bare-server.ts over a pg pool for
 * PostgreSQL, bench/bare-embedded.ts over PGlite (a copy of the seeded folder) for the embedded database.
 */
export function referenceOf(backend: BackendResult): ScenarioResult | undefined {
  const references = backend.scenarios.filter((scenario) => scenario.kind === 'reference');
  return references.reduce<ScenarioResult | undefined>((best, scenario) => (!best || scenario.measured.rps > best.measured.rps ? scenario : best), undefined);
}

/** The service's peak RSS over the backend's scenarios (the limit route's excluded), and the scenario that reached it. */
export function peakRssOf(backend: BackendResult): { bytes: number; title: string } {
  let peak = { bytes: 0, title: '' };
  for (const scenario of backend.scenarios) {
    if (scenario.kind !== 'reference' && scenario.peakRssBytes > peak.bytes) peak = { bytes: scenario.peakRssBytes, title: scenario.title };
  }
  return peak;
}

/** Reads: throughput as a share of the limit route's. Lists: p99 as a multiple of the limit route's. */
export function ratioOf(scenario: ScenarioResult, reference: ScenarioResult | undefined): string {
  if (!reference) return 'n/a';
  switch (scenario.kind) {
    case 'reference':
      return scenario === reference ? 'the reference (the faster run)' : `${percent(scenario.measured.rps / reference.measured.rps)} of req/s`;
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
    '| scenario | conns | req/s | p50 ms | p99 ms | peak RSS MB | heap after MB | ratio to the limit (bare) route | notes |',
    '|---|--:|--:|--:|--:|--:|--:|---|---|',
    ...rows,
  ].join('\n');
}

export type TargetRow = {
  target: string;
  backend: string;
  measured: string;
  /** The figure as a ratio: to the limit route's figure, or to the target's figure. */
  ratio: string;
  /** What the ratio must be. */
  needed: string;
  met: boolean;
  verdict: string;
  /** A figure shown beside the targets (a 100-row page), not one of them. */
  reportedOnly?: boolean;
};

/** The targets, each as a ratio, per backend where it applies (lines/s: PostgreSQL only). */
export function evaluateTargets(run: RunResult): TargetRow[] {
  const rows: TargetRow[] = [];
  for (const backend of run.backends) {
    const name = backendName(backend.backend);
    const reference = referenceOf(backend);
    const byKey = new Map(backend.scenarios.map((scenario) => [scenario.key, scenario]));

    const customer = byKey.get('customer-by-id');
    if (customer && reference) {
      const share = customer.measured.rps / reference.measured.rps;
      const met = share >= TARGETS.customerThroughputShare;
      rows.push({
        target: 'GET customer by id: req/s, share of the limit route\'s',
        backend: name,
        measured: `${int(customer.measured.rps)} vs ${int(reference.measured.rps)} req/s`,
        ratio: ratio(share),
        needed: `≥ ${ratio(TARGETS.customerThroughputShare)}`,
        met,
        verdict: met ? 'met' : `missed: needs ${int(reference.measured.rps * TARGETS.customerThroughputShare)} req/s, ${percent(reference.measured.rps * TARGETS.customerThroughputShare / customer.measured.rps - 1)} more`,
      });
    }

    if (reference) {
      const limit = reference.measured.p99 * TARGETS.listP99Multiple;
      for (const list of backend.scenarios.filter((scenario) => scenario.kind === 'list')) {
        const multiple = list.measured.p99 / reference.measured.p99;
        const met = multiple <= TARGETS.listP99Multiple;
        rows.push({
          target: `${list.title}: p99, multiple of the limit route's`,
          ...(list.fullPage ? { reportedOnly: true } : {}),
          backend: name,
          measured: `${ms(list.measured.p99)} vs ${ms(reference.measured.p99)} ms`,
          ratio: times(multiple),
          needed: `≤ ${TARGETS.listP99Multiple}× (${ms(limit)} ms)`,
          met,
          verdict: met ? 'met' : `missed by ${ms(list.measured.p99 - limit)} ms (${times(list.measured.p99 / limit)} the limit)`,
        });
      }
    }

    const concurrent = byKey.get('push-999-concurrent');
    if (concurrent && backend.backend === 'postgres') {
      const rate = concurrent.linesPerSecond ?? 0;
      const met = rate >= TARGETS.linesPerSecond;
      rows.push({
        target: `Validated lines/s under concurrent 999-line pushes, ratio to ${int(TARGETS.linesPerSecond)}`,
        backend: name,
        measured: `${int(rate)} lines/s (${concurrent.connections} connections)`,
        ratio: ratio(rate / TARGETS.linesPerSecond),
        needed: '≥ 1.00',
        met,
        verdict: met ? 'met' : rate > 0 ? `missed: ${times(TARGETS.linesPerSecond / rate)} short` : 'missed: no push answered Validated in the measured time',
      });
    }

    const acknowledgedLines = (concurrent?.outcomes?.validated ?? 0) * (concurrent?.lines ?? 0);
    if (concurrent?.cpu && backend.backend === 'postgres' && acknowledgedLines > 0) {
      for (const [group, limitUs, label] of [
        ['service', TARGETS.serviceCpuPerLineUs, 'Service CPU'],
        ['database', TARGETS.databaseCpuPerLineUs, 'Its database’s CPU'],
      ] as const) {
        const perLineUs = ((concurrent.cpu.groupSeconds[group] ?? 0) * 1e6) / acknowledgedLines;
        const met = perLineUs <= limitUs;
        rows.push({
          target: `${label} per acknowledged line, concurrent 999-line pushes: ratio to ${limitUs} µs`,
          backend: name,
          measured: `${perLineUs.toFixed(1)} µs (${(concurrent.cpu.groupSeconds[group] ?? 0).toFixed(2)} s of CPU for ${int(acknowledgedLines)} lines)`,
          ratio: ratio(perLineUs / limitUs),
          needed: '≤ 1.00',
          met,
          verdict: met ? 'met' : `missed: ${times(perLineUs / limitUs)} the limit`,
        });
      }
    }

    const push999 = byKey.get('push-999');
    if (push999) {
      const met = push999.measured.p50 < TARGETS.push999P50Ms && (push999.outcomes?.validated ?? 0) > 0;
      rows.push({
        target: `999-line push (1 connection): p50, ratio to ${TARGETS.push999P50Ms} ms`,
        backend: name,
        measured: `${ms(push999.measured.p50)} ms${push999.authorityMeanMs !== undefined ? ` (the authority's acknowledgement: ${ms(push999.authorityMeanMs)} ms on average)` : ''}`,
        ratio: ratio(push999.measured.p50 / TARGETS.push999P50Ms),
        needed: '< 1.00',
        met,
        verdict: met ? 'met' : `missed by ${ms(push999.measured.p50 - TARGETS.push999P50Ms)} ms`,
      });
    }

    if (backend.idle.rssBytes > 0) {
      const limitMb = TARGETS.restRssMb[backend.backend];
      const restMb = backend.idle.rssBytes / MB;
      const met = restMb < limitMb;
      rows.push({
        target: `RSS at rest, ratio to ${limitMb} MB`,
        backend: name,
        measured: `${mb(backend.idle.rssBytes)} MB`,
        ratio: ratio(restMb / limitMb),
        needed: '< 1.00',
        met,
        verdict: met ? 'met' : `missed by ${(restMb - limitMb).toFixed(0)} MB`,
      });
    }

    if (backend.webhooks) {
      const p99 = backend.webhooks.idle.p99;
      const met = p99 < TARGETS.webhookIdleP99Ms;
      rows.push({
        target: `Webhook change to delivery, idle service: p99, ratio to ${int(TARGETS.webhookIdleP99Ms)} ms`,
        backend: name,
        measured: `${ms(p99)} ms (n ${int(backend.webhooks.idle.count)})`,
        ratio: ratio(p99 / TARGETS.webhookIdleP99Ms),
        needed: '< 1.00',
        met,
        verdict: met ? 'met' : `missed by ${ms(p99 - TARGETS.webhookIdleP99Ms)} ms`,
      });
    }
  }
  return rows;
}

export function targetsTable(rows: readonly TargetRow[]): string {
  return [
    '| target | backend | measured | ratio | needed | result |',
    '|---|---|---|--:|---|---|',
    ...rows.map((row) => `| ${row.target} | ${row.backend} | ${row.measured} | ${row.ratio} | ${row.needed} | ${row.reportedOnly ? `not a target (100 rows a page): ${row.met ? 'within 3×' : row.verdict}` : row.met ? '**met**' : `**${row.verdict}**`} |`),
  ].join('\n');
}

/** The figures beyond the scenarios, a column per backend: memory, webhooks, the upload, matching. */
export function figuresTable(run: RunResult): string {
  const backends = run.backends;
  const row = (label: string, cell: (backend: BackendResult) => string): string => `| ${label} | ${backends.map(cell).join(' | ')} |`;
  const failed = (backend: BackendResult, name: string): string => (backend.errors?.[name] ? 'failed (see the errors below)' : '–');
  const matching = (invoices: number) => (backend: BackendResult): string => {
    const figures = backend.matchingRoute?.find((each) => each.invoices === invoices);
    return figures ? `${ms(figures.medianMs)} (${ms(figures.minMs)}-${ms(figures.maxMs)}, ${figures.runs} runs)` : failed(backend, 'matching route');
  };
  const engine = (invoices: number): string => {
    const figures = run.matchingEngine?.find((each) => each.invoices === invoices);
    return figures
      ? `${ms(figures.medianMs)} (${ms(figures.minMs)}-${ms(figures.maxMs)}, ${figures.runs} runs; precision ${figures.precision.toFixed(3)}, recall ${figures.recall.toFixed(3)})`
      : run.errors?.['matching engine'] ? 'failed (see the errors below)' : '–';
  };
  const lines = [
    `| | ${backends.map((backend) => backendName(backend.backend)).join(' | ')} |`,
    `|---|${backends.map(() => '--:').join('|')}|`,
    row('RSS at rest (MB)', (backend) => `${mb(backend.idle.rssBytes)}${backend.idle.idleSeconds !== undefined ? ` (after ${backend.idle.idleSeconds} s idle)` : ''}`),
    row('peak RSS under load (MB)', (backend) => {
      const peak = peakRssOf(backend);
      return peak.bytes > 0 ? `${mb(peak.bytes)} (${peak.title})` : '–';
    }),
    row('Validated lines/s, concurrent 999-line pushes', (backend) => {
      const scenario = backend.scenarios.find((each) => each.key === 'push-999-concurrent');
      return scenario ? `${int(scenario.linesPerSecond ?? 0)} (${scenario.connections} connections)` : '–';
    }),
    row('webhook deliveries/s, 999-line requests settled', (backend) =>
      backend.webhooks
        ? `${int(backend.webhooks.requestBurstPerSecond)} (${int(backend.webhooks.requestBurst.events)} events of ${backend.webhooks.requestBurst.pushes} request${backend.webhooks.requestBurst.pushes === 1 ? '' : 's'}; ` +
          `change to last delivery ${backend.webhooks.requestBurst.changeToLastMs.map(int).join(', ')} ms)`
        : failed(backend, 'webhooks')),
    row('webhook deliveries/s, test-event burst', (backend) =>
      backend.webhooks ? `${int(backend.webhooks.testBurstPerSecond)} (${int(backend.webhooks.testBurst.events)} events, ${backend.webhooks.testBurst.concurrency} POSTs at a time)` : failed(backend, 'webhooks')),
    row('webhook change to delivery, idle service: p50 / p99 / max (ms)', (backend) =>
      backend.webhooks
        ? `${ms(backend.webhooks.idle.p50)} / ${ms(backend.webhooks.idle.p99)} / ${ms(backend.webhooks.idle.max)} (n ${int(backend.webhooks.idle.count)}; not arrived ${backend.webhooks.notArrived}, duplicates ${backend.webhooks.duplicates})`
        : failed(backend, 'webhooks')),
    row('upload rows/s (202 → completed)', (backend) =>
      backend.upload
        ? `${int(backend.upload.rowsPerSecond)} (${int(backend.upload.rows)} rows on ${int(backend.upload.irms)} IRMs in ${backend.upload.seconds.toFixed(2)} s, ` +
          `${backend.upload.pushes} pushes; ${int(backend.upload.validatedRows)} rows Validated, ${int(backend.upload.failedRows)} Failed; POST ${ms(backend.upload.acceptMs)} ms)`
        : failed(backend, 'upload')),
    row('matching route, 350 invoices: median ms', matching(350)),
    row('matching route, 5,000 invoices: median ms', matching(5_000)),
  ];
  if (run.matchingEngine || run.errors?.['matching engine']) {
    lines.push(
      `| matching engine (matchInvoices in the benchmark's process, no database: one figure), 350 invoices: median ms | ${engine(350)}${' | –'.repeat(Math.max(0, backends.length - 1))} |`,
      `| matching engine, 5,000 invoices: median ms | ${engine(5_000)}${' | –'.repeat(Math.max(0, backends.length - 1))} |`,
    );
  }
  return lines.join('\n');
}

function errorsText(run: RunResult): string[] {
  const errors = [
    ...run.backends.flatMap((backend) => Object.entries(backend.errors ?? {}).map(([name, error]) => `- ${backendName(backend.backend)}, ${name}: ${error}`)),
    ...Object.entries(run.errors ?? {}).map(([name, error]) => `- ${name}: ${error}`),
  ];
  return errors.length > 0 ? ['Measurements that failed:', '', ...errors, ''] : [];
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
    `- The service at rest before the scenarios${backend.idle.idleSeconds !== undefined ? ` (after the setup and ${backend.idle.idleSeconds} s idle)` : ''}: RSS ${mb(backend.idle.rssBytes)} MB` +
      (backend.idle.heap ? `, V8 heap ${mb(backend.idle.heap.heapUsed)} MB used of ${mb(backend.idle.heap.heapTotal)} MB, external ${mb(backend.idle.heap.external)} MB.` : '.'),
    `- Service start ${backend.serviceStartSeconds.toFixed(1)} s; push setup (${backend.pushSetup.customers} customers created and verified ` +
      `through the API, their sandbox IRMs pulled: ${int(backend.pushSetup.pushableIrms)} pushable) ${backend.pushSetup.seconds.toFixed(1)} s.`,
  ].join('\n');
}

function afterPushesText(backend: BackendResult): string[] {
  const lines: string[] = [];
  if (backend.poller) {
    lines.push(`After the pushes, ${int(backend.poller.openAfterPushes)} accepted requests were still open (waiting for the poller to fetch the ` +
      `authority's answer); over the next ${backend.poller.seconds} s, with no new pushes, the poller settled ` +
      `${backend.poller.settledPerSecond.toFixed(1)} requests/s.`, '');
  }
  if (backend.upload) {
    const { upload } = backend;
    lines.push(`Upload: ${int(upload.rows)} rows (${int(upload.irms)} IRMs of a push customer) ${upload.status} ${upload.seconds.toFixed(2)} s after the 202: ` +
      `**${int(upload.rowsPerSecond)} rows/s** in ${upload.pushes} pushes (${int(upload.validatedRows)} rows Validated, ${int(upload.failedRows)} Failed).`, '');
  }
  if (backend.matchingRoute) {
    lines.push(`Matching route: ${backend.matchingRoute.map((figures) =>
      `${int(figures.invoices)} invoices on ${int(figures.irmsStored)} stored IRMs, **${ms(figures.medianMs)} ms** median of ${figures.runs} ` +
        `(${ms(figures.minMs)}-${ms(figures.maxMs)}; request ${int(figures.requestKb)} KB, answer ${int(figures.answerKb)} KB, ${int(figures.allocations)} allocations)`).join('; ')}.`, '');
  }
  if (backend.webhooks) {
    const { webhooks } = backend;
    lines.push(`Webhooks (bench/webhooks.ts ${webhooks.args.join(' ')}, ${webhooks.seconds.toFixed(0)} s, output in ${webhooks.logFile}): ` +
      `**${int(webhooks.requestBurstPerSecond)} deliveries/s** for the events of ${webhooks.requestBurst.pushes} settled 999-line request${webhooks.requestBurst.pushes === 1 ? '' : 's'}, ` +
      `**${int(webhooks.testBurstPerSecond)}/s** for ${int(webhooks.testBurst.events)} test events; change to delivery on an idle service ` +
      `p50 ${ms(webhooks.idle.p50)} ms, **p99 ${ms(webhooks.idle.p99)} ms** (n ${int(webhooks.idle.count)}).`, '');
  }
  return lines;
}

export function renderReport(run: RunResult): string {
  const { machine, settings } = run;
  const sections: string[] = [
    `# Benchmark, ${run.mode} run of ${run.startedAt}`,
    '',
    `Made by \`npm run bench${run.mode === 'quick' ? ' -- --quick' : ''}\` in ${(run.seconds / 60).toFixed(1)} minutes. ` +
      'Every figure is measured in this one run on this machine; the ratios compare each backend with its own limit route, measured in the same run.',
    '',
    '## Machine',
    '',
    `- ${machine.cores} cores (${machine.cpuModel}), ${machine.memoryGiB.toFixed(0)} GiB memory, Linux ${machine.kernel}`,
    `- Node ${machine.node}; ${machine.postgres}; PGlite ${machine.pglite}`,
    `- Commit ${machine.commit}`,
    `- Load generator, service, sandbox authority, limit routes and PostgreSQL share the machine (loopback only).`,
    '',
    '## Method',
    '',
    `- autocannon, ${settings.seconds} s per scenario${settings.pushSeconds !== undefined && settings.pushSeconds !== settings.seconds ? ` (pushes ${settings.pushSeconds} s)` : ''}${settings.warmupSeconds > 0 ? ` after ${settings.warmupSeconds} s of warm-up (pushes: the first only)` : ', no warm-up'}, ${settings.readConnections} connections for reads ` +
      'and lists, fewer for pushes (column conns). req/s counts 2xx answers; p50 and p99 are exact percentiles of the 2xx answers\' latencies.',
    '- CPU (notes): where the machine\'s two cores went during the scenario, as shares of the machine\'s CPU time (100% = both cores ' +
      'busy all the time): the load generator (autocannon in the benchmark\'s process), the service, the limit route ("bare route"), the database (PostgreSQL ' +
      'sessions of the benchmark database; PGlite runs inside the service, and inside the embedded limit route), the sandbox authority (its process, and its PostgreSQL ' +
      'sessions as "sandbox database") and, in bold when 5% or more, other work on the machine, which lowers that scenario\'s figures.',
    ...(settings.quietBudgetSeconds > 0
      ? [`- Shared machine: before each scenario the benchmark waits (up to ${settings.quietWaitSeconds} s) for a second in which other work takes ` +
        'under 10% of the CPU, and repeats a scenario that other work disturbed by 10% or more (at most twice), keeping the least disturbed ' +
        `attempt; ${(settings.quietBudgetSeconds / 60).toFixed(0)} minutes of such waiting at most per run.`]
      : []),
    '- Heap after: the service\'s V8 heap used / total right after the scenario (its /metrics); the rest of the RSS is code, ' +
      'buffers outside the heap and memory V8 keeps for reuse.',
    '- Peak RSS: the service process\'s VmHWM over the scenario (reset before it through /proc/<pid>/clear_refs) and VmRSS sampled every 100 ms. ' +
      'On PostgreSQL it excludes the database server; on the embedded database it includes PGlite. RSS at rest: VmRSS once the push customers are ' +
      'set up and the service has then been idle for a few seconds, before the first scenario.',
    '- Ratio: against the limit route of the same backend: reads, share of its req/s; lists, p99 as a multiple of its p99; pushes, p50 as a multiple of its p50 (for scale only).',
    '- The limit routes: Fastify and `select * from platform_customers where id = $1`, nothing else: on PostgreSQL over a pg pool of 10 ' +
      '(bench/bare-server.ts); on the embedded database over PGlite in the route\'s process (bench/bare-embedded.ts) on a copy of the seeded ' +
      'data folder made before the service started (the service holds its folder alone). Each runs first and again before the pushes; the faster ' +
      'of its two runs is that backend\'s reference.',
    `- Service environment: ${Object.entries(settings.serviceEnv).map(([name, value]) => `\`${name}=${value}\``).join(', ')}, ` +
      '`AUTHORITY_URL` the sandbox authority\'s.',
    ...(settings.sandboxEnv
      ? ['- The sandbox authority: the separate program of `npm run sandbox` (sandbox/main.ts) in a process of its own, reached by the service over ' +
        'the authority\'s wire protocol; its storage is the schema authority_sandbox of the benchmark\'s PostgreSQL database, or its own ' +
        `embedded folder in the embedded run. Its environment: ${Object.entries(settings.sandboxEnv).map(([name, value]) => `\`${name}=${value}\``).join(', ')}. ` +
        'The seeded customers hold the API credential sets it issued to its accounts (POST /sandbox/issueApiCredentials), sealed as a credential check stores them.']
      : []),
    '- Lists: the first, middle (page ceil(pages / 2)) and last pages, and filtered ones. IRMs page with limit 100 (and page 1 once more at the default, 10); ' +
      'customers and GenEBRC requests with the API default (10). "dates" filters one year of issue dates, ' +
      'a third of the big customer\'s IRMs; the filtered GenEBRC page is status=PROCESSED. Pushes map 0.01 from each of distinct, pushable IRMs of four customers verified with the sandbox accounts ' +
      'demo.exporter, bulk.exporter, vostro.exporter and services.exporter; each line quotes the IRM\'s available amount as it is at that moment.',
    '- After the pushes, for each backend: the upload (POST /api/v1/genebrc/uploads, a CSV of uploadType 101 rows, each mapping 0.01 of a push ' +
      'customer\'s IRM as the service lists it then, polled with GET /api/v1/genebrc/uploads/{id} every 100 ms: rows/s from the 202 to completed); ' +
      'the matching route (POST /api/v1/platform-customers/{id}/irm/match with the 350- and 5,000-invoice sets of test/support/matching-dataset.ts, ' +
      'seeds 1 and 4, on customers seeded with the sets\' IRMs: one warm-up, then the median); then, once the backend\'s servers have stopped, ' +
      'bench/webhooks.ts for that backend as a child process (its own scratch database, sandbox and service; its figures as it reports them). ' +
      'The matching engine (matchInvoices) runs in the benchmark\'s process at the end, with no server running.',
    '',
  ];
  for (const backend of run.backends) {
    sections.push(
      `## ${backend.backend === 'postgres' ? 'PostgreSQL' : 'Embedded database (PGlite)'}`,
      '',
      volumesText(backend),
      '',
      scenarioTable(backend, referenceOf(backend)),
      '',
      ...afterPushesText(backend),
    );
  }
  const targets = evaluateTargets(run);
  if (targets.length > 0) {
    sections.push(
      '## Targets',
      '',
      'Each target as a ratio: to the same backend\'s limit route (the faster of its two runs), or to the target\'s own figure.',
      '',
      targetsTable(targets),
      '',
      'Why the missed targets are missed, and what would close them: docs/performance.md.',
      '',
    );
  }
  sections.push('## Other figures', '', figuresTable(run), '', ...errorsText(run));
  return sections.join('\n');
}

/** The summary that docs/performance.md carries for the latest full run. */
export function renderSummary(run: RunResult, reportPath: string): string {
  const postgres = run.backends.find((backend) => backend.backend === 'postgres');
  const embedded = run.backends.find((backend) => backend.backend === 'embedded');
  const first = postgres ?? embedded;
  const lines = [
    `Latest full run: ${run.startedAt}, ${run.machine.cores} cores, ${run.machine.memoryGiB.toFixed(0)} GiB, Node ${run.machine.node}, ` +
      `${run.machine.postgres.split(' on ')[0]}, PGlite ${run.machine.pglite}; report [${reportPath}](../${reportPath}).`,
    '',
    run.backends.map((backend) =>
      `${backendName(backend.backend).replace(/^e/, 'E')}: ${int(backend.seeded.counts.irms)} IRMs over ${int(backend.seeded.counts.customers)} customers ` +
        `(big customer ${int(backend.volumes.bigCustomerIrms)}), ${int(backend.seeded.counts.requests)} GenEBRC requests ` +
        `(big customer ${int(backend.volumes.bigCustomerRequests)}), seeded in ${backend.seeded.seconds.toFixed(0)} s.`).join(' '),
    '',
  ];
  if (first) {
    const otherByKey = new Map((first === postgres ? embedded : undefined)?.scenarios.map((scenario) => [scenario.key, scenario]) ?? []);
    const firstReference = referenceOf(first);
    const otherReference = embedded && first === postgres ? referenceOf(embedded) : undefined;
    const firstName = backendName(first.backend);
    lines.push(
      `| scenario | conns | ${firstName} req/s | p50 ms | p99 ms | peak RSS MB | ratio to its limit route |` + (otherReference || otherByKey.size > 0 ? ' embedded req/s | embedded p99 ms | embedded ratio |' : ''),
      `|---|--:|--:|--:|--:|--:|---|${otherReference || otherByKey.size > 0 ? '--:|--:|---|' : ''}`,
      ...first.scenarios.map((scenario) => {
        const other = otherByKey.get(scenario.key);
        const pushed = scenario.kind === 'push' ? ` (${int(scenario.linesPerSecond ?? 0)} lines/s)` : '';
        return `| ${scenario.title} | ${scenario.connections} | ${int(scenario.measured.rps)}${pushed} | ${ms(scenario.measured.p50)} | ${ms(scenario.measured.p99)} | ` +
          `${mb(scenario.peakRssBytes)} | ${ratioOf(scenario, firstReference)} |` +
          (otherByKey.size > 0 ? ` ${other ? int(other.measured.rps) : '–'} | ${other ? ms(other.measured.p99) : '–'} | ${other ? ratioOf(other, otherReference) : '–'} |` : '');
      }),
      '',
      targetsTable(evaluateTargets(run)),
      '',
      figuresTable(run),
    );
  }
  const errors = errorsText(run);
  if (errors.length > 0) lines.push('', ...errors.slice(0, -1));
  return lines.join('\n');
}
