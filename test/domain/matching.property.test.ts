import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { matchInvoices, splitIntoPushes, type MatchInvoice, type MatchIrm } from '../../src/domain/matching.ts';
import { BANNED_PURPOSE_CODES } from '../../src/domain/purpose-codes.ts';
import { scaled } from '../support/reliability.ts';

/**
 * Matching invariants for any IRMs and invoices (fast-check): never over an IRM's balance, never a cancelled or
 * unmappable IRM, never mixed currencies, never more than an invoice's value, every amount positive, and clubbed IRMs
 * sharing a bank and (apart from P0103) a purpose; splitIntoPushes keeps every allocation exactly once, ≤ maxLines.
 */

const runs = { numRuns: scaled(300, 5_000) };
const NAMES = ['Acme Trading Ltd', 'ACME TRADING LIMITED', 'Acme Trading, Inc.', 'Nordic Marine GmbH', 'NORDIC MARINE AG', 'Zenith Foods SA'];
const CURRENCIES = ['USD', 'EUR', 'GBP'];
const PURPOSES = ['P0102', 'P0103', 'P0104', 'P0101', 'P0108', 'P0802', 'X9999'];
const BANKS = ['HDFC0000240', 'ICIC0000104'];
const day = fc.integer({ min: 0, max: 120 }).map((d) => new Date(Date.UTC(2024, 0, 1) + d * 86_400_000).toISOString().slice(0, 10));
// Amounts from a small set, so that exact and near matches happen often.
const cents = fc.oneof(
  fc.constantFrom(10_000n, 20_000n, 30_000n, 50_000n, 100_000n, 98_500n, 49_900n),
  fc.bigInt({ min: 0n, max: 200_000n }),
);

const irmArb = fc.record({
  remittanceFCC: fc.constantFrom(...CURRENCIES),
  availableCents: cents,
  remittanceDate: day,
  purposeOfRemittance: fc.constantFrom(...PURPOSES),
  remitterName: fc.constantFrom(...NAMES),
  remitterCountry: fc.constantFrom('GB', 'DE', 'US'),
  ifscCode: fc.constantFrom(...BANKS),
  cancelled: fc.boolean(),
});
const invoiceArb = fc.record({
  sbCumInvoiceDate: day,
  sbCumInvoiceFCC: fc.constantFrom(...CURRENCIES),
  sbCumInvoiceValueinFCC: cents,
  buyerName: fc.option(fc.constantFrom(...NAMES)),
  buyerCountry: fc.option(fc.constantFrom('GB', 'DE', 'US', 'United Kingdom')),
});
const inputArb = fc.record({
  irms: fc.array(irmArb, { maxLength: 25 }).map((xs) => xs.map((x, k): MatchIrm => ({ ...x, irmNumber: `R${k}` }))),
  invoices: fc.array(invoiceArb, { maxLength: 25 }).map((xs) => xs.map((x, k): MatchInvoice => ({ ...x, sbCumInvoiceNumber: `I${k}` }))),
  uploadType: fc.constantFrom('101', '102', '103'),
  maxDaysAfterInvoice: fc.option(fc.integer({ min: 0, max: 400 }), { nil: undefined }),
});

describe('matching invariants', () => {
  test('balances, mappability, currencies, invoice values, positive amounts, clubbing rules', () => {
    fc.assert(fc.property(inputArb, (input) => {
      const result = matchInvoices(input);
      const irms = new Map(input.irms.map((i) => [i.irmNumber, i]));
      const invoices = new Map(input.invoices.map((i) => [i.sbCumInvoiceNumber, i]));
      const perIrm = new Map<string, bigint>();
      const perInvoice = new Map<string, bigint>();
      for (const a of result.allocations) {
        const irm = irms.get(a.irmNumber);
        const inv = invoices.get(a.sbCumInvoiceNumber);
        assert.ok(irm !== undefined && inv !== undefined);
        assert.ok(a.mappedIRMAmountFCC > 0n, 'positive');
        assert.notEqual(irm.cancelled, true, 'never a cancelled IRM');
        assert.ok(!BANNED_PURPOSE_CODES.has(irm.purposeOfRemittance) && irm.purposeOfRemittance !== 'X9999', 'mappable purpose');
        assert.equal(irm.remittanceFCC, inv.sbCumInvoiceFCC, 'same currency');
        assert.ok(a.confidence >= 0 && a.confidence <= 1);
        perIrm.set(a.irmNumber, (perIrm.get(a.irmNumber) ?? 0n) + a.mappedIRMAmountFCC);
        perInvoice.set(a.sbCumInvoiceNumber, (perInvoice.get(a.sbCumInvoiceNumber) ?? 0n) + a.mappedIRMAmountFCC);
      }
      for (const [n, sum] of perIrm) assert.ok(sum <= (irms.get(n)?.availableCents ?? -1n), 'never over an IRM balance');
      for (const [n, sum] of perInvoice) assert.ok(sum <= (invoices.get(n)?.sbCumInvoiceValueinFCC ?? -1n), 'never over an invoice value');
      for (const group of Map.groupBy(result.allocations, (a) => a.sbCumInvoiceNumber).values()) {
        const clubbed = group.map((a) => irms.get(a.irmNumber) as MatchIrm);
        assert.equal(new Set(clubbed.map((i) => i.ifscCode)).size, 1, 'one bank per invoice');
        assert.ok(new Set(clubbed.filter((i) => i.purposeOfRemittance !== 'P0103').map((i) => i.purposeOfRemittance)).size <= 1);
      }
      for (const u of result.unusedIrms) {
        assert.equal(u.available, (irms.get(u.irmNumber)?.availableCents ?? 0n) - (perIrm.get(u.irmNumber) ?? 0n));
        assert.ok(u.available > 0n);
      }
      for (const u of result.unmatchedInvoices) {
        assert.equal(u.remaining, (invoices.get(u.sbCumInvoiceNumber)?.sbCumInvoiceValueinFCC ?? 0n) - (perInvoice.get(u.sbCumInvoiceNumber) ?? 0n));
      }
    }), runs);
  });

  test('splitIntoPushes keeps every allocation exactly once, at most maxLines per push, an IRM together when it fits', () => {
    const allocation = fc.record({ sbCumInvoiceNumber: fc.constantFrom('A', 'B', 'C', 'D', 'E', 'F', 'G'), irmNumber: fc.constantFrom('r1', 'r2', 'r3', 'r4', 'r5') });
    fc.assert(fc.property(fc.array(allocation, { maxLength: 60 }), fc.integer({ min: 1, max: 12 }), (raw, maxLines) => {
      const allocations = raw.map((a, k) => ({ ...a, id: k }));
      const pushes = splitIntoPushes(allocations, maxLines);
      assert.ok(pushes.every((p) => p.length >= 1 && p.length <= maxLines));
      assert.deepEqual(pushes.flat().map((a) => a.id).sort((x, y) => x - y), allocations.map((a) => a.id));
      for (const [irmNumber, lines] of Map.groupBy(allocations, (a) => a.irmNumber)) {
        if (lines.length > maxLines) continue;
        assert.equal(pushes.filter((p) => p.some((a) => a.irmNumber === irmNumber)).length, 1, `IRM ${irmNumber} in one push`);
      }
    }), runs);
  });
});
