import { randomBytes, randomUUID } from 'node:crypto';
import type { AuthorityErrorDetail, RequestStatusAnswer } from '../authority/authority.ts';
import { AuthorityError } from '../authority/authority.ts';
import { AppError, authorityProblem, notFound } from '../errors.ts';
import { formatCents, parseDecimalString, sumCents, type Cents } from '../domain/money.ts';
import { lineToWire, normaliseLines, type Line, type RawLine } from '../domain/push-line.ts';
import { checkPushRules, type ErrorDetail, type IrmSnapshot } from '../domain/push-rules.ts';
import { finalStatusFor, visibleStatus, type LineStatus, type RequestStatus, type StoredRequestStatus } from '../domain/request-state.ts';
import { normalizeUploadType } from '../domain/upload-type.ts';
import type { RequestScheduler } from '../jobs/scheduler.ts';
import * as irmStore from '../store/irms.ts';
import * as store from '../store/requests.ts';
import { asCustomer, requireStoredCredentials, requireVerified, type CommitLink, type ServiceContext, type VerifiedCustomer } from './context.ts';
import { requireCustomer } from './customers.ts';
import type { IrmPuller } from './irms.ts';
import { lineEntry } from './request-list.ts';

export type PushBody = {
  platformCustomerId: string;
  recordResCount: number;
  uploadType: string | number;
  decalarationFlag: string;
  ebrcBulkGenDtos: RawLine[];
};

export type PushAck = {
  authorityAckId: string | null;
  requestId: string;
  ackStatus: 'Validated' | 'Failed';
  recordResCount: number;
  errorDetails: ErrorDetail[];
};

export type LineStatusEntry = {
  serialNo: number;
  irmNumber: string;
  sbCumInvoiceNumber: string;
  status: LineStatus;
  ebrcNumber: string | null;
  ebrcDate: string | null;
  errorDetails: ErrorDetail[];
};

export type RequestStatusView = {
  requestId: string;
  authorityAckId: string | null;
  status: RequestStatus;
  recordResCount: number;
  recordProCount: number;
  recordFailCount: number;
  processedAt: string | null;
  ebrcBulkGenStatusList: LineStatusEntry[];
  errorDetails: ErrorDetail[];
};

const DECLARATION_FLAG = 'Y';

/** A request the authority was never reached for is failed with this detail, once reconciliation has asked. */
const NOT_RECEIVED: ErrorDetail = {
  serialNo: null,
  field: null,
  code: 'authority_not_received',
  message: 'The authority never received this request (it was unreachable); nothing was generated and the mapped amounts were released.',
};

class LostReservationRace extends Error {
  readonly irmNumber: string;
  constructor(irmNumber: string) {
    super(`IRM ${irmNumber} changed while reserving`);
    this.irmNumber = irmNumber;
  }
}

/** Request ids are ours: unique, at most 50 characters (ERR07), never reused (ERR09). */
function newRequestId(now: Date): string {
  const day = now.toISOString().slice(0, 10).replaceAll('-', '');
  return `EBRCGW${day}${randomBytes(9).toString('hex').toUpperCase()}`;
}

function snapshotOf(row: irmStore.IrmForPush): IrmSnapshot {
  const ddMMyyyy = (iso: string) => `${iso.slice(8, 10)}${iso.slice(5, 7)}${iso.slice(0, 4)}`;
  return {
    irmNumber: row.irm_number,
    irmIssueDate: ddMMyyyy(row.irm_issue_date),
    ifscCode: row.ifsc_code,
    remittanceFCC: row.remittance_fcc,
    purposeOfRemittance: row.purpose_of_remittance,
    availableCents: parseDecimalString(row.irm_available_amt),
    remittanceDate: ddMMyyyy(row.remittance_date),
  };
}

function detailsForSerial(details: readonly ErrorDetail[], serialNo: number): ErrorDetail[] {
  return details.filter((detail) => detail.serialNo === serialNo);
}

export class GenebrcService {
  readonly #context: ServiceContext;
  readonly #puller: IrmPuller;
  readonly #scheduler: RequestScheduler;

  constructor(context: ServiceContext, puller: IrmPuller, scheduler: RequestScheduler) {
    this.#context = context;
    this.#puller = puller;
    this.#scheduler = scheduler;
  }

  /** How long a request may stay SUBMITTING before reconciliation asks the authority about it. */
  get submitGraceMs(): number {
    return this.#context.config.authorityTimeoutMs + 5_000;
  }

  /** `link` is called in the transaction that stores the request (its Idempotency-Key's link, see CommitLink). */
  async push(platformId: string, body: PushBody, link?: CommitLink): Promise<PushAck> {
    const { db } = this.#context;
    const customer = requireVerified(await requireCustomer(db, platformId, body.platformCustomerId));
    const uploadType = normalizeUploadType(body.uploadType);
    const problems = [];
    if (uploadType === null) {
      problems.push({
        path: '/uploadType',
        code: 'invalid_upload_type',
        message: 'uploadType must be 101, 102, 103 or 104 (string or number), or DIRECT_EXPORT, GOODS, SOFTEX, SERVICES or DEEMED_EXPORT.',
      });
    }
    if (body.decalarationFlag !== DECLARATION_FLAG) {
      problems.push({
        path: '/decalarationFlag',
        code: body.decalarationFlag === '' ? 'ERR36' : 'ERR37',
        message: 'decalarationFlag must be Y: the exporter declares the mapping true.',
      });
    }
    const normalised = uploadType === null ? { lines: [], problems: [] } : normaliseLines(body.ebrcBulkGenDtos, uploadType);
    problems.push(...normalised.problems);
    if (problems.length > 0 || uploadType === null) {
      throw new AppError(
        'validation_failed',
        problems.length === 1 ? `The push has an invalid field: ${problems[0]!.message}` : `The push has ${problems.length} invalid fields; see errors.`,
        { errors: problems },
      );
    }
    const lines = normalised.lines;
    const now = new Date();
    const request = {
      id: randomUUID(),
      requestId: newRequestId(now),
      platformId,
      customerId: customer.id,
      iecNumber: customer.iec_code,
      recordResCount: body.recordResCount,
      uploadType,
      declarationFlag: body.decalarationFlag,
    };

    const irms = await this.#irmsFor(customer, lines);
    const snapshots = new Map([...irms.values()].map((row) => [row.irm_number, snapshotOf(row)]));
    const ruleErrors = checkPushRules({ recordResCount: body.recordResCount, uploadType, lines, irms: snapshots });
    if (ruleErrors.length > 0) return this.#storeFailed(request, lines, irms, ruleErrors, link);

    try {
      await this.#reserveAndStore(request, lines, irms, link);
    } catch (error) {
      if (!(error instanceof LostReservationRace)) throw error;
      return this.#storeFailed(request, lines, irms, await this.#raceErrors(customer, lines, error.irmNumber), link);
    }
    return this.#submit(customer, request, lines);
  }

  /** The IRMs the lines name, from the store; unknown ones trigger a pull from the authority first. */
  async #irmsFor(customer: VerifiedCustomer, lines: readonly Line[]): Promise<Map<string, irmStore.IrmForPush>> {
    const numbers = [...new Set(lines.map((line) => line.irmNumber))];
    let rows = await irmStore.findIrmsByNumber(this.#context.db, customer.id, numbers);
    if (rows.length < numbers.length) {
      await this.#puller.pull(customer);
      rows = await irmStore.findIrmsByNumber(this.#context.db, customer.id, numbers);
    }
    return new Map(rows.map((row) => [row.irm_number, row]));
  }

  async #storeFailed(
    request: Omit<store.NewRequest, 'status' | 'errorDetails' | 'processedAt'>,
    lines: readonly Line[],
    irms: ReadonlyMap<string, irmStore.IrmForPush>,
    errors: ErrorDetail[],
    link: CommitLink | undefined,
  ): Promise<PushAck> {
    await this.#context.db.transaction().execute(async (tx) => {
      await store.insertRequest(
        tx,
        { ...request, status: 'FAILED', errorDetails: errors, processedAt: new Date() },
        lines.map((line, index) => this.#newLine(line, index, irms, false, 'FAILED', detailsForSerial(errors, line.serialNo))),
      );
      await link?.(tx, request.id);
    });
    return { authorityAckId: null, requestId: request.requestId, ackStatus: 'Failed', recordResCount: request.recordResCount, errorDetails: errors };
  }

  #newLine(
    line: Line,
    index: number,
    irms: ReadonlyMap<string, irmStore.IrmForPush>,
    reserved: boolean,
    status: LineStatus,
    errorDetails: ErrorDetail[],
  ): store.NewLine {
    return {
      lineIndex: index,
      serialNo: line.serialNo,
      irmId: irms.get(line.irmNumber)?.id ?? null,
      irmNumber: line.irmNumber,
      sbCumInvoiceNumber: line.sbCumInvoiceNumber,
      mappedAmount: formatCents(line.mappedIRMAmountFCC),
      reserved,
      payload: lineToWire(line),
      status,
      errorDetails,
    };
  }

  /**
   * Reserves every IRM's mapped total and stores the request, in one transaction: either all of it
   * happens or none. An IRM whose available amount moved since the checks (a concurrent push) loses the race.
   */
  async #reserveAndStore(
    request: Omit<store.NewRequest, 'status' | 'errorDetails' | 'processedAt'>,
    lines: readonly Line[],
    irms: ReadonlyMap<string, irmStore.IrmForPush>,
    link: CommitLink | undefined,
  ): Promise<void> {
    const perIrm = new Map<string, Cents[]>();
    for (const line of lines) perIrm.set(line.irmNumber, [...(perIrm.get(line.irmNumber) ?? []), line.mappedIRMAmountFCC]);
    const reservations = [...perIrm.entries()].map(([irmNumber, amounts]) => {
      const irm = irms.get(irmNumber)!;
      return { irmId: irm.id, irmNumber, expectedAvailable: irm.irm_available_amt, amount: formatCents(sumCents(amounts)) };
    });
    await this.#context.db.transaction().execute(async (tx) => {
      const reserved = await store.reserveIrmAmounts(tx, reservations);
      const lost = reservations.find((reservation) => !reserved.has(reservation.irmId));
      if (lost) throw new LostReservationRace(lost.irmNumber);
      await store.insertRequest(
        tx,
        { ...request, status: 'SUBMITTING', errorDetails: [], processedAt: null },
        lines.map((line, index) => this.#newLine(line, index, irms, true, 'PENDING', [])),
      );
      await this.#scheduler.scheduleAdvance(tx, request.id);
      await link?.(tx, request.id);
    });
  }

  /** Why a push lost a reservation race, checked against the IRMs as they are now (ERR23 or ERR38). */
  async #raceErrors(customer: VerifiedCustomer, lines: readonly Line[], irmNumber: string): Promise<ErrorDetail[]> {
    const [row] = await irmStore.findIrmsByNumber(this.#context.db, customer.id, [irmNumber]);
    const snapshots = new Map(row ? [[row.irm_number, snapshotOf(row)]] : []);
    const errors = checkPushRules({
      recordResCount: lines.length,
      uploadType: lines[0]!.uploadType,
      lines: lines.filter((line) => line.irmNumber === irmNumber),
      irms: snapshots,
    });
    return errors.length > 0
      ? errors
      : [{ serialNo: null, field: 'irmNumber', code: 'ERR38', message: `IRM ${irmNumber} was mapped by another request at the same time; refresh IRMs and push again.` }];
  }

  async #submit(
    customer: VerifiedCustomer,
    request: Omit<store.NewRequest, 'status' | 'errorDetails' | 'processedAt'>,
    lines: readonly Line[],
  ): Promise<PushAck> {
    try {
      const ack = await asCustomer(this.#context, customer, (credentials) =>
        this.#context.authority.push(credentials, {
          iecNumber: request.iecNumber,
          requestId: request.requestId,
          recordResCount: request.recordResCount,
          uploadType: request.uploadType,
          decalarationFlag: request.declarationFlag,
          ebrcBulkGenDtos: lines.map(lineToWire),
        }),
      );
      if (ack.ackStatus === 'Validated' && ack.ackId) {
        await store.moveRequest(this.#context.db, request.id, 'SUBMITTING', { status: 'PENDING', authorityAckId: ack.ackId });
        return { authorityAckId: ack.ackId, requestId: request.requestId, ackStatus: 'Validated', recordResCount: request.recordResCount, errorDetails: [] };
      }
      await this.#fail(request.id, 'SUBMITTING', ack.errorDetails);
      return { authorityAckId: null, requestId: request.requestId, ackStatus: 'Failed', recordResCount: request.recordResCount, errorDetails: ack.errorDetails };
    } catch (error) {
      if (!(error instanceof AuthorityError)) throw error;
      // The outcome is unknown (the authority may have taken the push and lost the answer): ask it by requestId.
      // After a timeout the push may still be on its way in, so "unknown there" is not proof yet: the request
      // is held, and the poller asks again once the grace time has passed.
      const settled = await this.#reconcile(request.id, customer, { failIfUnknown: error.failure !== 'timeout' }).catch(() => undefined);
      if (settled?.answer) return { ...settled.ack, recordResCount: request.recordResCount };
      const problem = authorityProblem(error);
      throw new AppError(
        problem.code,
        settled
          ? `${problem.detail} The authority never received request ${settled.ack.requestId}: nothing was generated and the mapped amounts were released. Push again once that is resolved.`
          : `${problem.detail} Request ${request.requestId} is held and will be reconciled with the authority by itself: it becomes PENDING if the authority ` +
            'received it, else FAILED with its amounts released. Follow it with POST /api/v1/genebrc/status.',
        // A held request is this push's outcome: a retry with the same Idempotency-Key must not push a second time.
        { onRetry: settled === undefined ? 'replay' : 'run_again' },
      );
    }
  }

  async #fail(id: string, from: StoredRequestStatus, errors: readonly AuthorityErrorDetail[]): Promise<boolean> {
    return this.#context.db.transaction().execute(async (tx) => {
      if (!(await store.moveRequest(tx, id, from, { status: 'FAILED', errorDetails: [...errors], processedAt: new Date() }))) return false;
      await store.setLinesStatus(tx, id, 'FAILED');
      await store.releaseReservations(tx, id);
      return true;
    });
  }

  /**
   * The acknowledgement of a stored request (internal id) of the platform, as its push answered it: for a retry whose
   * first answer was lost with its process. Null while the request is still being submitted (its outcome unknown).
   */
  async acknowledgementOf(platformId: string, id: string): Promise<PushAck | null> {
    const request = await store.findRequestById(this.#context.db, id);
    if (!request || request.platform_id !== platformId || request.status === 'SUBMITTING') return null;
    const failed = request.status === 'FAILED';
    return {
      authorityAckId: failed ? null : request.authority_ack_id,
      requestId: request.request_id,
      ackStatus: failed ? 'Failed' : 'Validated',
      recordResCount: request.record_res_count,
      errorDetails: failed ? request.error_details : [],
    };
  }

  /**
   * Settles a SUBMITTING request by asking the authority for its requestId: unknown there → FAILED
   * (nothing generated, reservations released), or left SUBMITTING with `failIfUnknown: false`;
   * refused → FAILED; accepted → PENDING with its ack id.
   */
  async #reconcile(
    id: string,
    customer: VerifiedCustomer,
    { failIfUnknown = true }: { failIfUnknown?: boolean } = {},
  ): Promise<{ ack: Omit<PushAck, 'recordResCount'>; answer: RequestStatusAnswer | null } | undefined> {
    const request = await store.findRequestById(this.#context.db, id);
    if (!request || request.status !== 'SUBMITTING') return undefined;
    const answer = await asCustomer(this.#context, customer, (credentials) => this.#context.authority.getStatus(credentials, request.request_id));
    if (answer === null && !failIfUnknown) return undefined;
    if (answer === null || answer.ackStatus === 'Failed' || !answer.ackId) {
      const errors = answer === null ? [NOT_RECEIVED] : answer.errorDetails;
      await this.#fail(id, 'SUBMITTING', errors);
      return { ack: { authorityAckId: null, requestId: request.request_id, ackStatus: 'Failed', errorDetails: errors as ErrorDetail[] }, answer };
    }
    await store.moveRequest(this.#context.db, id, 'SUBMITTING', { status: 'PENDING', authorityAckId: answer.ackId });
    return { ack: { authorityAckId: answer.ackId, requestId: request.request_id, ackStatus: 'Validated', errorDetails: [] }, answer };
  }

  /**
   * Moves one open request along: reconciles a SUBMITTING one whose push is older than the grace
   * time, asks the authority about a PENDING one and records a final answer. Safe to run from any
   * number of processes at once: every move is a compare-and-set on the status, so it happens once.
   * Returns the request's status afterwards.
   */
  async advance(id: string): Promise<StoredRequestStatus | undefined> {
    const { db } = this.#context;
    let request = await store.findRequestById(db, id);
    if (!request) return undefined;
    // Work already accepted goes on asking even when the authority has refused the credentials since.
    const customer = requireStoredCredentials(await requireCustomer(db, request.platform_id, request.platform_customer_id));
    let answer: RequestStatusAnswer | null | undefined;
    if (request.status === 'SUBMITTING') {
      if (Date.now() - request.created_at.getTime() < this.submitGraceMs) return 'SUBMITTING';
      answer = (await this.#reconcile(id, customer))?.answer;
      request = (await store.findRequestById(db, id))!;
    }
    if (request.status !== 'PENDING') return request.status as StoredRequestStatus;
    answer ??= await asCustomer(this.#context, customer, (credentials) => this.#context.authority.getStatus(credentials, request.request_id));
    if (!answer || answer.processingStatus === 'Pending') return 'PENDING';
    return this.#finish(request, answer);
  }

  async #finish(request: store.RequestRow, answer: RequestStatusAnswer): Promise<RequestStatus> {
    const results = answer.records.map((record) => ({
      serialNo: record.serialNo,
      status: record.status,
      ebrcNumber: record.ebrcNumber,
      ebrcDate: record.ebrcDate,
      errorDetails: record.errorDetails,
    }));
    const status = finalStatusFor(results.map((result) => result.status));
    const moved = await this.#context.db.transaction().execute(async (tx) => {
      if (!(await store.moveRequest(tx, request.id, 'PENDING', { status, processedAt: new Date() }))) return false;
      await store.applyLineResults(tx, request.id, results);
      await store.releaseReservations(tx, request.id, 'FAILED');
      return true;
    });
    if (moved) return status;
    return (await store.findRequestById(this.#context.db, request.id))!.status as RequestStatus;
  }

  async status(platformId: string, body: { platformCustomerId: string; requestId: string }): Promise<RequestStatusView> {
    const { db } = this.#context;
    const customer = await requireCustomer(db, platformId, body.platformCustomerId);
    let request = await store.findRequestOfCustomer(db, customer.id, body.requestId);
    if (!request) throw notFound(`Request ${body.requestId} of platform customer ${customer.id}`);
    if (request.status === 'PENDING' || request.status === 'SUBMITTING') {
      try {
        await this.advance(request.id);
      } catch (error) {
        // The status call answers what is known; the poller keeps asking the authority.
        if (!(error instanceof AuthorityError)) throw error;
      }
      request = (await store.findRequestById(db, request.id))!;
    }
    const entries = (await store.linesOfRequest(db, request.id)).map(lineEntry);
    return {
      requestId: request.request_id,
      authorityAckId: request.authority_ack_id,
      status: visibleStatus(request.status),
      recordResCount: request.record_res_count,
      recordProCount: entries.filter((entry) => entry.status === 'GENERATED').length,
      recordFailCount: entries.filter((entry) => entry.status === 'FAILED').length,
      processedAt: request.processed_at?.toISOString() ?? null,
      ebrcBulkGenStatusList: entries,
      errorDetails: request.error_details,
    };
  }
}
