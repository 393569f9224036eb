import { formatCents } from '../src/domain/money.ts';

/** A bank branch that receives remittances: its IFSC (11 characters) and AD code (7 digits). */
export type Branch = { ifscCode: string; adCode: string };

export type Remitter = { name: string; country: string };

/** One kind of remittance an account receives, picked with a probability proportional to its weight. */
export type RemittanceKind = {
  weight: number;
  currency: string;
  purposeCodes: readonly string[];
  /** Inclusive range of the amount, in whole units of the currency. */
  amountRange: readonly [number, number];
  remitters: readonly Remitter[];
};

export type IrmProfile = {
  /** Issue time of the account's IRM 0; IRM k is issued at firstIssuedAt + k × cadenceMs. */
  firstIssuedAt: Date;
  cadenceMs: number;
  branches: readonly Branch[];
  kinds: readonly RemittanceKind[];
};

export type IrmOwner = { username: string; iecCode: string; panNumber: string; irmProfile: IrmProfile };

/** An IRM as the sandbox keeps it: dates YYYY-MM-DD, amounts as exact decimal text ("94404.25"). */
export type GeneratedIrm = {
  /** The IRM's position in its account's stream. */
  seq: number;
  irmNumber: string;
  irmIssueDate: string;
  ifscCode: string;
  remittanceAdCode: string;
  remittanceDate: string;
  remittanceFCC: string;
  remittanceFCCAmount: string;
  ormAmountFCC: string;
  irmAvailableAmt: string;
  irmUtilizedAmt: string;
  iecCode: string;
  panNumber: string;
  remitterName: string;
  remitterCountry: string;
  purposeOfRemittance: string;
};

const DAY_MS = 86_400_000;
const MAX_DAYS_FROM_REMITTANCE_TO_ISSUE = 3;

/** How many of the owner's IRMs have been issued by `now`: IRMs 0 to count - 1 exist. */
export function issuedIrmCount(profile: IrmProfile, now: Date): number {
  const elapsed = now.getTime() - profile.firstIssuedAt.getTime();
  return elapsed < 0 ? 0 : Math.floor(elapsed / profile.cadenceMs) + 1;
}

/** The owner's IRMs fromSeq (inclusive) to toSeq (exclusive), fresh: nothing utilised. */
export function generateIrms(owner: IrmOwner, fromSeq: number, toSeq: number): GeneratedIrm[] {
  const irms: GeneratedIrm[] = [];
  for (let seq = fromSeq; seq < toSeq; seq++) irms.push(generateIrm(owner, seq));
  return irms;
}

/** IRM number `seq` of the owner; the same owner and seq always give the same IRM. */
function generateIrm(owner: IrmOwner, seq: number): GeneratedIrm {
  const { irmProfile: profile } = owner;
  const random = seededRandom(`${owner.username}#${seq}`);
  const branch = pick(random, profile.branches);
  const kind = pickWeighted(random, profile.kinds);
  const remitter = pick(random, kind.remitters);
  const [minUnits, maxUnits] = kind.amountRange;
  const amount = formatCents(BigInt(randomInt(random, minUnits * 100, maxUnits * 100)));
  const issuedAt = profile.firstIssuedAt.getTime() + seq * profile.cadenceMs;
  const remittedAt = issuedAt - randomInt(random, 0, MAX_DAYS_FROM_REMITTANCE_TO_ISSUE) * DAY_MS;
  return {
    seq,
    // The IEC and the sequence number make it unique across accounts; the bank prefix is for looks.
    irmNumber: `${branch.ifscCode.slice(0, 4)}IR${owner.iecCode}${String(seq).padStart(6, '0')}`,
    irmIssueDate: isoDate(issuedAt),
    ifscCode: branch.ifscCode,
    remittanceAdCode: branch.adCode,
    remittanceDate: isoDate(remittedAt),
    remittanceFCC: kind.currency,
    remittanceFCCAmount: amount,
    ormAmountFCC: '0.00',
    irmAvailableAmt: amount,
    irmUtilizedAmt: '0.00',
    iecCode: owner.iecCode,
    panNumber: owner.panNumber,
    remitterName: remitter.name,
    remitterCountry: remitter.country,
    purposeOfRemittance: pick(random, kind.purposeCodes),
  };
}

function isoDate(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 10);
}

type Random = () => number;

/** mulberry32, seeded with the FNV-1a hash of the seed text: uniform numbers in [0, 1). */
function seededRandom(seed: string): Random {
  let state = 0x811c9dc5;
  for (let i = 0; i < seed.length; i++) {
    state ^= seed.charCodeAt(i);
    state = Math.imul(state, 0x01000193);
  }
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** An integer from min to max, both inclusive. */
function randomInt(random: Random, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}

function pick<T>(random: Random, items: readonly T[]): T {
  const item = items[Math.floor(random() * items.length)];
  if (item === undefined) throw new Error('Cannot pick from an empty list');
  return item;
}

function pickWeighted<T extends { weight: number }>(random: Random, items: readonly T[]): T {
  const total = items.reduce((sum, item) => sum + item.weight, 0);
  let point = random() * total;
  for (const item of items) {
    point -= item.weight;
    if (point < 0) return item;
  }
  return pick(random, items);
}
