/** The figures of bench/growth.ts and its markdown report: one table, a row per operation, a column per size. */
import type { Volumes } from './seed.ts';

const MB = 1024 * 1024;

/** An operation driven by autocannon for a fixed time. */
export type LoadFigures = {
  connections: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  max: number;
  ok: number;
  /** Non-2xx answers, errors and timeouts together. */
  failed: number;
  statusCodes: Record<string, number>;
};

/** An operation sent a few times, one request at a time. */
export type TimedFigures = {
  runs: number;
  medianMs: number;
  minMs: number;
  maxMs: number;
  /** Whatever the operation tells of its answers (bytes, rows, allocations…), from its last run. */
  details: Record<string, number | string>;
};

export type OperationResult = {
  key: string;
  title: string;
  /** The request, the big customer's id as {big}. */
  request: string;
  kind: 'load' | 'timed';
  load?: LoadFigures;
  timed?: TimedFigures;
  /** The service's peak RSS during the operation (VmHWM, reset before it, and VmRSS every 100 ms). */
  peakRssBytes: number;
  /** Share of the machine's CPU that work other than this benchmark's took during the measurement. */
  cpuOther: number;
  /** Share of the machine's CPU by group (load generator, service, database, sandbox). */
  cpuGroups: Record<string, number>;
  error?: string;
};

export type SizeResult = {
  size: number;
  volumes: Volumes;
  counts: { customers: number; irms: number; requests: number; lines: number };
  seedSeconds: number;
  seedSteps: { name: string; seconds: number }[];
  serviceStartSeconds: number;
  pushSetupSeconds: number;
  bigCustomer: {
    irms: number;
    irmPages: number;
    middlePage: number;
    datedIrms: number;
    datedPages: number;
    requests: number;
    requestPages: number;
  };
  /** Service RSS a second after it answered /ready, before anything else ran. */
  rssAtRestBytes: number;
  heapUsedAtRestBytes: number | null;
  peakRssBytes: number;
  peakRssOperation: string;
  /** pg_database_size (the sandbox's schema included), or the embedded data folder's size. */
  databaseBytes: number;
  /** PostgreSQL only: the irms table with its indexes, and the request lines with theirs. */
  irmsTableBytes: number | null;
  linesTableBytes: number | null;
  loadAverage: { before: number; after: number };
  operations: OperationResult[];
};

export type GrowthRun = {
  startedAt: string;
  seconds: number;
  backend: 'postgres' | 'embedded';
  quick: boolean;
  settings: { sizes: number[]; loadSeconds: number; warmupSeconds: number; connections: number; timedRuns: Record<string, number>; serviceEnv: Record<string, string>; nodeFlags: string[] };
  machine: { cores: number; memoryGiB: number; cpuModel: string; node: string; database: string; commit: string };
  sizes: SizeResult[];
};

export function formatCount(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

/** Milliseconds: three significant figures, no more than two decimals. */
export function ms(value: number): string {
  if (!Number.isFinite(value)) return '–';
  if (value >= 100) return formatCount(value);
  if (value >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

function mb(bytes: number): string {
  const value = bytes / MB;
  return value >= 100 ? formatCount(value) : value.toFixed(1);
}

function sizeLabel(size: number): string {
  if (size >= 1_000_000 && size % 100_000 === 0) return `${size / 1_000_000}M`;
  if (size >= 1_000 && size % 100 === 0) return `${size / 1_000}k`;
  return formatCount(size);
}

/** The figure a row's growth is read from: p50 for autocannon, the median for timed requests. */
function headline(operation: OperationResult): number {
  if (operation.error !== undefined) return Number.NaN;
  if (operation.load) return operation.load.p50;
  return operation.timed?.medianMs ?? Number.NaN;
}

function cell(operation: OperationResult | undefined): string {
  if (!operation) return '–';
  if (operation.error !== undefined) return `**${operation.error}**`;
  const disturbed = operation.cpuOther >= 0.1 ? ` (other work ${(operation.cpuOther * 100).toFixed(0)}% CPU)` : '';
  if (operation.load) {
    const { p50, p99, rps, failed } = operation.load;
    return `${ms(p50)} / ${ms(p99)} ms · ${formatCount(rps)}/s${failed > 0 ? ` · ${formatCount(failed)} failed` : ''}${disturbed}`;
  }
  const timed = operation.timed!;
  const details = timed.details;
  const extra: string[] = [];
  if (typeof details.bytes === 'number') extra.push(`${mb(details.bytes)} MB`);
  if (typeof details.rows === 'number') extra.push(`${formatCount(details.rows)} rows`);
  if (typeof details.firstByteMs === 'number') extra.push(`first byte ${ms(details.firstByteMs)} ms`);
  if (typeof details.irmsRead === 'number') extra.push(`${formatCount(details.irmsRead)} IRMs read`);
  if (typeof details.allocations === 'number') extra.push(`${formatCount(details.allocations)} allocations`);
  if (typeof details.validated === 'number' && typeof details.pushes === 'number' && details.validated < details.pushes) {
    extra.push(`${details.validated} of ${details.pushes} Validated`);
  }
  const range = timed.runs > 1 ? ` (${ms(timed.minMs)}–${ms(timed.maxMs)})` : '';
  return `${ms(timed.medianMs)} ms${range}${extra.length > 0 ? ` · ${extra.join(', ')}` : ''}${disturbed}`;
}

function growth(first: number, last: number): string {
  if (!Number.isFinite(first) || !Number.isFinite(last) || first <= 0) return '–';
  const ratio = last / first;
  return `×${ratio >= 10 ? ratio.toFixed(0) : ratio.toFixed(1)}`;
}

/** The table: a row per operation (in the order of the first size's), a column per size, and the growth from the first size to the last. */
export function renderTable(run: GrowthRun): string {
  const sizes = run.sizes;
  const first = sizes[0];
  const last = sizes[sizes.length - 1];
  // The growth column only when there is something to compare.
  const compare = first !== undefined && last !== undefined && sizes.length > 1;
  const lines: string[] = [];
  lines.push(`| operation | ${sizes.map((size) => `${sizeLabel(size.size)} IRMs`).join(' | ')} |${compare ? ` growth ${sizeLabel(first.size)} → ${sizeLabel(last.size)} |` : ''}`);
  lines.push(`|---|${sizes.map(() => '--:').join('|')}|${compare ? '--:|' : ''}`);
  const keys: { key: string; title: string }[] = [];
  for (const size of sizes) {
    for (const operation of size.operations) if (!keys.some((known) => known.key === operation.key)) keys.push({ key: operation.key, title: operation.title });
  }
  const ratio = (from: number, to: number) => (compare ? ` ${growth(from, to)} |` : '');
  for (const { key, title } of keys) {
    const of = (size: SizeResult) => size.operations.find((operation) => operation.key === key);
    const firstOp = first ? of(first) : undefined;
    const lastOp = last ? of(last) : undefined;
    lines.push(`| ${title} | ${sizes.map((size) => cell(of(size))).join(' | ')} |${ratio(firstOp ? headline(firstOp) : Number.NaN, lastOp ? headline(lastOp) : Number.NaN)}`);
  }
  const row = (title: string, value: (size: SizeResult) => number, show: (size: SizeResult) => string) =>
    lines.push(`| ${title} | ${sizes.map(show).join(' | ')} |${first && last ? ratio(value(first), value(last)) : ''}`);
  row('Service RSS at rest (after start)', (size) => size.rssAtRestBytes, (size) => `${mb(size.rssAtRestBytes)} MB`);
  row('Service peak RSS during the operations', (size) => size.peakRssBytes, (size) => `${mb(size.peakRssBytes)} MB (highest during: ${size.peakRssOperation})`);
  row(
    run.backend === 'postgres' ? 'Database size (pg_database_size)' : 'Embedded data folder',
    (size) => size.databaseBytes,
    (size) => `${mb(size.databaseBytes)} MB${size.irmsTableBytes !== null ? ` (irms ${mb(size.irmsTableBytes)} MB)` : ''}`,
  );
  row('Seeding (set-based SQL)', (size) => size.seedSeconds, (size) => `${size.seedSeconds.toFixed(1)} s`);
  row('Service start (to /ready)', (size) => size.serviceStartSeconds, (size) => `${size.serviceStartSeconds.toFixed(1)} s`);
  return lines.join('\n');
}

function volumesTable(run: GrowthRun): string {
  const lines = [
    '| size | customers | IRMs | big customer: IRMs (pages of 100; middle) | dated IRMs (pages) | requests (big customer; pages of 10) | request lines | seeded in | load average before/after |',
    '|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
  ];
  for (const size of run.sizes) {
    const big = size.bigCustomer;
    lines.push(
      `| ${sizeLabel(size.size)} | ${formatCount(size.counts.customers)} | ${formatCount(size.counts.irms)} | ` +
        `${formatCount(big.irms)} (${formatCount(big.irmPages)}; ${formatCount(big.middlePage)}) | ${formatCount(big.datedIrms)} (${formatCount(big.datedPages)}) | ` +
        `${formatCount(size.counts.requests)} (${formatCount(big.requests)}; ${formatCount(big.requestPages)}) | ${formatCount(size.counts.lines)} | ` +
        `${size.seedSeconds.toFixed(1)} s | ${size.loadAverage.before.toFixed(2)} / ${size.loadAverage.after.toFixed(2)} |`,
    );
  }
  return lines.join('\n');
}

export function renderReport(run: GrowthRun, method: string): string {
  const { machine, settings } = run;
  const requests = new Map<string, string>();
  for (const size of run.sizes) for (const operation of size.operations) if (!requests.has(operation.title)) requests.set(operation.title, operation.request);
  const failures = run.sizes.flatMap((size) =>
    size.operations.filter((operation) => operation.error !== undefined).map((operation) => `- ${sizeLabel(size.size)}: ${operation.title}: ${operation.error}`));
  return [
    `# Growth: time and memory per operation as the IRMs grow (${run.backend === 'postgres' ? 'PostgreSQL' : 'embedded database'})`,
    '',
    `${run.startedAt}, ${(run.seconds / 60).toFixed(1)} min${run.quick ? ', quick run' : ''}. ${machine.cores} cores (${machine.cpuModel}), ` +
      `${machine.memoryGiB.toFixed(0)} GiB, Node ${machine.node}, ${machine.database}, commit ${machine.commit}.`,
    '',
    method,
    '',
    `Autocannon: ${settings.connections} connections, ${settings.warmupSeconds > 0 ? `${settings.warmupSeconds} s warm-up, ` : ''}${settings.loadSeconds} s measured; ` +
      `cells are p50 / p99 latency and 2xx answers per second. Timed requests: the median of ${Object.entries(settings.timedRuns).map(([name, runs]) => `${runs} ${name}`).join(', ')} ` +
      '(after one warm-up each), the range in brackets. "growth" is the last size\'s p50 (or median) over the first\'s.',
    '',
    '## Volumes',
    '',
    volumesTable(run),
    '',
    '## Figures',
    '',
    renderTable(run),
    '',
    '## Requests',
    '',
    ...[...requests].map(([title, request]) => `- ${title}: \`${request}\``),
    ...(failures.length > 0 ? ['', '## Failures', '', ...failures] : []),
    '',
  ].join('\n');
}
