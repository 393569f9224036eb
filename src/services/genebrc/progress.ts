import type { RequestStatusAnswer } from '../../authority/authority.ts';
import { AuthorityError } from '../../authority/authority.ts';
import type { ErrorDetail } from '../../domain/push-rules.ts';
import type { StoredRequestStatus } from '../../domain/request-state.ts';
import { notFound } from '../../errors.ts';
import * as store from '../../store/requests.ts';
import { asCustomer, requireStoredCredentials, type ServiceContext, type VerifiedCustomer } from '../context.ts';
import { requireCustomer } from '../customers.ts';
import type { RequestLifecycle } from './lifecycle.ts';
import { statusView, type PushAck, type RequestStatusView } from './views.ts';

/** The code of the one error detail of a request failed because the authority never received it. */
export const NOT_RECEIVED_CODE = 'authority_not_received';

/** A request the authority was never reached for is failed with this detail, once reconciliation has asked. */
const NOT_RECEIVED: ErrorDetail = {
  serialNo: null,
  field: null,
  code: NOT_RECEIVED_CODE,
  message: 'The authority never received this request (it was unreachable); nothing was generated and the mapped amounts were released.',
};

/** A settled acknowledgement, and whether the authority knew the request (else it was failed as never received). */
export type Reconciled = { ack: Omit<PushAck, 'recordResCount'>; answered: boolean };

/**
 * Moves open requests along by asking the authority about them: the poller's job, and the status operation for a
 * request still open. It decides; the lifecycle writes.
 */
export class RequestProgress {
  readonly #context: ServiceContext;
  readonly #lifecycle: RequestLifecycle;

  constructor(context: ServiceContext, lifecycle: RequestLifecycle) {
    this.#context = context;
    this.#lifecycle = lifecycle;
  }

  /** How long a request may stay SUBMITTING before reconciliation asks the authority about it. */
  get submitGraceMs(): number {
    return this.#context.config.authorityTimeoutMs + 5_000;
  }

  /**
   * Settles a SUBMITTING request by asking the authority for its requestId: unknown there → FAILED (nothing
   * generated, reservations released), or left SUBMITTING with `failIfUnknown: false`; refused → FAILED;
   * accepted → PENDING with its ack id. Undefined when it was not SUBMITTING or is left so.
   */
  async reconcile(id: string, customer: VerifiedCustomer, { failIfUnknown = true }: { failIfUnknown?: boolean } = {}): Promise<Reconciled | undefined> {
    const request = await store.findRequestById(this.#context.db, id);
    if (!request || request.status !== 'SUBMITTING') return undefined;
    return this.#reconcile(request, customer, failIfUnknown);
  }

  async #reconcile(request: store.RequestRow, customer: VerifiedCustomer, failIfUnknown: boolean): Promise<(Reconciled & { answer: RequestStatusAnswer | null }) | undefined> {
    const answer = await asCustomer(this.#context, customer, (credentials) => this.#context.authority.getStatus(credentials, request.request_id));
    if (answer === null && !failIfUnknown) return undefined;
    const base = { requestId: request.request_id, answer, answered: answer !== null };
    if (answer === null || answer.ackStatus === 'Failed' || !answer.ackId) {
      const errors = answer === null ? [NOT_RECEIVED] : answer.errorDetails;
      await this.#lifecycle.fail(request.id, errors);
      return { ...base, ack: { authorityAckId: null, requestId: request.request_id, ackStatus: 'Failed', errorDetails: errors } };
    }
    await this.#lifecycle.acknowledge(request.id, answer.ackId);
    return { ...base, ack: { authorityAckId: answer.ackId, requestId: request.request_id, ackStatus: 'Validated', errorDetails: [] } };
  }

  /**
   * Moves one open request (internal id) along: reconciles a SUBMITTING one whose push is older than the grace time,
   * asks the authority about a PENDING one and records a final answer. Safe to run from any number of processes at
   * once: every move is a compare-and-set on the status, so it happens once. Returns the status afterwards.
   */
  async advance(id: string): Promise<StoredRequestStatus | undefined> {
    const request = await store.findRequestById(this.#context.db, id);
    if (!request) return undefined;
    return (await this.#advance(request)).status;
  }

  /** Advances the request; returns its status, and its status view when this call moved it. */
  async #advance(request: store.RequestRow): Promise<{ status: StoredRequestStatus; view: RequestStatusView | null }> {
    const unchanged = { status: request.status as StoredRequestStatus, view: null };
    if (request.status !== 'SUBMITTING' && request.status !== 'PENDING') return unchanged;
    if (request.status === 'SUBMITTING' && Date.now() - request.created_at.getTime() < this.submitGraceMs) return unchanged;
    // Work already accepted goes on asking even when the authority has refused the credentials since.
    const customer = requireStoredCredentials(await requireCustomer(this.#context.db, request.platform_id, request.platform_customer_id));
    let answer: RequestStatusAnswer | null | undefined;
    if (request.status === 'SUBMITTING') {
      const reconciled = await this.#reconcile(request, customer, true);
      if (reconciled?.ack.ackStatus !== 'Validated') return { status: 'FAILED', view: null };
      answer = reconciled.answer;
    }
    answer ??= await asCustomer(this.#context, customer, (credentials) => this.#context.authority.getStatus(credentials, request.request_id));
    if (!answer || answer.processingStatus === 'Pending') return { status: 'PENDING', view: null };
    const view = await this.#lifecycle.finish(request.id, answer.records);
    if (view) return { status: view.status, view };
    // Another process finished it first.
    return { status: ((await store.findRequestById(this.#context.db, request.id))?.status ?? 'PENDING') as StoredRequestStatus, view: null };
  }

  /** POST /genebrc/status: the request as known, after asking the authority about it when it is still open. */
  async status(platformId: string, body: { platformCustomerId: string; requestId: string }): Promise<RequestStatusView> {
    const { db } = this.#context;
    const customer = await requireCustomer(db, platformId, body.platformCustomerId);
    const request = await store.findRequestOfCustomer(db, customer.id, body.requestId);
    if (!request) throw notFound(`Request ${body.requestId} of platform customer ${customer.id}`);
    if (request.status !== 'PENDING' && request.status !== 'SUBMITTING') return statusView(request);
    let advanced: { status: StoredRequestStatus; view: RequestStatusView | null };
    try {
      advanced = await this.#advance(request);
    } catch (error) {
      // The status call answers what is known; the poller keeps asking the authority.
      if (!(error instanceof AuthorityError)) throw error;
      return statusView(request);
    }
    if (advanced.view) return advanced.view;
    if (advanced.status === request.status) return statusView(request);
    // Moved by this call without a view of the final state (reconciled only), or by another process.
    return statusView((await store.findRequestOfCustomer(db, customer.id, body.requestId))!);
  }
}
