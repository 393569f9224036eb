/** The figures of bench/scaling.ts and their markdown. */
import type { CpuShares } from './processes.ts';
import type { PushOutcomes } from './pushes.ts';
import { SETTLE_SECONDS, type Delta, type TableDelta, type TableStorage } from './scaling-pgstats.ts';
import type { StatementKind } from './scaling-statements.ts';

/** '1': one service process; '2': two on the same database; '1 again': the first alone again, after the second stopped. */
export type Config = '1' | '2' | '1 again';

export type LoadFigures = {
  /** 2xx answers per second, summed over the processes. */
  rps: number;
  /** The worst process's p50 and p99 (ms). */
  p50: number;
  p99: number;
  ok: number;
  bad: number;
  seconds: number;
  perProcess: { server: string; connections: number; rps: number; p50: number; p99: number }[];
};

/** CPU time per request, in ms, by group (service processes, their database sessions, the sandbox with its sessions). */
export type CpuPerRequest = { service: number; database: number; sandbox: number; total: number };

export type ScenarioRun = {
  key: 'customer-by-id' | 'irm-page' | 'push-999';
  title: string;
  config: Config;
  processes: number;
  connections: number;
  request: string;
  figures: LoadFigures;
  lines?: number;
  outcomes?: PushOutcomes;
  linesPerSecond?: number;
  cpu: CpuShares;
  cpuPerRequestMs: CpuPerRequest;
  peakRssMb: Record<string, number>;
  /** PostgreSQL sessions by application_name at the end of the run. */
  sessions: Record<string, number>;
};

export type StatementTotals = { total: number; byKind: Record<StatementKind, number> };

export type IdleRun = {
  config: Config;
  processes: number;
  seconds: number;
  delta: Delta;
  /** Statements each service process sent over the window. */
  statements: Record<string, StatementTotals>;
  /** Each process's most frequent statements (their first 120 characters), per second. */
  topStatements: Record<string, { text: string; perSecond: number }[]>;
  cpu: CpuShares;
};

export type OutboxRun = {
  key: 'test-burst' | 'push-999';
  title: string;
  config: Config;
  processes: number;
  /** Events written in the window (rows inserted into events). */
  events: number;
  /** Deliveries the receiver got in the window, and the distinct webhook-ids among them. */
  deliveries: number;
  distinctDeliveries: number;
  /** From the first request to the last delivery recorded (jobs completed). */
  workSeconds: number;
  /** The whole window, settling of the statistics included. */
  windowSeconds: number;
  /** The database's figures over the window, less the idle database's in the same time. */
  delta: Delta;
  /** Straight from the counters, idle work included. */
  rawDelta: Delta;
  /** Statements of the service processes over the window, less their idle rate. */
  statements: StatementTotals;
  rawStatements: StatementTotals;
  /** The most frequent statements of the window (idle work included), per event. */
  topStatements: { text: string; perEvent: number }[];
  /** The benchmark's own statements on the database in the window (taken off xact_commit). */
  ownStatements: number;
  cpu: CpuShares;
};

export type ScalingResult = {
  startedAt: string;
  seconds: number;
  command: string;
  quick: boolean;
  machine: { cpuModel: string; cores: number; memoryGiB: number; node: string; postgres: string; commit: string; loadAverageBefore: number[]; loadAverageAfter: number[] };
  postgresSettings: Record<string, string>;
  settings: {
    seconds: number;
    warmupSeconds: number;
    readConnections: number;
    pushConnections: number;
    testEvents: number;
    testConcurrency: number;
    secondProcess: 'full' | 'api-only';
    serviceEnv: Record<string, string>;
    secondEnv: Record<string, string>;
    nodeFlags: string[];
    sandboxProcessingDelayMs: number;
    database: string;
    sandboxDatabase: string;
  };
  seeded: { customers: number; irms: number; requests: number; lines: number; seconds: number; bigCustomerIrms: number };
  setup: { pushCustomers: number; pushableIrms: number; seconds: number };
  idle: IdleRun[];
  scenarios: ScenarioRun[];
  outbox: OutboxRun[];
  /** The largest tables at the end: bytes (heap, indexes, TOAST), of which indexes, and rows. */
  tableSizes: { table: string; bytes: number; indexBytes: number; rows: number }[];
  /** The growing tables after VACUUM (ANALYZE): rows, live row size, B-tree depth and density (null without pgstattuple). */
  storage: TableStorage[] | null;
  walinspect: boolean;
  notes: string[];
};

const int = (value: number): string => (Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : 'n/a');
const dec = (value: number, digits = 1): string => (Number.isFinite(value) ? value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : 'n/a');
const ms = (value: number): string => (!Number.isFinite(value) ? 'n/a' : value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2));
const pct = (value: number | undefined): string => (value === undefined || !Number.isFinite(value) ? '–' : `${(value * 100).toFixed(0)}%`);
const configName = (config: Config): string => (config === '1' ? 'one process' : config === '2' ? 'two processes' : 'one process, again');

/** Shares of the machine by group kind: the service processes, their sessions, the sandbox (program and sessions). */
export function cpuGroups(cpu: CpuShares): { services: number; database: number; sandbox: number; load: number; other: number; idle: number; byGroup: Record<string, number> } {
  let services = 0;
  let database = 0;
  let sandbox = 0;
  let load = 0;
  for (const [group, share] of Object.entries(cpu.groups)) {
    if (group.startsWith('service')) services += share;
    else if (group.startsWith('sandbox')) sandbox += share;
    else if (group.startsWith('database')) database += share;
    else load += share;
  }
  return { services, database, sandbox, load, other: cpu.other, idle: Math.max(0, 1 - cpu.busy), byGroup: cpu.groups };
}

function scenarioTable(result: ScalingResult): string {
  const rows = [
    '| scenario | processes | conns | req/s | p50 ms | p99 ms | lines/s | CPU: services | their database sessions | sandbox | load generator | other work | idle | CPU per request (service + database + sandbox), ms |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
  ];
  for (const run of result.scenarios) {
    const cpu = cpuGroups(run.cpu);
    const perProcessCpu = Object.entries(cpu.byGroup).filter(([group]) => group.startsWith('service')).map(([, share]) => pct(share)).join(' + ');
    rows.push(
      `| ${run.title} | ${configName(run.config)} | ${run.figures.perProcess.map((process) => process.connections).join(' + ')} | ${int(run.figures.rps)} | ${ms(run.figures.p50)} | ${ms(run.figures.p99)} | ` +
        `${run.linesPerSecond !== undefined ? int(run.linesPerSecond) : '–'} | ${perProcessCpu || '–'} | ${pct(cpu.database)} | ${pct(cpu.sandbox)} | ${pct(cpu.load)} | ${pct(cpu.other)} | ${pct(cpu.idle)} | ` +
        `${ms(run.cpuPerRequestMs.service)} + ${ms(run.cpuPerRequestMs.database)} + ${ms(run.cpuPerRequestMs.sandbox)} = ${ms(run.cpuPerRequestMs.total)} |`,
    );
  }
  return rows.join('\n');
}

function comparisonTable(result: ScalingResult): string {
  const rows = ['| scenario | one process | two processes | change | one process, again |', '|---|--:|--:|--:|--:|'];
  for (const key of ['customer-by-id', 'irm-page', 'push-999'] as const) {
    const of = (config: Config) => result.scenarios.find((run) => run.key === key && run.config === config);
    const one = of('1');
    const two = of('2');
    const again = of('1 again');
    if (!one || !two) continue;
    const figure = (run: ScenarioRun | undefined): string =>
      !run ? '–' : key === 'push-999' ? `${int(run.linesPerSecond ?? Number.NaN)} lines/s, p99 ${ms(run.figures.p99)} ms` : `${int(run.figures.rps)} req/s, p99 ${ms(run.figures.p99)} ms`;
    const value = (run: ScenarioRun): number => (key === 'push-999' ? run.linesPerSecond ?? Number.NaN : run.figures.rps);
    const change = value(two) / value(one) - 1;
    rows.push(`| ${one.title} | ${figure(one)} | ${figure(two)} | ${change >= 0 ? '+' : ''}${(change * 100).toFixed(0)}% | ${figure(again)} |`);
  }
  return rows.join('\n');
}

function idleTable(result: ScalingResult): string {
  const rows = [
    '| processes | window s | statements/s, each process | transactions/s | rows written/s | WAL bytes/s (this database) | CPU: services | database sessions |',
    '|---|--:|---|--:|--:|--:|--:|--:|',
  ];
  for (const run of result.idle) {
    const perProcess = Object.entries(run.statements).map(([server, counts]) => `${server}: ${dec(counts.total / run.seconds)} (pg-boss ${dec(counts.byKind.pgBoss / run.seconds)}, outbox ${dec(counts.byKind.outbox / run.seconds)})`).join('; ');
    const { database } = run.delta;
    const written = database.tupInserted + database.tupUpdated + database.tupDeleted;
    const cpu = cpuGroups(run.cpu);
    rows.push(
      `| ${configName(run.config)} | ${dec(run.seconds)} | ${perProcess} | ${dec(database.xactCommit / run.seconds)} | ${dec(written / run.seconds)} | ` +
        `${run.delta.wal ? int(run.delta.wal.bytes / run.seconds) : 'n/a'} | ${pct(cpu.services)} | ${pct(cpu.database)} |`,
    );
  }
  return rows.join('\n');
}

function idleDetails(result: ScalingResult): string {
  const out: string[] = [];
  for (const run of result.idle) {
    out.push(`**${configName(run.config)}, idle**: the most frequent statements (first 120 characters), per second`);
    out.push('');
    out.push('| process | statement | per second |');
    out.push('|---|---|--:|');
    for (const [label, top] of Object.entries(run.topStatements)) {
      for (const entry of top.slice(0, 8)) out.push(`| ${label} | \`${entry.text.replaceAll('|', '\\|').replaceAll('`', "'")}\` | ${dec(entry.perSecond)} |`);
    }
    out.push('');
    const scans = Object.entries(run.delta.tables)
      .filter(([, table]) => table.seqScans > 0 || table.indexScans > 0)
      .sort(([, a], [, b]) => b.seqRows - a.seqRows || b.indexScans - a.indexScans)
      .slice(0, 8);
    if (scans.length > 0) {
      out.push('| table | sequential scans/s | rows read by them/s | index scans/s |');
      out.push('|---|--:|--:|--:|');
      for (const [name, table] of scans) out.push(`| ${name} | ${dec(table.seqScans / run.seconds)} | ${int(table.seqRows / run.seconds)} | ${dec(table.indexScans / run.seconds)} |`);
      out.push('');
    }
  }
  return out.join('\n');
}

function outboxTable(result: ScalingResult): string {
  const runs = result.outbox;
  if (runs.length === 0) return '(no outbox runs)';
  const header = `| per event | ${runs.map((run) => `${run.title}, ${configName(run.config)}`).join(' | ')} |`;
  const rule = `|---|${runs.map(() => '--:').join('|')}|`;
  const row = (label: string, cell: (run: OutboxRun) => string): string => `| ${label} | ${runs.map(cell).join(' | ')} |`;
  const per = (run: OutboxRun, value: number, digits = 1): string => dec(value / Math.max(1, run.events), digits);
  return [
    header,
    rule,
    row('events written (the denominator)', (run) => int(run.events)),
    row('deliveries received (distinct)', (run) => `${int(run.deliveries)} (${int(run.distinctDeliveries)})`),
    row('first request to last delivery recorded, s', (run) => dec(run.workSeconds, 2)),
    row('events per second through the whole path', (run) => int(run.events / run.workSeconds)),
    row('transactions committed', (run) => per(run, run.delta.database.xactCommit, 2)),
    row('statements sent by the service', (run) => per(run, run.statements.total, 2)),
    row('… of them BEGIN/COMMIT', (run) => per(run, run.statements.byKind.transaction, 2)),
    row('… pg-boss (schema pgboss)', (run) => per(run, run.statements.byKind.pgBoss, 2)),
    row('… events and webhook tables', (run) => per(run, run.statements.byKind.outbox, 2)),
    row('… anything else', (run) => per(run, run.statements.byKind.other, 2)),
    row('rows inserted / updated / deleted', (run) =>
      `${per(run, run.delta.database.tupInserted)} / ${per(run, run.delta.database.tupUpdated)} / ${per(run, run.delta.database.tupDeleted)}`),
    row('buffer reads (hit + read)', (run) => per(run, run.delta.database.blksHit + run.delta.database.blksRead, 0)),
    row('WAL bytes, this database', (run) => (run.delta.wal ? int(run.delta.wal.bytes / Math.max(1, run.events)) : 'n/a')),
    row('… of which full-page images', (run) => (run.delta.wal ? int(run.delta.wal.fpiBytes / Math.max(1, run.events)) : 'n/a')),
    row('… of which commit records', (run) => (run.delta.wal ? int(run.delta.wal.commitBytes / Math.max(1, run.events)) : 'n/a')),
    row('WAL bytes, whole server (LSN delta)', (run) => int(run.delta.serverWalBytes / Math.max(1, run.events))),
    row('CPU: services / database / sandbox, ms', (run) => {
      const cpu = cpuGroups(run.cpu);
      const msOf = (share: number): string => ms((share * result.machine.cores * run.workSeconds * 1000) / Math.max(1, run.events));
      return `${msOf(cpu.services)} / ${msOf(cpu.database)} / ${msOf(cpu.sandbox)}`;
    }),
  ].join('\n');
}

/** The tables of a run that took rows or WAL, most WAL first. */
function tableBreakdown(run: OutboxRun): string {
  const entries = Object.entries(run.delta.tables)
    .filter(([, table]) => table.inserted + table.updated + table.deleted >= run.events * 0.01 || table.walBytes >= run.events * 5)
    .sort(([, a], [, b]) => b.walBytes - a.walBytes || b.inserted + b.updated - (a.inserted + a.updated));
  const per = (value: number, digits = 2): string => dec(value / Math.max(1, run.events), digits);
  const rows = [
    `**${run.title}, ${configName(run.config)}** (${int(run.events)} events; per event)`,
    '',
    '| table | inserted | updated (HOT) | deleted | WAL bytes (of which full pages) | WAL records |',
    '|---|--:|--:|--:|--:|--:|',
  ];
  const line = (name: string, table: TableDelta): string =>
    `| ${name} | ${per(table.inserted)} | ${per(table.updated)} (${per(table.hotUpdated)}) | ${per(table.deleted)} | ${int(table.walBytes / Math.max(1, run.events))} (${int(table.walFpiBytes / Math.max(1, run.events))}) | ${per(table.walRecords)} |`;
  for (const [name, table] of entries) rows.push(line(name, table));
  if (run.delta.wal) rows.push(`| commit records and the like | | | | ${int(run.delta.wal.commitBytes / Math.max(1, run.events))} | |`);
  if (run.topStatements.length > 0) {
    rows.push('', '| statement (first 120 characters; idle work included) | per event |', '|---|--:|');
    for (const entry of run.topStatements.slice(0, 10)) rows.push(`| \`${entry.text.replaceAll('|', '\\|').replaceAll('`', "'")}\` | ${dec(entry.perEvent, 2)} |`);
  }
  return rows.join('\n');
}

export function renderScaling(result: ScalingResult): string {
  const { machine, settings, seeded } = result;
  const out: string[] = [];
  out.push(`# Scaling run ${result.startedAt}${result.quick ? ' (quick)' : ''}`);
  out.push('');
  out.push(`Command: \`${result.command}\` (${dec(result.seconds / 60)} min). ${machine.cores} cores (${machine.cpuModel}), ${dec(machine.memoryGiB, 0)} GiB, Node ${machine.node}, ${machine.postgres}; code ${machine.commit}.`);
  out.push(`Load average before ${machine.loadAverageBefore.map((value) => value.toFixed(2)).join(' ')}, after ${machine.loadAverageAfter.map((value) => value.toFixed(2)).join(' ')}.`);
  out.push(`PostgreSQL settings: ${Object.entries(result.postgresSettings).map(([name, value]) => `${name}=${value}`).join(', ')}.`);
  out.push('');
  out.push(`Database \`${settings.database}\` (the service's, both processes), \`${settings.sandboxDatabase}\` (the sandbox program's own, so that the service's counters are its own): ` +
    `${int(seeded.customers)} customers, ${int(seeded.irms)} IRMs (one customer ${int(seeded.bigCustomerIrms)}), ${int(seeded.requests)} GenEBRC requests, ${int(seeded.lines)} lines, seeded in ${dec(seeded.seconds)} s; ` +
    `${result.setup.pushCustomers} push customers verified through the API with ${int(result.setup.pushableIrms)} pushable IRMs.`);
  out.push(`Each measurement ${settings.seconds} s${settings.warmupSeconds > 0 ? ` after a ${settings.warmupSeconds} s warm-up` : ''}; reads ${settings.readConnections} connections and pushes ${settings.pushConnections} in all, split evenly between the processes ` +
    `(one autocannon per process, in parallel: req/s summed, the worst process's p50 and p99). The second process: ${settings.secondProcess === 'full' ? 'the same settings as the first (RUN_POLLER and RUN_WEBHOOKS true: both poll, relay and deliver)' : 'RUN_POLLER=false and RUN_WEBHOOKS=false (API only)'}. ` +
    `Node flags: \`${settings.nodeFlags.join(' ')}\`. Sandbox processing delay ${settings.sandboxProcessingDelayMs} ms, its rate limit lifted.`);
  out.push('');
  out.push('## One process against two');
  out.push('');
  out.push(comparisonTable(result));
  out.push('');
  out.push('CPU shares are of the whole machine (100% = every core); "other work" is what processes outside this benchmark took. CPU per request is the CPU time of the service processes, their database sessions and the sandbox (program and sessions) over the window, divided by the requests answered.');
  out.push('');
  out.push(scenarioTable(result));
  out.push('');
  out.push('## Idle background work');
  out.push('');
  out.push('Nothing asked of the service: what its pollers, relay, delivery loop, pg-boss supervision and housekeeping cost.');
  out.push('');
  out.push(idleTable(result));
  out.push('');
  out.push(idleDetails(result));
  out.push('## Cost per event of the outbox and pg-boss');
  out.push('');
  out.push(`A webhook endpoint subscribed to \`*\` at a receiver in the benchmark's process (204 at once). "test events": ${int(settings.testEvents)} POST /webhook-endpoints/{id}/test, ${settings.testConcurrency} at a time ` +
    '(each: the event, its relay to one attempt and one pg-boss job, the delivery, its outcome). "999-line push": one push of 999 lines, then its processing by the poller ' +
    '(the request\'s acknowledged and processed events and 999 ebrc.generated, relayed, delivered and recorded): the push\'s own cost is in its figures (see the tables below for where it went). ' +
    `Each window runs from just before the first request to ${SETTLE_SECONDS} s after the last delivery was recorded (PostgreSQL publishes an idle pooled session's counters up to 10 s late); the idle database's work in the same time (measured above, same processes) is taken off, and so are the benchmark's own statements. Events are counted in the events table itself.`);
  out.push('');
  out.push(outboxTable(result));
  out.push('');
  for (const run of result.outbox) {
    out.push(tableBreakdown(run));
    out.push('');
  }
  if (result.tableSizes.length > 0) {
    out.push('## Table sizes at the end');
    out.push('');
    out.push('Dead rows included: autovacuum is what reclaims them, and whether it ran depends on the server (see the settings above).');
    out.push('');
    out.push('| table | rows | size (heap, indexes, TOAST) | of which indexes | bytes per row |');
    out.push('|---|--:|--:|--:|--:|');
    for (const table of result.tableSizes) {
      out.push(`| ${table.table} | ${int(table.rows)} | ${dec(table.bytes / 1024 ** 2)} MB | ${dec(table.indexBytes / 1024 ** 2)} MB | ${table.rows > 0 ? int(table.bytes / table.rows) : '–'} |`);
    }
    out.push('');
  }
  if (result.storage) {
    out.push('## The growing tables: rows and indexes');
    out.push('');
    out.push('After the run and a VACUUM (ANALYZE) of each (pgstattuple, pgstatindex). Level is the B-tree\'s height above its leaves (0: the root is the only page); an index on N entries with E entries per leaf page and a fan-out of about E has about log_E(N) levels.');
    out.push('');
    out.push('| table | rows | bytes per live row | total MB (heap, indexes, TOAST) | B-tree indexes |');
    out.push('|---|--:|--:|--:|--:|');
    for (const table of result.storage) out.push(`| ${table.table} | ${int(table.rows)} | ${int(table.rowBytes)} | ${dec(table.totalBytes / 1024 ** 2)} | ${table.indexes.length} |`);
    out.push('');
    out.push('| index | entries | MB | leaf pages | entries per leaf page | level | leaf density |');
    out.push('|---|--:|--:|--:|--:|--:|--:|');
    for (const table of result.storage) {
      for (const index of table.indexes) {
        out.push(`| ${index.name} | ${int(index.entries)} | ${dec(index.bytes / 1024 ** 2, 2)} | ${int(index.leafPages)} | ${index.leafPages > 0 ? int(index.entries / index.leafPages) : '–'} | ${index.level} | ${Number.isFinite(index.leafDensity) && index.leafPages > 0 ? `${dec(index.leafDensity, 0)}%` : '–'} |`);
      }
    }
    out.push('');
  }
  if (result.notes.length > 0) {
    out.push('## Notes');
    out.push('');
    for (const note of result.notes) out.push(`- ${note}`);
    out.push('');
  }
  return out.join('\n');
}
