import type { Kysely } from 'kysely';
import { recordAudit, SYSTEM_SOURCE } from '../audit.ts';
import type { LineResult } from '../../authority/authority.ts';
import type { ErrorDetail } from '../../domain/push-rules.ts';
import { assertTransition, finalStatusFor, isFinal, type RequestStatus, type StoredRequestStatus } from '../../domain/request-state.ts';
import type { EventType } from '../../domain/events.ts';
import { ebrcsOfReadRequest, type LocalEbrcRow } from '../../store/ebrcs.ts';
import * as store from '../../store/requests.ts';
import type { Schema } from '../../store/schema.ts';
import type { CommitLink } from '../context.ts';
import { registerOwnEbrcs } from '../ebrcs.ts';
import type { EventOutbox, NewEvent } from '../outbox.ts';
import { recordJson, statusView, type RequestStatusView } from './views.ts';

/** The port the request poller implements: background work a request's lifecycle asks for, scheduled in the caller's transaction so it is never lost. */
export interface RequestScheduler {
  /** Makes sure a job will move this request (internal id) towards a final state. */
  scheduleAdvance(db: Kysely<Schema>, requestId: string): Promise<void>;
}

/** A request about to be stored: everything but its status, which the lifecycle sets. */
export type RequestToStore = Omit<store.NewRequest, 'status' | 'errorDetails' | 'processedAt'>;

/** A request as open() stored it: its lines' states, which acknowledge() then shows without reading them back. */
export type OpenedRequest = { id: string; lines: readonly store.LineState[] };


const EVENT_OF_STATUS: Readonly<Record<RequestStatus, EventType>> = {
  PENDING: 'genebrc.request.acknowledged',
  FAILED: 'genebrc.request.failed',
  PROCESSED: 'genebrc.request.processed',
  PARTIALLY_PROCESSED: 'genebrc.request.partially_processed',
  ERRORED: 'genebrc.request.errored',
};

/**
 * The life of a GenEBRC request, and the only code that writes its status. Every move is checked against the state
 * machine of src/domain/request-state.ts, made as a compare-and-set on the stored status (so that of several processes
 * moving one request, one does), and committed in one transaction with what goes with it: the lines' outcomes, the
 * release of the amounts reserved for lines that did not become eBRCs, the events of the change (the outbox) and, for a
 * final state, the request's record as the list shows it (stored once: a final request never changes).
 *
 *   (new) ──open──▶ SUBMITTING ──acknowledge──▶ PENDING ──finish──▶ PROCESSED | PARTIALLY_PROCESSED | ERRORED
 *     │                 └────────fail────────▶ FAILED
 *     └─────refuse─────────────────────────▶ FAILED
 */
export class RequestLifecycle {
  readonly #db: Kysely<Schema>;
  readonly #outbox: EventOutbox;
  readonly #scheduler: RequestScheduler;

  constructor(db: Kysely<Schema>, outbox: EventOutbox, scheduler: RequestScheduler) {
    this.#db = db;
    this.#outbox = outbox;
    this.#scheduler = scheduler;
  }

  /**
   * Stores a request whose amounts the caller has reserved in `tx`, as SUBMITTING: not yet sent, not yet shown to
   * anyone as anything but PENDING, and with no event until the authority has answered. A job to move it on is
   * scheduled in the same transaction, so a process that dies before sending leaves it to be reconciled.
   */
  async open(tx: Kysely<Schema>, request: RequestToStore, lines: readonly store.NewLine[]): Promise<OpenedRequest> {
    await store.insertRequest(tx, { ...request, status: 'SUBMITTING', errorDetails: [], processedAt: null }, lines);
    await this.#scheduler.scheduleAdvance(tx, request.id);
    return {
      id: request.id,
      // In line order, as a read of the stored lines gives them.
      lines: lines.toSorted((a, b) => a.lineIndex - b.lineIndex).map(store.insertedLineState),
    };
  }

  /** Stores a request refused before it was sent (it breaks the rules): FAILED at once, with its event. */
  async refuse(request: RequestToStore, lines: readonly store.NewLine[], errors: ErrorDetail[], link?: CommitLink): Promise<void> {
    await this.#commit(async (tx) => {
      await store.insertRequest(tx, { ...request, status: 'FAILED', errorDetails: errors, processedAt: new Date() }, lines);
      const stored = await this.#read(tx, request.id);
      await this.#keepRecord(tx, stored);
      const view = await this.#record(tx, stored, []);
      // Last: its audit entry locks the platform's chain head until the commit (recordAudit). Taken before the
      // events' day counts, it deadlocked with a settling request, which takes them in the other order.
      await link?.(tx, request.id);
      return { view };
    });
  }

  /**
   * SUBMITTING → PENDING: the authority acknowledged the push with this ack id. Null when another process moved it first.
   * `opened`: the request as this process opened it, whose lines' states are then shown as they are rather than read
   * back (999 of them took 6-9 ms). They are the stored ones: a SUBMITTING request's lines change only with a move away
   * from SUBMITTING (fail), after which this compare-and-set finds nothing to move.
   */
  async acknowledge(id: string, authorityAckId: string, opened?: OpenedRequest): Promise<RequestStatusView | null> {
    if (opened !== undefined && opened.id !== id) throw new Error(`acknowledge(${id}) was given the lines of request ${opened.id}`);
    return this.#move(
      id,
      'SUBMITTING',
      'PENDING',
      (tx) => store.moveRequest(tx, id, 'SUBMITTING', { status: 'PENDING', authorityAckId }),
      { lines: opened?.lines },
    );
  }

  /**
   * SUBMITTING → FAILED: the authority refused the push, or never received it. Every line fails and every reserved
   * amount goes back to its IRM.
   */
  async fail(id: string, errors: readonly ErrorDetail[]): Promise<RequestStatusView | null> {
    return this.#move(id, 'SUBMITTING', 'FAILED', async (tx) => {
      const moved = await store.moveRequest(tx, id, 'SUBMITTING', { status: 'FAILED', errorDetails: [...errors], processedAt: new Date() });
      if (moved === undefined) return undefined;
      await store.setLinesStatus(tx, id, 'FAILED');
      await store.releaseReservations(tx, id);
      return moved;
    });
  }

  /**
   * PENDING → its final status, from the authority's per-line results: each line's outcome is stored, the amounts of
   * the lines that failed go back to their IRMs, and an ebrc.generated event is written for each eBRC.
   */
  async finish(id: string, results: readonly LineResult[]): Promise<RequestStatusView | null> {
    const status = finalStatusFor(results.map((result) => result.status));
    return this.#move(
      id,
      'PENDING',
      status,
      async (tx) => {
        const moved = await store.moveRequest(tx, id, 'PENDING', { status, processedAt: new Date() });
        if (moved === undefined) return undefined;
        await store.applyLineResults(tx, id, results);
        await store.releaseReservations(tx, id, 'FAILED');
        return moved;
      },
      {
        check: (request) => {
          // Results that leave a line out (or name one twice) must not finish the request: its status would not be its lines'.
          const pending = request.lines.filter((line) => line.status === 'PENDING').length;
          if (pending > 0 || finalStatusFor(request.lines.map((line) => line.status as LineResult['status'])) !== status) {
            throw new Error(`The authority's results for request ${request.request_id} do not cover its lines (${pending} left without an outcome); nothing was recorded`);
          }
        },
      },
    );
  }

  /**
   * One checked move: the change (the request's row as it left it; undefined when the stored status was not `from` any
   * more), then its events. `check`: a last look at the moved request before anything is recorded (throws to roll back).
   * `lines`: the lines' states as the change left them, when the caller knows them (else read).
   */
  async #move(
    id: string,
    from: StoredRequestStatus,
    to: StoredRequestStatus,
    change: (tx: Kysely<Schema>) => Promise<store.RequestRow | undefined>,
    { check, lines }: { check?: (moved: store.RequestWithLineStates) => void; lines?: readonly store.LineState[] | undefined } = {},
  ): Promise<RequestStatusView | null> {
    assertTransition(from, to);
    return this.#commit(async (tx) => {
      const row = await change(tx);
      if (row === undefined) return { view: null };
      // A final request's record shows its lines' payloads; any other move's view and event show only their states.
      const final = isFinal(to) ? await this.#read(tx, id) : null;
      const moved = final ?? (lines !== undefined ? { ...row, lines: [...lines] } : await this.#readStates(tx, id));
      check?.(moved);
      if (final) await this.#keepRecord(tx, final);
      const ebrcs = final !== null && (to === 'PROCESSED' || to === 'PARTIALLY_PROCESSED') ? ebrcsOfReadRequest(final) : [];
      const view = await this.#record(tx, moved, ebrcs);
      if (to !== 'PENDING') {
        await recordAudit(tx, SYSTEM_SOURCE, { platformId: moved.platform_id, action: 'genebrc_request.settle', target: { type: 'genebrc_request', id: moved.id } });
      }
      return { view };
    });
  }

  /**
   * Stores a request that has just become final as the list shows it (its record, rendered from the request as this
   * transaction leaves it): it never changes again, so list pages copy the text (docs/decisions.md, "Stored records
   * of final requests").
   */
  async #keepRecord(tx: Kysely<Schema>, request: store.ListedRequest): Promise<void> {
    await store.storeRecords(tx, [{ id: request.id, record: recordJson(request) }]);
  }

  /** The request's event (its status view as data) and one per eBRC it generated, written last in the transaction. */
  async #record(tx: Kysely<Schema>, request: store.RequestWithLineStates, ebrcs: readonly LocalEbrcRow[]): Promise<RequestStatusView> {
    const view = statusView(request);
    const owner = { platformId: request.platform_id, platformCustomerId: request.platform_customer_id };
    // The eBRCs join the customer's register (contract 13) in this transaction, as their event does.
    const registered = await registerOwnEbrcs(tx, { platformId: request.platform_id, customerId: request.platform_customer_id }, ebrcs);
    const events: NewEvent[] = [
      { ...owner, type: EVENT_OF_STATUS[view.status], data: view },
      ...registered.map((ebrc) => ({ ...owner, type: 'ebrc.generated' as const, data: ebrc })),
    ];
    await this.#outbox.record(tx, events);
    return view;
  }

  async #read(tx: Kysely<Schema>, id: string): Promise<store.ListedRequest> {
    const [request] = await store.requestsWithLines(tx, [id]);
    if (!request) throw new Error(`Request ${id} vanished inside its own transaction`);
    return request;
  }

  async #readStates(tx: Kysely<Schema>, id: string): Promise<store.RequestWithLineStates> {
    const request = await store.requestWithLineStates(tx, id);
    if (!request) throw new Error(`Request ${id} vanished inside its own transaction`);
    return request;
  }

  /** Runs a change in a transaction and, once it has committed, wakes the relay for its events. */
  async #commit<T>(work: (tx: Kysely<Schema>) => Promise<{ view: T }>): Promise<T> {
    const { view } = await this.#db.transaction().execute(work);
    if (view !== null) this.#outbox.committed();
    return view;
  }
}
