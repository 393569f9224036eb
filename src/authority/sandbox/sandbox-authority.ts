/**
 * The sandbox of the trade authority: it checks credentials against the documented test accounts (accounts.ts),
 * serves each account's deterministic IRMs (irm-generator.ts) with balances it keeps in the `sandbox` schema,
 * validates pushes by the authority's published rules, and processes accepted pushes asynchronously: the first
 * status call after `processingDelayMs` generates the eBRCs.
 *
 * Line values that make it misbehave on purpose (billNo of any line of a push):
 *   SANDBOX-OUTAGE  the push fails with AuthorityError('unavailable'); nothing is stored.
 *   SANDBOX-SLOW    the push never answers; when the caller's signal aborts it fails with AuthorityError('timeout').
 *                   Nothing is stored.
 *   SANDBOX-FAIL    the push is accepted, but at processing that line FAILS (ERR40, shipping bill not found at
 *                   customs) and its mapped amount goes back to the IRM. Together with other lines the request ends
 *                   PARTIALLY_PROCESSED; when every line carries it, ERRORED.
 *   SANDBOX-LOST    the push is stored and accepted, but the acknowledgement is lost on the way back: the call fails
 *                   with AuthorityError('timeout'). The status call by requestId finds the request.
 *
 * eBRC numbers: "EBRC", the processing date as YYYYMMDD and a 10-digit sequence number, e.g. EBRC202611220000000042.
 * Ack ids: "ACK-" and a random UUID.
 */
import { randomUUID } from 'node:crypto';
import type { ColumnType, Kysely, Selectable, Transaction } from 'kysely';
import { sql } from 'kysely';
import type {
  Authority,
  AuthorityCredentials,
  AuthorityEbrc,
  AuthorityErrorDetail,
  AuthorityIrm,
  EbrcQuery,
  IrmQuery,
  LineResult,
  PushAcknowledgement,
  PushMessage,
  RequestStatusAnswer,
} from '../authority.ts';
import { AuthorityError } from '../authority.ts';
import type { Database } from '../../store/database.ts';
import { formatCents, parseDecimalString, sumCents } from '../../domain/money.ts';
import { parseIsoDate, toDdMMyyyy } from '../../domain/dates.ts';
import type { Line, RawLine } from '../../domain/push-line.ts';
import { normaliseLines } from '../../domain/push-line.ts';
import type { IrmSnapshot } from '../../domain/push-rules.ts';
import { checkPushRules } from '../../domain/push-rules.ts';
import type { LineStatus } from '../../domain/request-state.ts';
import type { UploadTypeCode } from '../../domain/upload-type.ts';
import { normalizeUploadType } from '../../domain/upload-type.ts';
// Temporary imports across the boundary, from the sandbox program, until this in-process sandbox is removed.
import type { SandboxAccount } from '../../../sandbox/accounts.ts';
import { OUTAGE_PASSWORD, SANDBOX_PASSWORD, SLOW_PASSWORD, findSandboxAccount } from '../../../sandbox/accounts.ts';
import { generateIrms, issuedIrmCount } from '../../../sandbox/irm-generator.ts';

export const OUTAGE_BILL_NO = 'SANDBOX-OUTAGE';
export const SLOW_BILL_NO = 'SANDBOX-SLOW';
export const FAIL_BILL_NO = 'SANDBOX-FAIL';
export const LOST_BILL_NO = 'SANDBOX-LOST';

const PROCESSING_FAILURE = { field: 'billNo', code: 'ERR40', message: 'Shipping bill not found at customs.' };

const MAX_REQUEST_ID_LENGTH = 50;
// What sandbox.requests.record_res_count (integer) holds.
const MAX_RECORD_COUNT = 2 ** 31 - 1;
const DECLARATION_FLAG = 'Y';
const IRM_INSERT_BATCH = 500;
const EBRC_SEQUENCE_DIGITS = 10;

type Json<T> = ColumnType<T, string, string>;

type SandboxIrmsTable = {
  irm_number: string;
  account_username: string;
  seq: number;
  irm_issue_date: string;
  ifsc_code: string;
  remittance_ad_code: string;
  remittance_date: string;
  remittance_fcc: string;
  remittance_fcc_amount: string;
  orm_amount_fcc: string;
  available_amount: string;
  utilised_amount: string;
  iec_code: string;
  pan_number: string;
  remitter_name: string;
  remitter_country: string;
  purpose_of_remittance: string;
};

type SandboxRequestsTable = {
  request_id: string;
  account_username: string;
  ack_id: string | null;
  ack_status: 'Validated' | 'Failed';
  record_res_count: number;
  error_details: Json<AuthorityErrorDetail[]>;
  received_at: Date;
  processed_at: Date | null;
};

type SandboxRequestLinesTable = {
  request_id: string;
  serial_no: number;
  irm_number: string;
  bill_no: string;
  /** Null on lines stored before migration 0008. */
  sb_cum_invoice_number: string | null;
  sb_cum_invoice_date: string | null;
  mapped_amount: string;
  status: ColumnType<LineStatus, LineStatus | undefined, LineStatus>;
  ebrc_number: string | null;
  ebrc_date: string | null;
  error_details: ColumnType<AuthorityErrorDetail[], string | undefined, string>;
};

type SandboxTables = {
  'sandbox.irms': SandboxIrmsTable;
  'sandbox.requests': SandboxRequestsTable;
  'sandbox.request_lines': SandboxRequestLinesTable;
};

type SandboxDb = Kysely<SandboxTables>;
type StoredRequest = Selectable<SandboxRequestsTable>;
type StoredLine = Selectable<SandboxRequestLinesTable>;
type SandboxTransaction = Transaction<SandboxTables>;

export type SandboxAuthorityOptions = {
  database: Database;
  /** How long after acceptance a push is processed (at the next status call). */
  processingDelayMs: number;
  now?: () => Date;
};

export function createSandboxAuthority(options: SandboxAuthorityOptions): Authority {
  const db: SandboxDb = options.database.db.$extendTables<SandboxTables>().$pickTables<keyof SandboxTables>();
  const now = options.now ?? (() => new Date());
  const materialiseIrms = irmMaterialiser(db);

  async function fetchIrms(account: SandboxAccount, query: IrmQuery): Promise<AuthorityIrm[]> {
    if (query.iecCode !== account.iecCode) return [];
    const at = now();
    await materialiseIrms(account, at);
    let select = issuedIrms(db, account, at).selectAll();
    if (query.irmNumber !== undefined) select = select.where('irm_number', '=', query.irmNumber);
    if (query.fromDate !== undefined) select = select.where('irm_issue_date', '>=', query.fromDate);
    if (query.toDate !== undefined) select = select.where('irm_issue_date', '<=', query.toDate);
    const rows = await select.orderBy('seq').execute();
    return rows.map(toAuthorityIrm);
  }

  async function receivePush(account: SandboxAccount, message: PushMessage): Promise<PushAcknowledgement> {
    const { requestId, recordResCount } = message;
    const refusal = (errorDetails: AuthorityErrorDetail[]): PushAcknowledgement =>
      ({ ackId: null, requestId, ackStatus: 'Failed', recordResCount, errorDetails });

    // Without a usable requestId or count there is nothing to record the refusal under.
    if (requestId.length === 0 || requestId.length > MAX_REQUEST_ID_LENGTH) {
      return refusal([messageError('requestId', 'ERR07', `requestId must have 1 to ${MAX_REQUEST_ID_LENGTH} characters.`)]);
    }
    if (!Number.isInteger(recordResCount) || recordResCount < 0 || recordResCount > MAX_RECORD_COUNT) {
      return refusal([messageError('recordResCount', 'ERR08', 'recordResCount must be a whole number.')]);
    }

    const { problems, readable } = readMessage(account, message);
    const lines = readable?.lines ?? [];
    const at = now();
    if (lines.length > 0) await materialiseIrms(account, at);
    const ackId = `ACK-${randomUUID()}`;

    return db.transaction().execute(async (trx) => {
      // Locking the IRMs makes validation and reservation one step: a concurrent push waits, then sees the new balance.
      const irms = await lockIrms(trx, account, at, lines);
      const errors = readable === null
        ? problems
        : [...problems, ...checkPushRules({ recordResCount, uploadType: readable.uploadType, lines, irms })];
      const accepted = errors.length === 0;
      const stored = await trx
        .insertInto('sandbox.requests')
        .values({
          request_id: requestId,
          account_username: account.username,
          ack_id: accepted ? ackId : null,
          ack_status: accepted ? 'Validated' : 'Failed',
          record_res_count: recordResCount,
          error_details: JSON.stringify(errors),
          received_at: at,
          processed_at: accepted ? null : at,
        })
        .onConflict((conflict) => conflict.column('request_id').doNothing())
        .returning('request_id')
        .executeTakeFirst();
      if (stored === undefined) {
        return refusal([messageError('requestId', 'ERR09', `requestId ${requestId} has been used before.`), ...errors]);
      }
      if (!accepted) return refusal(errors);

      await reserveMappedAmounts(trx, lines);
      await storeLines(trx, requestId, lines);
      return { ackId, requestId, ackStatus: 'Validated', recordResCount, errorDetails: [] };
    });
  }

  async function requestStatus(account: SandboxAccount, requestId: string): Promise<RequestStatusAnswer | null> {
    const request = await findRequest(db, account, requestId);
    if (request === undefined) return null;
    const at = now();
    const due = request.received_at.getTime() + options.processingDelayMs <= at.getTime();
    if (request.ack_status === 'Validated' && request.processed_at === null && due) {
      await processRequest(db, requestId, at);
      return requestStatus(account, requestId);
    }
    const lines = await db
      .selectFrom('sandbox.request_lines')
      .selectAll()
      .where('request_id', '=', requestId)
      .orderBy('serial_no')
      .execute();
    return statusAnswer(request, lines);
  }

  async function fetchEbrcs(account: SandboxAccount, query: EbrcQuery): Promise<AuthorityEbrc[]> {
    if (query.iecCode !== account.iecCode) return [];
    let select = db
      .selectFrom('sandbox.request_lines as line')
      .innerJoin('sandbox.requests as request', 'request.request_id', 'line.request_id')
      .innerJoin('sandbox.irms as irm', 'irm.irm_number', 'line.irm_number')
      .select([
        'line.ebrc_number', 'line.ebrc_date', 'line.irm_number', 'line.sb_cum_invoice_number', 'line.sb_cum_invoice_date',
        'line.mapped_amount', 'line.status', 'irm.remittance_fcc', 'irm.iec_code',
      ])
      .where('request.account_username', '=', account.username)
      .where('line.status', '=', 'GENERATED')
      .where('line.sb_cum_invoice_number', 'is not', null)
      // A generated line has its eBRC number and date (a check of the table); lines stored before migration 0008 have no invoice.
      .$narrowType<{ ebrc_number: string; ebrc_date: string; sb_cum_invoice_number: string; sb_cum_invoice_date: string }>();
    if (query.fromDate !== undefined) select = select.where('line.ebrc_date', '>=', query.fromDate);
    if (query.toDate !== undefined) select = select.where('line.ebrc_date', '<=', query.toDate);
    if (query.sbCumInvoiceNumber !== undefined) select = select.where('line.sb_cum_invoice_number', '=', query.sbCumInvoiceNumber);
    if (query.sbCumInvoiceDate !== undefined) select = select.where('line.sb_cum_invoice_date', '=', query.sbCumInvoiceDate);
    const rows = await select.orderBy('line.ebrc_number').execute();
    return rows.map((row) => ({
      ebrcNumber: row.ebrc_number,
      ebrcDate: row.ebrc_date,
      irmNumber: row.irm_number,
      sbCumInvoiceNumber: row.sb_cum_invoice_number,
      sbCumInvoiceDate: row.sb_cum_invoice_date,
      realisedValueFCC: row.mapped_amount,
      currency: row.remittance_fcc,
      iecCode: row.iec_code,
      status: row.status,
    }));
  }

  return {
    checkCredentials: (credentials, callOptions) =>
      abortable(callOptions?.signal, async () => ({ iecCode: (await signIn(credentials)).iecCode })),
    fetchIrms: (credentials, query, callOptions) =>
      abortable(callOptions?.signal, async () => fetchIrms(await openSession(credentials), query)),
    push: (credentials, message, callOptions) =>
      abortable(callOptions?.signal, async () => {
        const account = await openSession(credentials);
        const billNos = new Set(message.ebrcBulkGenDtos.map((line) => line.billNo));
        if (billNos.has(OUTAGE_BILL_NO)) throw unavailable();
        if (billNos.has(SLOW_BILL_NO)) return hang();
        const acknowledgement = await receivePush(account, message);
        if (acknowledgement.ackStatus === 'Validated' && billNos.has(LOST_BILL_NO)) {
          throw new AuthorityError('timeout', 'The authority accepted the push but its acknowledgement was lost.');
        }
        return acknowledgement;
      }),
    getStatus: (credentials, requestId, callOptions) =>
      abortable(callOptions?.signal, async () => requestStatus(await openSession(credentials), requestId)),
    fetchEbrcs: (credentials, query, callOptions) =>
      abortable(callOptions?.signal, async () => fetchEbrcs(await openSession(credentials), query)),
  };
}

/** The credential check: the account, or the failure the real authority would answer with. */
async function signIn({ username, password }: AuthorityCredentials): Promise<SandboxAccount> {
  if (password === OUTAGE_PASSWORD) throw unavailable();
  if (password === SLOW_PASSWORD) return hang();
  const account = findSandboxAccount(username);
  if (account === undefined || password !== SANDBOX_PASSWORD) {
    throw new AuthorityError('credentials_invalid', 'Unknown username or wrong password.');
  }
  if (account.behaviour === 'credentials_expired') {
    throw new AuthorityError('credentials_expired', 'The credentials have expired; the exporter must renew them at the authority.');
  }
  return account;
}

/** Signs in for a data call, where the outage and slow accounts misbehave. */
async function openSession(credentials: AuthorityCredentials): Promise<SandboxAccount> {
  const account = await signIn(credentials);
  if (account.behaviour === 'outage') throw unavailable();
  if (account.behaviour === 'slow') return hang();
  return account;
}

function unavailable(): AuthorityError {
  return new AuthorityError('unavailable', 'The authority is unavailable.');
}

/** A call the authority never answers; `abortable` turns the caller's abort into a timeout. */
function hang(): Promise<never> {
  return new Promise<never>(() => {});
}

/**
 * Runs `work`, failing with AuthorityError('timeout') as soon as the signal aborts. Work already under way is not
 * undone, as with a real remote call: a push can be stored although its caller gave up waiting.
 */
function abortable<T>(signal: AbortSignal | undefined, work: () => Promise<T>): Promise<T> {
  if (signal === undefined) return work();
  if (signal.aborted) return Promise.reject(timedOut());
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(timedOut());
    signal.addEventListener('abort', onAbort, { once: true });
    work()
      .then(resolve, reject)
      .finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function timedOut(): AuthorityError {
  return new AuthorityError('timeout', 'The authority did not answer in time.');
}

/**
 * Inserts an account's IRMs issued by a given time, in order, only those not inserted before; calls for one account
 * run one after another, so a burst of calls inserts each IRM once. Inserting in order keeps the stored IRMs a prefix
 * of the account's stream (also across processes), so the next one to insert is max(seq) + 1.
 */
function irmMaterialiser(db: SandboxDb): (account: SandboxAccount, at: Date) => Promise<void> {
  const storedCounts = new Map<string, number>();
  const latestRuns = new Map<string, Promise<void>>();

  async function storedCount(account: SandboxAccount): Promise<number> {
    const known = storedCounts.get(account.username);
    if (known !== undefined) return known;
    const row = await db
      .selectFrom('sandbox.irms')
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
        .insertInto('sandbox.irms')
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
function issuedIrms(db: SandboxDb, account: SandboxAccount, at: Date) {
  return db
    .selectFrom('sandbox.irms')
    .where('account_username', '=', account.username)
    .where('seq', '<', issuedIrmCount(account.irmProfile, at));
}

function toAuthorityIrm(row: SandboxIrmsTable): AuthorityIrm {
  return {
    irmNumber: row.irm_number,
    irmIssueDate: row.irm_issue_date,
    ifscCode: row.ifsc_code,
    remittanceAdCode: row.remittance_ad_code,
    remittanceDate: row.remittance_date,
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

function messageError(field: string, code: string, message: string): AuthorityErrorDetail {
  return { serialNo: null, field, code, message };
}

// The line fields normaliseLines reads as text; the service's schema guarantees them, the sandbox checks.
const REQUIRED_TEXT_FIELDS = [
  'irmIfscCode', 'irmAdCode', 'irmNumber', 'irmDt', 'irmFCC', 'irmPurposeCode', 'sbCumInvoiceNumber',
  'sbCumInvoiceDate', 'portCode', 'billNo', 'sbCumInvoiceFCC',
] as const;

/** The message's header and format problems, and its normalised lines when they can be read. */
function readMessage(
  account: SandboxAccount,
  message: PushMessage,
): { problems: AuthorityErrorDetail[]; readable: { uploadType: UploadTypeCode; lines: Line[] } | null } {
  const problems: AuthorityErrorDetail[] = [];
  if (message.iecNumber !== account.iecCode) {
    problems.push(messageError('iecNumber', 'iec_mismatch', `iecNumber ${message.iecNumber} is not the IEC of this account.`));
  }
  if (message.decalarationFlag === '') {
    problems.push(messageError('decalarationFlag', 'ERR36', 'decalarationFlag is required.'));
  } else if (message.decalarationFlag !== DECLARATION_FLAG) {
    problems.push(messageError('decalarationFlag', 'ERR37', `decalarationFlag must be ${DECLARATION_FLAG}.`));
  }
  const uploadType = normalizeUploadType(message.uploadType);
  if (uploadType === null) {
    problems.push(messageError('uploadType', 'invalid_upload_type', 'uploadType must be one of 101, 102, 103 and 104.'));
    return { problems, readable: null };
  }

  const rawLines = message.ebrcBulkGenDtos;
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
async function lockIrms(
  trx: SandboxTransaction,
  account: SandboxAccount,
  at: Date,
  lines: readonly Line[],
): Promise<Map<string, IrmSnapshot>> {
  const irmNumbers = [...new Set(lines.map((line) => line.irmNumber))];
  if (irmNumbers.length === 0) return new Map();
  const rows = await issuedIrms(trx, account, at)
    .select(['irm_number', 'irm_issue_date', 'ifsc_code', 'remittance_fcc', 'purpose_of_remittance', 'available_amount', 'remittance_date'])
    .where('irm_number', 'in', irmNumbers)
    .orderBy('irm_number')
    .forUpdate()
    .execute();
  return new Map(rows.map((row) => [row.irm_number, {
    irmNumber: row.irm_number,
    irmIssueDate: ddMMyyyyFromIso(row.irm_issue_date),
    ifscCode: row.ifsc_code,
    remittanceFCC: row.remittance_fcc,
    purposeOfRemittance: row.purpose_of_remittance,
    availableCents: parseDecimalString(row.available_amount),
    remittanceDate: ddMMyyyyFromIso(row.remittance_date),
  }]));
}

function ddMMyyyyFromIso(iso: string): string {
  const date = parseIsoDate(iso);
  if (date === null) throw new Error(`Not an ISO date: ${iso}`);
  return toDdMMyyyy(date);
}

/** Reserves each IRM's mapped total in one statement (the IRMs are already locked by lockIrms). */
async function reserveMappedAmounts(trx: SandboxTransaction, lines: readonly Line[]): Promise<void> {
  const mapped = [...Map.groupBy(lines, (line) => line.irmNumber)].map(([irmNumber, irmLines]) => ({
    irm_number: irmNumber,
    amount: formatCents(sumCents(irmLines.map((line) => line.mappedIRMAmountFCC))),
  }));
  await sql`
    update sandbox.irms as irm
    set available_amount = irm.available_amount - mapped.amount,
        utilised_amount = irm.utilised_amount + mapped.amount
    from jsonb_to_recordset(${JSON.stringify(mapped)}::jsonb) as mapped(irm_number text, amount numeric)
    where irm.irm_number = mapped.irm_number`.execute(trx);
}

/** The request's lines from one JSON parameter: a 999-line push is one short statement, not 5,000 parameters. */
async function storeLines(trx: SandboxTransaction, requestId: string, lines: readonly Line[]): Promise<void> {
  const rows = JSON.stringify(lines.map((line) => ({
    serial_no: line.serialNo,
    irm_number: line.irmNumber,
    bill_no: line.billNo,
    sb_cum_invoice_number: line.sbCumInvoiceNumber,
    sb_cum_invoice_date: line.sbCumInvoiceDate,
    mapped_amount: formatCents(line.mappedIRMAmountFCC),
  })));
  // Normalised line dates are ddMMyyyy.
  await sql`
    insert into sandbox.request_lines (request_id, serial_no, irm_number, bill_no, sb_cum_invoice_number, sb_cum_invoice_date, mapped_amount)
    select ${requestId}, serial_no, irm_number, bill_no, sb_cum_invoice_number, to_date(sb_cum_invoice_date, 'DDMMYYYY'), mapped_amount
    from jsonb_to_recordset(${rows}::jsonb) as line(
      serial_no integer, irm_number text, bill_no text, sb_cum_invoice_number text, sb_cum_invoice_date text, mapped_amount numeric)`.execute(trx);
}

function findRequest(db: SandboxDb, account: SandboxAccount, requestId: string) {
  return db
    .selectFrom('sandbox.requests')
    .selectAll()
    .where('request_id', '=', requestId)
    .where('account_username', '=', account.username)
    .executeTakeFirst();
}

/**
 * Gives every line of an accepted request its outcome, once: concurrent callers race for the processed_at
 * stamp and only the winner does the work. FAIL lines give their amounts back to their IRMs.
 */
async function processRequest(db: SandboxDb, requestId: string, at: Date): Promise<void> {
  const processingDate = at.toISOString().slice(0, 10);
  const ebrcPrefix = `EBRC${processingDate.replaceAll('-', '')}`;
  await db.transaction().execute(async (trx) => {
    const claimed = await trx
      .updateTable('sandbox.requests')
      .set({ processed_at: at })
      .where('request_id', '=', requestId)
      .where('processed_at', 'is', null)
      .returning('request_id')
      .executeTakeFirst();
    if (claimed === undefined) return;

    await trx
      .updateTable('sandbox.request_lines')
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
      .selectFrom('sandbox.irms')
      .select('irm_number')
      .where('irm_number', 'in', trx
        .selectFrom('sandbox.request_lines')
        .select('irm_number')
        .where('request_id', '=', requestId)
        .where('status', '=', 'FAILED'))
      .orderBy('irm_number')
      .forUpdate()
      .execute();
    await trx
      .updateTable('sandbox.request_lines')
      .set({
        status: 'GENERATED',
        ebrc_number: sql<string>`${ebrcPrefix}::text || lpad(nextval('sandbox.ebrc_numbers')::text, ${EBRC_SEQUENCE_DIGITS}, '0')`,
        ebrc_date: processingDate,
      })
      .where('request_id', '=', requestId)
      .where('status', '=', 'PENDING')
      .execute();
    await sql`
      update sandbox.irms as irm
      set available_amount = irm.available_amount + failed.amount,
          utilised_amount = irm.utilised_amount - failed.amount
      from (
        select irm_number, sum(mapped_amount) as amount
        from sandbox.request_lines
        where request_id = ${requestId} and status = 'FAILED'
        group by irm_number
      ) as failed
      where irm.irm_number = failed.irm_number`.execute(trx);
  });
}

function statusAnswer(request: StoredRequest, lines: StoredLine[]): RequestStatusAnswer {
  const records: LineResult[] = lines.map((line) => ({
    serialNo: line.serial_no,
    status: line.status,
    ebrcNumber: line.ebrc_number,
    ebrcDate: line.ebrc_date,
    errorDetails: line.error_details,
  }));
  const recordProCount = records.filter((record) => record.status === 'GENERATED').length;
  const recordFailCount = records.filter((record) => record.status === 'FAILED').length;
  return {
    ackId: request.ack_id,
    requestId: request.request_id,
    ackStatus: request.ack_status,
    errorDetails: request.error_details,
    recordResCount: request.record_res_count,
    recordProCount,
    recordFailCount,
    processingStatus: processingStatus(request, recordProCount),
    records,
  };
}

function processingStatus(request: StoredRequest, recordProCount: number): RequestStatusAnswer['processingStatus'] {
  if (request.ack_status === 'Failed') return 'Errored';
  if (request.processed_at === null) return 'Pending';
  return recordProCount > 0 ? 'Processed' : 'Errored';
}
