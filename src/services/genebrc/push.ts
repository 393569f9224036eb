import { randomBytes, randomUUID } from 'node:crypto';
import { recordAudit, type AuditSource } from '../audit.ts';
import type { Static } from 'typebox';
import { AuthorityError } from '../../authority/authority.ts';
import { formatCents, parseDecimalString, sumCents } from '../../domain/money.ts';
import { lineToWire, normaliseLines, type Line, type RawLine } from '../../domain/push-line.ts';
import { CANCELLED_AT_AUTHORITY } from '../../domain/irm-status.ts';
import { checkPushRules, type ErrorDetail, type IrmSnapshot } from '../../domain/push-rules.ts';
import type { LineStatus } from '../../domain/request-state.ts';
import { checkPushMessage } from '../../domain/push-message.ts';
import type { UploadTypeCode } from '../../domain/upload-type.ts';
import { AppError, authorityProblem } from '../../errors.ts';
import type { PushBodySchema } from '../../schemas/genebrc-requests.ts';
import * as irmStore from '../../store/irms.ts';
import * as store from '../../store/requests.ts';
import { asCustomer, requireStoredCredentials, requireVerified, type CommitLink, type ServiceContext, type VerifiedCustomer } from '../context.ts';
import { requireCustomer } from '../customers.ts';
import type { IrmPuller } from '../irms.ts';
import type { OpenedRequest, RequestLifecycle, RequestToStore } from './lifecycle.ts';
import type { RequestProgress } from './progress.ts';
import { storedAcknowledgement, type PushAck } from './views.ts';

export type PushBody = Omit<Static<typeof PushBodySchema>, 'ebrcBulkGenDtos'> & { ebrcBulkGenDtos: RawLine[] };

/** The authority's refusals that mean our copy of its IRMs is behind: an amount (ERR23, ERR38) or no such IRM (ERR18). */
const REFRESHING_CODES: ReadonlySet<string> = new Set(['ERR18', 'ERR23', 'ERR38']);

/** The IRM number of the line an error names (by serial number), or the error's own when it names none. */
function lineIrmNumber(lines: readonly Line[], detail: ErrorDetail): string {
  return lines.find((line) => line.serialNo === detail.serialNo)?.irmNumber ?? '';
}

class LostReservationRace extends Error {
  readonly irmNumber: string;
  constructor(irmNumber: string) {
    super(`IRM ${irmNumber} changed while reserving`);
    this.irmNumber = irmNumber;
  }
}

/** A resumed push is sent only when one authority call fits this far inside the submit grace time. */
const SEND_MARGIN_MS = 1_000;

/** A reconciliation the authority did not answer (PushService.resume). */
const UNANSWERED = Symbol('unanswered');

/** A stored request as it is sent. */
function storedRequestOf(row: store.RequestRow): RequestToStore {
  return {
    id: row.id,
    requestId: row.request_id,
    platformId: row.platform_id,
    customerId: row.platform_customer_id,
    iecNumber: row.iec_number,
    recordResCount: row.record_res_count,
    uploadType: row.upload_type,
    declarationFlag: row.declaration_flag,
  };
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

/** `payload`: the line as the authority is sent it (lineToWire), which the list shows as pushed. */
function storedLine(
  line: Line,
  payload: Record<string, unknown>,
  index: number,
  irms: ReadonlyMap<string, irmStore.IrmForPush>,
  reserved: boolean,
  status: LineStatus,
  errors: ErrorDetail[],
): store.NewLine {
  return {
    lineIndex: index,
    serialNo: line.serialNo,
    irmId: irms.get(line.irmNumber)?.id ?? null,
    irmNumber: line.irmNumber,
    sbCumInvoiceNumber: line.sbCumInvoiceNumber,
    mappedAmount: formatCents(line.mappedIRMAmountFCC),
    reserved,
    payload,
    status,
    errorDetails: errors,
  };
}

/**
 * POST /genebrc/push-irm: validates a push, reserves its amounts and stores it (through the lifecycle), sends it to
 * the authority and records the acknowledgement.
 */
export class PushService {
  readonly #context: ServiceContext;
  readonly #puller: IrmPuller;
  readonly #lifecycle: RequestLifecycle;
  readonly #progress: RequestProgress;

  constructor(context: ServiceContext, puller: IrmPuller, lifecycle: RequestLifecycle, progress: RequestProgress) {
    this.#context = context;
    this.#puller = puller;
    this.#lifecycle = lifecycle;
    this.#progress = progress;
  }

  /** `link` is called in the transaction that stores the request (its Idempotency-Key's link, see CommitLink). */
  async push(platformId: string, body: PushBody, source: AuditSource, idempotencyLink?: CommitLink): Promise<PushAck> {
    // The request is stored (opened, or refused) in one transaction, with its Idempotency-Key's link and its entry.
    const link: CommitLink = async (tx, requestId) => {
      await idempotencyLink?.(tx, requestId);
      await recordAudit(tx, source, { platformId, action: 'genebrc_request.push', target: { type: 'genebrc_request', id: requestId } });
    };
    const { customer, uploadType, lines, irms, ruleErrors } = await this.#checked(platformId, body);
    const request: RequestToStore = {
      id: randomUUID(),
      requestId: newRequestId(new Date()),
      platformId,
      customerId: customer.id,
      iecNumber: customer.iec_code,
      recordResCount: body.recordResCount,
      uploadType,
      declarationFlag: body.decalarationFlag,
    };
    const refused = (errors: ErrorDetail[]) => this.#refuse(request, lines, irms, errors, link);
    if (ruleErrors.length > 0) {
      const ack = await refused(ruleErrors);
      // Our copy of the IRMs said no; it may be behind the authority (an eBRC made on the portal): pulled as for the
      // authority's own refusal, so that the next read shows the authority's amounts.
      if (ruleErrors.some((detail) => REFRESHING_CODES.has(detail.code))) await this.#refreshAfterRefusal(customer);
      return ack;
    }
    const wireLines = lines.map(lineToWire);
    let opened: OpenedRequest;
    try {
      opened = await this.#reserveAndOpen(request, lines, wireLines, irms, link);
    } catch (error) {
      if (!(error instanceof LostReservationRace)) throw error;
      return refused(await this.#raceErrors(customer, lines, error.irmNumber));
    }
    return this.#send(customer, request, wireLines, opened);
  }

  /**
   * A retry (same Idempotency-Key) of a push whose first run stored the request (internal id `id`) but gave no answer:
   * a database fault after the request was stored or sent, or a process that died. The acknowledgement when the
   * outcome is known; null while it cannot be known yet (the retry is answered 409 idempotency_key_in_use).
   *
   * A request still SUBMITTING may have reached the authority, so the authority is asked first, by requestId: when it
   * has the request, its acknowledgement is the answer. When it has no record:
   * - the first run is over (`first.ended`: it answered and released the key, which this retry now holds) and there is
   *   time for one authority call before the poller may reconcile the request (its submit grace time): the stored
   *   request is sent now, under its own requestId, as the first run would have sent it;
   * - else, once the grace time has passed, the request is failed as never received (its amounts released), as the
   *   poller would, and that is the answer: the push did not happen, and a new push takes a new key.
   * Either way one key leads to at most one request at the authority.
   */
  async resume(platformId: string, id: string, first: { ended: boolean }): Promise<PushAck | null> {
    const { db, config } = this.#context;
    const request = await store.findRequestById(db, id);
    if (!request || request.platform_id !== platformId) return null;
    if (request.status !== 'SUBMITTING') return storedAcknowledgement(db, platformId, id);
    const age = () => Date.now() - request.created_at.getTime();
    const grace = this.#progress.submitGraceMs;
    const customer = requireStoredCredentials(await requireCustomer(db, platformId, request.platform_customer_id));
    if (first.ended) {
      const settled = await this.#reconcileUnlessUnanswered(id, customer, false);
      if (settled === UNANSWERED) return null;
      if (settled) return { ...settled.ack, recordResCount: request.record_res_count };
      const lines = await store.linesOfRequest(db, id);
      // Measured after the status call and the read, which may each have taken most of the window.
      if (age() + config.authorityTimeoutMs + SEND_MARGIN_MS < grace) {
        return this.#send(customer, storedRequestOf(request), lines.map((line) => line.payload));
      }
    }
    if (age() < grace) return null;
    const settled = await this.#reconcileUnlessUnanswered(id, customer, true);
    if (settled === UNANSWERED) return null;
    if (settled) return { ...settled.ack, recordResCount: request.record_res_count };
    // Moved by another process meanwhile.
    return storedAcknowledgement(db, platformId, id);
  }

  /**
   * The request reconciled with the authority, or UNANSWERED when the authority could not be asked: the outcome is
   * then not known yet, so the retry is answered as one while the first run is still at work (409), and never sends
   * the request again (the authority may have it). A generic 502/504 would name no request.
   */
  async #reconcileUnlessUnanswered(id: string, customer: VerifiedCustomer, failIfUnknown: boolean) {
    try {
      return await this.#progress.reconcile(id, customer, { failIfUnknown });
    } catch (error) {
      if (error instanceof AuthorityError) return UNANSWERED;
      throw error;
    }
  }

  /**
   * The push's own checks without storing or sending anything (the console's review step): a malformed push throws
   * its 400 as push does; the rules it breaks against the customer's IRMs as stored now are returned (none: it may be
   * pushed as it is, unless an IRM moves before then).
   */
  async check(platformId: string, body: PushBody): Promise<ErrorDetail[]> {
    return (await this.#checked(platformId, body)).ruleErrors;
  }

  /** The customer (verified), the push's normalised lines, the IRMs they name, and the authority's rules they break. */
  async #checked(platformId: string, body: PushBody) {
    const customer = requireVerified(await requireCustomer(this.#context.db, platformId, body.platformCustomerId));
    const { uploadType, lines } = this.#validated(body);
    const irms = await this.#irmsFor(customer, lines);
    // A cancelled IRM is, to a push, one the authority does not have (ERR18), as the authority itself answers.
    const live = [...irms.values()].filter((row) => row.authority_status !== CANCELLED_AT_AUTHORITY);
    const snapshots = new Map(live.map((row) => [row.irm_number, snapshotOf(row)]));
    const ruleErrors = checkPushRules({ recordResCount: body.recordResCount, uploadType, lines, irms: snapshots }).map((detail) =>
      detail.code === 'ERR18' && irms.get(lineIrmNumber(lines, detail))?.authority_status === CANCELLED_AT_AUTHORITY
        ? { ...detail, message: `IRM ${lineIrmNumber(lines, detail)} was cancelled at the authority (irmStatus C): it cannot be mapped.` }
        : detail,
    );
    return { customer, uploadType, lines, irms, ruleErrors };
  }

  /** The push's lines, normalised; every malformed field (not a rule the authority checks) is a 400. */
  #validated(body: PushBody): { uploadType: UploadTypeCode; lines: Line[] } {
    const { uploadType, problems } = checkPushMessage(body);
    const normalised = uploadType === null ? { lines: [], problems: [] } : normaliseLines(body.ebrcBulkGenDtos, uploadType);
    problems.push(...normalised.problems);
    if (problems.length > 0 || uploadType === null) {
      throw new AppError(
        'validation_failed',
        problems.length === 1 ? `The push has an invalid field: ${problems[0]!.message}` : `The push has ${problems.length} invalid fields; see errors.`,
        { errors: problems },
      );
    }
    return { uploadType, lines: normalised.lines };
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

  async #refuse(
    request: RequestToStore,
    lines: readonly Line[],
    irms: ReadonlyMap<string, irmStore.IrmForPush>,
    errors: ErrorDetail[],
    link: CommitLink | undefined,
  ): Promise<PushAck> {
    const perSerial = (serialNo: number) => errors.filter((detail) => detail.serialNo === serialNo);
    const stored = lines.map((line, index) => storedLine(line, lineToWire(line), index, irms, false, 'FAILED', perSerial(line.serialNo)));
    await this.#lifecycle.refuse(request, stored, errors, link);
    return { authorityAckId: null, requestId: request.requestId, ackStatus: 'Failed', recordResCount: request.recordResCount, errorDetails: errors };
  }

  /**
   * Reserves every IRM's mapped total and opens the request, in one transaction: either all of it happens or none.
   * An IRM whose available amount moved since the checks (a concurrent push) loses the race.
   */
  async #reserveAndOpen(
    request: RequestToStore,
    lines: readonly Line[],
    wireLines: readonly Record<string, unknown>[],
    irms: ReadonlyMap<string, irmStore.IrmForPush>,
    link: CommitLink | undefined,
  ): Promise<OpenedRequest> {
    const reservations = [...Map.groupBy(lines, (line) => line.irmNumber)].map(([irmNumber, irmLines]) => {
      const irm = irms.get(irmNumber)!;
      const amount = sumCents(irmLines.map((line) => line.mappedIRMAmountFCC));
      return { irmId: irm.id, irmNumber, expectedAvailable: irm.irm_available_amt, amount: formatCents(amount) };
    });
    return this.#context.db.transaction().execute(async (tx) => {
      const reserved = await store.reserveIrmAmounts(tx, reservations);
      const lost = reservations.find((reservation) => !reserved.has(reservation.irmId));
      if (lost) throw new LostReservationRace(lost.irmNumber);
      const opened = await this.#lifecycle.open(tx, request, lines.map((line, index) => storedLine(line, wireLines[index]!, index, irms, true, 'PENDING', [])));
      await link?.(tx, request.id);
      return opened;
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

  /**
   * The push was refused for an amount or an IRM the authority does not have, by the authority or by our checks on
   * our copy: that copy may be behind the authority (contract 13, "No wedge"). The customer's IRMs are pulled at once,
   * before the refusal is answered, so that the next list, template, matching or review shows the authority's amounts.
   * The refusal is the answer whatever the pull meets.
   */
  async #refreshAfterRefusal(customer: VerifiedCustomer): Promise<void> {
    try {
      await this.#puller.pullNow(customer);
    } catch (error) {
      if (!(error instanceof AuthorityError) && !(error instanceof AppError)) throw error;
    }
  }

  /** `opened`: the request as this process has just opened it (a resumed one's lines are read back when acknowledged). */
  async #send(customer: VerifiedCustomer, request: RequestToStore, wireLines: Record<string, unknown>[], opened?: OpenedRequest): Promise<PushAck> {
    const answered = { requestId: request.requestId, recordResCount: request.recordResCount };
    try {
      const ack = await asCustomer(this.#context, customer, (credentials) =>
        this.#context.authority.push(credentials, {
          iecNumber: request.iecNumber,
          requestId: request.requestId,
          recordResCount: request.recordResCount,
          uploadType: request.uploadType,
          decalarationFlag: request.declarationFlag,
          ebrcBulkGenDtos: wireLines,
        }),
      );
      if (ack.ackStatus === 'Validated' && ack.ackId) {
        await this.#lifecycle.acknowledge(request.id, ack.ackId, opened);
        return { ...answered, authorityAckId: ack.ackId, ackStatus: 'Validated', errorDetails: [] };
      }
      await this.#lifecycle.fail(request.id, ack.errorDetails);
      if (ack.errorDetails.some((detail) => REFRESHING_CODES.has(detail.code))) await this.#refreshAfterRefusal(customer);
      return { ...answered, authorityAckId: null, ackStatus: 'Failed', errorDetails: ack.errorDetails };
    } catch (error) {
      if (!(error instanceof AuthorityError)) throw error;
      // The outcome is unknown (the authority may have taken the push and lost the answer): ask it by requestId.
      // After a timeout the push may still be on its way in, so "unknown there" is not proof yet: the request
      // is held, and the poller asks again once the grace time has passed.
      const settled = await this.#progress.reconcile(request.id, customer, { failIfUnknown: error.failure !== 'timeout' }).catch(() => undefined);
      if (settled?.answered) return { ...settled.ack, recordResCount: request.recordResCount };
      const problem = authorityProblem(error);
      throw new AppError(
        problem.code,
        settled
          ? `${problem.detail} The authority never received request ${request.requestId}: nothing was generated and the mapped amounts were released. Push again once that is resolved.`
          : `${problem.detail} Request ${request.requestId} is held and will be reconciled with the authority by itself: it becomes PENDING if the authority ` +
            'received it, else FAILED with its amounts released. Follow it with POST /api/v1/genebrc/status.',
        // A held request is this push's outcome: a retry with the same Idempotency-Key must not push a second time.
        { onRetry: settled === undefined ? 'replay' : 'run_again' },
      );
    }
  }
}
