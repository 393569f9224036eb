/**
 * Whether the database can be reached, told from the failures its driver reports (contract 17). A failure of this
 * kind is the database's, not the request's: the API answers 503 database_unavailable, background work waits and
 * tries again, and each component logs it at most once per QUIET_MS.
 */

/** Node's socket errors for a server that cannot be reached, or a connection that broke. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED']);

/**
 * PostgreSQL's codes for a server going away or unable to work: connection exceptions (08), operator intervention
 * (57P01 terminated by an administrator, 57P02 crash, 57P03 starting up or shutting down; 57014 a statement cancelled
 * by statement_timeout), too many connections (53300), and insufficient resources (53100 disk full, 53200 out of
 * memory). PGlite reports a full disk as ENOSPC.
 */
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '57014', '53000', '53100', '53200', '53300', 'ENOSPC', 'EDQUOT', 'EROFS']);

/** What node-postgres and pg-pool say when a connection broke, or could not be made in time. */
const DRIVER_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'terminating connection',
  'the database system is',
  'No space left on device',
];

export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (error === null || typeof error !== 'object' || depth > 4) return false;
  const { code, message, errors, cause } = error as { code?: unknown; message?: unknown; errors?: unknown; cause?: unknown };
  if (typeof code === 'string' && (SOCKET_CODES.has(code) || SERVER_CODES.has(code) || code.startsWith('08'))) return true;
  if (typeof message === 'string' && DRIVER_MESSAGES.some((text) => message.includes(text))) return true;
  // Node's AggregateError for a host with several addresses (::1 and 127.0.0.1), and errors that wrap the driver's.
  if (Array.isArray(errors) && errors.some((inner) => isDatabaseUnavailable(inner, depth + 1))) return true;
  return isDatabaseUnavailable(cause, depth + 1);
}

/** A short reason for a log line, without a stack: "connection refused", "no answer within 2 s", the server's own message. */
export function unavailableReason(error: unknown): string {
  const { code, message, errors } = (error ?? {}) as { code?: unknown; message?: unknown; errors?: unknown };
  const codeOf = typeof code === 'string' ? code : Array.isArray(errors) ? (errors as { code?: unknown }[]).find((inner) => typeof inner?.code === 'string')?.code : undefined;
  switch (codeOf) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
      return 'connection reset';
    case 'ETIMEDOUT':
      return 'no answer (timed out)';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host name not found';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    case 'ENOSPC':
      return 'no space left on the device';
  }
  if (typeof message === 'string' && message.includes('timeout exceeded when trying to connect')) return 'no connection within the connection timeout';
  return typeof message === 'string' && message !== '' ? message.split('\n')[0]!.slice(0, 200) : String(codeOf ?? 'unknown failure');
}

/** The logger's part that availability needs (pino's and Fastify's loggers both fit). */
export type AvailabilityLog = {
  error(fields: object, message: string): void;
  info(fields: object, message: string): void;
  debug(fields: object, message: string): void;
};

/** An outage is logged by each component at most once in this long. */
export const QUIET_MS = 30_000;

/**
 * The database's availability as this process sees it, and the one place that logs an outage: each component's first
 * failure of an outage is an error line, its next ones within QUIET_MS are debug lines, and the first connection that
 * works again is one info line, `database reachable again`.
 */
export class DatabaseAvailability {
  #log: AvailabilityLog | undefined;
  #unreachableSince: number | null = null;
  readonly #lastLine = new Map<string, number>();
  readonly #now: () => number;

  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  /** Where outage lines go (the service's logger, once it has one). */
  useLog(log: AvailabilityLog): void {
    this.#log = log;
  }

  get reachable(): boolean {
    return this.#unreachableSince === null;
  }

  /**
   * Reports a failure of `component`. True when it was the database's (an outage: logged here, `message` with the
   * reason, at most once per component per QUIET_MS); false when it was not, for the caller to handle and log as before.
   */
  failed(component: string, error: unknown, options: { message?: string; fields?: object } = {}): boolean {
    if (!isDatabaseUnavailable(error)) return false;
    const now = this.#now();
    this.#unreachableSince ??= now;
    const last = this.#lastLine.get(component);
    const line = { ...options.fields, component, reason: unavailableReason(error) };
    const message = options.message ?? `the database is unavailable (${component}); will try again`;
    if (last === undefined || now - last >= QUIET_MS) {
      this.#lastLine.set(component, now);
      this.#log?.error(line, message);
    } else {
      this.#log?.debug(line, message);
    }
    return true;
  }

  /** A connection or query worked: ends an outage, with one line. */
  succeeded(): void {
    if (this.#unreachableSince === null) return;
    const downForMs = this.#now() - this.#unreachableSince;
    this.#unreachableSince = null;
    this.#lastLine.clear();
    this.#log?.info({ downForMs }, 'database reachable again');
  }
}
