import type { Static } from 'typebox';
import type { IrmSchema } from '../http/schemas.ts';
import { parseDecimalString, centsToNumber } from '../domain/money.ts';
import { irmStatusFor } from '../domain/irm-status.ts';
import * as store from '../store/irms.ts';
import { asCustomer, requireVerified, type ServiceContext, type VerifiedCustomer } from './context.ts';
import { requireCustomer } from './customers.ts';
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

/** irmStatusFor on the column texts: numeric(16,2) always reads with two decimals, so equal amounts read alike. */
function irmStatusOf(row: store.IrmRow): IrmRecord['irmStatus'] {
  if (row.irm_available_amt === row.remittance_fcc_amount) return 'fresh';
  if (row.irm_available_amt === '0.00') return 'utilised';
  return irmStatusFor(parseDecimalString(row.remittance_fcc_amount), parseDecimalString(row.irm_available_amt));
}

function toIrmRecord(row: store.IrmRow): IrmRecord {
  return {
    id: row.id,
    irmNumber: row.irm_number,
    irmIssueDate: row.irm_issue_date,
    irmStatus: irmStatusOf(row),
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

/**
 * Pulls customers' IRMs from the authority into the store. Concurrent pulls for one customer share
 * one authority call, and a pull younger than the configured interval is reused (across processes
 * too: the time of the last pull is stored with the customer).
 */
export class IrmPuller {
  readonly #context: ServiceContext;
  readonly #inFlight = new Map<string, Promise<void>>();

  constructor(context: ServiceContext) {
    this.#context = context;
  }

  /** Pulls unless a pull finished within `maxAgeMs` (the configured interval by default). */
  async pull(customer: VerifiedCustomer, maxAgeMs = this.#context.config.irmRefreshIntervalSeconds * 1000): Promise<void> {
    const pending = this.#inFlight.get(customer.id);
    if (pending) return pending;
    if (customer.irms_pulled_at && Date.now() - customer.irms_pulled_at.getTime() < maxAgeMs) return;
    const pull = this.#pullNow(customer).finally(() => this.#inFlight.delete(customer.id));
    this.#inFlight.set(customer.id, pull);
    return pull;
  }

  /** One transaction per batch: each IRM seen for the first time commits with its irm.received event. */
  async #pullNow(customer: VerifiedCustomer): Promise<void> {
    const { db, outbox } = this.#context;
    const startedAt = new Date();
    const irms = await asCustomer(this.#context, customer, (credentials) =>
      this.#context.authority.fetchIrms(credentials, { iecCode: customer.iec_code }),
    );
    const owner = { platformId: customer.platform_id, customerId: customer.id };
    let received = 0;
    for (let start = 0; start < irms.length; start += store.UPSERT_BATCH) {
      received += await db.transaction().execute(async (tx) => {
        const inserted = await store.upsertIrms(tx, owner, irms.slice(start, start + store.UPSERT_BATCH));
        await outbox.record(tx, inserted.map((row) => ({ platformId: customer.platform_id, platformCustomerId: customer.id, type: 'irm.received' as const, data: toIrmRecord(row) })));
        return inserted.length;
      });
    }
    await store.markIrmsPulled(db, customer.id, startedAt);
    if (received > 0) outbox.committed();
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
) {
  const customer = requireVerified(await requireCustomer(context.db, platformId, customerId));
  await puller.pull(customer);
  const { rows, total } = await store.listIrms(context.db, {
    customerId: customer.id,
    irmNumber: query.irmNumber,
    fromDate: query.fromDate,
    toDate: query.toDate,
    offset: offsetOf(query),
    limit: query.limit,
  });
  return dataPage(rows.map(toIrmRecord), total, query);
}
