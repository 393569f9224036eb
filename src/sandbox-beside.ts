/**
 * `npm start` in sandbox mode with no AUTHORITY_URL: the sandbox authority program (sandbox/main.ts) runs beside the
 * service, so one command still starts everything (contract, section 7).
 *
 * - If a sandbox already answers on 127.0.0.1:SANDBOX_PORT (its /health says `program: 'authority-sandbox'`), the
 *   service uses it.
 * - Otherwise the service starts one as a child process: not detached (same process group, so Ctrl-C in a terminal
 *   stops both) but unref'd, its output appended to DATA_DIR/sandbox.log, its storage next to the service's own
 *   (DATA_DIR/sandbox, or the schema authority_sandbox of DATABASE_URL).
 * - The sandbox is a program of its own: a service killed with SIGKILL leaves it running, with its state, and the next
 *   start reuses it. A service stopped with SIGTERM or SIGINT stops it too when it keeps its state in the service's
 *   data folder (DATA_DIR/sandbox: one service per folder, so no other uses it), whether this service started it or
 *   found it running. On PostgreSQL the sandbox's schema is shared by every service on the database, and so is the
 *   sandbox: it keeps running. /health names the sandbox's pid, which the service logs.
 * - Two services starting at once both end up on one sandbox: the child that loses the port (or the data folder)
 *   exits, and its service uses the winner.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from './config.ts';

/** What the sandbox's /health names itself. */
const SANDBOX_PROGRAM = 'authority-sandbox';

const SANDBOX_MAIN = path.resolve(import.meta.dirname, '..', 'sandbox', 'main.ts');
const PROBE_TIMEOUT_MS = 2_000;
const PROBE_INTERVAL_MS = 150;
/**
 * How long a sandbox that another process started may take to answer once ours has exited. Ours loses a race by
 * EADDRINUSE, when the winner already listens; on the same data folder the two services' own lock decides anyway.
 */
const GRACE_AFTER_EXIT_MS = 2_000;
const LOG_TAIL_BYTES = 2_000;

export type SandboxBeside = {
  /** The base URL the service uses as AUTHORITY_URL. */
  url: string;
  /** started: this process spawned it; reused: one was already answering on the port. */
  how: 'started' | 'reused';
  /** The program's pid, as its /health names it. */
  pid: number | undefined;
  /** Where the started program's output goes. */
  logFile: string;
  /** Whether the sandbox keeps its state in this service's data folder, and so stops with the service (stop()). */
  stopsWithService: boolean;
  /** Called if the program this process started exits while the service runs. */
  onExit(listener: (code: number | null, signal: NodeJS.Signals | null) => void): void;
};

/** How long a sandbox stopped with the service may take to close its storage. */
const STOP_TIMEOUT_MS = 15_000;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Stops the sandbox with a SIGTERM and waits (bounded) until its process is gone: it closes its storage and releases
 * its data folder first. Whether it ended.
 */
export async function stopSandbox(pid: number, timeoutMs = STOP_TIMEOUT_MS): Promise<boolean> {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return true;
  }
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}

/** The sandbox could not be started or reached: a sentence for the operator, not a stack trace. */
export class SandboxBesideError extends Error {}

type Probe = { state: 'sandbox' | 'starting' | 'nothing' | 'other'; detail: string; pid?: number; dataDir?: string | null };

/** What answers GET /health at the URL: the sandbox (healthy or not yet), nothing, or another program. */
async function probe(url: string): Promise<Probe> {
  let response: Response;
  try {
    response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
  } catch (error) {
    const code = ((error as Error).cause as NodeJS.ErrnoException | undefined)?.code;
    if (code === 'ECONNREFUSED') return { state: 'nothing', detail: 'nothing listens there' };
    return { state: 'other', detail: `GET /health failed: ${String((error as Error).cause ?? error)}` };
  }
  const body = (await response.json().catch(() => undefined)) as { status?: unknown; program?: unknown; pid?: unknown; dataDir?: unknown } | undefined;
  if (body?.program !== SANDBOX_PROGRAM) return { state: 'other', detail: `GET /health answered HTTP ${response.status}, not as the sandbox` };
  if (response.status === 200 && body.status === 'ok') {
    return {
      state: 'sandbox',
      detail: 'the sandbox answers',
      pid: Number.isInteger(body.pid) ? (body.pid as number) : undefined,
      dataDir: typeof body.dataDir === 'string' ? body.dataDir : null,
    };
  }
  return { state: 'starting', detail: `the sandbox answers HTTP ${response.status} (${String(body.status)})` };
}

/** What the log file gained since `from`, at most its last LOG_TAIL_BYTES. */
function logTail(file: string, from: number): string {
  try {
    const text = fs.readFileSync(file).subarray(from).toString('utf8');
    return text.length > LOG_TAIL_BYTES ? `…${text.slice(-LOG_TAIL_BYTES)}` : text;
  } catch {
    return '';
  }
}

/**
 * The sandbox the service should use when it runs in sandbox mode with no AUTHORITY_URL (undefined otherwise):
 * reuses the one answering on SANDBOX_PORT, or starts one and waits (bounded) until it answers.
 */
export async function sandboxBeside(
  config: Config,
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<SandboxBeside | undefined> {
  if (config.authorityMode !== 'sandbox' || config.authorityUrl !== undefined) return undefined;
  const env = options.env ?? process.env;
  const timeoutMs = options.timeoutMs ?? 60_000;
  const url = `http://127.0.0.1:${config.sandboxPort}`;
  const logFile = path.join(config.dataDir, 'sandbox.log');
  const sandboxDataDir = path.join(config.dataDir, 'sandbox');
  // A sandbox found running: ours to stop with the service when its state is in our data folder.
  const reused = (found: Probe): SandboxBeside => ({
    url,
    how: 'reused',
    pid: found.pid,
    logFile,
    stopsWithService: found.pid !== undefined && config.databaseUrl === undefined && found.dataDir === path.resolve(sandboxDataDir),
    onExit: () => undefined,
  });
  const advice = `set SANDBOX_PORT to a free port, or AUTHORITY_URL to an authority that is already running`;

  const first = await probe(url);
  if (first.state === 'sandbox') return reused(first);
  if (first.state === 'other') {
    throw new SandboxBesideError(`SANDBOX_PORT ${config.sandboxPort}: ${url} is taken by something that is not the sandbox authority (${first.detail}); ${advice}.`);
  }

  // Nothing there (or a sandbox there that is not healthy yet, which we wait for rather than race).
  let child: ReturnType<typeof spawn> | undefined;
  let exit: { code: number | null; signal: NodeJS.Signals | null; at: number } | undefined;
  let logStart = 0;
  const exitListeners: ((code: number | null, signal: NodeJS.Signals | null) => void)[] = [];
  if (first.state === 'nothing') {
    fs.mkdirSync(config.dataDir, { recursive: true });
    const fd = fs.openSync(logFile, 'a');
    try {
      logStart = fs.fstatSync(fd).size;
      // Our settings win; the operator's other SANDBOX_* settings (SANDBOX_ALLOWED_IPS, its rate limit…) pass through.
      const passed = Object.fromEntries(Object.entries(env).filter(([name, value]) => name.startsWith('SANDBOX_') && value !== undefined));
      child = spawn(process.execPath, [SANDBOX_MAIN], {
        cwd: path.resolve(import.meta.dirname, '..'),
        detached: false,
        stdio: ['ignore', fd, fd],
        env: {
          PATH: env.PATH ?? '',
          HOME: env.HOME ?? '',
          SANDBOX_ENVELOPE_PROFILE: config.authorityEnvelopeProfile,
          ...passed,
          SANDBOX_PORT: String(config.sandboxPort),
          SANDBOX_HOST: '127.0.0.1',
          ...(config.databaseUrl === undefined
            ? { SANDBOX_DATA_DIR: sandboxDataDir, SANDBOX_DATABASE_URL: '' }
            : { SANDBOX_DATABASE_URL: config.databaseUrl }),
          SANDBOX_PROCESSING_DELAY_MS: String(config.sandboxProcessingDelayMs),
          SANDBOX_LOG_LEVEL: config.logLevel,
        },
      });
    } finally {
      fs.closeSync(fd);
    }
    // Not a handle that keeps the service alive, and not a process that the service's end takes with it.
    child.unref();
    child.on('error', (error) => {
      exit ??= { code: null, signal: null, at: Date.now() };
      try {
        fs.appendFileSync(logFile, `ebrc-gateway: could not start the sandbox program: ${error.message}\n`);
      } catch {
        // the error message below still says it could not be started
      }
    });
    child.on('exit', (code, signal) => {
      exit ??= { code, signal, at: Date.now() };
      for (const listener of exitListeners) listener(code, signal);
    });
  }

  const deadline = Date.now() + timeoutMs;
  let last = first;
  for (;;) {
    last = await probe(url);
    if (last.state === 'sandbox') {
      if (child === undefined || exit !== undefined) return reused(last);
      return {
        url,
        how: 'started',
        pid: child.pid,
        logFile,
        stopsWithService: config.databaseUrl === undefined,
        onExit: (listener) => exitListeners.push(listener),
      };
    }
    const now = Date.now();
    if (exit !== undefined) {
      // Ours failed, or lost the race for the port: the winner answers within the grace.
      if (now - exit.at > GRACE_AFTER_EXIT_MS) {
        const how = exit.signal !== null ? `was killed by ${exit.signal}` : exit.code !== null ? `exited with code ${exit.code}` : 'could not be started';
        const tail = logTail(logFile, logStart).trim();
        throw new SandboxBesideError(
          `The sandbox authority (started beside the service on SANDBOX_PORT ${config.sandboxPort}) ${how} before it answered at ${url}/health; ` +
            `see its log ${logFile}; ${advice}.${tail ? `\nThe end of its log:\n${tail}` : ''}`,
        );
      }
    } else if (now >= deadline) {
      if (child !== undefined) child.kill('SIGTERM');
      throw new SandboxBesideError(
        `The sandbox authority on SANDBOX_PORT ${config.sandboxPort} did not answer at ${url}/health within ${Math.round(timeoutMs / 1000)} s ` +
          `(${last.detail})${child !== undefined ? `; the one started (pid ${child.pid}) was stopped; see its log ${logFile}` : ''}; ${advice}.`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, PROBE_INTERVAL_MS));
  }
}
