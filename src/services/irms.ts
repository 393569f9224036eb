import { recordAuditAlone, type AuditSource } from './audit.ts';
import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import type { AuthorityIrm } from '../authority/authority.ts';
import type { IrmSchema } from '../schemas/irms.ts';
import { parseDecimalString, centsToNumber, formatCents } from '../domain/money.ts';
import { balanceAfterPull, CANCELLED_AT_AUTHORITY, irmStatusOf } from '../domain/irm-status.ts';
import * as store from '../store/irms.ts';
import type { Schema } from '../store/schema.ts';
import { asCustomer, hasAcceptedCredentials, requireVerified, type ServiceContext, type VerifiedCustomer } from './context.ts';
import { requireCustomer } from './customers.ts';
import type { NewEvent } from './outbox.ts';
import { dataPage, offsetOf } from './pages.ts';

export type IrmRecord = Static<typeof IrmSchema>;

/**
 * A numeric(16,2) column's text as its JSON number. Number(text) is the double nearest to the amount, which is what
 * centsToNumber gives (both round correctly), without going through a bigint; longer texts, whose cents may be past
 * 2^53, go the exact way, which refuses them.
 */
function moneyNumber(text: string): number {
  return text.length <= 16 ? Number(text) : centsToNumber(parseDecimalString(text));
}

export function toIrmRecord(row: store.IrmRow): IrmRecord {
  return {
    id: row.id,
    irmNumber: row.irm_number,
    irmIssueDate: row.irm_issue_date,
    irmStatus: irmStatusOf({
      cancelled: row.authority_status === CANCELLED_AT_AUTHORITY,
      availableCents: parseDecimalString(row.irm_available_amt),
      utilisedCents: parseDecimalString(row.irm_utilized_amt),
    }),
    ifscCode: row.ifsc_code,
    remittanceAdCode: row.remittance_ad_code,
    remittanceDate: row.remittance_date,
    remittanceFCC: row.remittance_fcc,
    remittanceFCCAmount: moneyNumber(row.remittance_fcc_amount),
    ormAmountFCC: moneyNumber(row.orm_amount_fcc),
    irmAvailableAmt: moneyNumber(row.irm_available_amt),
    irmUtilizedAmt: moneyNumber(row.irm_utilized_amt),
    iecCode: row.iec_code,
    panNumber: row.pan_number,
    remitterName: row.remitter_name,
    remitterCountry: row.remitter_country,
    purposeOfRemittance: row.purpose_of_remittance,
    subjectType: 'USER',
    userId: row.platform_id,
    platformCustomerId: row.platform_customer_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** What a pull did: IRMs seen for the first time, IRMs the authority changed, and IRMs it sent that cannot be read. */
export type PullOutcome = { received: number; updated: number; cancelled: number; unreadable: number };

/** The fields an irm.updated event compares: every field of the record but its identity and its times. */
const COMPARED_FIELDS = [
  'irmStatus', 'ifscCode', 'remittanceAdCode', 'remittanceDate', 'remittanceFCC', 'remittanceFCCAmount', 'ormAmountFCC',
  'irmAvailableAmt', 'irmUtilizedAmt', 'iecCode', 'panNumber', 'remitterName', 'remitterCountry', 'purposeOfRemittance',
] as const satisfies readonly (keyof IrmRecord)[];

export type IrmChange = { field: (typeof COMPARED_FIELDS)[number]; from: unknown; to: unknown };

export function irmChanges(before: IrmRecord, after: IrmRecord): IrmChange[] {
  return COMPARED_FIELDS.filter((field) => before[field] !== after[field]).map((field) => ({ field, from: before[field], to: after[field] }));
}

/**
 * The stored values of an IRM as the authority reports it (contract 13, balanceAfterPull): its fields as they come,
 * its balances less what this service holds on it that the authority has not acknowledged yet.
 */
function followAuthority(irm: AuthorityIrm, heldText: string | undefined): store.IrmValues {
  const balance = balanceAfterPull({
    availableCents: parseDecimalString(irm.irmAvailableAmt),
    utilisedCents: parseDecimalString(irm.irmUtilizedAmt),
    cancelled: irm.irmStatus === CANCELLED_AT_AUTHORITY,
    heldCents: heldText === undefined ? 0n : parseDecimalString(heldText),
  });
  return { ...irm, irmAvailableAmt: formatCents(balance.availableCents), irmUtilizedAmt: formatCents(balance.utilisedCents) };
}

/**
 * Pulls customers' IRMs from the authority into the store. Concurrent pulls for one customer share
 * one authority call, and a pull younger than the configured interval is reused (across processes
 * too: the time of the last pull is stored with the customer).
 */
export class IrmPuller {
  readonly #context: ServiceContext;
  readonly #inFlight = new Map<string, Promise<PullOutcome>>();

  constructor(context: ServiceContext) {
    this.#context = context;
  }

  /** Pulls unless a pull finished within `maxAgeMs` (the configured interval by default). */
  async pull(customer: VerifiedCustomer, maxAgeMs = this.#context.config.irmRefreshIntervalSeconds * 1000): Promise<PullOutcome | null> {
    const pending = this.#inFlight.get(customer.id);
    if (pending) return pending;
    if (this.#recent(customer.irms_pulled_at, maxAgeMs)) return null;
    return this.pullNow(customer);
  }

  /** Whether this process is pulling the customer's IRMs now (a refresh would wait for that pull). */
  pulling(customerId: string): boolean {
    return this.#inFlight.has(customerId);
  }

  /** Whether pull() would pull nothing now, for a customer last pulled at `pulledAt`, with the configured interval. */
  reuses(customerId: string, pulledAt: Date | null): boolean {
    return !this.pulling(customerId) && this.#recent(pulledAt, this.#context.config.irmRefreshIntervalSeconds * 1000);
  }

  #recent(pulledAt: Date | null, maxAgeMs: number): boolean {
    return pulledAt !== null && Date.now() - pulledAt.getTime() < maxAgeMs;
  }

  /** Pulls now, whatever the age of the last pull; joins one already under way for the customer. */
  pullNow(customer: VerifiedCustomer): Promise<PullOutcome> {
    const pending = this.#inFlight.get(customer.id);
    if (pending) return pending;
    const pull = this.#pull(customer).finally(() => this.#inFlight.delete(customer.id));
    this.#inFlight.set(customer.id, pull);
    return pull;
  }

  /**
   * Every IRM the authority returns is stored as it says (contract 13), one transaction per batch: new ones with
   * irm.received, changed ones in place with irm.updated (changed by anything but this service's own requests: its
   * own moves are in the balances already, so they compare equal).
   */
  async #pull(customer: VerifiedCustomer): Promise<PullOutcome> {
    const { db, outbox } = this.#context;
    const startedAt = new Date();
    const fetched = await asCustomer(this.#context, customer, (credentials) =>
      this.#context.authority.fetchIrms(credentials, { iecCode: customer.iec_code }),
    );
    for (const odd of fetched.unreadable) {
      this.#context.log?.warn({ platformCustomerId: customer.id, irmNumber: odd.irmNumber, reason: odd.reason }, 'the authority sent an IRM that cannot be stored; kept the others');
    }
    const outcome: PullOutcome = { received: 0, updated: 0, cancelled: 0, unreadable: fetched.unreadable.length };
    // One IRM number once: the last the authority lists wins.
    const irms = [...new Map(fetched.irms.map((irm) => [irm.irmNumber, irm])).values()];
    for (let start = 0; start < irms.length; start += store.UPSERT_BATCH) {
      const batch = irms.slice(start, start + store.UPSERT_BATCH);
      const done = await db.transaction().execute((tx) => this.#storeBatch(tx, customer, batch, startedAt));
      outcome.received += done.received;
      outcome.updated += done.updated;
      outcome.cancelled += done.cancelled;
    }
    await store.markIrmsPulled(db, customer.id, startedAt);
    if (outcome.received + outcome.updated > 0) outbox.committed();
    return outcome;
  }

  async #storeBatch(tx: Kysely<Schema>, customer: VerifiedCustomer, batch: readonly AuthorityIrm[], fetchedFrom: Date) {
    const owner = { platformId: customer.platform_id, customerId: customer.id };
    const numbers = batch.map((irm) => irm.irmNumber);
    const stored = new Map((await store.lockIrmsByNumber(tx, customer.id, numbers)).map((row) => [row.irm_number, row]));
    const held = await store.heldAmounts(tx, customer.id, numbers, fetchedFrom);
    const fresh: store.IrmValues[] = [];
    const changed: (store.IrmValues & { id: string })[] = [];
    const before = new Map<string, IrmRecord>();
    for (const irm of batch) {
      const values = followAuthority(irm, held.get(irm.irmNumber));
      const row = stored.get(irm.irmNumber);
      if (row === undefined) {
        fresh.push(values);
        continue;
      }
      const record = toIrmRecord(row);
      if (irmChanges(record, toIrmRecord({ ...row, ...store.irmColumns(values) })).length > 0) {
        changed.push({ ...values, id: row.id });
        before.set(row.id, record);
      }
    }
    const inserted = await store.insertIrms(tx, owner, fresh);
    const updated = await store.updateIrms(tx, changed);
    const events: NewEvent[] = [
      ...inserted.map((row) => ({ platformId: customer.platform_id, platformCustomerId: customer.id, type: 'irm.received' as const, data: toIrmRecord(row) })),
      ...updated.map((row) => {
        const after = toIrmRecord(row);
        return { platformId: customer.platform_id, platformCustomerId: customer.id, type: 'irm.updated' as const, data: { ...after, changes: irmChanges(before.get(row.id)!, after) } };
      }),
    ];
    await this.#context.outbox.record(tx, events);
    const cancelled = updated.filter((row) => row.authority_status === CANCELLED_AT_AUTHORITY && before.get(row.id)?.irmStatus !== 'cancelled').length;
    return { received: inserted.length, updated: updated.length, cancelled };
  }
}

export type IrmPageQuery = {
  page: number;
  limit: number;
  irmNumber?: string | undefined;
  fromDate?: string | undefined;
  toDate?: string | undefined;
};

export async function refreshIrms(
  context: ServiceContext,
  puller: IrmPuller,
  platformId: string,
  customerId: string,
  query: IrmPageQuery,
  /** Null for a page that only shows IRMs (the console's lists, which read through the refresh): nothing is recorded. */
  source: AuditSource | null,
) {
  const page = { customerId, irmNumber: query.irmNumber, fromDate: query.fromDate, toDate: query.toDate, offset: offsetOf(query), limit: query.limit };
  // Most refreshes are served from a recent pull: the page is read first, with what the refresh needs of its customer,
  // in one statement. Anything else (another platform's customer, credentials that cannot be used, a pull due or under
  // way, no row to read the customer with) goes the way below, which reads the customer first and the page again. A
  // page of one IRM number (read apart from the others) and a customer this process is pulling go that way at once.
  const pullKey = customerId.toLowerCase();
  if (query.irmNumber === undefined && !puller.pulling(pullKey)) {
    const served = await store.listIrmsWithCustomer(context.db, platformId, page);
    if (served.customer && hasAcceptedCredentials(served.customer) && puller.reuses(pullKey, served.customer.irms_pulled_at)) {
      return dataPage(served.rows.map(toIrmRecord), served.total, query);
    }
  }
  const customer = requireVerified(await requireCustomer(context.db, platformId, customerId));
  const pulled = await puller.pull(customer);
  // The pull is many transactions (a batch of IRMs each), and may be one another request started: a refresh that asked
  // the authority is recorded once it is done, in a transaction of its own. A page served from a pull recent enough to
  // reuse changed nothing and records nothing: an entry a page put every page of a platform in line for its chain's
  // head (docs/decisions.md, "Audit trail").
  if (source !== null && pulled !== null) {
    await recordAuditAlone(context.db, source, { platformId, action: 'irm.refresh', target: { type: 'platform_customer', id: customer.id } });
  }
  const { rows, total } = await store.listIrms(context.db, { ...page, customerId: customer.id });
  return dataPage(rows.map(toIrmRecord), total, query);
}
