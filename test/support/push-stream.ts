import { randomUUID } from 'node:crypto';
import type { AcknowledgedPush } from './invariants.ts';
import type { Random } from './reliability.ts';
import { cents, lineFor, money, pushBody } from './workflow.ts';
import type { TestResponse } from './harness.ts';

/**
 * A client that pushes a stream of small valid lines and polls their status, as an integrator would, and keeps
 * the books a client can keep: each IRM's available amount as its own pushes moved it (every line must carry the
 * IRM's available amount now, irmRemitAmtFCC), and every acknowledgement it was given.
 *
 * An IRM whose balance the client can no longer know (a push whose answer it did not get, a 502/504, a line that
 * fails at processing and is released later) is set aside: the client never maps it again.
 *
 * With `wireFaultRate`, a line that does not fail at processing may instead ask the sandbox program to misbehave at
 * the HTTP boundary (billNo SANDBOX-OUTAGE: 503; SANDBOX-SLOW: no answer; SANDBOX-LOST: accepted, then the connection
 * dropped), so that the service's wire client meets real HTTP failures, and its retries, in the mix.
 *
 * Every push carries an Idempotency-Key. A push whose answer never came is retried with the same key and body by
 * retryUnanswered (after a restart, say), as a careful client would: it must then be stored once at most. The last
 * acknowledgements before a kill are retried too (replayAcknowledged): each must come back as it was, not run again.
 */

type Requester = {
  request(method: string, url: string, options?: { body?: unknown; query?: Record<string, string | number>; headers?: Record<string, string> }): Promise<TestResponse>;
};

type Planned = { slot: Slot; mapped: bigint; fails: boolean; line: Record<string, unknown> };
type Unanswered = { key: string; body: unknown; planned: Planned[] };
type Answered = { key: string; body: unknown; answer: string };

/** How many of the latest acknowledgements replayAcknowledged retries. */
const REPLAYED_ACKNOWLEDGEMENTS = 3;

type Slot = { irm: any; availableCents: bigint; busy: boolean; tainted: boolean };

const REQUEST_ID = /EBRCGW\d{8}[0-9A-F]{18}/;

/** The billNos that make the sandbox program fail a push at the HTTP boundary (sandbox/server.ts). */
export const WIRE_FAULT_BILL_NOS = ['SANDBOX-OUTAGE', 'SANDBOX-SLOW', 'SANDBOX-LOST'] as const;

export type StreamCounts = {
  pushes: number;
  validated: number;
  linesAcknowledged: number;
  failedAcks: number;
  unavailable: number;
  timeouts: number;
  /** Pushes whose answer never came (the connection dropped: the service was killed). */
  noAnswer: number;
  /** Acknowledged pushes retried with their Idempotency-Key after a kill, each answered exactly as the first time. */
  acknowledgementsReplayed: number;
  /** Retries of those with the same Idempotency-Key: answered from the first run, run afresh, or still held (409). */
  retriesReplayed: number;
  retriesRun: number;
  retriesHeld: number;
  statusPolls: number;
  statusAnswered: number;
  statusNoAnswer: number;
  /** 503 database_unavailable answers (with Retry-After): pushes retried later with their key, and status polls. */
  databaseUnavailable: number;
  serverErrors: number;
};

export class PushStream {
  readonly acknowledged: AcknowledgedPush[] = [];
  /** Every requestId the client learned of: acknowledged, failed, or named by a 502/504. */
  readonly requestIds: string[] = [];
  /** requestIds named by a 502 or 504 answer. */
  readonly faulted: { requestId: string; status: number }[] = [];
  /** Answers no client should ever get (anything but 200 for a push, or a 502/504 that is not a problem document). */
  readonly unexpected: string[] = [];
  /** Lines sent with each of WIRE_FAULT_BILL_NOS. */
  readonly wireFaults: Record<string, number> = {};
  readonly counts: StreamCounts = {
    pushes: 0,
    validated: 0,
    linesAcknowledged: 0,
    failedAcks: 0,
    unavailable: 0,
    timeouts: 0,
    noAnswer: 0,
    acknowledgementsReplayed: 0,
    retriesReplayed: 0,
    retriesRun: 0,
    retriesHeld: 0,
    statusPolls: 0,
    statusAnswered: 0,
    statusNoAnswer: 0,
    databaseUnavailable: 0,
    serverErrors: 0,
  };
  readonly #customerId: string;
  readonly #slots: Slot[];
  readonly #random: Random;
  readonly #options: { maxLines: number; failLineRate: number; maxLineCents: bigint; wireFaultRate: number };
  #invoice = 0;
  #unanswered: Unanswered[] = [];
  #acknowledgedLast: Answered[] = [];

  constructor(
    customerId: string,
    irms: readonly any[],
    random: Random,
    options: { maxLines?: number; failLineRate?: number; maxLineCents?: bigint; wireFaultRate?: number } = {},
  ) {
    this.#customerId = customerId;
    this.#slots = irms.map((irm) => ({ irm, availableCents: cents(irm.irmAvailableAmt), busy: false, tainted: false }));
    this.#random = random;
    this.#options = {
      maxLines: options.maxLines ?? 2,
      failLineRate: options.failLineRate ?? 0.1,
      maxLineCents: options.maxLineCents ?? 100n,
      wireFaultRate: options.wireFaultRate ?? 0,
    };
  }

  /** IRMs the client can still map. */
  get usableIrms(): number {
    return this.#slots.filter((slot) => !slot.tainted && slot.availableCents > 0n).length;
  }

  /** One push of 1 to maxLines lines, each on an IRM no other push of this client is using. False when none is left. */
  async pushOnce(client: Requester): Promise<boolean> {
    const free = this.#slots.filter((slot) => !slot.busy && !slot.tainted && slot.availableCents > 0n);
    if (free.length === 0) return false;
    const picked: Slot[] = [];
    for (let n = this.#random.int(1, this.#options.maxLines); n > 0 && free.length > 0; n--) {
      picked.push(free.splice(this.#random.int(0, free.length - 1), 1)[0]!);
    }
    for (const slot of picked) slot.busy = true;
    const planned: Planned[] = picked.map((slot, index) => {
      const ceiling = slot.availableCents < this.#options.maxLineCents ? slot.availableCents : this.#options.maxLineCents;
      const mapped = this.#random.bigint(1n, ceiling);
      const fails = this.#random.chance(this.#options.failLineRate);
      this.#invoice += 1;
      // Drawn only when asked for, so that the streams of a seed without wire faults stay as they were.
      const wireFault = !fails && this.#options.wireFaultRate > 0 && this.#random.chance(this.#options.wireFaultRate)
        ? this.#random.pick(WIRE_FAULT_BILL_NOS)
        : undefined;
      if (wireFault !== undefined) this.wireFaults[wireFault] = (this.wireFaults[wireFault] ?? 0) + 1;
      const line = lineFor(slot.irm, index + 1, money(mapped), {
        irmRemitAmtFCC: money(slot.availableCents),
        sbCumInvoiceNumber: String(1_000_000 + (this.#invoice % 8_999_999)),
        billNo: fails ? 'SANDBOX-FAIL' : wireFault ?? `S${this.#invoice}`,
      });
      return { slot, mapped, fails, line };
    });
    this.counts.pushes += 1;
    const push = { key: randomUUID(), body: pushBody(this.#customerId, planned.map((p) => p.line)), planned };
    let response: TestResponse | undefined;
    try {
      response = await client.request('POST', '/api/v1/genebrc/push-irm', { body: push.body, headers: { 'idempotency-key': push.key } });
    } catch {
      this.counts.noAnswer += 1;
      this.#unanswered.push(push);
    }
    if (response !== undefined && this.#databaseUnavailable(response)) {
      // The outcome is the database's to tell once it is back: retried with the same key, like a lost answer.
      this.#unanswered.push(push);
      response = undefined;
    }
    if (response?.status === 200 && response.body?.ackStatus === 'Validated') {
      this.#acknowledgedLast = [...this.#acknowledgedLast, { key: push.key, body: push.body, answer: response.text }].slice(-REPLAYED_ACKNOWLEDGEMENTS);
    }
    try {
      this.#record(planned, response);
    } finally {
      for (const { slot } of planned) slot.busy = false;
    }
    return true;
  }

  /** Pushes whose answer never came (or was 503 database_unavailable, or 409 while held), to be retried. */
  get unansweredCount(): number {
    return this.#unanswered.length;
  }

  /**
   * Retries every push whose answer never came, with its Idempotency-Key and body. A retry is answered from what the
   * first run committed, or runs afresh when nothing was; one still held by its first run (409), or answered 503
   * database_unavailable, is kept for the next call.
   */
  async retryUnanswered(client: Requester): Promise<void> {
    const pending = this.#unanswered;
    this.#unanswered = [];
    for (const push of pending) {
      let response: TestResponse;
      try {
        response = await client.request('POST', '/api/v1/genebrc/push-irm', { body: push.body, headers: { 'idempotency-key': push.key } });
      } catch {
        this.#unanswered.push(push);
        continue;
      }
      if (response.status === 409 && response.body?.code === 'idempotency_key_in_use') {
        this.counts.retriesHeld += 1;
        this.#unanswered.push(push);
        continue;
      }
      if (this.#databaseUnavailable(response)) {
        this.#unanswered.push(push);
        continue;
      }
      if (response.headers['idempotent-replayed'] === 'true') this.counts.retriesReplayed += 1;
      else this.counts.retriesRun += 1;
      this.#record(push.planned, response);
    }
  }

  /** Retries the latest acknowledged pushes with their key and body: each must be replayed, byte for byte. */
  async replayAcknowledged(client: Requester): Promise<void> {
    const latest = this.#acknowledgedLast;
    this.#acknowledgedLast = [];
    for (const push of latest) {
      const response = await client.request('POST', '/api/v1/genebrc/push-irm', { body: push.body, headers: { 'idempotency-key': push.key } });
      if (response.status === 200 && response.headers['idempotent-replayed'] === 'true' && response.text === push.answer) {
        this.counts.acknowledgementsReplayed += 1;
      } else {
        this.unexpected.push(`a retry of acknowledged push ${push.key} answered ${response.status} ${response.text.slice(0, 300)} instead of ${push.answer}`);
      }
    }
  }

  #record(planned: readonly Planned[], response: TestResponse | undefined): void {
    if (response === undefined) {
      for (const { slot } of planned) slot.tainted = true;
    } else if (response.status === 200 && response.body?.ackStatus === 'Validated') {
      this.counts.validated += 1;
      this.counts.linesAcknowledged += planned.length;
      this.requestIds.push(response.body.requestId);
      this.acknowledged.push({
        requestId: response.body.requestId,
        authorityAckId: response.body.authorityAckId,
        lines: planned.map(({ slot, mapped }, index) => ({ serialNo: index + 1, irmNumber: slot.irm.irmNumber, mappedCents: mapped })),
      });
      for (const { slot, mapped, fails } of planned) {
        slot.availableCents -= mapped;
        // The failing line's amount comes back when the request is processed: the client cannot tell when.
        if (fails) slot.tainted = true;
      }
    } else if (response.status === 200 && response.body?.ackStatus === 'Failed') {
      this.counts.failedAcks += 1;
      this.requestIds.push(response.body.requestId);
      for (const { slot } of planned) slot.tainted = true;
    } else if ((response.status === 502 || response.status === 504) && isProblem(response, response.status === 502 ? 'authority_unavailable' : 'authority_timeout')) {
      if (response.status === 502) this.counts.unavailable += 1;
      else this.counts.timeouts += 1;
      const requestId = REQUEST_ID.exec(response.body.detail)?.[0];
      if (requestId === undefined) this.unexpected.push(`a ${response.status} that names no request: ${response.text}`);
      else {
        this.requestIds.push(requestId);
        this.faulted.push({ requestId, status: response.status });
      }
      for (const { slot } of planned) slot.tainted = true;
    } else {
      if (response.status >= 500) this.counts.serverErrors += 1;
      this.unexpected.push(`push answered ${response.status}: ${response.text.slice(0, 500)}`);
      for (const { slot } of planned) slot.tainted = true;
    }
  }

  /** Asks for the status of a request this client knows of; a status call always answers 200. */
  async pollOnce(client: Requester): Promise<void> {
    if (this.requestIds.length === 0) return;
    const requestId = this.#random.pick(this.requestIds);
    this.counts.statusPolls += 1;
    let response: TestResponse;
    try {
      response = await client.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: this.#customerId, requestId } });
    } catch {
      this.counts.statusNoAnswer += 1;
      return;
    }
    if (response.status === 200 && response.body?.requestId === requestId) this.counts.statusAnswered += 1;
    else if (this.#databaseUnavailable(response)) return;
    else {
      if (response.status >= 500) this.counts.serverErrors += 1;
      this.unexpected.push(`status of ${requestId} answered ${response.status}: ${response.text.slice(0, 500)}`);
    }
  }

  /** A 503 database_unavailable as the contract has it (problem document, Retry-After: 2), counted; false for any other answer. */
  #databaseUnavailable(response: TestResponse): boolean {
    if (response.status !== 503) return false;
    if (!isProblem(response, 'database_unavailable') || response.headers['retry-after'] !== '2') {
      this.unexpected.push(`a 503 that is not database_unavailable with Retry-After: 2: ${response.text.slice(0, 300)}`);
    }
    this.counts.databaseUnavailable += 1;
    return true;
  }
}

function isProblem(response: TestResponse, code: string): boolean {
  return String(response.headers['content-type']).startsWith('application/problem+json') && response.body?.code === code;
}
