/**
 * The trade authority as this service sees it. The sandbox implements it today; a production
 * adapter for the authority's real API (domain.md, "The authority's own API") will implement it later.
 * Money crosses this boundary as exact decimal text ("94404.25"), never as binary floating point.
 */
import type { ErrorDetail } from '../domain/push-rules.ts';

export type AuthorityCredentials = { username: string; password: string };

export type CallOptions = { signal?: AbortSignal };

export type AuthorityIrm = {
  irmNumber: string;
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

export type AuthorityFailure = 'credentials_invalid' | 'credentials_expired' | 'unavailable' | 'timeout';

export class AuthorityError extends Error {
  readonly failure: AuthorityFailure;
  constructor(failure: AuthorityFailure, message: string) {
    super(message);
    this.name = 'AuthorityError';
    this.failure = failure;
  }
}

export interface Authority {
  /** Checks an exporter's credentials and tells its IEC; throws AuthorityError('credentials_invalid' | 'credentials_expired'). */
  checkCredentials(credentials: AuthorityCredentials, options?: CallOptions): Promise<{ iecCode: string }>;
  fetchIrms(credentials: AuthorityCredentials, query: IrmQuery, options?: CallOptions): Promise<AuthorityIrm[]>;
  push(credentials: AuthorityCredentials, message: PushMessage, options?: CallOptions): Promise<PushAcknowledgement>;
  /** The request's processing status; null when the authority has never accepted that requestId. */
  getStatus(credentials: AuthorityCredentials, requestId: string, options?: CallOptions): Promise<RequestStatusAnswer | null>;
  /** The IEC's eBRCs (fetchEBRCDetails), whether generated through this service or elsewhere. */
  fetchEbrcs(credentials: AuthorityCredentials, query: EbrcQuery, options?: CallOptions): Promise<AuthorityEbrc[]>;
}
