import type { ServerResponse } from 'node:http';
import type { Api } from '../deps.ts';
import { sendProblem } from '../problem.ts';

/** Answered as usual while draining: liveness and the metrics (the process is still up and still counting). */
const SERVED_WHILE_DRAINING = new Set(['/health', '/metrics']);
/** Seconds a refused client is told to wait: another process (or this one, restarted) takes the retry. */
const RETRY_AFTER_SECONDS = '2';

/**
 * A clean stop (SIGTERM): from `begin()` readiness answers 503 and every new request is refused with 503
 * `shutting_down` (and `Connection: close`), while the requests already in flight run to their answer; `settled()`
 * tells when none is left. The service then closes the listener and stops its background work.
 */
export class Drain {
  #draining = false;
  readonly #inFlight = new Set<ServerResponse>();
  #settle: (() => void) | undefined;

  get draining(): boolean {
    return this.#draining;
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  begin(): void {
    this.#draining = true;
    // The answers still to come close their connections: a keep-alive client sends its next request elsewhere.
    for (const response of this.#inFlight) if (!response.headersSent) response.shouldKeepAlive = false;
  }

  /** Resolves true once no request is in flight, or false at `deadline` (a time in ms) with some still running. */
  settled(deadline: number): Promise<boolean> {
    if (this.#inFlight.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
      this.#settle = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  }

  track(response: ServerResponse): void {
    this.#inFlight.add(response);
    // 'close' comes after the answer is sent, or when the client goes away first.
    response.once('close', () => {
      this.#inFlight.delete(response);
      if (this.#inFlight.size === 0) this.#settle?.();
    });
  }
}

/** The drain's hook, before every other: counts the requests in flight, and refuses new ones once draining. */
export function registerDrain(app: Api, drain: Drain): void {
  app.addHook('onRequest', (request, reply, done) => {
    if (!drain.draining) {
      drain.track(reply.raw);
      return done();
    }
    const path = request.url.split('?', 1)[0]!;
    if (SERVED_WHILE_DRAINING.has(path)) return done();
    reply.header('connection', 'close');
    if (path === '/ready') return reply.code(503).send({ status: 'unavailable' });
    return sendProblem(request, reply, 'shutting_down', 'This process is shutting down and takes no new requests; retry, and another process (or this one once restarted) answers.', {
      headers: { 'retry-after': RETRY_AFTER_SECONDS },
    });
  });
}
