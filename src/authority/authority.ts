/**
 * The trade authority as this service sees it: the five operations of its API, called with an exporter's API
 * credential set. dgft/dgft-authority.ts implements it over the wire protocol (authority-wire.md), for the real
 * authority and the sandbox program alike. Money crosses this boundary as exact decimal text ("94404.25"), never as
 * binary floating point.
 */
import type { ErrorDetail } from '../domain/push-rules.ts';
import type { CredentialSet } from './protocol/credentials.ts';
import type { EnvelopeProfile } from './protocol/envelope.ts';

/** The exporter's login at the authority's portal, as a credential check gives it. */
export type PortalLogin = { username: string; password: string };

export type CallOptions = { signal?: AbortSignal };

export type AuthorityIrm = {
  irmNumber: string;
  /**
   * The authority's irmStatus: F (fresh), A (amended), C (cancelled), or whatever other letter it sends, upper-cased
   * (an absent status reads as F).
   */
  irmStatus: string;
  /** YYYY-MM-DD */
  irmIssueDate: string;
  ifscCode: string;
  remittanceAdCode: string;
  /** YYYY-MM-DD */
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

/** An IRM of the authority's answer that cannot be stored as it is (an amount with three decimals, no number, ...). */
export type UnreadableIrm = { index: number; irmNumber: string | null; reason: string };

/** fetchIRMDetails' answer: every IRM that reads, and why the others do not (one odd IRM never fails the rest). */
export type IrmFetch = { irms: AuthorityIrm[]; unreadable: UnreadableIrm[] };

export type IrmQuery = {
  iecCode: string;
  irmNumber?: string | undefined;
  /** YYYY-MM-DD, inclusive, on irmIssueDate */
  fromDate?: string | undefined;
  toDate?: string | undefined;
};

export type EbrcQuery = {
  iecCode: string;
  /** YYYY-MM-DD, inclusive, on ebrcDate. */
  fromDate?: string | undefined;
  toDate?: string | undefined;
  sbCumInvoiceNumber?: string | undefined;
  /** YYYY-MM-DD */
  sbCumInvoiceDate?: string | undefined;
};

/** One eBRC as fetchEBRCDetails reports it. */
export type AuthorityEbrc = {
  ebrcNumber: string;
  /** YYYY-MM-DD */
  ebrcDate: string;
  irmNumber: string;
  sbCumInvoiceNumber: string;
  /** YYYY-MM-DD */
  sbCumInvoiceDate: string;
  /** Exact decimal text, e.g. "94404.25". */
  realisedValueFCC: string;
  currency: string;
  iecCode: string;
  /** The authority's status word, as it gives it. */
  status: string;
};

/** An eBRC of the authority's answer that cannot be stored as it is (no number, a date that is not one, ...). */
export type UnreadableEbrc = { index: number; ebrcNumber: string | null; reason: string };

/** fetchEBRCDetails' answer: every eBRC that reads, and why the others do not (one odd eBRC never fails the rest). */
export type EbrcFetch = { ebrcs: AuthorityEbrc[]; unreadable: UnreadableEbrc[] };

/** The authority's errorDetails entries: the domain's rule violations have the same shape. */
export type AuthorityErrorDetail = ErrorDetail;

/** The push message exactly as the authority takes it (domain.md, "Workflow at the authority" 3). */
export type PushMessage = {
  iecNumber: string;
  requestId: string;
  recordResCount: number;
  uploadType: string;
  decalarationFlag: string;
  /** Lines in the interface's wire shape: money as JSON numbers, dates as ddMMyyyy. */
  ebrcBulkGenDtos: Record<string, unknown>[];
};

export type PushAcknowledgement = {
  ackId: string | null;
  requestId: string;
  ackStatus: 'Validated' | 'Failed';
  recordResCount: number;
  errorDetails: AuthorityErrorDetail[];
};

export type LineResult = {
  serialNo: number;
  status: 'PENDING' | 'GENERATED' | 'FAILED';
  ebrcNumber: string | null;
  /** YYYY-MM-DD */
  ebrcDate: string | null;
  errorDetails: AuthorityErrorDetail[];
};

export type RequestStatusAnswer = {
  /** Null when the push was refused at acknowledgement (ackStatus Failed). */
  ackId: string | null;
  requestId: string;
  ackStatus: 'Validated' | 'Failed';
  /** Message-level problems: the acknowledgement's errorDetails for a refused push. */
  errorDetails: AuthorityErrorDetail[];
  recordResCount: number;
  recordProCount: number;
  recordFailCount: number;
  processingStatus: 'Pending' | 'Processed' | 'Errored';
  records: LineResult[];
};

/**
 * credentials_invalid  HTTP 401 (after one token renewal) or ERR01: the client id or secret is wrong.
 * credentials_expired  the exporter's account or credentials have expired (the sandbox's login says so).
 * ip_not_whitelisted   HTTP 403: this service's egress IP is not on the authority's list.
 * misconfigured        ERR02-ERR06, or an answer that fails its signature or decryption or does not read as the
 *                      protocol says: our side of the protocol is wrong (profile, keys, URL), never the user's input.
 * unavailable          429, 5xx or a failed connection, still so when the deadline came.
 * timeout              the deadline passed, or the last attempt timed out.
 */
export type AuthorityFailure =
  | 'credentials_invalid'
  | 'credentials_expired'
  | 'ip_not_whitelisted'
  | 'misconfigured'
  | 'unavailable'
  | 'timeout';

export type AuthorityFailureDetails = {
  httpStatus?: number;
  /** The authority's code (ERR01-ERR06, or another it sent), when it sent one. */
  authorityCode?: string;
  /** The envelope profile in use; always set for misconfigured. */
  profile?: EnvelopeProfile;
  /** For ip_not_whitelisted: the configured egress address the authority has to whitelist, when known. */
  egressIp?: string;
};

/** Why a call to the authority failed. The error handler renders it from the error table. */
export class AuthorityError extends Error {
  readonly failure: AuthorityFailure;
  readonly httpStatus: number | null;
  readonly authorityCode: string | null;
  readonly profile: EnvelopeProfile | null;
  readonly egressIp: string | null;
  constructor(failure: AuthorityFailure, message: string, details: AuthorityFailureDetails = {}) {
    super(message);
    this.name = 'AuthorityError';
    this.failure = failure;
    this.httpStatus = details.httpStatus ?? null;
    this.authorityCode = details.authorityCode ?? null;
    this.profile = details.profile ?? null;
    this.egressIp = details.egressIp ?? null;
  }
}

export interface Authority {
  /** Proves a credential set works: a token, then the set's IEC's IRMs. Throws AuthorityError when it does not. */
  checkCredentials(credentials: CredentialSet, options?: CallOptions): Promise<void>;
  fetchIrms(credentials: CredentialSet, query: IrmQuery, options?: CallOptions): Promise<IrmFetch>;
  /**
   * Pushes a request. A requestId the authority already received (ERR09, as after a retry whose first answer was
   * lost) is answered from getRequestStatus, never pushed twice.
   */
  push(credentials: CredentialSet, message: PushMessage, options?: CallOptions): Promise<PushAcknowledgement>;
  /** The request's processing status; null when the authority has never accepted that requestId. */
  getStatus(credentials: CredentialSet, requestId: string, options?: CallOptions): Promise<RequestStatusAnswer | null>;
  /** The IEC's eBRCs (fetchEBRCDetails), whether generated through this service or elsewhere. */
  fetchEbrcs(credentials: CredentialSet, query: EbrcQuery, options?: CallOptions): Promise<EbrcFetch>;
}

/**
 * The sandbox program's one operation that the real authority lacks (POST /sandbox/issueApiCredentials): the test
 * account's credential set, as an exporter downloads it from the portal after logging in.
 */
export interface SandboxCredentialIssuer {
  issueApiCredentials(login: PortalLogin, options?: CallOptions): Promise<CredentialSet>;
}
