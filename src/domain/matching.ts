/**
 * IRM-to-invoice matching (contract section 11, "Matching"): proposes which of a customer's IRMs pay which invoices,
 * the way a careful accountant would. Pure: no I/O, stores nothing, changes no balance.
 *
 * HARD RULES (a pair that breaks one is never proposed)
 * - The IRM can be mapped: not cancelled, an available balance above 0, a valid inward purpose code that is not
 *   P0101/P0108 (domain.md business rules 2 and 6), and for IT services (uploadType 102) one of P0802, P0803, P0807,
 *   P0103 (rule 4).
 * - Same currency: the IRM's remittanceFCC is the invoice's sbCumInvoiceFCC.
 * - Dates, by remittanceDate: an advance (P0103) on or before the invoice date (the push's ERR39) and at most
 *   maxDaysAfterInvoice days before it; any other IRM on or after the invoice date and at most maxDaysAfterInvoice
 *   (default 365) days after it.
 * - Names: when the invoice gives a buyerName, the remitter's name must resemble it (legal-names.ts similarity at
 *   least NAME_MIN = 0.6; suffixes, case, punctuation and diacritics ignored).
 * - Amounts: never more mapped from an IRM than its available balance, never more mapped to an invoice than its
 *   value, every mapped amount above 0. Money is integer cents (bigint) throughout.
 * - IRMs clubbed into one invoice share one bank (IFSC, when known) and, apart from P0103, one purpose code
 *   (domain.md rules 1 and 3; the push's ERR15/ERR39), so the proposals pass the push's checks.
 * - Charge tolerance: an invoice counts as settled when what is mapped to it falls short of its value by at most
 *   min(value × chargeToleranceBasisPoints / 10000, chargeToleranceCapCents) (default 2% capped at 50 units):
 *   the bank charges deducted on the way.
 *
 * PAIR SCORE (0-1) of an invoice i and an IRM r:
 *   score = 0.35·amount + 0.40·name + 0.10·country + 0.15·date
 *   amount  1 when the IRM's balance is the invoice value exactly; 0.9 down to 0.7 as a shortfall grows to the
 *           tolerance; 0.8 for a pair inside a many-to-one or one-to-many settlement that sums exactly
 *           (0.7 when short); 0.5 for a partial (residual) fill.
 *   name    the name similarity; 0.5 when the invoice has no buyerName.
 *   country 1 same country, 0 different, 0.5 unknown (country names and ISO codes are both understood).
 *   date    1 − (gap / maxDaysAfterInvoice)² (1 when maxDaysAfterInvoice is 0), gap in days between invoice and
 *           remittance: concave, so that among equally good assignments the one with balanced gaps (first
 *           invoice paid first) wins.
 *
 * OBJECTIVE: choose allocations maximising Σ score(i, r) over the settlements made, subject to the hard rules,
 * preferring stronger evidence first. It is solved in stages, each on what the previous left over:
 * 1. One-to-one settlements (an IRM whose whole balance settles an invoice exactly or short by bank charges):
 *    an exact maximum-weight bipartite matching (Hungarian algorithm, per connected component of the candidate
 *    graph) on the pair scores. Competing pairs in one component have amounts within the tolerance of each
 *    other, so weighting by value would not change the choice; the score alone decides.
 * 2. Group settlements, for invoices with a buyer name: several IRMs whose balances together settle one invoice
 *    (2-4 of the 14 best candidates), and one IRM whose balance settles several invoices (2-4 of the 14 best),
 *    found by bounded subset-sum search; the options are weighted by mean pair score × the number of pairs
 *    settled, and packed greedily by weight (weighted set packing) so that no IRM or invoice is used twice.
 * 3. Residual fill, for invoices with a buyer name: pairs with a strong name (≥ 0.8) by descending score, each
 *    mapping min(IRM balance left, invoice value left): a partial payment, or one IRM that pays an invoice and keeps a
 *    balance.
 * An invoice without a buyer name is matched in stage 1 only (an amount and a date alone do not justify a group).
 *
 * CONFIDENCE of an allocation: its pair score × 1 (stage 1), 0.92 (stage 2) or 0.75 (stage 3), rounded to 2 places.
 */
import type { Cents } from './money.ts';
import { formatCents } from './money.ts';
import { parseLineDate } from './dates.ts';
import { ADVANCE_PURPOSE_CODE, BANNED_PURPOSE_CODES, IT_SERVICE_PURPOSE_CODES, VALID_PURPOSE_CODES } from './purpose-codes.ts';
import type { PreparedName } from './legal-names.ts';
import { prepareName, preparedNameSimilarity } from './legal-names.ts';

/** What the IRM store knows of an IRM, as matching needs it. Dates are YYYY-MM-DD (ddMMyyyy is accepted too). */
export type MatchIrm = {
  irmNumber: string;
  remittanceFCC: string;
  /** The IRM's available balance, in cents. */
  availableCents: Cents;
  remittanceDate: string;
  purposeOfRemittance: string;
  remitterName: string;
  remitterCountry: string;
  /** The bank branch; IRMs clubbed into one invoice must share it. */
  ifscCode?: string | null;
  cancelled?: boolean;
};

/** An invoice as the match request gives it (contract section 11); the value in cents, the date as in a push. */
export type MatchInvoice = {
  sbCumInvoiceNumber: string;
  sbCumInvoiceDate: string;
  sbCumInvoiceFCC: string;
  sbCumInvoiceValueinFCC: Cents;
  portCode?: string;
  billNo?: string;
  buyerName?: string | null;
  buyerCountry?: string | null;
};

export type MatchInput = {
  irms: readonly MatchIrm[];
  invoices: readonly MatchInvoice[];
  /** Upload type of the eBRCs to come; '102' (SOFTEX) admits only the IT service purpose codes. */
  uploadType?: string;
  /** Bank charges an invoice may be short by, in basis points of its value; default 200 (2%). */
  chargeToleranceBasisPoints?: number;
  /** Cap of those charges in cents; default 5000 (50 units). */
  chargeToleranceCapCents?: Cents;
  /** How long after an invoice (and, for an advance, before it) a remittance may come; default 365 days. */
  maxDaysAfterInvoice?: number;
};

export type MatchAllocation = {
  sbCumInvoiceNumber: string;
  irmNumber: string;
  mappedIRMAmountFCC: Cents;
  confidence: number;
  reasons: string[];
};

export type MatchResult = {
  allocations: MatchAllocation[];
  /** Invoices not settled (nothing mapped, or short by more than the charge tolerance), with what is left. */
  unmatchedInvoices: { sbCumInvoiceNumber: string; remaining: Cents }[];
  /** Mappable IRMs left with a balance. */
  unusedIrms: { irmNumber: string; available: Cents }[];
};

export const DEFAULT_CHARGE_TOLERANCE_BASIS_POINTS = 200;
export const DEFAULT_CHARGE_TOLERANCE_CAP_CENTS: Cents = 5000n;
export const DEFAULT_MAX_DAYS_AFTER_INVOICE = 365;

const NAME_MIN = 0.6;
const FILL_NAME_MIN = 0.8;
const STAGE1_MIN_SCORE = 0.55;
const GROUP_CANDIDATES = 14;
const GROUP_MAX_SIZE = 4;
const HUNGARIAN_MAX = 400;
const GROUP_SIZE_PENALTY = 0.03;

const W_AMOUNT = 0.35;
const W_NAME = 0.4;
const W_COUNTRY = 0.1;
const W_DATE = 0.15;

const COUNTRY_ALIASES: ReadonlyMap<string, string> = new Map([
  ['UNITED STATES', 'US'], ['UNITED STATES OF AMERICA', 'US'], ['USA', 'US'], ['U S A', 'US'], ['U S', 'US'],
  ['UNITED KINGDOM', 'GB'], ['UK', 'GB'], ['GREAT BRITAIN', 'GB'], ['ENGLAND', 'GB'], ['GBR', 'GB'],
  ['UNITED ARAB EMIRATES', 'AE'], ['UAE', 'AE'], ['ARE', 'AE'], ['GERMANY', 'DE'], ['DEU', 'DE'], ['FRANCE', 'FR'],
  ['FRA', 'FR'], ['NETHERLANDS', 'NL'], ['THE NETHERLANDS', 'NL'], ['HOLLAND', 'NL'], ['NLD', 'NL'],
  ['SINGAPORE', 'SG'], ['SGP', 'SG'], ['JAPAN', 'JP'], ['JPN', 'JP'], ['CANADA', 'CA'], ['CAN', 'CA'],
  ['AUSTRALIA', 'AU'], ['AUS', 'AU'], ['SWITZERLAND', 'CH'], ['CHE', 'CH'], ['INDIA', 'IN'], ['IND', 'IN'],
  ['CHINA', 'CN'], ['CHN', 'CN'], ['HONG KONG', 'HK'], ['HKG', 'HK'], ['ITALY', 'IT'], ['ITA', 'IT'], ['SPAIN', 'ES'],
  ['ESP', 'ES'], ['SWEDEN', 'SE'], ['SWE', 'SE'], ['SAUDI ARABIA', 'SA'], ['SAU', 'SA'],
]);

function normaliseCountry(country: string | null | undefined): string | null {
  if (country === null || country === undefined) return null;
  const text = country.toUpperCase().replace(/[^A-Z]+/g, ' ').trim();
  if (text === '') return null;
  return COUNTRY_ALIASES.get(text) ?? text;
}

function dayNumber(date: string): number | null {
  const d = parseLineDate(date);
  return d === null ? null : Date.UTC(d.year, d.month - 1, d.day) / 86_400_000;
}

/** The bank charges an invoice of this value may be short by. */
export function chargeTolerance(value: Cents, basisPoints: number, capCents: Cents): Cents {
  const byRate = (value * BigInt(Math.max(0, Math.trunc(basisPoints)))) / 10_000n;
  return byRate < capCents ? byRate : capCents;
}

type Irm = {
  index: number;
  src: MatchIrm;
  day: number;
  advance: boolean;
  name: PreparedName;
  country: string | null;
  left: Cents;
};

type Invoice = {
  index: number;
  src: MatchInvoice;
  day: number;
  value: Cents;
  tolerance: Cents;
  name: PreparedName | null;
  country: string | null;
  left: Cents;
  /** Clubbing state: the bank and the non-advance purpose code of the IRMs mapped to it so far. */
  ifsc: string | null;
  purpose: string | null;
  irmCount: number;
};

type Pair = {
  inv: Invoice;
  irm: Irm;
  nameSim: number | null;
  countryMatch: boolean | null;
  gap: number;
  evidence: number; // name, country and date part of the score, without the amount part
};

type Allocation = { inv: Invoice; irm: Irm; pair: Pair; amount: Cents; confidence: number; reasons: string[] };

function evidenceOf(nameSim: number | null, countryMatch: boolean | null, dateScore: number): number {
  const name = nameSim ?? 0.5;
  const country = countryMatch === null ? 0.5 : countryMatch ? 1 : 0;
  return W_NAME * name + W_COUNTRY * country + W_DATE * dateScore;
}

function shortAmountScore(short: Cents, tolerance: Cents): number {
  if (short === 0n) return 1;
  const ratio = tolerance === 0n ? 1 : Number((short * 1000n) / tolerance) / 1000;
  return 0.9 - 0.2 * Math.min(1, ratio);
}

function round2(x: number): number {
  return Math.round(Math.max(0, Math.min(1, x)) * 100) / 100;
}

function canClub(inv: Invoice, irm: Irm): boolean {
  if (inv.irmCount === 0) return true;
  const ifsc = irm.src.ifscCode ?? null;
  if (inv.ifsc !== null && ifsc !== null && inv.ifsc !== ifsc) return false;
  if (!irm.advance && inv.purpose !== null && inv.purpose !== irm.src.purposeOfRemittance) return false;
  return true;
}

/** Whether these IRMs may be clubbed into one invoice together (one bank; apart from P0103 one purpose). */
function clubbable(irms: readonly Irm[]): boolean {
  let ifsc: string | null = null;
  let purpose: string | null = null;
  for (const irm of irms) {
    const code = irm.src.ifscCode ?? null;
    if (code !== null) {
      if (ifsc !== null && ifsc !== code) return false;
      ifsc = code;
    }
    if (!irm.advance) {
      if (purpose !== null && purpose !== irm.src.purposeOfRemittance) return false;
      purpose = irm.src.purposeOfRemittance;
    }
  }
  return true;
}

/**
 * Maximum-weight assignment on a dense rows × cols weight matrix (rows ≤ cols), weights ≥ 0 where 0 means "no
 * pair". Hungarian algorithm (potentials, O(rows² · cols)) minimising −weight. Returns the column for each row.
 */
export function maxWeightAssignment(weights: readonly (readonly number[])[], cols: number): number[] {
  const n = weights.length;
  const m = cols;
  const INF = Number.POSITIVE_INFINITY;
  const u = new Float64Array(n + 1);
  const v = new Float64Array(m + 1);
  const p = new Int32Array(m + 1); // p[j]: row (1-based) assigned to column j
  const way = new Int32Array(m + 1);
  for (let i = 1; i <= n; i += 1) {
    p[0] = i;
    let j0 = 0;
    const minv = new Float64Array(m + 1).fill(INF);
    const used = new Uint8Array(m + 1);
    do {
      used[j0] = 1;
      const i0 = p[j0] ?? 0;
      let delta = INF;
      let j1 = 0;
      const row = weights[i0 - 1] ?? [];
      for (let j = 1; j <= m; j += 1) {
        if (used[j] === 1) continue;
        const cur = -(row[j - 1] ?? 0) - (u[i0] ?? 0) - (v[j] ?? 0);
        if (cur < (minv[j] ?? INF)) {
          minv[j] = cur;
          way[j] = j0;
        }
        if ((minv[j] ?? INF) < delta) {
          delta = minv[j] ?? INF;
          j1 = j;
        }
      }
      for (let j = 0; j <= m; j += 1) {
        if (used[j] === 1) {
          const row0 = p[j] ?? 0;
          u[row0] = (u[row0] ?? 0) + delta;
          v[j] = (v[j] ?? 0) - delta;
        } else {
          minv[j] = (minv[j] ?? INF) - delta;
        }
      }
      j0 = j1;
    } while ((p[j0] ?? 0) !== 0);
    do {
      const j1 = way[j0] ?? 0;
      p[j0] = p[j1] ?? 0;
      j0 = j1;
    } while (j0 !== 0);
  }
  const result = new Array<number>(n).fill(-1);
  for (let j = 1; j <= m; j += 1) {
    const row = p[j] ?? 0;
    if (row > 0) result[row - 1] = j - 1;
  }
  return result;
}

class UnionFind {
  readonly parent: Int32Array;
  constructor(size: number) {
    this.parent = new Int32Array(size);
    for (let i = 0; i < size; i += 1) this.parent[i] = i;
  }
  find(x: number): number {
    let root = x;
    while (this.parent[root] !== root) root = this.parent[root] ?? root;
    let cur = x;
    while (cur !== root) {
      const next = this.parent[cur] ?? root;
      this.parent[cur] = root;
      cur = next;
    }
    return root;
  }
  union(a: number, b: number): void {
    const ra = this.find(a);
    const rb = this.find(b);
    if (ra !== rb) this.parent[ra] = rb;
  }
}

function describeNames(pair: Pair): string[] {
  const reasons: string[] = [];
  if (pair.nameSim !== null) {
    reasons.push(pair.nameSim === 1
      ? `remitter "${pair.irm.src.remitterName}" is buyer "${pair.inv.src.buyerName ?? ''}" once legal suffixes, case and punctuation are ignored`
      : `remitter "${pair.irm.src.remitterName}" resembles buyer "${pair.inv.src.buyerName ?? ''}" (name score ${pair.nameSim.toFixed(2)})`);
  } else {
    reasons.push('no buyer name to compare with the remitter');
  }
  if (pair.countryMatch === true) reasons.push(`remitter country ${pair.irm.src.remitterCountry} is the buyer's`);
  if (pair.countryMatch === false) {
    reasons.push(`remitter country ${pair.irm.src.remitterCountry} differs from buyer country ${pair.inv.src.buyerCountry ?? ''}`);
  }
  return reasons;
}

function describeDates(pair: Pair): string {
  const { irm, inv } = pair;
  return irm.advance
    ? `advance (${ADVANCE_PURPOSE_CODE}) received ${irm.src.remittanceDate}, ${pair.gap} days before invoice date ${inv.src.sbCumInvoiceDate}`
    : `received ${irm.src.remittanceDate}, ${pair.gap} days after invoice date ${inv.src.sbCumInvoiceDate}`;
}

export function matchInvoices(input: MatchInput): MatchResult {
  const basisPoints = input.chargeToleranceBasisPoints ?? DEFAULT_CHARGE_TOLERANCE_BASIS_POINTS;
  const capCents = input.chargeToleranceCapCents ?? DEFAULT_CHARGE_TOLERANCE_CAP_CENTS;
  const maxDays = input.maxDaysAfterInvoice ?? DEFAULT_MAX_DAYS_AFTER_INVOICE;
  const itServices = input.uploadType === '102';

  // Mappable IRMs.
  const irms: Irm[] = [];
  for (const src of input.irms) {
    const code = src.purposeOfRemittance;
    if (src.cancelled === true || src.availableCents <= 0n) continue;
    if (!VALID_PURPOSE_CODES.has(code) || BANNED_PURPOSE_CODES.has(code)) continue;
    if (itServices && !IT_SERVICE_PURPOSE_CODES.has(code)) continue;
    const day = dayNumber(src.remittanceDate);
    if (day === null) continue;
    irms.push({
      index: irms.length, src, day, advance: code === ADVANCE_PURPOSE_CODE, name: prepareName(src.remitterName),
      country: normaliseCountry(src.remitterCountry), left: src.availableCents,
    });
  }
  const invoices: Invoice[] = [];
  for (const src of input.invoices) {
    const day = dayNumber(src.sbCumInvoiceDate);
    const value = src.sbCumInvoiceValueinFCC;
    const hasName = src.buyerName !== undefined && src.buyerName !== null && src.buyerName.trim() !== '';
    invoices.push({
      index: invoices.length, src, day: day ?? Number.NaN, value, tolerance: chargeTolerance(value, basisPoints, capCents),
      name: hasName ? prepareName(src.buyerName ?? '') : null, country: normaliseCountry(src.buyerCountry), left: value,
      ifsc: null, purpose: null, irmCount: 0,
    });
  }

  // Candidate pairs: IRMs grouped by currency and normalised remitter name, so each distinct name pair is compared once.
  const groups = new Map<string, Map<string, Irm[]>>();
  for (const irm of irms) {
    let byName = groups.get(irm.src.remittanceFCC);
    if (byName === undefined) groups.set(irm.src.remittanceFCC, byName = new Map());
    const list = byName.get(irm.name.normalised);
    if (list === undefined) byName.set(irm.name.normalised, [irm]);
    else list.push(irm);
  }
  // For each distinct (currency, buyer name): the remitter-name groups resembling it, with their similarity.
  const groupCache = new Map<string, { list: Irm[]; sim: number | null }[]>();
  const groupsFor = (inv: Invoice): { list: Irm[]; sim: number | null }[] => {
    const currency = inv.src.sbCumInvoiceFCC;
    const key = `${currency}\u0000${inv.name === null ? '\u0001' : inv.name.normalised}`;
    let found = groupCache.get(key);
    if (found === undefined) {
      found = [];
      for (const list of groups.get(currency)?.values() ?? []) {
        const first = list[0];
        if (first === undefined) continue;
        if (inv.name === null) {
          found.push({ list, sim: null });
          continue;
        }
        const sim = preparedNameSimilarity(inv.name, first.name);
        if (sim >= NAME_MIN) found.push({ list, sim });
      }
      groupCache.set(key, found);
    }
    return found;
  };
  const pairsByInvoice: Pair[][] = invoices.map(() => []);
  const pairsByIrm: Pair[][] = irms.map(() => []);
  for (const inv of invoices) {
    if (inv.value <= 0n || Number.isNaN(inv.day)) continue;
    for (const { list, sim: nameSim } of groupsFor(inv)) {
      for (const irm of list) {
        const gap = irm.advance ? inv.day - irm.day : irm.day - inv.day;
        if (gap < 0 || gap > maxDays) continue;
        const countryMatch = inv.country === null || irm.country === null ? null : inv.country === irm.country;
        // With a window of 0 days the only eligible gap is 0 (and 0 / 0 would make every score NaN).
        const dateScore = maxDays === 0 ? 1 : 1 - (gap / maxDays) ** 2;
        const pair: Pair = { inv, irm, nameSim, countryMatch, gap, evidence: evidenceOf(nameSim, countryMatch, dateScore) };
        (pairsByInvoice[inv.index] ??= []).push(pair);
        (pairsByIrm[irm.index] ??= []).push(pair);
      }
    }
  }

  const allocations: Allocation[] = [];
  const allocate = (pair: Pair, amount: Cents, confidence: number, reasons: string[]): void => {
    const { inv, irm } = pair;
    inv.left -= amount;
    irm.left -= amount;
    inv.irmCount += 1;
    inv.ifsc ??= irm.src.ifscCode ?? null;
    if (!irm.advance) inv.purpose ??= irm.src.purposeOfRemittance;
    allocations.push({ inv, irm, pair, amount, confidence: round2(confidence), reasons });
  };
  const settled = (inv: Invoice): boolean => inv.irmCount > 0 && inv.left <= inv.tolerance;

  // Stage 1: one-to-one settlements by maximum-weight bipartite matching.
  const stage1: Pair[] = [];
  for (const list of pairsByInvoice) {
    for (const pair of list) {
      const short = pair.inv.value - pair.irm.left;
      if (short < 0n || short > pair.inv.tolerance) continue;
      if (pair.inv.name === null && pair.countryMatch === false) continue;
      if (W_AMOUNT * shortAmountScore(short, pair.inv.tolerance) + pair.evidence < STAGE1_MIN_SCORE) continue;
      stage1.push(pair);
    }
  }
  const uf = new UnionFind(invoices.length + irms.length);
  for (const pair of stage1) uf.union(pair.inv.index, invoices.length + pair.irm.index);
  const components = Map.groupBy(stage1, (pair) => uf.find(pair.inv.index));
  const stage1Chosen: Pair[] = [];
  for (const edges of components.values()) {
    const score = (pair: Pair): number =>
      W_AMOUNT * shortAmountScore(pair.inv.value - pair.irm.left, pair.inv.tolerance) + pair.evidence;
    if (edges.length === 1) {
      stage1Chosen.push(...edges);
      continue;
    }
    const invIds = [...new Set(edges.map((e) => e.inv.index))];
    const irmIds = [...new Set(edges.map((e) => e.irm.index))];
    if (Math.min(invIds.length, irmIds.length) > HUNGARIAN_MAX) {
      // Too large for the cubic step: greedy by score (documented fallback; does not arise in practice).
      const usedInv = new Set<number>();
      const usedIrm = new Set<number>();
      for (const e of edges.toSorted((a, b) => score(b) - score(a))) {
        if (usedInv.has(e.inv.index) || usedIrm.has(e.irm.index)) continue;
        usedInv.add(e.inv.index);
        usedIrm.add(e.irm.index);
        stage1Chosen.push(e);
      }
      continue;
    }
    const invertRows = invIds.length > irmIds.length;
    const rowIds = invertRows ? irmIds : invIds;
    const colIds = invertRows ? invIds : irmIds;
    const rowPos = new Map(rowIds.map((id, k) => [id, k]));
    const colPos = new Map(colIds.map((id, k) => [id, k]));
    const weights = rowIds.map(() => new Array<number>(colIds.length).fill(0));
    const edgeAt = new Map<string, Pair>();
    for (const e of edges) {
      const r = rowPos.get(invertRows ? e.irm.index : e.inv.index) ?? 0;
      const c = colPos.get(invertRows ? e.inv.index : e.irm.index) ?? 0;
      const row = weights[r];
      if (row !== undefined) row[c] = score(e);
      edgeAt.set(`${r}|${c}`, e);
    }
    maxWeightAssignment(weights, colIds.length).forEach((c, r) => {
      const e = edgeAt.get(`${r}|${c}`);
      if (e !== undefined) stage1Chosen.push(e);
    });
  }
  for (const pair of stage1Chosen) {
    const short = pair.inv.value - pair.irm.left;
    const amountScore = shortAmountScore(short, pair.inv.tolerance);
    const reasons = [
      `same currency ${pair.inv.src.sbCumInvoiceFCC}`,
      short === 0n
        ? `IRM balance ${formatCents(pair.irm.left)} equals the invoice value`
        : `IRM balance ${formatCents(pair.irm.left)} is the invoice value ${formatCents(pair.inv.value)} less ${formatCents(short)} of bank charges (tolerance ${formatCents(pair.inv.tolerance)})`,
      ...describeNames(pair),
      describeDates(pair),
    ];
    allocate(pair, pair.irm.left, W_AMOUNT * amountScore + pair.evidence, reasons);
  }

  // Stage 2: group settlements (n IRMs → 1 invoice, 1 IRM → n invoices) by bounded subset sums, then set packing.
  type Option = { pairs: Pair[]; amounts: Cents[]; weight: number; amountPart: number; kind: 'many-irms' | 'many-invoices' };
  const options: Option[] = [];
  const openInvoice = (inv: Invoice): boolean => inv.irmCount === 0 && inv.name !== null;
  for (const inv of invoices) {
    if (!openInvoice(inv)) continue;
    const cands = (pairsByInvoice[inv.index] ?? [])
      .filter((p) => p.irm.left > 0n && p.irm.left < inv.left)
      .toSorted((a, b) => b.evidence - a.evidence)
      .slice(0, GROUP_CANDIDATES)
      .toSorted((a, b) => (b.irm.left > a.irm.left ? 1 : b.irm.left < a.irm.left ? -1 : 0));
    const chosen: Pair[] = [];
    const search = (start: number, sum: Cents): void => {
      if (chosen.length >= 2 && inv.left - sum <= inv.tolerance) {
        if (clubbable(chosen.map((p) => p.irm))) {
          const short = inv.left - sum;
          const amount = short === 0n ? 0.8 : 0.7;
          const mean = chosen.reduce((s, p) => s + p.evidence, 0) / chosen.length;
          options.push({
            pairs: [...chosen], amounts: chosen.map((p) => p.irm.left), weight: W_AMOUNT * amount + mean - GROUP_SIZE_PENALTY * (chosen.length - 2),
            amountPart: W_AMOUNT * amount, kind: 'many-irms',
          });
        }
        return;
      }
      if (chosen.length >= GROUP_MAX_SIZE) return;
      for (let k = start; k < cands.length; k += 1) {
        const p = cands[k];
        if (p === undefined || sum + p.irm.left > inv.left) continue;
        chosen.push(p);
        search(k + 1, sum + p.irm.left);
        chosen.pop();
      }
    };
    search(0, 0n);
  }
  for (const irm of irms) {
    if (irm.left <= 0n) continue;
    const cands = (pairsByIrm[irm.index] ?? [])
      .filter((p) => openInvoice(p.inv) && p.inv.left < irm.left)
      .toSorted((a, b) => b.evidence - a.evidence)
      .slice(0, GROUP_CANDIDATES)
      .toSorted((a, b) => (b.inv.left > a.inv.left ? 1 : b.inv.left < a.inv.left ? -1 : 0));
    const chosen: Pair[] = [];
    const search = (start: number, sum: Cents, tol: Cents): void => {
      if (chosen.length >= 2 && sum >= irm.left && sum - irm.left <= tol &&
        sum - irm.left <= chargeTolerance(sum, basisPoints, capCents)) {
        // Spread the shortfall over the invoices in proportion to their values; each share within its tolerance.
        const short = sum - irm.left;
        const amounts = chosen.map((p) => p.inv.left - (short * p.inv.left + sum - 1n) / sum);
        let rest = irm.left - amounts.reduce((s, a) => s + a, 0n);
        for (let k = 0; k < amounts.length && rest > 0n; k += 1) {
          const p = chosen[k];
          const a = amounts[k] ?? 0n;
          if (p === undefined) continue;
          const add = p.inv.left - a < rest ? p.inv.left - a : rest;
          amounts[k] = a + add;
          rest -= add;
        }
        const ok = chosen.every((p, k) => p.inv.left - (amounts[k] ?? 0n) <= p.inv.tolerance && (amounts[k] ?? 0n) > 0n);
        if (ok && rest === 0n) {
          const amount = short === 0n ? 0.8 : 0.7;
          const mean = chosen.reduce((s, p) => s + p.evidence, 0) / chosen.length;
          options.push({
            pairs: [...chosen], amounts, weight: W_AMOUNT * amount + mean - GROUP_SIZE_PENALTY * (chosen.length - 2),
            amountPart: W_AMOUNT * amount,
            kind: 'many-invoices',
          });
        }
        return;
      }
      if (chosen.length >= GROUP_MAX_SIZE) return;
      for (let k = start; k < cands.length; k += 1) {
        const p = cands[k];
        if (p === undefined || sum + p.inv.left - (tol + p.inv.tolerance) > irm.left) continue;
        chosen.push(p);
        search(k + 1, sum + p.inv.left, tol + p.inv.tolerance);
        chosen.pop();
      }
    };
    search(0, 0n, 0n);
  }
  const usedInv = new Set<number>();
  const usedIrm = new Set<number>();
  for (const option of options.toSorted((a, b) => b.weight - a.weight)) {
    if (option.pairs.some((p) => usedInv.has(p.inv.index) || usedIrm.has(p.irm.index))) continue;
    const n = option.pairs.length;
    const irmBalance = option.pairs[0]?.irm.left ?? 0n;
    option.pairs.forEach((pair, k) => {
      usedInv.add(pair.inv.index);
      usedIrm.add(pair.irm.index);
      const amount = option.amounts[k] ?? 0n;
      const reasons = [`same currency ${pair.inv.src.sbCumInvoiceFCC}`];
      if (option.kind === 'many-irms') {
        const total = option.amounts.reduce((s, a) => s + a, 0n);
        const short = pair.inv.value - total;
        reasons.push(`one of ${n} IRMs whose balances together (${formatCents(total)}) settle invoice value ${formatCents(pair.inv.value)}` +
          (short === 0n ? ' exactly' : ` less ${formatCents(short)} of bank charges (tolerance ${formatCents(pair.inv.tolerance)})`));
      } else {
        const total = option.pairs.reduce((s, p) => s + p.inv.value, 0n);
        const short = total - irmBalance;
        reasons.push(`IRM balance ${formatCents(irmBalance)} settles ${n} invoices totalling ${formatCents(total)}` +
          (short === 0n ? ' exactly' : ` less ${formatCents(short)} of bank charges`));
      }
      reasons.push(...describeNames(pair), describeDates(pair));
      allocate(pair, amount, (option.amountPart + pair.evidence) * 0.92, reasons);
    });
  }

  // Stage 3: residual fill with strong names, best pairs first.
  const fill = pairsByInvoice.flat()
    .filter((p) => p.inv.name !== null && (p.nameSim ?? 0) >= FILL_NAME_MIN)
    .toSorted((a, b) => b.evidence - a.evidence || a.gap - b.gap);
  const allocated = new Set(allocations.map((a) => `${a.inv.index}|${a.irm.index}`));
  for (const pair of fill) {
    const { inv, irm } = pair;
    if (irm.left <= 0n || inv.left <= 0n || settled(inv) || !canClub(inv, irm)) continue;
    if (allocated.has(`${inv.index}|${irm.index}`)) continue;
    const amount = irm.left < inv.left ? irm.left : inv.left;
    allocated.add(`${inv.index}|${irm.index}`);
    const reasons = [
      `same currency ${inv.src.sbCumInvoiceFCC}`,
      amount === inv.left
        ? `maps ${formatCents(amount)}, what was left of the invoice, from an IRM balance of ${formatCents(irm.left)}`
        : `partial payment: the IRM's balance ${formatCents(amount)} against ${formatCents(inv.left)} left of the invoice`,
      ...describeNames(pair),
      describeDates(pair),
    ];
    allocate(pair, amount, (W_AMOUNT * 0.5 + pair.evidence) * 0.75, reasons);
  }

  return {
    allocations: allocations.map((a) => ({
      sbCumInvoiceNumber: a.inv.src.sbCumInvoiceNumber,
      irmNumber: a.irm.src.irmNumber,
      mappedIRMAmountFCC: a.amount,
      confidence: a.confidence,
      reasons: a.reasons,
    })),
    unmatchedInvoices: invoices
      .filter((inv) => inv.value > 0n && !settled(inv))
      .map((inv) => ({ sbCumInvoiceNumber: inv.src.sbCumInvoiceNumber, remaining: inv.left })),
    unusedIrms: irms.filter((irm) => irm.left > 0n).map((irm) => ({ irmNumber: irm.src.irmNumber, available: irm.left })),
  };
}

/**
 * Groups allocations into pushes of at most maxLines lines, every allocation exactly once. Allocations linked through a
 * shared IRM or invoice (a connected component) go into one push when they fit, packed first-fit by decreasing size;
 * a component too large for one push is split with each IRM's lines kept together where they fit.
 */
export function splitIntoPushes<T extends { irmNumber: string; sbCumInvoiceNumber: string }>(
  allocations: readonly T[],
  maxLines = 999,
): T[][] {
  if (!Number.isInteger(maxLines) || maxLines < 1) throw new RangeError(`maxLines must be a positive integer, got ${maxLines}`);
  const ids = new Map<string, number>();
  const id = (key: string): number => {
    let v = ids.get(key);
    if (v === undefined) ids.set(key, v = ids.size);
    return v;
  };
  const keyed = allocations.map((a) => ({ a, irm: id(`r:${a.irmNumber}`), inv: id(`i:${a.sbCumInvoiceNumber}`) }));
  const uf = new UnionFind(ids.size);
  for (const k of keyed) uf.union(k.irm, k.inv);
  const units: T[][] = [];
  for (const component of Map.groupBy(keyed, (k) => uf.find(k.irm)).values()) {
    if (component.length <= maxLines) {
      units.push(component.map((k) => k.a));
      continue;
    }
    for (const irmLines of Map.groupBy(component, (k) => k.irm).values()) {
      for (let s = 0; s < irmLines.length; s += maxLines) units.push(irmLines.slice(s, s + maxLines).map((k) => k.a));
    }
  }
  const pushes: T[][] = [];
  for (const unit of units.toSorted((x, y) => y.length - x.length)) {
    const push = pushes.find((p) => p.length + unit.length <= maxLines);
    if (push === undefined) pushes.push([...unit]);
    else push.push(...unit);
  }
  return pushes;
}
