import type { Branch, IrmProfile, Remitter } from './irm-generator.ts';

/**
 * The sandbox's documented test accounts. Every one signs in with SANDBOX_PASSWORD; what happens next depends on
 * its behaviour:
 * - normal: validates, and every later call works;
 * - credentials_expired: the check fails as the real authority's does once an exporter's credentials expire;
 * - outage / slow: validates (a token, and a credential check's one-day IRM read), but every other call (IRMs, push,
 *   status, eBRCs) fails with an outage resp. never answers.
 * Any username with OUTAGE_PASSWORD or SLOW_PASSWORD makes the credential check itself fail that way.
 */
export const SANDBOX_PASSWORD = 'Sandbox@123';
export const OUTAGE_PASSWORD = 'Outage@502';
export const SLOW_PASSWORD = 'Slow@504';

export type AccountBehaviour = 'normal' | 'credentials_expired' | 'outage' | 'slow';

export type SandboxAccount = {
  username: string;
  iecCode: string;
  panNumber: string;
  behaviour: AccountBehaviour;
  irmProfile: IrmProfile;
};

const FIRST_IRM_ISSUED_AT = new Date('2025-04-01T00:00:00Z');
const HOUR_MS = 3_600_000;

const HDFC: Branch = { ifscCode: 'HDFC0000240', adCode: '0510002' };
const ICICI: Branch = { ifscCode: 'ICIC0000104', adCode: '6390004' };
const SBI: Branch = { ifscCode: 'SBIN0004266', adCode: '0002331' };
const AXIS: Branch = { ifscCode: 'UTIB0000004', adCode: '6910003' };
const UCO: Branch = { ifscCode: 'UCBA0000001', adCode: '0280001' };
const INDIAN_BANK: Branch = { ifscCode: 'IDIB000C032', adCode: '0161004' };

const US_REMITTERS: readonly Remitter[] = [
  { name: 'Northwind Traders Inc', country: 'US' },
  { name: 'Blue Harbor Imports LLC', country: 'US' },
  { name: 'Granite Peak Retail Corp', country: 'US' },
  { name: 'Maple Leaf Distributors Ltd', country: 'CA' },
];
const EURO_REMITTERS: readonly Remitter[] = [
  { name: 'Rheinland Handels GmbH', country: 'DE' },
  { name: 'Maison Lumière SARL', country: 'FR' },
  { name: 'Van der Berg Groothandel BV', country: 'NL' },
];
const UK_REMITTERS: readonly Remitter[] = [
  { name: 'Thames Valley Textiles Ltd', country: 'GB' },
  { name: 'Pennine Software Services Ltd', country: 'GB' },
];
const VOSTRO_REMITTERS: readonly Remitter[] = [
  { name: 'Volga Trading House LLC', country: 'RU' },
  { name: 'Gulf Crescent General Trading LLC', country: 'AE' },
  { name: 'Colombo Spice Exports PVT Ltd', country: 'LK' },
];
const SOFTWARE_CLIENTS: readonly Remitter[] = [
  { name: 'Cloudline Systems Inc', country: 'US' },
  { name: 'Brightpath Analytics LLC', country: 'US' },
  { name: 'Harbourview Digital Ltd', country: 'GB' },
  { name: 'Kestrel Fintech Pte Ltd', country: 'SG' },
];

// P0101 and P0108 cannot generate an eBRC; demo.exporter receives a few so that rule can be seen.
const DEMO_PROFILE: IrmProfile = {
  firstIssuedAt: FIRST_IRM_ISSUED_AT,
  cadenceMs: 8 * HOUR_MS,
  branches: [HDFC, ICICI, SBI],
  kinds: [
    { weight: 40, currency: 'USD', purposeCodes: ['P0103', 'P0102', 'P0802'], amountRange: [500, 60_000], remitters: US_REMITTERS },
    { weight: 20, currency: 'EUR', purposeCodes: ['P0103', 'P0102'], amountRange: [400, 45_000], remitters: EURO_REMITTERS },
    { weight: 15, currency: 'GBP', purposeCodes: ['P0802', 'P0806', 'P0103'], amountRange: [300, 30_000], remitters: UK_REMITTERS },
    { weight: 20, currency: 'INR', purposeCodes: ['P0102', 'P0103'], amountRange: [50_000, 4_000_000], remitters: VOSTRO_REMITTERS },
    { weight: 2, currency: 'USD', purposeCodes: ['P0101', 'P0108'], amountRange: [200, 5_000], remitters: US_REMITTERS },
  ],
};

const SERVICES_PROFILE: IrmProfile = {
  firstIssuedAt: FIRST_IRM_ISSUED_AT,
  cadenceMs: 12 * HOUR_MS,
  branches: [ICICI, AXIS],
  kinds: [
    { weight: 85, currency: 'USD', purposeCodes: ['P0802', 'P0803', 'P0807'], amountRange: [1_000, 80_000], remitters: SOFTWARE_CLIENTS },
    { weight: 15, currency: 'USD', purposeCodes: ['P0103'], amountRange: [1_000, 20_000], remitters: SOFTWARE_CLIENTS },
  ],
};

const VOSTRO_PROFILE: IrmProfile = {
  firstIssuedAt: FIRST_IRM_ISSUED_AT,
  cadenceMs: 24 * HOUR_MS,
  branches: [UCO, INDIAN_BANK],
  kinds: [
    { weight: 70, currency: 'INR', purposeCodes: ['P0102'], amountRange: [100_000, 9_000_000], remitters: VOSTRO_REMITTERS },
    { weight: 30, currency: 'INR', purposeCodes: ['P0103'], amountRange: [50_000, 2_500_000], remitters: VOSTRO_REMITTERS },
  ],
};

const BULK_PROFILE: IrmProfile = {
  firstIssuedAt: FIRST_IRM_ISSUED_AT,
  cadenceMs: 3 * HOUR_MS,
  branches: [HDFC, SBI, AXIS],
  kinds: [
    { weight: 55, currency: 'USD', purposeCodes: ['P0102', 'P0103'], amountRange: [100, 25_000], remitters: US_REMITTERS },
    { weight: 25, currency: 'EUR', purposeCodes: ['P0102', 'P0103'], amountRange: [100, 20_000], remitters: EURO_REMITTERS },
    { weight: 20, currency: 'INR', purposeCodes: ['P0102'], amountRange: [10_000, 1_500_000], remitters: VOSTRO_REMITTERS },
  ],
};

// The failing accounts never get as far as showing IRMs; they still have a profile like any account.
const QUIET_PROFILE: IrmProfile = {
  firstIssuedAt: FIRST_IRM_ISSUED_AT,
  cadenceMs: 24 * HOUR_MS,
  branches: [SBI],
  kinds: [{ weight: 1, currency: 'USD', purposeCodes: ['P0102'], amountRange: [500, 10_000], remitters: US_REMITTERS }],
};

export const SANDBOX_ACCOUNTS: readonly SandboxAccount[] = [
  { username: 'demo.exporter', iecCode: '0599001001', panNumber: 'AACCD1001D', behaviour: 'normal', irmProfile: DEMO_PROFILE },
  { username: 'services.exporter', iecCode: '0599001002', panNumber: 'AACCS1002S', behaviour: 'normal', irmProfile: SERVICES_PROFILE },
  { username: 'vostro.exporter', iecCode: '0599001003', panNumber: 'AACCV1003V', behaviour: 'normal', irmProfile: VOSTRO_PROFILE },
  { username: 'bulk.exporter', iecCode: '0599001004', panNumber: 'AACCB1004B', behaviour: 'normal', irmProfile: BULK_PROFILE },
  { username: 'expired.exporter', iecCode: '0599001005', panNumber: 'AACCE1005E', behaviour: 'credentials_expired', irmProfile: QUIET_PROFILE },
  { username: 'outage.exporter', iecCode: '0599001006', panNumber: 'AACCO1006O', behaviour: 'outage', irmProfile: QUIET_PROFILE },
  { username: 'slow.exporter', iecCode: '0599001007', panNumber: 'AACCW1007W', behaviour: 'slow', irmProfile: QUIET_PROFILE },
];

export function findSandboxAccount(username: string): SandboxAccount | undefined {
  return SANDBOX_ACCOUNTS.find((account) => account.username === username);
}

export function findSandboxAccountByIec(iecCode: string): SandboxAccount | undefined {
  return SANDBOX_ACCOUNTS.find((account) => account.iecCode === iecCode);
}
