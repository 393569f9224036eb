import type { AuthorityIrm } from '../../src/authority/authority.ts';
import { centsToNumber, formatCents, type Cents } from '../../src/domain/money.ts';
import { chargeTolerance, type MatchInvoice, type MatchIrm } from '../../src/domain/matching.ts';

/**
 * A seeded, realistic matching test set with known answers. Buyers are companies whose remitter names differ from the
 * invoice's buyer name by legal suffix, case, punctuation, `&`/"and", diacritics and bank truncation. Each buyer
 * has a few invoices settled as an accountant sees them in a bank statement:
 * - exact payments, and payments short by bank charges (within 2%, at most 50 units);
 * - partial payments: 2-3 IRMs paying one invoice;
 * - one IRM paying 2-3 invoices of the same buyer (possibly short by charges);
 * - advances (P0103) received before the invoice;
 * - recurring invoices of the same amount (monthly retainers), each paid 10-45 days later;
 * - invoices not paid yet.
 * Decoys, which must not be matched: IRMs of the same amount in another currency, cancelled IRMs and P0101/P0108
 * IRMs of the same buyer and amount, unrelated remitters, other buyers' IRMs of nearly the same amount, and a
 * same-buyer, same-amount IRM received before the invoice (not an advance) or long after it.
 */
export type MatchingDataset = { irms: MatchIrm[]; invoices: MatchInvoice[]; truth: Set<string> };

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const FIRST = [
  'Acme', 'Nordic', 'Pacific', 'Atlas', 'Zenith', 'Orion', 'Sterling', 'Harbor', 'Summit', 'Blue Ridge', 'Crescent',
  'Evergreen', 'Falcon', 'Granite', 'Horizon', 'Ivory', 'Juniper', 'Keystone', 'Lighthouse', 'Meridian', 'Northwind',
  'Oakwood', 'Pinnacle', 'Quantum', 'Redwood', 'Silverline', 'Trident', 'Unity', 'Vanguard', 'Westbrook', 'Yellowstone',
  'Müller', 'Dupont', 'Schäfer', 'Ångström', 'Castillo', 'Okafor', 'Tanaka', 'Van der Berg', "O'Brien", 'Smith & Sons',
  'Baker & Hughes', 'Rossi', 'Lindqvist', 'Novak', 'Kowalski', 'Haddad', 'Fischer', 'Moreau', 'Yamamoto',
];
const SECOND = [
  'Trading', 'Textiles', 'Imports', 'Logistics', 'Apparel', 'Foods', 'Pharma', 'Software', 'Engineering', 'Marine',
  'Retail', 'Chemicals', 'Electronics', 'Furniture', 'Handel', 'Distribution', 'Holdings', 'Industries', 'Systems',
  'Gems & Jewellery', 'Leather Goods', 'Spices', 'Auto Parts', 'Consulting', 'Supplies',
];
const COUNTRIES: { code: string; currency: string; suffixes: string[] }[] = [
  { code: 'US', currency: 'USD', suffixes: ['Inc', 'Inc.', 'LLC', 'Corp', 'Corporation', 'Co.'] },
  { code: 'GB', currency: 'GBP', suffixes: ['Ltd', 'Ltd.', 'Limited', 'PLC'] },
  { code: 'DE', currency: 'EUR', suffixes: ['GmbH', 'AG', 'GmbH & Co. KG'] },
  { code: 'NL', currency: 'EUR', suffixes: ['B.V.', 'BV', 'N.V.'] },
  { code: 'FR', currency: 'EUR', suffixes: ['S.A.', 'SA', 'SARL', 'S.A.S.'] },
  { code: 'AE', currency: 'USD', suffixes: ['LLC', 'FZE', 'FZCO'] },
  { code: 'SG', currency: 'USD', suffixes: ['Pte Ltd', 'Pte. Ltd.', 'Private Limited'] },
  { code: 'JP', currency: 'JPY', suffixes: ['K.K.', 'Co., Ltd.', 'Corporation'] },
];
const PURPOSES = ['P0102', 'P0104', 'P0802', 'P0803', 'P0807', 'P1006'];
const BANKS = ['HDFC0000240', 'ICIC0000104', 'SBIN0005943'];

type Buyer = { name: string; country: string; currency: string; suffixes: string[]; bank: string; purpose: string };

export function generateMatchingDataset(options: { invoices: number; seed?: number; decoyRate?: number }): MatchingDataset {
  const random = mulberry32(options.seed ?? 1);
  const decoyRate = options.decoyRate ?? 0.25;
  const int = (lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
  const chance = (p: number): boolean => random() < p;

  const irms: MatchIrm[] = [];
  const invoices: MatchInvoice[] = [];
  const truth = new Set<string>();
  let irmSeq = 0;
  let invSeq = 0;
  const base = Date.UTC(2024, 0, 1) / 86_400_000;
  const iso = (day: number): string => new Date(day * 86_400_000).toISOString().slice(0, 10);
  const ddmm = (day: number): string => {
    const [y, m, d] = iso(day).split('-');
    return `${d}${m}${y}`;
  };

  // Distinct buyer names.
  const usedNames = new Set<string>();
  const newBuyer = (): Buyer => {
    for (;;) {
      const core = chance(0.15) ? `${pick(FIRST)} ${pick(SECOND)} ${pick(['Global', 'International', 'Worldwide', 'Group'])}` : `${pick(FIRST)} ${pick(SECOND)}`;
      if (usedNames.has(core)) continue;
      usedNames.add(core);
      const country = pick(COUNTRIES);
      return {
        name: core, country: country.code, currency: chance(0.85) ? country.currency : 'USD', suffixes: country.suffixes,
        bank: pick(BANKS), purpose: pick(PURPOSES),
      };
    }
  };
  const buyerName = (b: Buyer): string => `${b.name} ${pick(b.suffixes)}`;
  /** How a bank writes the remitter: another suffix, case, punctuation, & as "and", no diacritics, truncation. */
  const remitterName = (b: Buyer): string => {
    let name = `${b.name}${chance(0.5) ? ',' : ''} ${pick(b.suffixes)}`;
    if (chance(0.3)) name = name.replace(/&/g, 'and');
    if (chance(0.3)) name = name.normalize('NFKD').replace(/[\u0300-\u036f]/g, '');
    if (chance(0.5)) name = name.toUpperCase();
    if (chance(0.2)) name = name.replace(/\./g, '');
    if (chance(0.15) && name.length > 18) name = name.slice(0, 18);
    return name;
  };
  const amount = (lo: number, hi: number): Cents => BigInt(int(lo * 100, hi * 100));
  const irmNumber = (): string => `IRM${String(++irmSeq).padStart(8, '0')}`;
  const invoiceNumber = (): string => `INV/${String(++invSeq).padStart(6, '0')}`;
  const addIrm = (b: Buyer, cents: Cents, day: number, extra: Partial<MatchIrm> = {}): MatchIrm => {
    const irm: MatchIrm = {
      irmNumber: irmNumber(), remittanceFCC: b.currency, availableCents: cents, remittanceDate: iso(day),
      purposeOfRemittance: b.purpose, remitterName: remitterName(b), remitterCountry: b.country, ifscCode: b.bank,
      ...extra,
    };
    irms.push(irm);
    return irm;
  };
  const addInvoice = (b: Buyer, cents: Cents, day: number): MatchInvoice => {
    const inv: MatchInvoice = {
      sbCumInvoiceNumber: invoiceNumber(), sbCumInvoiceDate: chance(0.5) ? ddmm(day) : iso(day), sbCumInvoiceFCC: b.currency,
      sbCumInvoiceValueinFCC: cents, portCode: 'INBOM4', billNo: `B${invSeq}`, buyerName: buyerName(b),
      buyerCountry: chance(0.8) ? b.country : null,
    };
    invoices.push(inv);
    return inv;
  };
  const link = (inv: MatchInvoice, irm: MatchIrm): void => {
    truth.add(`${inv.sbCumInvoiceNumber}|${irm.irmNumber}`);
  };
  const charges = (value: Cents): Cents => {
    const tol = chargeTolerance(value, 200, 5000n);
    return tol <= 100n ? 0n : BigInt(int(100, Number(tol)));
  };

  while (invoices.length < options.invoices) {
    const buyer = newBuyer();
    const count = int(1, 5);
    let day = base + int(0, 300);
    for (let k = 0; k < count && invoices.length < options.invoices; k += 1) {
      day += int(3, 40);
      const kind = random();
      const value = amount(500, 60_000);
      if (kind < 0.28) {
        const inv = addInvoice(buyer, value, day);
        link(inv, addIrm(buyer, value, day + int(0, 90)));
      } else if (kind < 0.46) {
        const inv = addInvoice(buyer, value, day);
        link(inv, addIrm(buyer, value - charges(value), day + int(1, 120)));
      } else if (kind < 0.58) {
        // Partial payments: 2-3 IRMs, the last one perhaps short by charges.
        const inv = addInvoice(buyer, value, day);
        const parts = int(2, 3);
        let left = value - charges(value);
        for (let p = 0; p < parts; p += 1) {
          const part = p === parts - 1 ? left : (left * BigInt(int(25, 60))) / 100n;
          left -= part;
          link(inv, addIrm(buyer, part, day + int(5, 60) + p * int(10, 40)));
        }
      } else if (kind < 0.68) {
        // One IRM paying 2-3 invoices.
        const n = int(2, 3);
        const invs: MatchInvoice[] = [];
        for (let p = 0; p < n && invoices.length < options.invoices; p += 1) invs.push(addInvoice(buyer, amount(300, 20_000), day + p * int(1, 10)));
        const total = invs.reduce((s, i) => s + i.sbCumInvoiceValueinFCC, 0n);
        const short = chance(0.5) ? 0n : BigInt(int(0, Math.min(...invs.map((i) => Number(chargeTolerance(i.sbCumInvoiceValueinFCC, 200, 5000n))))));
        const irm = addIrm(buyer, total - short, day + n * 10 + int(5, 60));
        for (const inv of invs) link(inv, irm);
      } else if (kind < 0.78) {
        // Advance before the invoice, exact or short by charges.
        const inv = addInvoice(buyer, value, day);
        link(inv, addIrm(buyer, chance(0.6) ? value : value - charges(value), day - int(0, 90), { purposeOfRemittance: 'P0103' }));
      } else if (kind < 0.86) {
        // Recurring invoices of one amount, each paid 10-45 days later.
        const months = int(2, 4);
        for (let p = 0; p < months && invoices.length < options.invoices; p += 1) {
          const inv = addInvoice(buyer, value, day + p * 30);
          link(inv, addIrm(buyer, value, day + p * 30 + int(10, 45)));
        }
      } else {
        addInvoice(buyer, value, day); // not paid yet
      }

      // Decoys around this invoice.
      const last = invoices[invoices.length - 1];
      if (last !== undefined && chance(decoyRate)) {
        const v = last.sbCumInvoiceValueinFCC;
        const d = random();
        if (d < 0.2) addIrm({ ...buyer, currency: buyer.currency === 'USD' ? 'EUR' : 'USD' }, v, day + int(1, 30));
        else if (d < 0.35) addIrm(buyer, v, day + int(1, 30), { cancelled: true });
        else if (d < 0.5) addIrm(buyer, v, day + int(1, 30), { purposeOfRemittance: chance(0.5) ? 'P0101' : 'P0108' });
        else if (d < 0.7) addIrm(newBuyer(), v - BigInt(int(0, 2000)), day + int(1, 30)); // another buyer, nearly the same amount
        else if (d < 0.85) addIrm(buyer, v, chance(0.5) ? day - int(2, 60) : day + int(400, 600)); // before the invoice, or too late
        else addIrm(newBuyer(), amount(100, 80_000), day + int(-30, 200)); // unrelated remitter
      }
    }
  }
  // The IRM list as a store returns it, not in the order of the invoices.
  for (let i = irms.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [irms[i], irms[j]] = [irms[j] as MatchIrm, irms[i] as MatchIrm];
  }
  return { irms, invoices, truth };
}

/** Precision and recall of proposed (invoice, IRM) pairs against the known answers. */
export function precisionRecall(proposed: Iterable<{ sbCumInvoiceNumber: string; irmNumber: string }>, truth: ReadonlySet<string>):
  { precision: number; recall: number; truePositives: number; proposed: number; expected: number } {
  const pairs = new Set([...proposed].map((a) => `${a.sbCumInvoiceNumber}|${a.irmNumber}`));
  let tp = 0;
  for (const p of pairs) if (truth.has(p)) tp += 1;
  return {
    precision: pairs.size === 0 ? 1 : tp / pairs.size,
    recall: truth.size === 0 ? 1 : tp / truth.size,
    truePositives: tp,
    proposed: pairs.size,
    expected: truth.size,
  };
}

/** The set's IRMs as the authority would list them for the exporter `owner`, the cancelled ones with irmStatus C. */
export function authorityIrmsOf(data: MatchingDataset, owner = { iecCode: '0599001001', panNumber: 'AACCD1001D' }): AuthorityIrm[] {
  return data.irms
    .map((irm) => {
      const amount = formatCents(irm.availableCents);
      const issued = new Date(Date.parse(`${irm.remittanceDate}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
      return {
        irmNumber: irm.irmNumber,
        irmStatus: irm.cancelled === true ? 'C' : 'F',
        irmIssueDate: issued,
        ifscCode: irm.ifscCode ?? 'HDFC0000240',
        remittanceAdCode: '0510002',
        remittanceDate: irm.remittanceDate,
        remittanceFCC: irm.remittanceFCC,
        remittanceFCCAmount: amount,
        ormAmountFCC: '0.00',
        irmAvailableAmt: amount,
        irmUtilizedAmt: '0.00',
        iecCode: owner.iecCode,
        panNumber: owner.panNumber,
        remitterName: irm.remitterName,
        remitterCountry: irm.remitterCountry,
        purposeOfRemittance: irm.purposeOfRemittance,
      };
    });
}

/** The set's invoices as a client sends them: services invoices (uploadType 103: invoice numbers up to 20 characters). */
export function matchRequestBody(invoices: readonly MatchInvoice[]) {
  return {
    uploadType: '103',
    invoices: invoices.map((invoice) => ({
      sbCumInvoiceNumber: invoice.sbCumInvoiceNumber,
      sbCumInvoiceDate: invoice.sbCumInvoiceDate,
      sbCumInvoiceFCC: invoice.sbCumInvoiceFCC,
      sbCumInvoiceValueinFCC: centsToNumber(invoice.sbCumInvoiceValueinFCC),
      portCode: invoice.portCode,
      billNo: invoice.billNo,
      buyerName: invoice.buyerName ?? null,
      buyerCountry: invoice.buyerCountry ?? null,
    })),
  };
}
