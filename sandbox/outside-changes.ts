/**
 * The sandbox's test helpers for what happens outside the wire protocol (contract 13): the exporter's portal (an eBRC
 * made there, or cancelled there) and its bank (an IRM added, amended or cancelled). The real authority has no such
 * operations; they let a tester rehearse a service following the authority's data. Each answers what it changed, as
 * fetchIRMDetails and fetchEBRCDetails will report it from then on.
 *
 * - An eBRC made on the portal maps `amount` of an IRM at once: the IRM's available amount goes down by it, and
 *   fetchEBRCDetails reports the eBRC GENERATED. Cancelling an eBRC (made anywhere) reports it CANCELLED and gives its
 *   amount back to its IRM (unless the bank cancelled the IRM).
 * - A bank IRM carries whatever figures the bank gives: no relation between the amounts is enforced. Amending one sets
 *   the fields given and irmStatus A; cancelling sets irmStatus C (pushes naming it then meet ERR18).
 */
import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import { sql } from 'kysely';
import type { WireEbrc, WireIrm } from '../src/authority/protocol/messages.ts';
import { isoFromDdMMyyyy, parseIsoDate } from '../src/domain/dates.ts';
import { MAX_MONEY_CENTS, formatCents, parseDecimalString, parseMoney, type Cents } from '../src/domain/money.ts';
import type { SandboxAccount } from './accounts.ts';
import { issuedIrms, wireDate, wireIrm } from './authority.ts';
import type { IrmsTable, SandboxSchema } from './store/schema.ts';

type Db = Kysely<SandboxSchema>;

/** A refusal of a helper call: the HTTP status and message the server answers with. */
export class HelperRefusal extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = 'HelperRefusal';
    this.status = status;
  }
}

export type OutsideChanges = {
  portalEbrc(account: SandboxAccount, body: Record<string, unknown>): Promise<WireEbrc>;
  cancelEbrc(account: SandboxAccount, ebrcNumber: string): Promise<WireEbrc>;
  bankIrm(account: SandboxAccount, body: Record<string, unknown>): Promise<WireIrm>;
  amendIrm(account: SandboxAccount, irmNumber: string, body: Record<string, unknown>): Promise<WireIrm>;
  cancelIrm(account: SandboxAccount, irmNumber: string): Promise<WireIrm>;
};

const TEXT_FIELDS = {
  ifscCode: 'ifsc_code',
  remittanceAdCode: 'remittance_ad_code',
  remittanceFCC: 'remittance_fcc',
  panNumber: 'pan_number',
  remitterName: 'remitter_name',
  remitterCountry: 'remitter_country',
  purposeOfRemittance: 'purpose_of_remittance',
} as const;
const AMOUNT_FIELDS = {
  remittanceFCCAmount: 'remittance_fcc_amount',
  ormAmountFCC: 'orm_amount_fcc',
  irmAvailableAmt: 'available_amount',
  irmUtilizedAmt: 'utilised_amount',
} as const;
const DATE_FIELDS = { irmIssueDate: 'irm_issue_date', remittanceDate: 'remittance_date' } as const;

type IrmColumns = Partial<Record<(typeof TEXT_FIELDS)[keyof typeof TEXT_FIELDS] | (typeof AMOUNT_FIELDS)[keyof typeof AMOUNT_FIELDS] | (typeof DATE_FIELDS)[keyof typeof DATE_FIELDS], string>>;

const EBRC_SEQUENCE_DIGITS = 10;

export function createOutsideChanges(options: {
  db: Db;
  now: () => Date;
  materialiseIrms: (account: SandboxAccount, at: Date) => Promise<void>;
}): OutsideChanges {
  const { db, now, materialiseIrms } = options;

  /** The account's IRM, locked; the account's IRMs must be materialised before the transaction (materialised). */
  async function lockedIrm(trx: Db, account: SandboxAccount, irmNumber: string, at: Date): Promise<Selectable<IrmsTable>> {
    const irm = await issuedIrms(trx, account, at).selectAll().where('irm_number', '=', irmNumber).forUpdate().executeTakeFirst();
    if (irm === undefined) throw new HelperRefusal(404, `${account.iecCode} has no IRM ${irmNumber}.`);
    return irm;
  }

  /**
   * Runs `work` in a transaction once the account's IRMs issued by now are stored: materialising writes through the
   * database handle itself, which on the embedded database's one connection would wait for the transaction forever.
   */
  async function materialised<T>(account: SandboxAccount, at: Date, work: (trx: Db) => Promise<T>): Promise<T> {
    await materialiseIrms(account, at);
    return db.transaction().execute(work);
  }

  return {
    async portalEbrc(account, body) {
      const irmNumber = requiredText(body, 'irmNumber');
      const amount = amountOf(body, 'amount');
      if (amount === 0n) throw new HelperRefusal(400, 'amount must be more than 0.');
      const at = now();
      const today = at.toISOString().slice(0, 10);
      const invoiceNumber = optionalText(body, 'sbCumInvoiceNumber') ?? `PORTAL${String(at.getTime()).slice(-8)}`;
      const invoiceDate = dateOf(body, 'sbCumInvoiceDate') ?? today;
      return materialised(account, at, async (trx) => {
        const irm = await lockedIrm(trx, account, irmNumber, at);
        if (irm.irm_status === 'C') throw new HelperRefusal(409, `IRM ${irmNumber} is cancelled.`);
        if (parseDecimalString(irm.available_amount) < amount) {
          throw new HelperRefusal(409, `IRM ${irmNumber} has ${irm.available_amount} available, less than ${formatCents(amount)}.`);
        }
        const requestId = `PORTAL-${randomUUID()}`;
        await trx
          .insertInto('authority_sandbox.requests')
          .values({
            request_id: requestId,
            account_username: account.username,
            ack_id: `ACK-${randomUUID()}`,
            ack_status: 'Validated',
            record_res_count: 1,
            error_details: '[]',
            received_at: at,
            processed_at: at,
          })
          .execute();
        const line = await trx
          .insertInto('authority_sandbox.request_lines')
          .values({
            request_id: requestId,
            serial_no: 1,
            irm_number: irmNumber,
            bill_no: 'PORTAL',
            sb_cum_invoice_number: invoiceNumber,
            sb_cum_invoice_date: invoiceDate,
            currency: irm.remittance_fcc,
            mapped_amount: formatCents(amount),
            status: 'GENERATED',
            ebrc_number: sql<string>`${`EBRC${today.replaceAll('-', '')}`}::text || lpad(nextval('authority_sandbox.ebrc_numbers')::text, ${EBRC_SEQUENCE_DIGITS}, '0')`,
            ebrc_date: today,
          })
          .returning(['ebrc_number'])
          .executeTakeFirstOrThrow();
        await moveBalance(trx, irmNumber, -amount);
        return {
          ebrcNumber: line.ebrc_number!,
          ebrcDate: wireDate(today),
          irmNumber,
          sbCumInvoiceNumber: invoiceNumber,
          sbCumInvoiceDate: wireDate(invoiceDate),
          realisedValueFCC: formatCents(amount),
          currency: irm.remittance_fcc,
          iecCode: account.iecCode,
          status: 'GENERATED',
        };
      });
    },

    async cancelEbrc(account, ebrcNumber) {
      const at = now();
      return materialised(account, at, async (trx) => {
        const line = await trx
          .selectFrom('authority_sandbox.request_lines as line')
          .innerJoin('authority_sandbox.requests as request', 'request.request_id', 'line.request_id')
          .select(['line.request_id', 'line.serial_no', 'line.irm_number', 'line.mapped_amount', 'line.currency', 'line.ebrc_date',
            'line.sb_cum_invoice_number', 'line.sb_cum_invoice_date', 'line.ebrc_cancelled_at'])
          .where('request.account_username', '=', account.username)
          .where('line.ebrc_number', '=', ebrcNumber)
          .forUpdate()
          .executeTakeFirst();
        if (line === undefined || line.ebrc_date === null) throw new HelperRefusal(404, `${account.iecCode} has no eBRC ${ebrcNumber}.`);
        if (line.ebrc_cancelled_at !== null) throw new HelperRefusal(409, `eBRC ${ebrcNumber} is already cancelled.`);
        await trx
          .updateTable('authority_sandbox.request_lines')
          .set({ ebrc_cancelled_at: at })
          .where('request_id', '=', line.request_id)
          .where('serial_no', '=', line.serial_no)
          .execute();
        await lockedIrm(trx, account, line.irm_number, at);
        await moveBalance(trx, line.irm_number, parseDecimalString(line.mapped_amount));
        return {
          ebrcNumber,
          ebrcDate: wireDate(line.ebrc_date),
          irmNumber: line.irm_number,
          sbCumInvoiceNumber: line.sb_cum_invoice_number,
          sbCumInvoiceDate: wireDate(line.sb_cum_invoice_date),
          realisedValueFCC: line.mapped_amount,
          currency: line.currency,
          iecCode: account.iecCode,
          status: 'CANCELLED',
        };
      });
    },

    async bankIrm(account, body) {
      const at = now();
      const columns = irmColumns(body);
      const remitted = columns.remittance_fcc_amount;
      if (remitted === undefined) throw new HelperRefusal(400, 'remittanceFCCAmount is required.');
      const orm = columns.orm_amount_fcc ?? '0.00';
      const utilised = columns.utilised_amount ?? '0.00';
      const available = columns.available_amount ?? formatCents(maxZero(parseDecimalString(remitted) - parseDecimalString(orm) - parseDecimalString(utilised)));
      const issued = columns.irm_issue_date ?? at.toISOString().slice(0, 10);
      const irmNumber = optionalText(body, 'irmNumber') ?? `BANK${account.iecCode}${String(at.getTime()).slice(-9)}`;
      return materialised(account, at, async (trx) => {
        // Bank IRMs take the negative positions of the account's stream: the generator's own fill 0, 1, 2, ...
        await sql`select pg_advisory_xact_lock(hashtext(${`sandbox-bank-irms:${account.username}`}))`.execute(trx);
        const lowest = await trx
          .selectFrom('authority_sandbox.irms')
          .select((eb) => eb.fn.min('seq').as('seq'))
          .where('account_username', '=', account.username)
          .executeTakeFirst();
        const seq = Math.min(lowest?.seq ?? 0, 0) - 1;
        const stored = await trx
          .insertInto('authority_sandbox.irms')
          .values({
            irm_number: irmNumber,
            account_username: account.username,
            seq,
            irm_issue_date: issued,
            ifsc_code: columns.ifsc_code ?? 'HDFC0000001',
            remittance_ad_code: columns.remittance_ad_code ?? '0510001',
            remittance_date: columns.remittance_date ?? issued,
            remittance_fcc: columns.remittance_fcc ?? 'USD',
            remittance_fcc_amount: remitted,
            orm_amount_fcc: orm,
            available_amount: available,
            utilised_amount: utilised,
            iec_code: account.iecCode,
            pan_number: columns.pan_number ?? account.panNumber,
            remitter_name: columns.remitter_name ?? 'Bank Test Remitter Ltd',
            remitter_country: columns.remitter_country ?? 'US',
            purpose_of_remittance: columns.purpose_of_remittance ?? 'P0103',
          })
          .onConflict((conflict) => conflict.doNothing())
          .returningAll()
          .executeTakeFirst();
        if (stored === undefined) throw new HelperRefusal(409, `IRM ${irmNumber} exists already.`);
        return wireIrm(stored);
      });
    },

    async amendIrm(account, irmNumber, body) {
      const at = now();
      const columns = irmColumns(body);
      return materialised(account, at, async (trx) => {
        const irm = await lockedIrm(trx, account, irmNumber, at);
        if (irm.irm_status === 'C') throw new HelperRefusal(409, `IRM ${irmNumber} is cancelled.`);
        const amended = await trx
          .updateTable('authority_sandbox.irms')
          .set({ ...columns, irm_status: 'A' })
          .where('irm_number', '=', irmNumber)
          .returningAll()
          .executeTakeFirstOrThrow();
        return wireIrm(amended);
      });
    },

    async cancelIrm(account, irmNumber) {
      const at = now();
      return materialised(account, at, async (trx) => {
        await lockedIrm(trx, account, irmNumber, at);
        const cancelled = await trx
          .updateTable('authority_sandbox.irms')
          .set({ irm_status: 'C' })
          .where('irm_number', '=', irmNumber)
          .returningAll()
          .executeTakeFirstOrThrow();
        return wireIrm(cancelled);
      });
    },
  };
}

/** Moves `cents` into the IRM's available amount (out of it when negative), the other way for its utilised amount. */
async function moveBalance(trx: Db, irmNumber: string, cents: Cents): Promise<void> {
  const amount = formatCents(cents < 0n ? -cents : cents);
  const sign = cents < 0n ? sql`-` : sql`+`;
  const back = cents < 0n ? sql`+` : sql`-`;
  await sql`
    update authority_sandbox.irms
    set available_amount = case when irm_status = 'C' then available_amount else available_amount ${sign} ${amount}::numeric end,
        utilised_amount = greatest(utilised_amount ${back} ${amount}::numeric, 0)
    where irm_number = ${irmNumber}`.execute(trx);
}

function maxZero(cents: Cents): Cents {
  return cents < 0n ? 0n : cents;
}

/** The IRM fields a bank call gives, as columns: text as it is, amounts as exact decimal text, dates as YYYY-MM-DD. */
function irmColumns(body: Record<string, unknown>): IrmColumns {
  const columns: IrmColumns = {};
  for (const [field, column] of Object.entries(TEXT_FIELDS)) {
    const value = optionalText(body, field);
    if (value !== null) columns[column] = value;
  }
  for (const [field, column] of Object.entries(AMOUNT_FIELDS)) {
    if (body[field] !== undefined && body[field] !== null) columns[column] = formatCents(amountOf(body, field));
  }
  for (const [field, column] of Object.entries(DATE_FIELDS)) {
    const value = dateOf(body, field);
    if (value !== null) columns[column] = value;
  }
  return columns;
}

function requiredText(body: Record<string, unknown>, field: string): string {
  const value = optionalText(body, field);
  if (value === null) throw new HelperRefusal(400, `${field} is required.`);
  return value;
}

function optionalText(body: Record<string, unknown>, field: string): string | null {
  const value = body[field];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value.length === 0 || value.length > 200) throw new HelperRefusal(400, `${field} must be text of 1 to 200 characters.`);
  return value;
}

/** An amount given as a JSON number or as decimal text, with at most two decimals. */
function amountOf(body: Record<string, unknown>, field: string): Cents {
  const value = body[field];
  let cents: Cents | null = null;
  if (typeof value === 'number') cents = parseMoney(value);
  else if (typeof value === 'string' && /^\d+(\.\d{1,2})?$/.test(value)) cents = parseDecimalString(value);
  if (cents === null || cents > MAX_MONEY_CENTS) throw new HelperRefusal(400, `${field} must be an amount of at least 0 with at most two decimals.`);
  return cents;
}

/** A date given as YYYY-MM-DD or the wire's ddMMyyyy. */
function dateOf(body: Record<string, unknown>, field: string): string | null {
  const value = body[field];
  if (value === undefined || value === null) return null;
  const iso = typeof value !== 'string' ? null : parseIsoDate(value) !== null ? value : isoFromDdMMyyyy(value);
  if (iso === null) throw new HelperRefusal(400, `${field} must be a date, YYYY-MM-DD or ddMMyyyy.`);
  return iso;
}
