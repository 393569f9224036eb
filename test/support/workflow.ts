import assert from 'node:assert/strict';
import type { Harness } from './harness.ts';

/** Helpers that drive the eBRC workflow over the API, as an integrator would. */

export const FINAL_STATUSES = ['FAILED', 'PROCESSED', 'PARTIALLY_PROCESSED', 'ERRORED'];

type Requester = Pick<Harness, 'request'>;

/** Creates a customer and verifies it against the sandbox; returns its id. */
export async function verifiedCustomer(h: Requester, email: string, username = 'demo.exporter'): Promise<string> {
  const created = await h.request('POST', '/api/v1/platform-customers/', { body: { name: 'Demo', email, companyName: 'Demo Exports' } });
  assert.equal(created.status, 201, created.text);
  // Retried while it answers 504, as a client would: the suites with a short AUTHORITY_TIMEOUT_MS can outlast it on
  // a busy machine (the check issues the customer's API credentials at the authority, a few round trips).
  for (let attempt = 1; ; attempt++) {
    const checked = await h.request('POST', `/api/v1/platform-customers/${created.body.id}/check-authority-credentials`, {
      body: { authorityUsername: username, authorityPassword: 'Sandbox@123' },
    });
    if (checked.status === 200) return created.body.id;
    assert.ok(checked.status === 504 && attempt < 10, `the credentials check answered ${checked.status}: ${checked.text}`);
    await sleep(200);
  }
}

/** A line that maps `amount` of a fresh IRM, as a user would build it from the refresh answer. */
export function lineFor(irm: any, serialNo: number, amount: number, extra: Record<string, unknown> = {}) {
  return {
    serialNo,
    uploadType: 101,
    branchSlNo: 0,
    irmIfscCode: irm.ifscCode,
    irmAdCode: irm.remittanceAdCode,
    irmNumber: irm.irmNumber,
    irmDt: irm.irmIssueDate,
    irmFCC: irm.remittanceFCC,
    irmPurposeCode: irm.purposeOfRemittance,
    irmRemitAmtFCC: irm.irmAvailableAmt,
    sbCumInvoiceNumber: String(1000 + serialNo),
    sbCumInvoiceDate: irm.irmIssueDate,
    portCode: 'INDEL4',
    billNo: `B${serialNo}`,
    sbCumInvoiceFCC: irm.remittanceFCC,
    sbCumInvoiceValueinFCC: amount,
    mappedIRMAmountFCC: amount,
    isVostro: 'N',
    ...extra,
  };
}

/**
 * The customer's first refresh, retried while it answers 504: pulling ~1,800 IRMs the first time can outlast a short
 * AUTHORITY_TIMEOUT_MS on a busy machine (the sandbox goes on storing them, so a retry soon finds them), as a client
 * would retry it.
 */
export async function firstRefresh(h: Requester, customerId: string, attempts = 10): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const answer = await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: customerId }, body: {} });
    if (answer.status === 200) return;
    assert.ok(answer.status === 504 && attempt < attempts, `the first refresh answered ${answer.status}: ${answer.text}`);
    await sleep(200);
  }
}

/** Fresh IRMs of the customer that the rules let a push map (no banned purpose, no INR), from as many pages as needed. */
export async function usableIrms(h: Requester, customerId: string, count: number): Promise<any[]> {
  const usable: any[] = [];
  for (let page = 1; usable.length < count; page++) {
    const answer = await refreshPage(h, customerId, page);
    usable.push(
      ...answer.body.data.filter(
        (irm: any) => irm.irmStatus === 'fresh' && !['P0101', 'P0108', 'P0802', 'P0806'].includes(irm.purposeOfRemittance) && irm.remittanceFCC !== 'INR',
      ),
    );
    if (page >= answer.body.meta.totalPages) break;
  }
  assert.ok(usable.length >= count, `only ${usable.length} usable IRMs`);
  return usable.slice(0, count);
}

/** One page of a refresh, retried while it answers 504 (a pull can outlast a short AUTHORITY_TIMEOUT_MS on a busy machine). */
async function refreshPage(h: Requester, customerId: string, page: number, attempts = 10): Promise<any> {
  for (let attempt = 1; ; attempt++) {
    const answer = await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: customerId, limit: 100, page }, body: {} });
    if (answer.status === 200) return answer;
    assert.ok(answer.status === 504 && attempt < attempts, `the refresh answered ${answer.status}: ${answer.text}`);
    await sleep(200);
  }
}

/** A push body for the lines, counted right. */
export function pushBody(customerId: string, lines: Record<string, unknown>[]) {
  return { platformCustomerId: customerId, recordResCount: lines.length, uploadType: '101', decalarationFlag: 'Y', ebrcBulkGenDtos: lines };
}

/** The request as GET /api/v1/genebrc lists it (which never asks the authority). */
export async function listedRequest(h: Requester, customerId: string, requestId: string): Promise<any> {
  const listed = await h.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: customerId, requestId } });
  assert.equal(listed.status, 200, listed.text);
  assert.equal(listed.body.length, 1, `request ${requestId} is listed once`);
  return listed.body[0];
}

/** Re-reads the list until `done` holds for the request, at most `timeoutMs`; returns the last record. */
export async function waitForListed(
  h: Requester,
  customerId: string,
  requestId: string,
  done: (record: any) => boolean,
  timeoutMs = 20_000,
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const record = await listedRequest(h, customerId, requestId);
    if (done(record)) return record;
    if (Date.now() > deadline) assert.fail(`request ${requestId} still ${record.status} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Waits (listing only, never asking for status) until the request is final. */
export function waitForFinal(h: Requester, customerId: string, requestId: string, timeoutMs = 20_000): Promise<any> {
  return waitForListed(h, customerId, requestId, (record) => FINAL_STATUSES.includes(record.status), timeoutMs);
}

/** One IRM as the service shows it now. */
export async function irmNow(h: Requester, customerId: string, irmNumber: string): Promise<any> {
  const page = await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: customerId, irmNumber }, body: {} });
  assert.equal(page.status, 200, page.text);
  assert.equal(page.body.data.length, 1);
  return page.body.data[0];
}

/** A JSON number with exactly the given cents, built from decimal text (never from float arithmetic). */
export function money(cents: bigint): number {
  const text = `${cents / 100n}.${String(cents % 100n).padStart(2, '0')}`;
  return Number(text);
}

/** An API amount (a JSON number with at most two decimals) in cents, read through its decimal text. */
export function cents(amount: number | string): bigint {
  const match = /^(\d+)(?:\.(\d{1,2}))?$/.exec(String(amount));
  assert.ok(match, `not an amount with at most two decimals: ${amount}`);
  return BigInt(match[1]! + (match[2] ?? '').padEnd(2, '0'));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
