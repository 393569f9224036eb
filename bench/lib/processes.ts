import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SERVICE_MAIN, startScript } from './start-script.ts';

/** A server the benchmark started: a child process listening on a loopback port. */
export type Server = {
  name: string;
  pid: number;
  baseUrl: string;
  logFile: string;
  stop(): Promise<void>;
};

const running = new Set<ChildProcess>();

// Whatever happens to the benchmark, the servers it started do not outlive it.
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    process.stderr.write(`\n${signal}: stopping the servers started by the benchmark\n`);
    process.exit(130);
  });
}

/** A port free on the loopback interface right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts `node <script>` with the given environment (added to this process's), its output in a log
 * file, and waits until `readyPath` answers 200 (at most `startTimeoutMs`).
 */
export async function startServer(options: {
  name: string;
  script: string;
  /** Node's own flags, before the script (after `npm start`'s, for the service). */
  nodeFlags?: readonly string[];
  env: Record<string, string>;
  port: number;
  readyPath: string;
  logDir: string;
  startTimeoutMs?: number;
}): Promise<Server> {
  fs.mkdirSync(options.logDir, { recursive: true });
  const logFile = path.join(options.logDir, `${options.name}.log`);
  const log = fs.openSync(logFile, 'w');
  // The service starts as `npm start` starts it (its environment and Node's flags), before the options' own.
  const asStarted = path.resolve(options.script) === SERVICE_MAIN ? startScript() : { env: {}, nodeFlags: [] };
  const child = spawn(process.execPath, [...asStarted.nodeFlags, ...(options.nodeFlags ?? []), options.script], {
    env: { ...process.env, ...asStarted.env, ...options.env, PORT: String(options.port) },
    stdio: ['ignore', log, log],
  });
  fs.closeSync(log);
  running.add(child);
  let exited: number | null | undefined;
  child.once('exit', (code) => {
    exited = code;
    running.delete(child);
  });
  const baseUrl = `http://127.0.0.1:${options.port}`;
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  for (;;) {
    if (exited !== undefined) throw new Error(`${options.name} exited with code ${exited} while starting; see ${logFile}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${options.name} did not answer ${options.readyPath} in time; see ${logFile}`);
    }
    try {
      const response = await fetch(`${baseUrl}${options.readyPath}`, { signal: AbortSignal.timeout(2_000) });
      if (response.ok) break;
    } catch {
      // Not listening yet.
    }
    await sleep(200);
  }
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${options.name} has no pid`);
  return {
    name: options.name,
    pid,
    baseUrl,
    logFile,
    async stop() {
      if (exited !== undefined) return;
      const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const stopped = await Promise.race([done.then(() => true), sleep(20_000).then(() => false)]);
      if (!stopped) {
        child.kill('SIGKILL');
        await done;
      }
    },
  };
}

/** A process's resident memory now, in bytes (0 when it is gone). */
export function rssOf(pid: number): number {
  return statusField(pid, 'VmRSS') ?? 0;
}

export type HeapFigures = { heapTotal: number; heapUsed: number; external: number; rss: number };

/** The V8 heap as the service's own /metrics reports it (prom-client's default process metrics), in bytes. */
export async function heapOf(baseUrl: string): Promise<HeapFigures | undefined> {
  try {
    const text = await (await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
    const value = (name: string): number => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? Number.NaN);
    return {
      heapTotal: value('nodejs_heap_size_total_bytes'),
      heapUsed: value('nodejs_heap_size_used_bytes'),
      external: value('nodejs_external_memory_bytes'),
      rss: value('process_resident_memory_bytes'),
    };
  } catch {
    return undefined;
  }
}

function statusField(pid: number, field: string): number | undefined {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The resident memory of a process over a measurement: VmRSS sampled every 100 ms, and VmHWM (the
 * kernel's own peak, reset at start through /proc/<pid>/clear_refs where the kernel lets us).
 */
export class RssSampler {
  readonly #pid: number;
  #peak = 0;
  #timer: NodeJS.Timeout | undefined;
  #peakWasReset = false;

  constructor(pid: number) {
    this.#pid = pid;
  }

  start(): void {
    try {
      fs.writeFileSync(`/proc/${this.#pid}/clear_refs`, '5');
      this.#peakWasReset = true;
    } catch {
      // Older kernels or no permission: the samples still give the peak, to 100 ms.
    }
    this.#peak = statusField(this.#pid, 'VmRSS') ?? 0;
    this.#timer = setInterval(() => {
      this.#peak = Math.max(this.#peak, statusField(this.#pid, 'VmRSS') ?? 0);
    }, 100);
  }

  /** The peak in bytes since start(). */
  stop(): number {
    clearInterval(this.#timer);
    const kernelPeak = this.#peakWasReset ? (statusField(this.#pid, 'VmHWM') ?? 0) : 0;
    return Math.max(this.#peak, statusField(this.#pid, 'VmRSS') ?? 0, kernelPeak);
  }
}

function machineJiffies(): { busy: number; total: number } {
  const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const values = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = values.reduce((sum, value) => sum + value, 0);
  const idle = (values[3] ?? 0) + (values[4] ?? 0);
  return { busy: total - idle, total };
}

function processJiffies(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the command.
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

export type CpuShares = {
  /** Share of the machine's CPU time that was busy. */
  busy: number;
  /** Share used by the benchmark: itself (autocannon), the servers it started and their database sessions. */
  ours: number;
  /** Share used by everything else on the machine (other work competing with the measurement). */
  other: number;
  /** `ours` by group (load generator, service, database, ...), as shares of the machine. */
  groups: Record<string, number>;
  /** The CPU time each group used, in seconds. */
  groupSeconds: Record<string, number>;
};

/** /proc counts CPU time in clock ticks of 1/100 s (USER_HZ, 100 on every Linux this runs on). */
const TICKS_PER_SECOND = 100;

export type OwnProcess = { pid: number; group: string };

/**
 * How the machine's CPU was spent during a measurement. The benchmark's own processes are listed at
 * start and at stop (database sessions come and go); a pid first seen at stop counts with all its time.
 */
export class CpuMeter {
  readonly #own: () => Promise<OwnProcess[]>;
  #machine = { busy: 0, total: 0 };
  #processes = new Map<number, number>();

  constructor(own: () => Promise<OwnProcess[]>) {
    this.#own = own;
  }

  async start(): Promise<void> {
    this.#processes = new Map((await this.#own()).map(({ pid }) => [pid, processJiffies(pid)]));
    this.#machine = machineJiffies();
  }

  async stop(): Promise<CpuShares> {
    const machine = machineJiffies();
    const own = new Map<number, string>();
    for (const { pid, group } of await this.#own()) own.set(pid, group);
    for (const pid of this.#processes.keys()) if (!own.has(pid)) own.set(pid, 'database');
    const total = Math.max(1, machine.total - this.#machine.total);
    const busy = machine.busy - this.#machine.busy;
    const groups: Record<string, number> = {};
    const groupSeconds: Record<string, number> = {};
    let ours = 0;
    for (const [pid, group] of own) {
      const used = Math.max(0, processJiffies(pid) - (this.#processes.get(pid) ?? 0));
      ours += used;
      groups[group] = (groups[group] ?? 0) + used / total;
      groupSeconds[group] = (groupSeconds[group] ?? 0) + used / TICKS_PER_SECOND;
    }
    return { busy: busy / total, ours: Math.min(busy, ours) / total, other: Math.max(0, busy - ours) / total, groups, groupSeconds };
  }
}
