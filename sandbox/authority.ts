/**
 * What the sandbox authority does behind its protocol: it serves each test account's deterministic IRMs
 * (irm-generator.ts) with the balances it keeps, validates pushes by the authority's published rules
 * (domain/push-line.ts, domain/push-rules.ts) while holding the IRMs' rows locked, and processes accepted pushes
 * after `processingDelayMs`: each line gets a unique eBRC number, or fails (billNo SANDBOX-FAIL, ERR40) and gives its
 * amount back to its IRM. Messages in and out are the plain wire messages of src/authority/protocol/messages.ts.
 *
 * eBRC numbers: "EBRC", the processing date as YYYYMMDD and a 10-digit sequence number, e.g. EBRC202611220000000042.
 * Ack ids: "ACK-" and a random UUID.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely, NotNull, Selectable, Transaction } from 'kysely';
import { sql } from 'kysely';
import type {
  FetchEbrcDetailsResponse,
  FetchIrmDetailsResponse,
  GetRequestStatusResponse,
  PushIrmToGenEbrcResponse,
  WireDate,
  WireErrorDetail,
  WireIrm,
} from '../src/authority/protocol/messages.ts';
import { REQUEST_NOT_RECEIVED_CODE } from '../src/authority/protocol/messages.ts';
import { isoFromDdMMyyyy, parseIsoDate, toDdMMyyyy } from '../src/domain/dates.ts';
import { formatCents, parseDecimalString, sumCents } from '../src/domain/money.ts';
import type { Line, RawLine } from '../src/domain/push-line.ts';
import { normaliseLines } from '../src/domain/push-line.ts';
import type { IrmSnapshot } from '../src/domain/push-rules.ts';
import { checkPushRules } from '../src/domain/push-rules.ts';
import type { UploadTypeCode } from '../src/domain/upload-type.ts';
import { normalizeUploadType } from '../src/domain/upload-type.ts';
import type { SandboxAccount } from './accounts.ts';
import { generateIrms, issuedIrmCount } from './irm-generator.ts';
import type { IrmsTable, RequestLinesTable, RequestsTable, SandboxSchema } from './store/schema.ts';

/** A line with this billNo fails at processing (ERR40); its amount goes back to the IRM. */
const FAIL_BILL_NO = 'SANDBOX-FAIL';

const PROCESSING_FAILURE = { field: 'billNo', code: 'ERR40', message: 'Shipping bill not found at customs.' };

const MAX_REQUEST_ID_LENGTH = 50;
// What requests.record_res_count (integer) holds.
const MAX_RECORD_COUNT = 2 ** 31 - 1;
const DECLARATION_FLAG = 'Y';
const IRM_INSERT_BATCH = 500;
const EBRC_SEQUENCE_DIGITS = 10;
const PROCESSING_BATCH = 100;
const EBRC_GENERATED = 'GENERATED';
const EBRC_CANCELLED = 'CANCELLED';

type Db = Kysely<SandboxSchema>;
type Trx = Transaction<SandboxSchema>;
type StoredRequest = Selectable<RequestsTable>;
type StoredLine = Selectable<RequestLinesTable>;

/** fetchIRMDetails' filters, read: dates as YYYY-MM-DD, null when unused. */
export type IrmFilters = { iecCode: string; irmNumber: string | null; fromDate: string | null; toDate: string | null };

/** fetchEBRCDetails' filters, read: dates as YYYY-MM-DD, null when unused. */
export type EbrcFilters = {
  iecCode: string;
  fromDate: string | null;
  toDate: string | null;
  sbCumInvoiceNumber: string | null;
  sbCumInvoiceDate: string | null;
};

export type SandboxAuthority = {
  fetchIrms(account: SandboxAccount, filters: IrmFilters): Promise<FetchIrmDetailsResponse>;
  /** Validates a push and, when it passes, stores it and reserves its amounts. The message is as it came. */
  receivePush(account: SandboxAccount, message: Record<string, unknown>): Promise<PushIrmToGenEbrcResponse>;
  requestStatus(account: SandboxAccount, requestId: string): Promise<GetRequestStatusResponse>;
  fetchEbrcs(account: SandboxAccount, filters: EbrcFilters): Promise<FetchEbrcDetailsResponse>;
  /** Processes the accepted pushes whose delay has passed; returns how many it processed. */
  processDueRequests(): Promise<number>;
};

export function createSandboxAuthority(options: { db: Db; processingDelayMs: number; now: () => Date }): SandboxAuthority {
  const { db, processingDelayMs, now } = options;
  const materialiseIrms = irmMaterialiser(db);

  const dueBefore = (at: Date): Date => new Date(at.getTime() - processingDelayMs);

  async function processDue(account: SandboxAccount | null): Promise<number> {
    const at = now();
    let query = db
      .selectFrom('authority_sandbox.requests')
      .select('request_id')
      .where('processed_at', 'is', null)
      .where('received_at', '<=', dueBefore(at))
      .orderBy('received_at')
      .limit(PROCESSING_BATCH);
    if (account !== null) query = query.where('account_username', '=', account.username);
    const due = await query.execute();
    for (const { request_id: requestId } of due) await processRequest(db, requestId, at);
    return due.length;
  }

  return {
    async fetchIrms(account, filters) {
      if (filters.iecCode !== account.iecCode) return { irmResplst: [] };
      const at = now();
      await materialiseIrms(account, at);
      let select = issuedIrms(db, account, at).selectAll();
      if (filters.irmNumber !== null) select = select.where('irm_number', '=', filters.irmNumber);
      if (filters.fromDate !== null) select = select.where('irm_issue_date', '>=', filters.fromDate);
      if (filters.toDate !== null) select = select.where('irm_issue_date', '<=', filters.toDate);
      const rows = await select.orderBy('seq').execute();
      return { irmResplst: rows.map(wireIrm) };
    },

    async receivePush(account, message) {
      const requestId = typeof message.requestId === 'string' ? message.requestId : '';
      const { recordResCount } = message;
      const count = typeof recordResCount === 'number' && Number.isInteger(recordResCount) && recordResCount >= 0 &&
          recordResCount <= MAX_RECORD_COUNT
        ? recordResCount
        : null;
      const refusal = (errorDetails: WireErrorDetail[]): PushIrmToGenEbrcResponse =>
        ({ dgftAckId: null, requestId, ackStatus: 'Failed', recordResCount: count ?? 0, errorDetails });

      // Without a usable requestId or count there is nothing to record the refusal under.
      if (requestId.length === 0 || requestId.length > MAX_REQUEST_ID_LENGTH) {
        return refusal([messageError('requestId', 'ERR07', `requestId must be text of 1 to ${MAX_REQUEST_ID_LENGTH} characters.`)]);
      }
      if (count === null) return refusal([messageError('recordResCount', 'ERR08', 'recordResCount must be a whole number.')]);

      const { problems, readable } = readPush(account, message);
      const lines = readable?.lines ?? [];
      const at = now();
      if (lines.length > 0) await materialiseIrms(account, at);
      const ackId = `ACK-${randomUUID()}`;

      return db.transaction().execute(async (trx) => {
        // Locking the IRMs makes validation and reservation one step: a concurrent push waits, then sees the new balance.
        const irms = await lockIrms(trx, account, at, lines);
        const errors = readable === null
          ? problems
          : [...problems, ...checkPushRules({ recordResCount: count, uploadType: readable.uploadType, lines, irms })];
        const accepted = errors.length === 0;
        const stored = await trx
          .insertInto('authority_sandbox.requests')
          .values({
            request_id: requestId,
            account_username: account.username,
            ack_id: accepted ? ackId : null,
            ack_status: accepted ? 'Validated' : 'Failed',
            record_res_count: count,
            error_details: JSON.stringify(errors),
            received_at: at,
            processed_at: accepted ? null : at,
          })
          .onConflict((conflict) => conflict.column('request_id').doNothing())
          .returning('request_id')
          .executeTakeFirst();
        if (stored === undefined) {
          // The requestId alone answers: its other problems were answered to the push that first used it.
          return refusal([messageError('requestId', 'ERR09', `requestId ${requestId} has been received before.`)]);
        }
        if (!accepted) return refusal(errors);

        await reserveMappedAmounts(trx, lines);
        await storeLines(trx, requestId, lines);
        return { dgftAckId: ackId, requestId, ackStatus: 'Validated', recordResCount: count, errorDetails: [] };
      });
    },

    async requestStatus(account, requestId) {
      let request = await findRequest(db, account, requestId);
      if (request === undefined) return notReceived(requestId);
      const at = now();
      if (request.processed_at === null && request.received_at <= dueBefore(at)) {
        await processRequest(db, requestId, at);
        request = await findRequest(db, account, requestId) ?? request;
      }
      const lines = await db
        .selectFrom('authority_sandbox.request_lines')
        .selectAll()
        .where('request_id', '=', requestId)
        .orderBy('serial_no')
        .execute();
      return statusAnswer(request, lines);
    },

    async fetchEbrcs(account, filters) {
      if (filters.iecCode !== account.iecCode) return { eBRCRespList: [] };
      await processDue(account);
      let select = db
        .selectFrom('authority_sandbox.request_lines as line')
        .innerJoin('authority_sandbox.requests as request', 'request.request_id', 'line.request_id')
        .select([
          'line.ebrc_number', 'line.ebrc_date', 'line.irm_number', 'line.sb_cum_invoice_number', 'line.sb_cum_invoice_date',
          'line.mapped_amount', 'line.currency', 'line.ebrc_cancelled_at',
        ])
        .where('request.account_username', '=', account.username)
        .where('line.status', '=', 'GENERATED')
        .$narrowType<{ ebrc_number: NotNull; ebrc_date: NotNull }>();
      if (filters.fromDate !== null) select = select.where('line.ebrc_date', '>=', filters.fromDate);
      if (filters.toDate !== null) select = select.where('line.ebrc_date', '<=', filters.toDate);
      if (filters.sbCumInvoiceNumber !== null) select = select.where('line.sb_cum_invoice_number', '=', filters.sbCumInvoiceNumber);
      if (filters.sbCumInvoiceDate !== null) select = select.where('line.sb_cum_invoice_date', '=', filters.sbCumInvoiceDate);
      const rows = await select.orderBy('line.ebrc_number').execute();
      return {
        eBRCRespList: rows.map((row) => ({
          ebrcNumber: row.ebrc_number,
          ebrcDate: wireDate(row.ebrc_date),
          irmNumber: row.irm_number,
          sbCumInvoiceNumber: row.sb_cum_invoice_number,
          sbCumInvoiceDate: wireDate(row.sb_cum_invoice_date),
          realisedValueFCC: row.mapped_amount,
          currency: row.currency,
          iecCode: account.iecCode,
          status: row.ebrc_cancelled_at === null ? EBRC_GENERATED : EBRC_CANCELLED,
        })),
      };
    },

    processDueRequests: () => processDue(null),
  };
}

/**
 * Inserts an account's IRMs issued by a given time, in order, only those not inserted before; calls for one account
 * run one after another, so a burst of calls inserts each IRM once. Inserting in order keeps the stored IRMs a prefix
 * of the account's stream, so the next one to insert is max(seq) + 1.
 */
export function irmMaterialiser(db: Db): (account: SandboxAccount, at: Date) => Promise<void> {
  const storedCounts = new Map<string, number>();
  const latestRuns = new Map<string, Promise<void>>();

  async function storedCount(account: SandboxAccount): Promise<number> {
    const known = storedCounts.get(account.username);
    if (known !== undefined) return known;
    const row = await db
      .selectFrom('authority_sandbox.irms')
      .select((eb) => eb.fn.max('seq').as('lastSeq'))
      .where('account_username', '=', account.username)
      .executeTakeFirst();
    return row?.lastSeq == null ? 0 : row.lastSeq + 1;
  }

  async function materialise(account: SandboxAccount, at: Date): Promise<void> {
    const target = issuedIrmCount(account.irmProfile, at);
    const stored = await storedCount(account);
    for (let from = stored; from < target; from += IRM_INSERT_BATCH) {
      const irms = generateIrms(account, from, Math.min(from + IRM_INSERT_BATCH, target));
      await db
        .insertInto('authority_sandbox.irms')
        .values(irms.map((irm) => ({
          irm_number: irm.irmNumber,
          account_username: account.username,
          seq: irm.seq,
          irm_issue_date: irm.irmIssueDate,
          ifsc_code: irm.ifscCode,
          remittance_ad_code: irm.remittanceAdCode,
          remittance_date: irm.remittanceDate,
          remittance_fcc: irm.remittanceFCC,
          remittance_fcc_amount: irm.remittanceFCCAmount,
          orm_amount_fcc: irm.ormAmountFCC,
          available_amount: irm.irmAvailableAmt,
          utilised_amount: irm.irmUtilizedAmt,
          iec_code: irm.iecCode,
          pan_number: irm.panNumber,
          remitter_name: irm.remitterName,
          remitter_country: irm.remitterCountry,
          purpose_of_remittance: irm.purposeOfRemittance,
        })))
        .onConflict((conflict) => conflict.doNothing())
        .execute();
    }
    storedCounts.set(account.username, Math.max(stored, target));
  }

  return (account, at) => {
    const previous = latestRuns.get(account.username) ?? Promise.resolve();
    const run = previous.catch(() => {}).then(() => materialise(account, at));
    latestRuns.set(account.username, run);
    return run;
  };
}

/** The account's IRMs that exist at `at`: an IRM materialised for a later clock is not issued yet. */
export function issuedIrms(db: Db | Trx, account: SandboxAccount, at: Date) {
  return db
    .selectFrom('authority_sandbox.irms')
    .where('account_username', '=', account.username)
    .where('seq', '<', issuedIrmCount(account.irmProfile, at));
}

export function wireIrm(row: Selectable<IrmsTable>): WireIrm {
  return {
    irmNumber: row.irm_number,
    irmIssueDate: wireDate(row.irm_issue_date),
    // The generator issues fresh IRMs; the bank's test helpers amend (A) and cancel (C) them (outside-changes.ts).
    irmStatus: row.irm_status,
    ifscCode: row.ifsc_code,
    remittanceAdCode: row.remittance_ad_code,
    remittanceDate: wireDate(row.remittance_date),
    remittanceFCC: row.remittance_fcc,
    remittanceFCCAmount: row.remittance_fcc_amount,
    ormAmountFCC: row.orm_amount_fcc,
    irmAvailableAmt: row.available_amount,
    irmUtilizedAmt: row.utilised_amount,
    iecCode: row.iec_code,
    panNumber: row.pan_number,
    remitterName: row.remitter_name,
    remitterCountry: row.remitter_country,
    purposeOfRemittance: row.purpose_of_remittance,
  };
}

/** A stored YYYY-MM-DD date as the wire's ddMMyyyy. */
export function wireDate(iso: string): WireDate {
  const date = parseIsoDate(iso);
  if (date === null) throw new Error(`Not an ISO date: ${iso}`);
  return toDdMMyyyy(date);
}

function messageError(field: string, code: string, message: string): WireErrorDetail {
  return { serialNo: null, field, code, message };
}

// The line fields normaliseLines reads as text; the service's schema guarantees them, the sandbox checks.
const REQUIRED_TEXT_FIELDS = [
  'irmIfscCode', 'irmAdCode', 'irmNumber', 'irmDt', 'irmFCC', 'irmPurposeCode', 'sbCumInvoiceNumber',
  'sbCumInvoiceDate', 'portCode', 'billNo', 'sbCumInvoiceFCC',
] as const;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The push's header and format problems, and its normalised lines when they can be read. */
function readPush(
  account: SandboxAccount,
  message: Record<string, unknown>,
): { problems: WireErrorDetail[]; readable: { uploadType: UploadTypeCode; lines: Line[] } | null } {
  const problems: WireErrorDetail[] = [];
  if (message.iecNumber !== account.iecCode) {
    problems.push(messageError('iecNumber', 'iec_mismatch', `iecNumber ${JSON.stringify(message.iecNumber)} is not the IEC of this credential set.`));
  }
  const { decalarationFlag } = message;
  if (decalarationFlag === undefined || decalarationFlag === null || decalarationFlag === '') {
    problems.push(messageError('decalarationFlag', 'ERR36', 'decalarationFlag is required.'));
  } else if (decalarationFlag !== DECLARATION_FLAG) {
    problems.push(messageError('decalarationFlag', 'ERR37', `decalarationFlag must be ${DECLARATION_FLAG}.`));
  }
  const uploadType = normalizeUploadType(message.uploadType);
  if (uploadType === null) {
    problems.push(messageError('uploadType', 'invalid_upload_type', 'uploadType must be one of 101, 102, 103 and 104.'));
    return { problems, readable: null };
  }

  const rawLines = message.ebrcBulkGenDtos;
  if (!Array.isArray(rawLines) || !rawLines.every(isPlainObject)) {
    problems.push(messageError('ebrcBulkGenDtos', 'invalid_lines', 'ebrcBulkGenDtos must be a list of line objects.'));
    return { problems, readable: null };
  }
  if (rawLines.length === 0) problems.push(messageError('ebrcBulkGenDtos', 'no_lines', 'The message has no lines.'));
  const serialNoAt = (index: number): number | null => {
    const serialNo = rawLines[index]?.serialNo;
    return typeof serialNo === 'number' ? serialNo : null;
  };
  const missingText = rawLines.flatMap((rawLine, index) =>
    REQUIRED_TEXT_FIELDS.filter((field) => typeof rawLine[field] !== 'string').map((field) =>
      ({ serialNo: serialNoAt(index), field, code: 'missing_field', message: `${field} is required and must be text.` })));
  if (missingText.length > 0) return { problems: [...problems, ...missingText], readable: null };

  const normalised = normaliseLines(rawLines as RawLine[], uploadType);
  const lineProblems = normalised.problems.map((problem) => {
    const [, , index = '', field = null] = problem.path.split('/');
    return { serialNo: serialNoAt(Number(index)), field, code: problem.code, message: problem.message };
  });
  if (lineProblems.length > 0) return { problems: [...problems, ...lineProblems], readable: null };
  return { problems, readable: { uploadType, lines: normalised.lines } };
}

/** The account's IRMs that the lines name, locked until the transaction ends. */
async function lockIrms(trx: Trx, account: SandboxAccount, at: Date, lines: readonly Line[]): Promise<Map<string, IrmSnapshot>> {
  const irmNumbers = [...new Set(lines.map((line) => line.irmNumber))];
  if (irmNumbers.length === 0) return new Map();
  const rows = await issuedIrms(trx, account, at)
    .select(['irm_number', 'irm_issue_date', 'ifsc_code', 'remittance_fcc', 'purpose_of_remittance', 'available_amount', 'remittance_date'])
    // One array parameter, not one a line: one statement text whatever the push's size, which PostgreSQL prepares.
    .where('irm_number', '=', sql<string>`any(${irmNumbers}::text[])`)
    // A cancelled IRM cannot be mapped: to a push it does not exist (ERR18).
    .where('irm_status', '<>', 'C')
    .orderBy('irm_number')
    .forUpdate()
    .execute();
  return new Map(rows.map((row) => [row.irm_number, {
    irmNumber: row.irm_number,
    irmIssueDate: wireDate(row.irm_issue_date),
    ifscCode: row.ifsc_code,
    remittanceFCC: row.remittance_fcc,
    purposeOfRemittance: row.purpose_of_remittance,
    availableCents: parseDecimalString(row.available_amount),
    remittanceDate: wireDate(row.remittance_date),
  }]));
}

/** Reserves each IRM's mapped total in one statement (the IRMs are already locked by lockIrms). */
async function reserveMappedAmounts(trx: Trx, lines: readonly Line[]): Promise<void> {
  const mapped = [...Map.groupBy(lines, (line) => line.irmNumber)].map(([irmNumber, irmLines]) => ({
    irm_number: irmNumber,
    amount: formatCents(sumCents(irmLines.map((line) => line.mappedIRMAmountFCC))),
  }));
  await sql`
    update authority_sandbox.irms as irm
    set available_amount = irm.available_amount - mapped.amount,
        utilised_amount = irm.utilised_amount + mapped.amount
    from jsonb_to_recordset(${JSON.stringify(mapped)}::jsonb) as mapped(irm_number text, amount numeric)
    where irm.irm_number = mapped.irm_number`.execute(trx);
}

/** The request's lines from one JSON parameter: a 999-line push is one short statement, not thousands of parameters. */
async function storeLines(trx: Trx, requestId: string, lines: readonly Line[]): Promise<void> {
  const rows = JSON.stringify(lines.map((line) => ({
    serial_no: line.serialNo,
    irm_number: line.irmNumber,
    bill_no: line.billNo,
    sb_cum_invoice_number: line.sbCumInvoiceNumber,
    sb_cum_invoice_date: isoFromDdMMyyyy(line.sbCumInvoiceDate),
    currency: line.irmFCC,
    mapped_amount: formatCents(line.mappedIRMAmountFCC),
  })));
  await sql`
    insert into authority_sandbox.request_lines
      (request_id, serial_no, irm_number, bill_no, sb_cum_invoice_number, sb_cum_invoice_date, currency, mapped_amount)
    select ${requestId}, serial_no, irm_number, bill_no, sb_cum_invoice_number, sb_cum_invoice_date, currency, mapped_amount
    from jsonb_to_recordset(${rows}::jsonb) as line(
      serial_no integer, irm_number text, bill_no text, sb_cum_invoice_number text, sb_cum_invoice_date date,
      currency text, mapped_amount numeric)`.execute(trx);
}

function findRequest(db: Db, account: SandboxAccount, requestId: string) {
  return db
    .selectFrom('authority_sandbox.requests')
    .selectAll()
    .where('request_id', '=', requestId)
    .where('account_username', '=', account.username)
    .executeTakeFirst();
}

/**
 * Gives every line of an accepted request its outcome, once: concurrent callers race for the processed_at stamp and
 * only the winner does the work. FAIL lines give their amounts back to their IRMs.
 */
async function processRequest(db: Db, requestId: string, at: Date): Promise<void> {
  const processingDate = at.toISOString().slice(0, 10);
  const ebrcPrefix = `EBRC${processingDate.replaceAll('-', '')}`;
  await db.transaction().execute(async (trx) => {
    const claimed = await trx
      .updateTable('authority_sandbox.requests')
      .set({ processed_at: at })
      .where('request_id', '=', requestId)
      .where('processed_at', 'is', null)
      .returning('request_id')
      .executeTakeFirst();
    if (claimed === undefined) return;

    await trx
      .updateTable('authority_sandbox.request_lines')
      .set({
        status: 'FAILED',
        error_details: sql<string>`jsonb_build_array(jsonb_build_object(
          'serialNo', serial_no, 'field', ${PROCESSING_FAILURE.field}::text,
          'code', ${PROCESSING_FAILURE.code}::text, 'message', ${PROCESSING_FAILURE.message}::text))`,
      })
      .where('request_id', '=', requestId)
      .where('bill_no', '=', FAIL_BILL_NO)
      .execute();
    // Locked in IRM-number order, as a push locks them, so concurrent transactions cannot deadlock.
    await trx
      .selectFrom('authority_sandbox.irms')
      .select('irm_number')
      .where('irm_number', 'in', trx
        .selectFrom('authority_sandbox.request_lines')
        .select('irm_number')
        .where('request_id', '=', requestId)
        .where('status', '=', 'FAILED'))
      .orderBy('irm_number')
      .forUpdate()
      .execute();
    await trx
      .updateTable('authority_sandbox.request_lines')
      .set({
        status: 'GENERATED',
        ebrc_number: sql<string>`${ebrcPrefix}::text || lpad(nextval('authority_sandbox.ebrc_numbers')::text, ${EBRC_SEQUENCE_DIGITS}, '0')`,
        ebrc_date: processingDate,
      })
      .where('request_id', '=', requestId)
      .where('status', '=', 'PENDING')
      .execute();
    await sql`
      update authority_sandbox.irms as irm
      set available_amount = irm.available_amount + failed.amount,
          utilised_amount = irm.utilised_amount - failed.amount
      from (
        select irm_number, sum(mapped_amount) as amount
        from authority_sandbox.request_lines
        where request_id = ${requestId} and status = 'FAILED'
        group by irm_number
      ) as failed
      where irm.irm_number = failed.irm_number`.execute(trx);
  });
}

/** The status answer for a requestId this account never pushed (authority-protocol.md, "Status answers"). */
function notReceived(requestId: string): GetRequestStatusResponse {
  return {
    dgftAckId: null,
    requestId,
    recordResCount: 0,
    recordProCount: 0,
    recordFailCount: 0,
    processingStatus: 'Errored',
    ebrcBulkGenStatusLst: [],
    errorDetails: [messageError('requestId', REQUEST_NOT_RECEIVED_CODE, `requestId ${requestId} has not been received.`)],
  };
}

function statusAnswer(request: StoredRequest, lines: StoredLine[]): GetRequestStatusResponse {
  const recordProCount = lines.filter((line) => line.status === 'GENERATED').length;
  const recordFailCount = lines.filter((line) => line.status === 'FAILED').length;
  const processingStatus = request.ack_status === 'Failed'
    ? 'Errored'
    : request.processed_at === null ? 'Pending' : recordProCount > 0 ? 'Processed' : 'Errored';
  return {
    dgftAckId: request.ack_id,
    requestId: request.request_id,
    recordResCount: request.record_res_count,
    recordProCount,
    recordFailCount,
    processingStatus,
    ebrcBulkGenStatusLst: lines.map((line) => ({
      serialNo: line.serial_no,
      status: line.status,
      ebrcNumber: line.ebrc_number,
      ebrcDate: line.ebrc_date === null ? null : wireDate(line.ebrc_date),
      errorDetails: line.error_details,
    })),
    // A refused push carries its refusal's reasons; an accepted one has none at message level.
    ...(request.ack_status === 'Failed' ? { errorDetails: request.error_details } : {}),
  };
}
