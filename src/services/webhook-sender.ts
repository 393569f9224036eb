/**
 * One webhook delivery attempt: a POST of the event to the endpoint, with one deadline over connecting, the answer's
 * headers and its body (contract section 9). Redirects are not followed, at most 1 KiB of the answer is read, and
 * internal addresses are refused before connecting unless allowPrivate. Network outcomes are returned, never thrown.
 */
import { request as httpRequest } from 'node:http';
import type { ClientRequest, IncomingMessage, RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { StringDecoder } from 'node:string_decoder';
import { WEBHOOK_ADDRESS_REFUSED, checkWebhookUrl, guardedLookup } from './webhook-url.ts';

export const DEFAULT_WEBHOOK_USER_AGENT = 'ebrc-gateway-webhooks/1.0';

/** The receiver's answer is kept to this many bytes, and no more is read. */
export const MAX_RESPONSE_BODY_BYTES = 1024;

// A redirect's Location, and any other text from the far side, is cut to this many characters in an error.
const MAX_LOCATION_CHARS = 200;

export type WebhookRequest = {
  url: string;
  /** The signature headers and any others; content-type, user-agent and content-length are set here. */
  headers: Record<string, string>;
  /** The event as JSON. */
  body: string;
  /** The whole attempt: connecting, the answer's headers and its body. */
  timeoutMs: number;
  /** WEBHOOK_ALLOW_PRIVATE_URLS. */
  allowPrivate: boolean;
  userAgent?: string;
};

export type DeliveryOutcome = {
  /** The receiver answered 2xx within the deadline. */
  succeeded: boolean;
  /** The receiver's HTTP status, when it answered. */
  responseStatus: number | null;
  /** At most 1 KiB of the receiver's answer, as UTF-8, when it answered. */
  responseBody: string | null;
  /** Whole milliseconds from the start of the attempt to its outcome. */
  durationMs: number;
  /** Why the attempt failed; null when it succeeded. */
  error: string | null;
  /** The URL was refused (its host is or resolves to an internal address, or it is not a webhook URL): nothing was sent. */
  refused: boolean;
};

export async function sendWebhook(request: WebhookRequest): Promise<DeliveryOutcome> {
  const startedAt = performance.now();
  const elapsedMs = (): number => Math.round(performance.now() - startedAt);

  // Node does not call `lookup` for a literal IP address, so literal and internal-name hosts are refused here; host
  // names are checked on the addresses the connection is made to, by guardedLookup.
  const check = await checkWebhookUrl(request.url, { allowPrivate: request.allowPrivate, resolve: null });
  if (!check.ok) {
    return { succeeded: false, responseStatus: null, responseBody: null, durationMs: elapsedMs(), error: check.reason, refused: true };
  }
  const url = check.url;

  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': request.userAgent ?? DEFAULT_WEBHOOK_USER_AGENT,
  };
  // Lower-cased, so that a given "Content-Type" replaces ours instead of going out beside it.
  for (const [name, value] of Object.entries(request.headers)) headers[name.toLowerCase()] = value;
  headers['content-length'] = String(Buffer.byteLength(request.body, 'utf8'));

  const options: RequestOptions = {
    method: 'POST',
    headers,
    agent: false,
    lookup: guardedLookup(request.allowPrivate),
  };

  return new Promise<DeliveryOutcome>((resolve) => {
    let outgoing: ClientRequest | undefined;
    let incoming: IncomingMessage | undefined;
    let settled = false;
    let responseStatus: number | null = null;
    const received: Buffer[] = [];
    let receivedBytes = 0;

    const responseBody = (): string | null => {
      if (responseStatus === null) return null;
      // The decoder holds back a multi-byte character cut at the 1 KiB boundary instead of garbling it.
      return new StringDecoder('utf8').write(Buffer.concat(received).subarray(0, MAX_RESPONSE_BODY_BYTES));
    };
    const finish = (error: string | null, refused = false): void => {
      if (settled) return;
      settled = true;
      deadline.cancel();
      // Stop reading (a receiver may stream forever) and close the connection: it is never reused.
      incoming?.destroy();
      outgoing?.destroy();
      resolve({
        succeeded: error === null,
        responseStatus,
        responseBody: responseBody(),
        durationMs: elapsedMs(),
        error,
        refused,
      });
    };
    // An answer is judged by its status once its body has been read (or 1 KiB of it).
    const answered = (): void => {
      const status = responseStatus ?? 0;
      if (status >= 200 && status <= 299) return finish(null);
      if (status >= 300 && status <= 399) return finish(redirectError(incoming?.headers.location));
      finish(`receiver answered HTTP ${status}`);
    };

    // At the deadline, an answer whose status came in time is judged by its status (contract: any 2xx within the
    // timeout), with the part of its body read so far; no status yet is a timeout.
    const deadline = receiverDeadline(request.timeoutMs, () => (responseStatus === null ? finish(`timed out after ${request.timeoutMs} ms`) : answered()));

    try {
      outgoing = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, options);
    } catch (error) {
      // Bad header values (a newline in one) are refused synchronously.
      finish(shorten(error instanceof Error ? error.message : String(error)));
      return;
    }
    outgoing.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === WEBHOOK_ADDRESS_REFUSED) finish(error.message, true);
      else finish(describeNetworkError(error));
    });
    outgoing.on('response', (response) => {
      incoming = response;
      responseStatus = response.statusCode ?? null;
      response.on('data', (chunk: Buffer) => {
        received.push(chunk);
        receivedBytes += chunk.length;
        if (receivedBytes >= MAX_RESPONSE_BODY_BYTES) answered();
      });
      response.on('end', answered);
      // The receiver cut its answer short: the status it sent stands, with the body read so far.
      response.on('error', answered);
      response.on('close', answered);
    });
    outgoing.end(request.body);
  });
}

/** The deadline is checked this often; a longer gap between two checks is this process stalled, not the receiver slow. */
const DEADLINE_TICK_MS = 100;
/** However stalled this process is, an attempt gives up this long after its timeout. */
const MOST_STALL_FORGIVEN_MS = 30_000;

/** The longest an attempt can last: its timeout, stretched by this process's stalls. */
export function longestAttemptMs(timeoutMs: number): number {
  return timeoutMs + MOST_STALL_FORGIVEN_MS;
}

/**
 * Calls `expired` once the receiver has had `timeoutMs` to answer. A stall of this process (its event loop blocked by a
 * long synchronous step, its CPU taken by others) is not the receiver's time: a check that comes late counts only the
 * tick it waited for, so a receiver is not timed out because we could not send its request or read its answer, and is not
 * sent the event again while it holds an answer we never read. At the deadline what has arrived is read first
 * (`setImmediate` runs after the pending I/O). Never later than `longestAttemptMs`.
 */
function receiverDeadline(timeoutMs: number, expired: () => void): { cancel(): void } {
  const startedAt = performance.now();
  let checkedAt = startedAt;
  let waited = 0;
  let timer: NodeJS.Timeout | undefined;
  let immediate: NodeJS.Immediate | undefined;
  const wait = (ms: number): void => {
    timer = setTimeout(() => {
      const now = performance.now();
      // The tick's own length counts; whatever it came late by was this process's.
      waited += Math.min(now - checkedAt, ms);
      checkedAt = now;
      if (waited >= timeoutMs || now - startedAt >= longestAttemptMs(timeoutMs)) immediate = setImmediate(expired);
      else wait(Math.min(DEADLINE_TICK_MS, timeoutMs - waited));
    }, ms);
  };
  wait(Math.min(DEADLINE_TICK_MS, timeoutMs));
  return {
    cancel() {
      clearTimeout(timer);
      clearImmediate(immediate);
    },
  };
}

function redirectError(location: string | undefined): string {
  if (location === undefined || location === '') return 'redirect without a location not followed';
  return `redirect to ${location.slice(0, MAX_LOCATION_CHARS)} not followed`;
}

const NETWORK_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection closed',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  EAI_FAIL: 'host name lookup failed',
  ENODATA: 'host has no address',
};

/** "connection refused (ECONNREFUSED)", "TLS failure (CERT_HAS_EXPIRED)". */
function describeNetworkError(error: NodeJS.ErrnoException): string {
  // With several addresses, Node tries each (happy eyeballs) and fails with an AggregateError of their failures.
  const cause: NodeJS.ErrnoException =
    error.code === undefined && error instanceof AggregateError && error.errors[0] instanceof Error ? error.errors[0] : error;
  const code = cause.code;
  if (code === undefined) return shorten(cause.message);
  const known = NETWORK_ERRORS[code];
  if (known !== undefined) return `${known} (${code})`;
  if (isTlsError(code)) return `TLS failure (${code})`;
  return shorten(`${cause.message} (${code})`);
}

function isTlsError(code: string): boolean {
  return (
    code.startsWith('ERR_TLS_') ||
    code.startsWith('ERR_SSL_') ||
    code.includes('CERT') ||
    code.includes('SELF_SIGNED') ||
    code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' ||
    code === 'EPROTO'
  );
}

function shorten(text: string): string {
  return text.length > MAX_LOCATION_CHARS ? `${text.slice(0, MAX_LOCATION_CHARS)}…` : text;
}
