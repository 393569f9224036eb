import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { matchInvoices, splitIntoPushes, type MatchInvoice, type MatchIrm } from '../../src/domain/matching.ts';
import { nameSimilarity, normaliseLegalName } from '../../src/domain/legal-names.ts';
import { generateMatchingDataset, precisionRecall } from '../support/matching-dataset.ts';

function irm(overrides: Partial<MatchIrm> = {}): MatchIrm {
  return {
    irmNumber: 'IRM1', remittanceFCC: 'USD', availableCents: 100_000n, remittanceDate: '2025-02-10',
    purposeOfRemittance: 'P0102', remitterName: 'ACME TRADING LTD', remitterCountry: 'GB', ifscCode: 'HDFC0000240',
    ...overrides,
  };
}

function invoice(overrides: Partial<MatchInvoice> = {}): MatchInvoice {
  return {
    sbCumInvoiceNumber: 'INV1', sbCumInvoiceDate: '01022025', sbCumInvoiceFCC: 'USD', sbCumInvoiceValueinFCC: 100_000n,
    portCode: 'INBOM4', billNo: 'B1', buyerName: 'Acme Trading Limited', buyerCountry: 'United Kingdom', ...overrides,
  };
}

const pairs = (result: ReturnType<typeof matchInvoices>): string[] =>
  result.allocations.map((a) => `${a.sbCumInvoiceNumber}|${a.irmNumber}|${a.mappedIRMAmountFCC}`).sort();

describe('legal names', () => {
  test('suffixes, case, punctuation, & and diacritics are ignored', () => {
    assert.equal(normaliseLegalName('Acme Trading Pvt. Ltd.'), 'acme trading');
    assert.equal(normaliseLegalName('Smith & Sons Co., Ltd'), 'smith and sons');
    assert.equal(normaliseLegalName('Müller Handel GmbH & Co. KG'), 'muller handel');
    assert.equal(normaliseLegalName('The Baker Group S.A.'), 'baker group');
    assert.equal(nameSimilarity('ACME TRADING, INC.', 'Acme Trading LLC'), 1);
    assert.ok(nameSimilarity('Acme Trading Ltd', 'ACMETRADING') >= 0.6);
    assert.ok(nameSimilarity('Orion Industries Global Pte Ltd', 'ORION INDUSTRIES G') >= 0.8, 'a truncated name');
    assert.ok(nameSimilarity('Nordic Textiles Ltd', 'Nordic Marine Ltd') < 0.6);
  });
});

describe('matchInvoices rules', () => {
  test('an exact payment is matched with reasons and a high confidence', () => {
    const result = matchInvoices({ irms: [irm()], invoices: [invoice()] });
    assert.deepEqual(pairs(result), ['INV1|IRM1|100000']);
    const [a] = result.allocations;
    assert.ok(a !== undefined && a.confidence >= 0.9 && a.confidence <= 1);
    assert.ok(a.reasons.length >= 3);
    assert.deepEqual(result.unmatchedInvoices, []);
    assert.deepEqual(result.unusedIrms, []);
  });

  test('never across currencies', () => {
    const result = matchInvoices({ irms: [irm({ remittanceFCC: 'EUR' })], invoices: [invoice()] });
    assert.deepEqual(result.allocations, []);
    assert.deepEqual(result.unmatchedInvoices, [{ sbCumInvoiceNumber: 'INV1', remaining: 100_000n }]);
  });

  test('short by bank charges within the tolerance (2% capped at 50 units), not beyond', () => {
    assert.deepEqual(pairs(matchInvoices({ irms: [irm({ availableCents: 98_000n })], invoices: [invoice()] })), ['INV1|IRM1|98000']);
    // 1,000.00 → tolerance 20.00; 21.00 short is too much for a one-to-one settlement
    const tooShort = matchInvoices({ irms: [irm({ availableCents: 97_900n })], invoices: [invoice()] });
    assert.equal(tooShort.unmatchedInvoices.length, 1);
    // the cap: 10,000.00 short by 60.00 (within 2% but over 50 units)
    const capped = matchInvoices({ irms: [irm({ availableCents: 994_000n })], invoices: [invoice({ sbCumInvoiceValueinFCC: 1_000_000n })] });
    assert.equal(capped.unmatchedInvoices.length, 1);
    assert.deepEqual(pairs(matchInvoices({
      irms: [irm({ availableCents: 994_000n })], invoices: [invoice({ sbCumInvoiceValueinFCC: 1_000_000n })],
      chargeToleranceCapCents: 10_000n,
    })), ['INV1|IRM1|994000']);
    // a settled-short invoice is not reported as unmatched
    assert.deepEqual(matchInvoices({ irms: [irm({ availableCents: 98_000n })], invoices: [invoice()] }).unmatchedInvoices, []);
  });

  test('advances (P0103) on or before the invoice; other IRMs on or after it, within maxDaysAfterInvoice', () => {
    const advance = irm({ purposeOfRemittance: 'P0103', remittanceDate: '2025-01-15' });
    assert.equal(matchInvoices({ irms: [advance], invoices: [invoice()] }).allocations.length, 1);
    assert.equal(matchInvoices({ irms: [{ ...advance, remittanceDate: '2025-02-01' }], invoices: [invoice()] }).allocations.length, 1);
    assert.equal(matchInvoices({ irms: [{ ...advance, remittanceDate: '2025-02-02' }], invoices: [invoice()] }).allocations.length, 0);
    assert.equal(matchInvoices({ irms: [irm({ remittanceDate: '2025-01-31' })], invoices: [invoice()] }).allocations.length, 0);
    assert.equal(matchInvoices({ irms: [irm({ remittanceDate: '2026-02-01' })], invoices: [invoice()] }).allocations.length, 1);
    assert.equal(matchInvoices({ irms: [irm({ remittanceDate: '2026-02-02' })], invoices: [invoice()] }).allocations.length, 0);
    assert.equal(matchInvoices({ irms: [irm({ remittanceDate: '2025-03-10' })], invoices: [invoice()], maxDaysAfterInvoice: 30 }).allocations.length, 0);
  });

  test('a window of 0 days takes a payment of the invoice day only, with a confidence between 0 and 1 (fast-check found NaN)', () => {
    const sameDay = matchInvoices({ irms: [irm({ remittanceDate: '2025-02-01' })], invoices: [invoice()], maxDaysAfterInvoice: 0 });
    assert.equal(sameDay.allocations.length, 1);
    const { confidence } = sameDay.allocations[0]!;
    assert.ok(confidence > 0.9 && confidence <= 1, `confidence ${confidence}`);
    // A residual fill (the invoice worth less than the IRM) is scored by the same date rule.
    const partial = matchInvoices({ irms: [irm({ remittanceDate: '2025-02-01' })], invoices: [invoice({ sbCumInvoiceValueinFCC: 1n })], maxDaysAfterInvoice: 0 });
    for (const allocation of partial.allocations) assert.ok(allocation.confidence >= 0 && allocation.confidence <= 1, `confidence ${allocation.confidence}`);
    assert.equal(matchInvoices({ irms: [irm({ remittanceDate: '2025-02-02' })], invoices: [invoice()], maxDaysAfterInvoice: 0 }).allocations.length, 0);
  });

  test('names: an unrelated remitter is not matched even at the exact amount; a missing buyer name falls back to amounts', () => {
    assert.equal(matchInvoices({ irms: [irm({ remitterName: 'Zenith Marine Inc' })], invoices: [invoice()] }).allocations.length, 0);
    assert.equal(matchInvoices({ irms: [irm()], invoices: [invoice({ buyerName: null })] }).allocations.length, 1);
  });

  test('the better-named, better-dated IRM wins a contested invoice', () => {
    const result = matchInvoices({
      irms: [irm({ irmNumber: 'OTHER', remitterName: 'Acme Traders', remitterCountry: 'US' }), irm({ irmNumber: 'RIGHT' })],
      invoices: [invoice()],
    });
    assert.deepEqual(pairs(result), ['INV1|RIGHT|100000']);
  });

  test('never a cancelled IRM, P0101/P0108, or a non-IT purpose for SOFTEX', () => {
    for (const bad of [irm({ cancelled: true }), irm({ purposeOfRemittance: 'P0101' }), irm({ purposeOfRemittance: 'P0108' }), irm({ availableCents: 0n })]) {
      assert.equal(matchInvoices({ irms: [bad], invoices: [invoice()] }).allocations.length, 0);
    }
    assert.equal(matchInvoices({ irms: [irm()], invoices: [invoice()], uploadType: '102' }).allocations.length, 0);
    assert.equal(matchInvoices({ irms: [irm({ purposeOfRemittance: 'P0802' })], invoices: [invoice()], uploadType: '102' }).allocations.length, 1);
  });

  test('several IRMs for one invoice, and one IRM for several invoices', () => {
    const many = matchInvoices({
      irms: [irm({ irmNumber: 'A', availableCents: 60_000n }), irm({ irmNumber: 'B', availableCents: 39_500n, remittanceDate: '2025-03-01' })],
      invoices: [invoice()],
    });
    assert.deepEqual(pairs(many), ['INV1|A|60000', 'INV1|B|39500']);
    assert.deepEqual(many.unmatchedInvoices, []);
    const one = matchInvoices({
      irms: [irm({ availableCents: 250_000n })],
      invoices: [invoice(), invoice({ sbCumInvoiceNumber: 'INV2', sbCumInvoiceValueinFCC: 150_000n })],
    });
    assert.deepEqual(pairs(one), ['INV1|IRM1|100000', 'INV2|IRM1|150000']);
    assert.deepEqual(one.unusedIrms, []);
  });

  test('clubbed IRMs share a bank and, apart from P0103, a purpose code', () => {
    const result = matchInvoices({
      irms: [irm({ irmNumber: 'A', availableCents: 60_000n }), irm({ irmNumber: 'B', availableCents: 40_000n, ifscCode: 'ICIC0000104' })],
      invoices: [invoice()],
    });
    assert.ok(result.allocations.length <= 1);
    const purposes = matchInvoices({
      irms: [irm({ irmNumber: 'A', availableCents: 60_000n }), irm({ irmNumber: 'B', availableCents: 40_000n, purposeOfRemittance: 'P0104' })],
      invoices: [invoice()],
    });
    assert.ok(purposes.allocations.length <= 1);
    const advance = matchInvoices({
      irms: [irm({ irmNumber: 'A', availableCents: 60_000n }), irm({ irmNumber: 'B', availableCents: 40_000n, purposeOfRemittance: 'P0103', remittanceDate: '2025-01-20' })],
      invoices: [invoice()],
    });
    assert.equal(advance.allocations.length, 2);
  });

  test('a partial payment leaves the invoice unmatched with its remaining value', () => {
    const result = matchInvoices({ irms: [irm({ availableCents: 30_000n })], invoices: [invoice()] });
    assert.deepEqual(pairs(result), ['INV1|IRM1|30000']);
    assert.deepEqual(result.unmatchedInvoices, [{ sbCumInvoiceNumber: 'INV1', remaining: 70_000n }]);
  });

  test('recurring invoices of one amount are paid first-in, first-out', () => {
    const invoices = ['2025-01-01', '2025-02-01', '2025-03-01'].map((d, k) => invoice({ sbCumInvoiceNumber: `M${k}`, sbCumInvoiceDate: d }));
    const irms = ['2025-02-10', '2025-03-13', '2025-04-10'].map((d, k) => irm({ irmNumber: `P${k}`, remittanceDate: d }));
    assert.deepEqual(pairs(matchInvoices({ irms, invoices })), ['M0|P0|100000', 'M1|P1|100000', 'M2|P2|100000']);
  });
});

describe('splitIntoPushes', () => {
  test('1,200 allocations make two pushes of at most 999 lines, an IRM\'s lines together', () => {
    const allocations = Array.from({ length: 1200 }, (_, k) => ({ sbCumInvoiceNumber: `I${k}`, irmNumber: `R${Math.floor(k / 3)}` }));
    const pushes = splitIntoPushes(allocations);
    assert.equal(pushes.length, 2);
    assert.ok(pushes.every((p) => p.length <= 999));
    assert.equal(pushes.flat().length, 1200);
    for (const push of pushes) for (const a of push) assert.ok(push.filter((b) => b.irmNumber === a.irmNumber).length === 3);
  });
});

describe('precision, recall and time on a generated set', () => {
  test('350 invoices: precision and recall at least 0.95, under a second', (t) => {
    for (const seed of [1, 2, 3]) {
      const ds = generateMatchingDataset({ invoices: 350, seed });
      const started = performance.now();
      const result = matchInvoices({ irms: ds.irms, invoices: ds.invoices });
      const ms = performance.now() - started;
      const pr = precisionRecall(result.allocations, ds.truth);
      t.diagnostic(`seed ${seed}: ${ds.invoices.length} invoices, ${ds.irms.length} IRMs, ${ds.truth.size} true pairs: ` +
        `precision ${pr.precision.toFixed(4)}, recall ${pr.recall.toFixed(4)}, ${ms.toFixed(1)} ms`);
      assert.ok(pr.precision >= 0.95, `precision ${pr.precision}`);
      assert.ok(pr.recall >= 0.95, `recall ${pr.recall}`);
      assert.ok(ms < 3000, `${ms} ms`);
    }
  });

  test('5,000 invoices: timing and quality', (t) => {
    const ds = generateMatchingDataset({ invoices: 5000, seed: 4 });
    const started = performance.now();
    const result = matchInvoices({ irms: ds.irms, invoices: ds.invoices });
    const ms = performance.now() - started;
    const pr = precisionRecall(result.allocations, ds.truth);
    const pushes = splitIntoPushes(result.allocations);
    t.diagnostic(`5000 invoices, ${ds.irms.length} IRMs: precision ${pr.precision.toFixed(4)}, recall ${pr.recall.toFixed(4)}, ` +
      `${ms.toFixed(0)} ms, ${result.allocations.length} allocations in ${pushes.length} pushes`);
    assert.ok(pr.precision >= 0.95 && pr.recall >= 0.95);
    assert.ok(ms < 30_000);
  });
});
