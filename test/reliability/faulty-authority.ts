import { AuthorityError, type Authority, type CallOptions } from '../../src/authority/authority.ts';
import { Random } from '../support/reliability.ts';
import { sleep } from '../support/workflow.ts';

/**
 * Faults injected at the Authority interface, around the service's adapter (the wire-protocol client, which talks
 * to the sandbox program over HTTP), from a seeded schedule: each call draws its fault. The sandbox can produce some
 * of these for real at the HTTP boundary (billNo SANDBOX-OUTAGE, SANDBOX-SLOW, SANDBOX-LOST), but only on a push it
 * is told to fail and always the same way; this schedule reaches every operation, at random moments, from one seed.
 *
 *   unavailable   the call fails at once with AuthorityError('unavailable') and does nothing (an outage).
 *   hang          the call never answers; the service's deadline wrapper aborts it, as a timeout.
 *   slow          the answer comes after a delay below the deadline: slow, but in time.
 *   late          (push) the push reaches the authority only after the deadline: the caller has given up already,
 *                 yet the authority takes it a moment later, as a slow network would deliver it (the adapter's own
 *                 deadline and retries still apply to that late call).
 *   dropped       the authority does the work and answers, but the connection drops on the way back: the caller sees
 *                 a timeout although (for a push) the authority accepted it.
 *
 * Setup calls (credentials, IRM pulls) pass untouched unless `faultSetup` is set; eBRC lists draw from the getStatus
 * rates; `arm()` and `disarm()` switch the faults on and off.
 */
export type Fault = 'none' | 'unavailable' | 'hang' | 'slow' | 'late' | 'dropped';

export type FaultRates = Partial<Record<Exclude<Fault, 'none'>, number>>;

export type FaultyAuthority = Authority & {
  arm(): void;
  disarm(): void;
  /** How many calls met each fault, by method. */
  readonly injected: Record<string, Record<Fault, number>>;
  /** How many times each requestId was pushed to the authority (by the service, faults or not). */
  readonly pushesByRequestId: Map<string, number>;
  /** Failures the adapter itself met (not injected), by method and failure: the sandbox's own faults, real timeouts. */
  readonly adapterFailures: Record<string, Record<string, number>>;
};

export function faultyAuthority(
  inner: Authority,
  options: { seed: number; timeoutMs: number; push: FaultRates; getStatus: FaultRates; faultSetup?: boolean },
): FaultyAuthority {
  const random = new Random(options.seed);
  let armed = false;
  const injected: Record<string, Record<Fault, number>> = {};
  const pushesByRequestId = new Map<string, number>();

  // The first armed calls of each method meet every fault of its rates once, in a seeded order, so that even a short
  // run sees each kind; after them, each call draws.
  const firstFaults = new Map<string, Fault[]>();
  const draw = (method: string, rates: FaultRates): Fault => {
    let fault: Fault = 'none';
    const first = armed ? firstFaults.get(method) ?? shuffled(Object.keys(rates) as Fault[]) : [];
    if (armed) firstFaults.set(method, first);
    if (first.length > 0) {
      fault = first.pop()!;
    } else if (armed) {
      let roll = random.next();
      for (const [name, rate] of Object.entries(rates) as [Exclude<Fault, 'none'>, number][]) {
        if (roll < rate) {
          fault = name;
          break;
        }
        roll -= rate;
      }
    }
    const counts = (injected[method] ??= { none: 0, unavailable: 0, hang: 0, slow: 0, late: 0, dropped: 0 });
    counts[fault] += 1;
    return fault;
  };

  function shuffled<T>(items: T[]): T[] {
    const copy = [...items];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = random.int(0, i);
      [copy[i], copy[j]] = [copy[j]!, copy[i]!];
    }
    return copy;
  }

  /** A call that never answers: it ends only when the caller's signal aborts (the deadline), as a timeout. */
  const hang = (callOptions: CallOptions | undefined): Promise<never> =>
    new Promise<never>((_resolve, reject) => {
      const abort = () => reject(new AuthorityError('timeout', 'injected: the authority never answered'));
      if (callOptions?.signal?.aborted) abort();
      callOptions?.signal?.addEventListener('abort', abort, { once: true });
    });

  const adapterFailures: Record<string, Record<string, number>> = {};
  /** The adapter's call, its own failures counted. */
  const counted = <T>(method: string, call: Promise<T>): Promise<T> =>
    call.catch((error: unknown) => {
      const failure = error instanceof AuthorityError ? error.failure : 'other';
      const counts = (adapterFailures[method] ??= {});
      counts[failure] = (counts[failure] ?? 0) + 1;
      throw error;
    });

  async function faulty<T>(fault: Fault, callOptions: CallOptions | undefined, call: (options: CallOptions | undefined) => Promise<T>): Promise<T> {
    switch (fault) {
      case 'unavailable':
        throw new AuthorityError('unavailable', 'injected: the authority is unavailable');
      case 'hang':
        return hang(callOptions);
      case 'slow':
        await sleep(random.int(1, Math.max(1, Math.floor(options.timeoutMs / 2))));
        return call(callOptions);
      case 'late':
        // Already on its way: the caller's abort no longer stops it. It arrives well within the grace time.
        await sleep(options.timeoutMs + random.int(50, 500));
        await call(undefined);
        throw new AuthorityError('timeout', 'injected: the answer came after the deadline');
      case 'dropped':
        await call(callOptions);
        throw new AuthorityError('timeout', 'injected: the connection dropped after the authority answered');
      case 'none':
        return call(callOptions);
    }
  }

  return {
    injected,
    pushesByRequestId,
    adapterFailures,
    arm: () => void (armed = true),
    disarm: () => void (armed = false),
    checkCredentials: (credentials, callOptions) =>
      options.faultSetup
        ? faulty(draw('checkCredentials', options.getStatus), callOptions, (o) => counted('checkCredentials', inner.checkCredentials(credentials, o)))
        : inner.checkCredentials(credentials, callOptions),
    fetchIrms: (credentials, query, callOptions) =>
      options.faultSetup
        ? faulty(draw('fetchIrms', options.getStatus), callOptions, (o) => counted('fetchIrms', inner.fetchIrms(credentials, query, o)))
        : inner.fetchIrms(credentials, query, callOptions),
    push: (credentials, message, callOptions) =>
      faulty(draw('push', options.push), callOptions, (o) => {
        pushesByRequestId.set(message.requestId, (pushesByRequestId.get(message.requestId) ?? 0) + 1);
        return counted('push', inner.push(credentials, message, o));
      }),
    getStatus: (credentials, requestId, callOptions) =>
      faulty(draw('getStatus', options.getStatus), callOptions, (o) => counted('getStatus', inner.getStatus(credentials, requestId, o))),
    fetchEbrcs: (credentials, query, callOptions) =>
      faulty(draw('fetchEbrcs', options.getStatus), callOptions, (o) => counted('fetchEbrcs', inner.fetchEbrcs(credentials, query, o))),
  };
}
