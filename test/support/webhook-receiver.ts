import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/**
 * A webhook receiver for tests: an HTTP server on 127.0.0.1 (a port the system picks) that records every request it
 * gets (headers, raw body, when it arrived) and answers each as told: a status, after a delay, a redirect, or not at
 * all (it hangs until the client gives up or the receiver is closed). Behaviours are queued per call (`script`) or
 * chosen by a function of the request (`respondWith`), with a default for everything else.
 */

export type Behaviour = {
  /** The HTTP status (200 by default; 302 for a redirect). */
  status?: number;
  /** Answer only after this many milliseconds. */
  delayMs?: number;
  /** Never answer: the connection stays open until the client gives up or the receiver closes. */
  hang?: boolean;
  /** Answer with a redirect to this Location. */
  redirect?: string;
  /** The answer's body ("ok" by default). */
  body?: string;
};

export type ReceivedRequest = {
  /** 0 for the first request this receiver got, and so on. */
  index: number;
  method: string;
  /** The path and query the request was sent to. */
  url: string;
  /** Node's lower-cased header names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** The body exactly as received. */
  rawBody: Buffer;
  /** The body as UTF-8 text. */
  body: string;
  /** Date.now() when the request's headers arrived. */
  receivedAt: number;
  /** How it was answered. */
  behaviour: Behaviour;
};

/**
 * Blocks this process's event loop for `ms` (a service in this process with it), as a long synchronous step or a CPU
 * taken by others would: the stall a loaded machine puts a sender through.
 */
export function busyFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // Busy.
  }
}

export type Responder = (request: ReceivedRequest) => Behaviour;

export class WebhookReceiver {
  readonly requests: ReceivedRequest[] = [];
  readonly #server: http.Server;
  readonly #scripted: Behaviour[] = [];
  readonly #waiters = new Set<() => void>();
  readonly #timers = new Set<NodeJS.Timeout>();
  #responder: Responder;
  #port = 0;
  #closed = false;

  private constructor(responder: Responder) {
    this.#responder = responder;
    this.#server = http.createServer((request, response) => this.#handle(request, response));
    // A hanging answer is held open as long as the client holds it; the server itself never cuts it off.
    this.#server.requestTimeout = 0;
    this.#server.headersTimeout = 0;
    this.#server.keepAliveTimeout = 1_000;
  }

  /** Starts a receiver; every request is answered with `behaviour` (200 by default) unless told otherwise. */
  static async start(behaviour: Behaviour | Responder = {}): Promise<WebhookReceiver> {
    const receiver = new WebhookReceiver(typeof behaviour === 'function' ? behaviour : () => behaviour);
    await new Promise<void>((resolve, reject) => {
      receiver.#server.once('error', reject);
      receiver.#server.listen(0, '127.0.0.1', () => resolve());
    });
    receiver.#port = (receiver.#server.address() as AddressInfo).port;
    return receiver;
  }

  get port(): number {
    return this.#port;
  }

  /** The URL to register as an endpoint: http://127.0.0.1:PORT/hooks (a path of your own with `path`). */
  url(path = '/hooks'): string {
    return `http://127.0.0.1:${this.#port}${path}`;
  }

  /** How every request without a scripted behaviour is answered from now on. */
  respondWith(behaviour: Behaviour | Responder): void {
    this.#responder = typeof behaviour === 'function' ? behaviour : () => behaviour;
  }

  /** The next requests are answered with these, in order; then the default applies again. */
  script(...behaviours: Behaviour[]): void {
    this.#scripted.push(...behaviours);
  }

  /** The requests that carried this webhook-id. */
  withId(webhookId: string): ReceivedRequest[] {
    return this.requests.filter((request) => request.headers['webhook-id'] === webhookId);
  }

  /** The distinct webhook-ids received. */
  webhookIds(): Set<string> {
    return new Set(this.requests.map((request) => request.headers['webhook-id']).filter((id): id is string => id !== undefined));
  }

  /**
   * Resolves with the requests once `predicate` holds for them (checked now and at every request); rejects after
   * `timeoutMs`, saying how many requests had come.
   */
  waitFor(predicate: (requests: readonly ReceivedRequest[]) => boolean, timeoutMs: number, what = 'the expected requests'): Promise<ReceivedRequest[]> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        if (!predicate(this.requests)) return false;
        this.#waiters.delete(check);
        clearTimeout(timer);
        resolve(this.requests);
        return true;
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Error(`the receiver did not get ${what} within ${timeoutMs} ms (it got ${this.requests.length} requests: ${this.#summary()})`));
      }, timeoutMs);
      if (check()) return;
      this.#waiters.add(check);
    });
  }

  /** Waits until at least `count` requests have come. */
  waitForCount(count: number, timeoutMs: number): Promise<ReceivedRequest[]> {
    return this.waitFor((requests) => requests.length >= count, timeoutMs, `${count} requests`);
  }

  /** Stops listening and cuts every connection, hanging answers included. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #summary(): string {
    return this.requests
      .slice(-10)
      .map((request) => `${request.headers['webhook-id'] ?? '?'}@${new Date(request.receivedAt).toISOString()}`)
      .join(', ');
  }

  #handle(request: http.IncomingMessage, response: http.ServerResponse): void {
    const receivedAt = Date.now();
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const rawBody = Buffer.concat(chunks);
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(request.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      const received: ReceivedRequest = {
        index: this.requests.length,
        method: request.method ?? '',
        url: request.url ?? '',
        headers,
        rawBody,
        body: rawBody.toString('utf8'),
        receivedAt,
        behaviour: {},
      };
      const behaviour = this.#scripted.shift() ?? this.#responder(received);
      received.behaviour = behaviour;
      this.requests.push(received);
      for (const waiter of [...this.#waiters]) waiter();
      if (behaviour.hang) return;
      const answer = (): void => {
        if (response.destroyed) return;
        const status = behaviour.status ?? (behaviour.redirect !== undefined ? 302 : 200);
        response.writeHead(status, {
          'content-type': 'text/plain',
          ...(behaviour.redirect !== undefined ? { location: behaviour.redirect } : {}),
        });
        response.end(behaviour.body ?? 'ok');
      };
      if (behaviour.delayMs === undefined || behaviour.delayMs <= 0) return answer();
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        answer();
      }, behaviour.delayMs);
      this.#timers.add(timer);
    });
  }
}

/**
 * Verifies a received request with the standardwebhooks library, as a receiver would: returns the parsed event, or
 * throws (WebhookVerificationError) when no signature matches `secret` or the timestamp is out of tolerance.
 */
export function verifyDelivery(request: Pick<ReceivedRequest, 'rawBody' | 'headers'>, secret: string, signature?: string): unknown {
  const headers = signature === undefined ? request.headers : { ...request.headers, 'webhook-signature': signature };
  return new Webhook(secret).verify(request.rawBody.toString('utf8'), headers);
}

/** Whether the request verifies with `secret` (standardwebhooks). */
export function verifies(request: Pick<ReceivedRequest, 'rawBody' | 'headers'>, secret: string, signature?: string): boolean {
  try {
    verifyDelivery(request, secret, signature);
    return true;
  } catch {
    return false;
  }
}
