import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { parseDecimalString } from '../../src/domain/money.ts';
import { normaliseLines, type RawLine } from '../../src/domain/push-line.ts';
import { checkPushRules, type IrmSnapshot } from '../../src/domain/push-rules.ts';
import { normalizeUploadType } from '../../src/domain/upload-type.ts';
import { findIrmsByNumber } from '../../src/store/irms.ts';
import { describeEachBackend, expectProblem, type Harness } from '../support/harness.ts';
import { cents, firstRefresh, money, verifiedCustomer } from '../support/workflow.ts';

/**
 * POST /platform-customers/{id}/irm/match (contract 11) against the sandbox account demo.exporter, whose IRMs are the
 * same in every sandbox: each test takes IRMs of its own (a set of used ones keeps them apart, since the pushes the
 * tests send consume them), builds invoices an accountant would hold for them, and checks the proposal, then sends
 * its pushes, which the service and the sandbox must accept.
 */

type Irm = {
  irmNumber: string;
  irmIssueDate: string;
  ifscCode: string;
  remittanceDate: string;
  remittanceFCC: string;
  irmAvailableAmt: number;
  remitterName: string;
  remitterCountry: string;
  purposeOfRemittance: string;
  irmStatus: string;
};

const SUFFIX = /[\s,]+(inc|llc|ltd|corp|gmbh|sarl|bv|pvt ltd)\.?$/i;
const COUNTRY_NAMES: Record<string, string> = { US: 'United States', GB: 'United Kingdom', DE: 'Germany', FR: 'France', NL: 'Netherlands', CA: 'Canada' };

/** How the exporter's books may spell the remitter: upper case, a comma, another legal form. */
function buyerNameOf(remitterName: string): string {
  return `${remitterName.replace(SUFFIX, '').toUpperCase()}, CO. LIMITED.`;
}

function isoMinusDays(iso: string, days: number): string {
  return new Date(Date.parse(`${iso}T00:00:00Z`) - days * 86_400_000).toISOString().slice(0, 10);
}

function ddMMyyyy(iso: string): string {
  return `${iso.slice(8, 10)}${iso.slice(5, 7)}${iso.slice(0, 4)}`;
}

let invoiceSeq = 1_000_000;

/** An invoice of this IRM's remitter, `daysBefore` its remittance date (after it, for an advance, by -daysBefore). */
function invoiceFor(irm: Irm, value: number, daysBefore: number, extra: Record<string, unknown> = {}) {
  invoiceSeq += 1;
  return {
    sbCumInvoiceNumber: String(invoiceSeq),
    sbCumInvoiceDate: ddMMyyyy(isoMinusDays(irm.remittanceDate, daysBefore)),
    sbCumInvoiceFCC: irm.remittanceFCC,
    sbCumInvoiceValueinFCC: value,
    portCode: 'INNSA1',
    billNo: `EXP-${invoiceSeq}`,
    buyerName: buyerNameOf(irm.remitterName),
    buyerCountry: COUNTRY_NAMES[irm.remitterCountry] ?? irm.remitterCountry,
    ...extra,
  };
}

describeEachBackend('IRM matching', (h: Harness) => {
  let customerId = '';
  /** The customer's IRMs as listed before any test pushed, oldest remittance first. */
  let irms: Irm[] = [];
  const used = new Set<string>();

  const matchUrl = (id = customerId) => `/api/v1/platform-customers/${id}/irm/match`;
  const match = (body: unknown, id = customerId, key?: string) => h.request('POST', matchUrl(id), { body, ...(key ? { key } : {}) });

  /** The first unused IRM remitted in `month` (YYYY-MM) that `wanted` accepts; marked used. */
  function take(month: string, wanted: (irm: Irm) => boolean): Irm {
    const irm = irms.find((candidate) => !used.has(candidate.irmNumber) && candidate.remittanceDate.startsWith(month) && wanted(candidate));
    assert.ok(irm, `an IRM of ${month} as wanted`);
    used.add(irm.irmNumber);
    return irm;
  }

  /**
   * Whether no other IRM of the same remitter and currency was received within `days` of this one: the only IRM an
   * invoice of its remitter dated within that window could be paid by (the sandbox has few remitters per currency).
   */
  const isolated = (irm: Irm, days: number) =>
    !irms.some((other) => other.irmNumber !== irm.irmNumber && other.remitterName === irm.remitterName && other.remittanceFCC === irm.remittanceFCC &&
      Math.abs(Date.parse(other.remittanceDate) - Date.parse(irm.remittanceDate)) <= days * 86_400_000);

  const plain = (irm: Irm) => irm.remittanceFCC !== 'INR' && !['P0101', 'P0108', 'P0103'].includes(irm.purposeOfRemittance);

  /** Each push passes the push's format checks and rules against the IRMs as stored now, then is sent and Validated. */
  async function pushAll(pushes: any[]): Promise<void> {
    for (const push of pushes) {
      assert.equal(push.platformCustomerId, customerId);
      assert.equal(push.decalarationFlag, 'Y');
      assert.equal(push.recordResCount, push.ebrcBulkGenDtos.length);
      assert.ok(push.ebrcBulkGenDtos.length >= 1 && push.ebrcBulkGenDtos.length <= 999);
      const uploadType = normalizeUploadType(push.uploadType);
      assert.ok(uploadType);
      const { lines, problems } = normaliseLines(push.ebrcBulkGenDtos as RawLine[], uploadType);
      assert.deepEqual(problems, []);
      const rows = await findIrmsByNumber(h.database.db, customerId, [...new Set(lines.map((line) => line.irmNumber))]);
      const snapshots = new Map<string, IrmSnapshot>(rows.map((row) => [row.irm_number, {
        irmNumber: row.irm_number,
        irmIssueDate: ddMMyyyy(row.irm_issue_date),
        ifscCode: row.ifsc_code,
        remittanceFCC: row.remittance_fcc,
        purposeOfRemittance: row.purpose_of_remittance,
        availableCents: parseDecimalString(row.irm_available_amt),
        remittanceDate: ddMMyyyy(row.remittance_date),
      }]));
      assert.deepEqual(checkPushRules({ recordResCount: push.recordResCount, uploadType, lines, irms: snapshots }), []);
      const ack = await h.request('POST', '/api/v1/genebrc/push-irm', { body: push });
      assert.equal(ack.status, 200, ack.text);
      assert.equal(ack.body.ackStatus, 'Validated', ack.text);
    }
  }

  /** Nothing maps more than an IRM holds or an invoice is worth; every amount is above 0. */
  function assertWithinBalances(answer: any, invoices: any[]): void {
    const perIrm = new Map<string, bigint>();
    const perInvoice = new Map<string, bigint>();
    for (const allocation of answer.allocations) {
      const amount = cents(allocation.mappedIRMAmountFCC);
      assert.ok(amount > 0n);
      assert.ok(allocation.confidence >= 0 && allocation.confidence <= 1);
      assert.ok(allocation.reasons.length >= 2);
      perIrm.set(allocation.irmNumber, (perIrm.get(allocation.irmNumber) ?? 0n) + amount);
      perInvoice.set(allocation.sbCumInvoiceNumber, (perInvoice.get(allocation.sbCumInvoiceNumber) ?? 0n) + amount);
    }
    for (const [irmNumber, mapped] of perIrm) {
      const irm = irms.find((candidate) => candidate.irmNumber === irmNumber);
      assert.ok(irm, `${irmNumber} is the customer's`);
      assert.ok(mapped <= cents(irm.irmAvailableAmt), `${irmNumber}: ${mapped} mapped of ${irm.irmAvailableAmt}`);
    }
    for (const [number, mapped] of perInvoice) {
      const invoice = invoices.find((candidate) => candidate.sbCumInvoiceNumber === number);
      assert.ok(invoice && mapped <= cents(invoice.sbCumInvoiceValueinFCC), `invoice ${number}`);
    }
    // Every allocation is one line of one push.
    const lines = answer.pushes.flatMap((push: any) => push.ebrcBulkGenDtos);
    assert.deepEqual(
      lines.map((line: any) => `${line.sbCumInvoiceNumber}|${line.irmNumber}|${line.mappedIRMAmountFCC}`).sort(),
      answer.allocations.map((a: any) => `${a.sbCumInvoiceNumber}|${a.irmNumber}|${a.mappedIRMAmountFCC}`).sort(),
    );
  }

  before(async () => {
    customerId = await verifiedCustomer(h, 'match@example.com');
    await firstRefresh(h, customerId);
    for (let page = 1; ; page++) {
      const answer = await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: customerId, limit: 100, page }, body: {} });
      assert.equal(answer.status, 200, answer.text);
      irms.push(...answer.body.data);
      if (page >= answer.body.meta.totalPages) break;
    }
    irms = irms.toSorted((a, b) => a.remittanceDate.localeCompare(b.remittanceDate) || a.irmNumber.localeCompare(b.irmNumber));
  });

  test('an exact payment from a remitter spelled with another legal suffix and punctuation; its push is Validated', async () => {
    const irm = take('2025-05', plain);
    const invoice = invoiceFor(irm, irm.irmAvailableAmt, 6);
    assert.notEqual(invoice.buyerName.toLowerCase(), irm.remitterName.toLowerCase());
    const answer = await match({ uploadType: '101', invoices: [invoice] });
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.body.allocations.map((a: any) => [a.sbCumInvoiceNumber, a.irmNumber, a.mappedIRMAmountFCC]), [
      [invoice.sbCumInvoiceNumber, irm.irmNumber, irm.irmAvailableAmt],
    ]);
    const [allocation] = answer.body.allocations;
    assert.ok(allocation.confidence >= 0.9, `confidence ${allocation.confidence}`);
    assert.ok(allocation.reasons.some((reason: string) => /equals the invoice value/.test(reason)), allocation.reasons.join('; '));
    assert.ok(allocation.reasons.some((reason: string) => /once legal suffixes, case and punctuation are ignored/.test(reason)), allocation.reasons.join('; '));
    assert.deepEqual(answer.body.unmatchedInvoices, []);
    assert.ok(!answer.body.unusedIrms.some((unused: any) => unused.irmNumber === irm.irmNumber));
    assert.deepEqual(answer.body.parameters, { uploadType: '101', chargeTolerance: { percent: 2, maxAmount: 50 }, maxDaysAfterInvoice: 365 });

    assert.equal(answer.body.pushes.length, 1);
    assert.deepEqual(answer.body.pushes[0], {
      platformCustomerId: customerId,
      recordResCount: 1,
      uploadType: '101',
      decalarationFlag: 'Y',
      ebrcBulkGenDtos: [{
        serialNo: 1,
        uploadType: 101,
        branchSlNo: 0,
        irmIfscCode: irm.ifscCode,
        irmAdCode: (irm as any).remittanceAdCode,
        irmNumber: irm.irmNumber,
        irmDt: ddMMyyyy(irm.irmIssueDate),
        irmFCC: irm.remittanceFCC,
        irmPurposeCode: irm.purposeOfRemittance,
        irmRemitAmtFCC: irm.irmAvailableAmt,
        sbCumInvoiceNumber: invoice.sbCumInvoiceNumber,
        sbCumInvoiceDate: invoice.sbCumInvoiceDate,
        portCode: invoice.portCode,
        billNo: invoice.billNo,
        sbCumInvoiceFCC: invoice.sbCumInvoiceFCC,
        sbCumInvoiceValueinFCC: invoice.sbCumInvoiceValueinFCC,
        mappedIRMAmountFCC: irm.irmAvailableAmt,
      }],
    });
    await pushAll(answer.body.pushes);

    // Used up now: the same invoice finds nothing, and the IRM is not among those considered.
    const again = await match({ uploadType: '101', invoices: [invoice] });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.body.allocations.filter((a: any) => a.irmNumber === irm.irmNumber), []);
    assert.ok(!again.body.unusedIrms.some((unused: any) => unused.irmNumber === irm.irmNumber));
  });

  test('a payment short by bank charges settles its invoice; beyond the tolerance it does not', async () => {
    // An IRM no other of its remitter comes near, so that nothing else can pay the invoice at all.
    const irm = take('2025-06', (candidate) => plain(candidate) && candidate.irmAvailableAmt >= 5_000 && isolated(candidate, 5));
    const charges = 35.5; // 2% of 5,000 is 100: the 50-unit cap is what applies
    const invoice = invoiceFor(irm, money(cents(irm.irmAvailableAmt) + 3550n), 1);
    const answer = await match({ uploadType: 'GOODS', maxDaysAfterInvoice: 2, invoices: [invoice] });
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.body.allocations.map((a: any) => [a.irmNumber, a.mappedIRMAmountFCC]), [[irm.irmNumber, irm.irmAvailableAmt]]);
    assert.ok(answer.body.allocations[0].reasons.some((reason: string) => reason.includes(`less ${charges.toFixed(2)} of bank charges`)), answer.body.allocations[0].reasons.join('; '));
    assert.deepEqual(answer.body.unmatchedInvoices, [], 'settled, short by charges');

    // A tolerance of 30 units: 35.50 short is too much. The IRM is still proposed, as a partial payment, and the
    // invoice stays unpaid by the 35.50.
    const strict = await match({ uploadType: '101', chargeTolerance: { maxAmount: 30 }, maxDaysAfterInvoice: 2, invoices: [invoice] });
    assert.equal(strict.status, 200, strict.text);
    assert.deepEqual(strict.body.parameters.chargeTolerance, { percent: 2, maxAmount: 30 });
    assert.deepEqual(strict.body.allocations.map((a: any) => [a.irmNumber, a.mappedIRMAmountFCC]), [[irm.irmNumber, irm.irmAvailableAmt]]);
    assert.ok(strict.body.allocations[0].reasons.some((reason: string) => reason.startsWith('partial payment')), strict.body.allocations[0].reasons.join('; '));
    assert.ok(strict.body.allocations[0].confidence < answer.body.allocations[0].confidence);
    assert.deepEqual(strict.body.unmatchedInvoices, [{ sbCumInvoiceNumber: invoice.sbCumInvoiceNumber, remaining: charges }]);

    await pushAll(answer.body.pushes);
  });

  test('one IRM pays two invoices, and two IRMs pay one invoice; the pushes are Validated', async () => {
    // One IRM, two invoices of its remitter.
    const big = take('2025-07', (candidate) => plain(candidate) && candidate.irmAvailableAmt >= 4_000);
    const first = money((cents(big.irmAvailableAmt) * 55n) / 100n);
    const second = money(cents(big.irmAvailableAmt) - cents(first));
    const invoices = [invoiceFor(big, first, 20), invoiceFor(big, second, 17)];

    // Two IRMs of one remitter, bank and purpose, one invoice of their sum.
    const pairs = irms.filter((irm) => irm.remittanceDate.startsWith('2025-08') && !used.has(irm.irmNumber) && plain(irm));
    let pair: [Irm, Irm] | undefined;
    for (const [i, a] of pairs.entries()) {
      const b = pairs.slice(i + 1).find((c) =>
        c.remitterName === a.remitterName && c.ifscCode === a.ifscCode && c.purposeOfRemittance === a.purposeOfRemittance &&
        c.remittanceFCC === a.remittanceFCC);
      if (b) {
        pair = [a, b];
        break;
      }
    }
    assert.ok(pair, 'two IRMs of one remitter, bank and purpose in August 2025');
    for (const irm of pair) used.add(irm.irmNumber);
    const sum = money(cents(pair[0].irmAvailableAmt) + cents(pair[1].irmAvailableAmt));
    invoices.push(invoiceFor(pair[0], sum, 4));

    const answer = await match({ uploadType: 101, maxDaysAfterInvoice: 60, invoices });
    assert.equal(answer.status, 200, answer.text);
    const got = answer.body.allocations.map((a: any) => [a.sbCumInvoiceNumber, a.irmNumber, a.mappedIRMAmountFCC]);
    assert.deepEqual(got, [
      [invoices[0]!.sbCumInvoiceNumber, big.irmNumber, first],
      [invoices[1]!.sbCumInvoiceNumber, big.irmNumber, second],
      [invoices[2]!.sbCumInvoiceNumber, pair[0].irmNumber, pair[0].irmAvailableAmt],
      [invoices[2]!.sbCumInvoiceNumber, pair[1].irmNumber, pair[1].irmAvailableAmt],
    ]);
    assert.ok(answer.body.allocations[0].reasons.some((reason: string) => /settles 2 invoices/.test(reason)));
    assert.ok(answer.body.allocations[2].reasons.some((reason: string) => /one of 2 IRMs/.test(reason)));
    assert.deepEqual(answer.body.unmatchedInvoices, []);
    assertWithinBalances(answer.body, invoices);
    // What shares an IRM or an invoice is in one push: here everything fits one.
    assert.equal(answer.body.pushes.length, 1);
    assert.deepEqual(answer.body.pushes[0].ebrcBulkGenDtos.map((line: any) => line.serialNo), [1, 2, 3, 4]);
    await pushAll(answer.body.pushes);
  });

  test('a month of IRMs against its invoices: never over a balance, every push passes and is Validated', async (t) => {
    const month = irms.filter((irm) => irm.remittanceDate.startsWith('2025-10') && !used.has(irm.irmNumber) && irm.remittanceFCC !== 'INR' &&
      !['P0101', 'P0108'].includes(irm.purposeOfRemittance));
    const invoices: any[] = [];
    const truth = new Set<string>();
    month.forEach((irm, k) => {
      used.add(irm.irmNumber);
      // An advance is invoiced after the money came; any other payment comes after its invoice.
      const days = irm.purposeOfRemittance === 'P0103' ? -5 : 9;
      const kind = k % 4;
      if (kind === 2) {
        const part = money((cents(irm.irmAvailableAmt) * 40n) / 100n);
        for (const value of [part, money(cents(irm.irmAvailableAmt) - cents(part))]) {
          const invoice = invoiceFor(irm, value, days);
          invoices.push(invoice);
          truth.add(`${invoice.sbCumInvoiceNumber}|${irm.irmNumber}`);
        }
        return;
      }
      const value = kind === 1 && irm.irmAvailableAmt > 2_000 ? money(cents(irm.irmAvailableAmt) + 1234n) : irm.irmAvailableAmt;
      const invoice = invoiceFor(irm, value, days, kind === 3 ? { buyerName: null, buyerCountry: irm.remitterCountry } : {});
      invoices.push(invoice);
      truth.add(`${invoice.sbCumInvoiceNumber}|${irm.irmNumber}`);
    });
    assert.ok(invoices.length > 40, `${invoices.length} invoices`);
    const answer = await match({ uploadType: '101', maxDaysAfterInvoice: 30, invoices });
    assert.equal(answer.status, 200, answer.text);
    assertWithinBalances(answer.body, invoices);
    const proposed = answer.body.allocations.map((a: any) => `${a.sbCumInvoiceNumber}|${a.irmNumber}`);
    const right = proposed.filter((pair: string) => truth.has(pair)).length;
    t.diagnostic(`${invoices.length} invoices, ${month.length} IRMs: ${proposed.length} allocations, ${right} right of ${truth.size}`);
    assert.ok(right / proposed.length >= 0.9, `precision ${right}/${proposed.length}`);
    assert.ok(right / truth.size >= 0.9, `recall ${right}/${truth.size}`);
    // Never an IRM of another currency, never one outside the customer's mappable ones.
    const byNumber = new Map(irms.map((irm) => [irm.irmNumber, irm]));
    for (const allocation of answer.body.allocations) {
      const invoice = invoices.find((candidate) => candidate.sbCumInvoiceNumber === allocation.sbCumInvoiceNumber);
      assert.equal(byNumber.get(allocation.irmNumber)?.remittanceFCC, invoice.sbCumInvoiceFCC);
    }
    await pushAll(answer.body.pushes);
  });

  test('never an IRM of another currency, nor a P0101/P0108 one, however well it fits', async () => {
    const usd = take('2025-11', plain);
    const other = invoiceFor(usd, usd.irmAvailableAmt, 3, { sbCumInvoiceFCC: usd.remittanceFCC === 'EUR' ? 'USD' : 'EUR' });
    // A P0101/P0108 IRM no other of its remitter comes near: with it refused, nothing can pay the invoice.
    const banned = irms.find((irm) => ['P0101', 'P0108'].includes(irm.purposeOfRemittance) && !used.has(irm.irmNumber) && isolated(irm, 2));
    assert.ok(banned, 'demo.exporter receives P0101/P0108 IRMs');
    const bannedInvoice = invoiceFor(banned, banned.irmAvailableAmt, 0);
    const answer = await match({ uploadType: '101', maxDaysAfterInvoice: 1, invoices: [other, bannedInvoice] });
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.body.allocations.filter((a: any) => [usd.irmNumber, banned.irmNumber].includes(a.irmNumber)), []);
    assert.ok(!answer.body.unusedIrms.some((unused: any) => unused.irmNumber === banned.irmNumber), 'a P0101/P0108 IRM is not mappable');
    assert.deepEqual(answer.body.unmatchedInvoices.map((u: any) => u.sbCumInvoiceNumber).sort(), [other.sbCumInvoiceNumber, bannedInvoice.sbCumInvoiceNumber].sort());
    assert.deepEqual(answer.body.unmatchedInvoices.find((u: any) => u.sbCumInvoiceNumber === other.sbCumInvoiceNumber).remaining, usd.irmAvailableAmt);
    // Cancelled IRMs (the authority's irmStatus C) never reach the store: the wire mapping leaves them out
    // (test/authority/dgft/dgft-client.test.ts), and the engine refuses one it is given (test/domain/matching.test.ts).
  });

  test('a match stores nothing: balances, requests, events and idempotency keys are as they were', async () => {
    const irm = take('2025-12', plain);
    const snapshot = async () => ({
      irms: await h.database.db.selectFrom('irms').select(['irm_number', 'irm_available_amt', 'irm_utilized_amt', 'updated_at'])
        .where('platform_customer_id', '=', customerId).orderBy('irm_number').execute(),
      requests: await h.database.db.selectFrom('genebrc_requests').select('request_id').orderBy('request_id').execute(),
      events: await h.database.db.selectFrom('events').select('id').orderBy('id').execute(),
      keys: await h.database.db.selectFrom('idempotency_keys').select('key').orderBy('key').execute(),
      pulledAt: (await h.database.db.selectFrom('platform_customers').select('irms_pulled_at').where('id', '=', customerId).executeTakeFirstOrThrow()).irms_pulled_at,
    });
    const before = await snapshot();
    const answer = await match({ uploadType: '101', invoices: [invoiceFor(irm, irm.irmAvailableAmt, 1)] });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.allocations.length, 1);
    assert.deepEqual(await snapshot(), before);
  });

  test('a customer that never pulled its IRMs pulls them first; an unverified one is 409', async () => {
    const fresh = await verifiedCustomer(h, 'match-first-pull@example.com');
    const irm = take('2026-01', plain);
    const answer = await match({ uploadType: '101', invoices: [invoiceFor(irm, irm.irmAvailableAmt, 2)] }, fresh);
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.body.allocations.map((a: any) => a.irmNumber), [irm.irmNumber]);
    assert.equal(answer.body.pushes[0].platformCustomerId, fresh);
    const row = await h.database.db.selectFrom('platform_customers').select('irms_pulled_at').where('id', '=', fresh).executeTakeFirstOrThrow();
    assert.ok(row.irms_pulled_at);

    const created = await h.request('POST', '/api/v1/platform-customers/', { body: { name: 'U', email: 'match-unverified@example.com', companyName: 'U' } });
    expectProblem(await match({ uploadType: '101', invoices: [invoiceFor(irm, 100, 2)] }, created.body.id), 409, 'customer_not_verified');
  });

  test("another platform's customer, and an id that is no customer, are 404", async () => {
    const body = { uploadType: '101', invoices: [invoiceFor(irms[0]!, 100, 1)] };
    expectProblem(await match(body, customerId, h.platformB.apiKey), 404, 'not_found');
    expectProblem(await match(body, '3689a0da-30aa-468e-b66d-e2faa29c8e79'), 404, 'not_found');
    expectProblem(await match(body, 'not-a-uuid'), 404, 'not_found');
  });

  test('malformed bodies are 400 with every problem at its path, in the push\'s codes', async () => {
    const good = invoiceFor(irms[0]!, 100, 1);
    const problemOf = async (body: unknown) => expectProblem(await match(body), 400, 'validation_failed');
    const codesOf = (problem: any) => problem.errors.map((error: any) => `${error.path} ${error.code}`);

    assert.deepEqual(codesOf(await problemOf({ invoices: [good] })), ['/uploadType required']);
    assert.deepEqual(codesOf(await problemOf({ uploadType: '101', invoices: [] })), ['/invoices invalid_length']);
    assert.deepEqual(codesOf(await problemOf({ uploadType: '101', invoices: [{ ...good, buyer: 'x' }] })), ['/invoices/0/buyer unknown_field']);
    assert.deepEqual(codesOf(await problemOf({ uploadType: '101', maxDaysAfterInvoice: 0, invoices: [good] })), ['/maxDaysAfterInvoice out_of_range']);
    assert.deepEqual(codesOf(await problemOf({ uploadType: '101', chargeTolerance: 0.02, invoices: [good] })), ['/chargeTolerance invalid_type']);
    assert.deepEqual(codesOf(await problemOf({ uploadType: '101', chargeTolerance: { percent: 101 }, invoices: [good] })), ['/chargeTolerance/percent out_of_range']);

    const bad = await problemOf({
      uploadType: 'EXPORTS',
      chargeTolerance: { percent: 1.555, maxAmount: 10.001 },
      invoices: [
        good,
        { ...good, sbCumInvoiceNumber: '77' },
        { ...good, sbCumInvoiceNumber: '77', sbCumInvoiceValueinFCC: 10.005 },
        { ...good, sbCumInvoiceNumber: '78', sbCumInvoiceFCC: 'usd', sbCumInvoiceDate: '31022025' },
        { ...good, sbCumInvoiceNumber: '79', portCode: 'XXXXXX', billNo: 'B'.repeat(21) },
        { ...good, sbCumInvoiceNumber: '80', portCode: 'INNSA', sbCumInvoiceValueinFCC: 0 },
      ],
    });
    assert.deepEqual(codesOf(bad), [
      '/uploadType invalid_upload_type',
      '/chargeTolerance/percent invalid_percent',
      '/chargeTolerance/maxAmount invalid_money',
      '/invoices/2/sbCumInvoiceValueinFCC invalid_money',
      '/invoices/2/sbCumInvoiceNumber duplicate_invoice_number',
      '/invoices/3/sbCumInvoiceFCC invalid_currency',
      '/invoices/3/sbCumInvoiceDate ERR28',
      '/invoices/4/billNo ERR31',
      '/invoices/4/portCode ERR30',
      '/invoices/5/portCode ERR29',
      '/invoices/5/sbCumInvoiceValueinFCC invalid_money',
    ]);
    assert.match(bad.detail, /^The match request has 11 invalid fields/);

    // A shipping bill number for 101 is 1-7 digits (ERR25); for services (103) an invoice number of up to 20 characters.
    assert.deepEqual(codesOf(await problemOf({ uploadType: '101', invoices: [{ ...good, sbCumInvoiceNumber: 'INV/2025/1' }] })), [
      '/invoices/0/sbCumInvoiceNumber ERR25',
    ]);
    const services = await match({ uploadType: 'SERVICES', invoices: [{ ...good, sbCumInvoiceNumber: 'INV/2025/1' }] });
    assert.equal(services.status, 200, services.text);
  });

  test('5,000 invoices are taken; 5,001 are 400', async () => {
    const invoices = Array.from({ length: 5_001 }, (_, k) => invoiceFor(irms[k % irms.length]!, 100 + k, 3));
    const over = await match({ uploadType: '101', invoices });
    assert.deepEqual(expectProblem(over, 400, 'validation_failed').errors.map((error: any) => `${error.path} ${error.code}`), ['/invoices invalid_length']);
    const full = await match({ uploadType: '101', maxDaysAfterInvoice: 10, invoices: invoices.slice(0, 5_000) });
    assert.equal(full.status, 200, full.text.slice(0, 500));
    // Every invoice is either paid in full (allocated, and not left unmatched) or listed with what remains.
    const paid = new Set(full.body.allocations.map((a: any) => a.sbCumInvoiceNumber));
    const unmatched = new Set(full.body.unmatchedInvoices.map((u: any) => u.sbCumInvoiceNumber));
    assert.equal(new Set([...paid, ...unmatched]).size, 5_000);
    assert.ok(full.body.pushes.every((push: any) => push.ebrcBulkGenDtos.length <= 999));
    assert.equal(full.body.pushes.reduce((n: number, push: any) => n + push.ebrcBulkGenDtos.length, 0), full.body.allocations.length);
  });
});
