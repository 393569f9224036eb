import type { AutocannonRequest } from 'autocannon';
import type { ApiClient, ApiIrm } from './api.ts';

/** Each line maps one paisa/cent: thousands of pushes fit in any IRM. */
const MAPPED_CENTS = 1;
/** Purpose codes a goods push (uploadType 101) may map without further rules. */
const PUSHABLE_PURPOSES = new Set(['P0102', 'P0103']);

type PoolIrm = { customerId: string; irm: ApiIrm; availableCents: number };
type Lease = { customerId: string; irms: PoolIrm[] };
type ListedRequest = { requestId: string; status: string; ebrcBulkGenDtos: { irmNumber?: unknown }[] };

/** The line errors that mean "the amount quoted is not the IRM's available amount". */
const STALE_AMOUNT_CODES = new Set(['ERR23', 'ERR38']);

export type PushOutcomes = { validated: number; failed: number; other: number; failureCodes: Record<string, number> };

/**
 * The pushable IRMs of the push customers, with the available amount each push must quote
 * (irmRemitAmtFCC = the IRM's available amount now, at the service and at the sandbox alike).
 * A push leases distinct IRMs of one customer, one line each, so concurrent pushes never race for
 * an IRM; a Validated acknowledgement lowers each leased IRM by the mapped cent, a Failed one leaves
 * it (an IRM it names as stale leaves the pool), and an error answer keeps the IRMs out of the pool.
 * A push whose answer was cut off by the end of a run is looked up afterwards (recover).
 */
export class IrmPool {
  readonly #free = new Map<string, PoolIrm[]>();
  readonly #leases = new Map<number, Lease>();
  /** Requests whose outcome is accounted for: acknowledged to us, or found by recover(). */
  readonly #known = new Set<string>();
  #nextLease = 1;
  #lastBody: string | undefined;
  outcomes: PushOutcomes = { validated: 0, failed: 0, other: 0, failureCodes: {} };

  /** Replaces the pool with the IRMs as the service shows them now. */
  reset(irmsByCustomer: ReadonlyMap<string, readonly ApiIrm[]>): void {
    this.#free.clear();
    this.#leases.clear();
    for (const [customerId, irms] of irmsByCustomer) {
      this.#free.set(
        customerId,
        irms
          .filter((irm) => PUSHABLE_PURPOSES.has(irm.purposeOfRemittance))
          .map((irm) => ({ customerId, irm, availableCents: Math.round(irm.irmAvailableAmt * 100) }))
          .filter((entry) => entry.availableCents >= MAPPED_CENTS * 2),
      );
    }
  }

  resetOutcomes(): void {
    this.outcomes = { validated: 0, failed: 0, other: 0, failureCodes: {} };
  }

  /** How many pushes of `lines` lines can be in flight at once. */
  capacity(lines: number): number {
    let total = 0;
    for (const free of this.#free.values()) total += Math.floor(free.length / lines);
    return total;
  }

  size(): number {
    let total = 0;
    for (const free of this.#free.values()) total += free.length;
    return total;
  }

  /** An autocannon request that pushes `lines` lines per request. */
  request(lines: number): AutocannonRequest {
    return {
      method: 'POST',
      path: '/api/v1/genebrc/push-irm',
      setupRequest: (request, context) => {
        const lease = this.#lease(lines);
        if (lease === undefined) {
          // No IRMs free (only after lost answers): repeat the last body, whose stale amounts make a Failed
          // acknowledgement that the outcome counts show.
          context.lease = 0;
          return { ...request, body: this.#lastBody ?? '{}' };
        }
        context.lease = lease.id;
        this.#lastBody = pushBody(lease.customerId, lease.irms);
        return { ...request, body: this.#lastBody };
      },
      onResponse: (status, body, context) => {
        this.#settle(typeof context.lease === 'number' ? context.lease : 0, status, body);
      },
    };
  }

  #lease(lines: number): { id: number; customerId: string; irms: PoolIrm[] } | undefined {
    let best: [string, PoolIrm[]] | undefined;
    for (const entry of this.#free) if (entry[1].length >= lines && (!best || entry[1].length > best[1].length)) best = entry;
    if (!best) return undefined;
    const irms = best[1].splice(0, lines);
    const id = this.#nextLease++;
    this.#leases.set(id, { customerId: best[0], irms });
    return { id, customerId: best[0], irms };
  }

  #settle(leaseId: number, status: number, body: string): void {
    const lease = this.#leases.get(leaseId);
    this.#leases.delete(leaseId);
    let ack: { requestId?: string; ackStatus?: string; errorDetails?: { code?: string; serialNo?: number | null }[] } = {};
    try {
      ack = JSON.parse(body) as typeof ack;
    } catch {
      // Not JSON: counted as other below.
    }
    if (ack.requestId !== undefined) this.#known.add(ack.requestId);
    const stale = new Set<number>();
    if (status === 200 && ack.ackStatus === 'Validated') {
      this.outcomes.validated++;
      if (lease) for (const entry of lease.irms) entry.availableCents -= MAPPED_CENTS;
    } else if (status === 200 && ack.ackStatus === 'Failed') {
      this.outcomes.failed++;
      for (const detail of ack.errorDetails ?? []) {
        const code = detail.code ?? 'unknown';
        this.outcomes.failureCodes[code] = (this.outcomes.failureCodes[code] ?? 0) + 1;
        if (STALE_AMOUNT_CODES.has(code) && typeof detail.serialNo === 'number') stale.add(detail.serialNo - 1);
      }
    } else {
      this.outcomes.other++;
      const code = `HTTP ${status}`;
      this.outcomes.failureCodes[code] = (this.outcomes.failureCodes[code] ?? 0) + 1;
      return; // The outcome is unknown: these IRMs wait for the next resync.
    }
    if (!lease) return;
    this.#giveBack(lease, stale);
  }

  #giveBack(lease: Lease, except: ReadonlySet<number> = new Set()): void {
    const free = this.#free.get(lease.customerId)!;
    lease.irms.forEach((entry, index) => {
      if (!except.has(index) && entry.availableCents >= MAPPED_CENTS * 2) free.push(entry);
    });
  }

  /**
   * Settles the pushes whose answers a run's end cut off, once the service has finished them: the
   * newest requests of their customers show which were stored and whether they failed. A push not
   * found was never received; its IRMs are unchanged.
   */
  async recover(api: ApiClient): Promise<{ found: number; missing: number }> {
    const outstanding = [...this.#leases.values()];
    this.#leases.clear();
    const byFirstIrm = new Map(outstanding.map((lease) => [`${lease.customerId}/${lease.irms[0]?.irm.irmNumber}`, lease]));
    let found = 0;
    for (const customerId of new Set(outstanding.map((lease) => lease.customerId))) {
      // The few newest requests are enough (pushes of other runs were settled by then), and a page of 999-line
      // requests is large: 100 of them would make the service build a response of about 100 MB.
      const limit = Math.min(100, outstanding.length + 4);
      const records = await api.expect<ListedRequest[]>(200, 'GET', `/api/v1/genebrc?platformCustomerId=${customerId}&page=1&limit=${limit}`);
      for (const record of records) {
        if (this.#known.has(record.requestId)) continue;
        this.#known.add(record.requestId);
        const lease = byFirstIrm.get(`${customerId}/${String(record.ebrcBulkGenDtos[0]?.irmNumber)}`);
        if (!lease) continue;
        found++;
        if (record.status !== 'FAILED') for (const entry of lease.irms) entry.availableCents -= MAPPED_CENTS;
      }
    }
    for (const lease of outstanding) this.#giveBack(lease);
    return { found, missing: outstanding.length - found };
  }
}

function money(cents: number): number {
  return cents / 100;
}

/** A push body of one line per IRM, each mapping one cent of the IRM's available amount. */
export function pushBody(customerId: string, irms: readonly PoolIrm[]): string {
  const lines = irms.map(({ irm, availableCents }, index) => {
    const vostro = irm.remittanceFCC === 'INR';
    return {
      serialNo: index + 1,
      uploadType: 101,
      branchSlNo: 0,
      irmIfscCode: irm.ifscCode,
      irmAdCode: irm.remittanceAdCode,
      irmNumber: irm.irmNumber,
      irmDt: irm.irmIssueDate,
      irmFCC: irm.remittanceFCC,
      irmPurposeCode: irm.purposeOfRemittance,
      irmRemitAmtFCC: money(availableCents),
      sbCumInvoiceNumber: String(1_000_000 + index + 1),
      sbCumInvoiceDate: irm.irmIssueDate,
      portCode: 'INNSA1',
      billNo: `BNCH${index + 1}`,
      sbCumInvoiceFCC: irm.remittanceFCC,
      sbCumInvoiceValueinFCC: money(MAPPED_CENTS),
      mappedIRMAmountFCC: money(MAPPED_CENTS),
      isVostro: vostro ? 'Y' : 'N',
      vostroType: vostro ? 'SVRA' : null,
    };
  });
  return JSON.stringify({ platformCustomerId: customerId, recordResCount: lines.length, uploadType: '101', decalarationFlag: 'Y', ebrcBulkGenDtos: lines });
}
