/**
 * The authority's operations, headers and plain messages, named exactly as on the wire (authority-wire.md,
 * "Operations" and "Headers of every enveloped call"). The misspellings (decalarationFlag, irmResplst, ...) are the
 * wire's own. Both the production client and the sandbox authority speak these.
 */

/** Every operation is a POST of JSON under the authority's base URL (the token operation possibly under its own). */
export const OPERATION_PATHS = {
  getAccessToken: '/getAccessToken',
  fetchIRMDetails: '/fetchIRMDetails',
  pushIRMToGenEBRC: '/pushIRMToGenEBRC',
  getRequestStatus: '/getRequestStatus',
  fetchEBRCDetails: '/fetchEBRCDetails',
} as const;

export type OperationName = keyof typeof OPERATION_PATHS;

/** The operations whose request and response travel in the `{data, sign}` envelope. */
export type EnvelopedOperation = Exclude<OperationName, 'getAccessToken'>;

/** Header names in the exact case the authority expects; x-api-key goes on every call, the token call included. */
export const HEADER_NAMES = {
  accessToken: 'accessToken',
  clientId: 'client_id',
  secretVal: 'secretVal',
  messageId: 'messageID',
  apiKey: 'x-api-key',
  contentType: 'Content-Type',
} as const;

export const JSON_CONTENT_TYPE = 'application/json';

export const MAX_MESSAGE_ID_LENGTH = 50;

/** What the authority states as `expiresIn`. */
export const TOKEN_LIFETIME_SECONDS = 300;

/** Amounts arrive as JSON numbers or as decimal strings. */
export type WireAmount = number | string;

/** A date as ddMMyyyy, e.g. "15092025". */
export type WireDate = string;

export type AccessTokenRequest = {
  client_id: string;
  /** base64(salt ‖ PBKDF2-HMAC-SHA256(client_secret, salt, 65536, 32)); see token-secret.ts. */
  client_secret: string;
};

export type AccessTokenResponse = { accessToken: string; expiresIn: number; client_id: string };

export type FetchIrmDetailsRequest = {
  iecCode: string;
  /** Unused filters are "". */
  irmFromDate: WireDate | '';
  irmToDate: WireDate | '';
  irmNumber: string;
};

/** F fresh, A amended, C cancelled. */
export type IrmStatusLetter = 'F' | 'A' | 'C';

export type WireIrm = {
  irmNumber: string;
  irmIssueDate: WireDate;
  irmStatus: IrmStatusLetter;
  ifscCode: string;
  remittanceAdCode: string;
  remittanceDate: WireDate;
  remittanceFCC: string;
  remittanceFCCAmount: WireAmount;
  ormAmountFCC: WireAmount | null;
  irmAvailableAmt: WireAmount;
  irmUtilizedAmt: WireAmount;
  iecCode: string;
  panNumber: string;
  remitterName: string;
  remitterCountry: string;
  purposeOfRemittance: string;
};

export type FetchIrmDetailsResponse = { irmResplst: WireIrm[] };

export type WireErrorDetail = { serialNo: number | null; field: string | null; code: string; message: string };

export type PushIrmToGenEbrcRequest = {
  iecNumber: string;
  requestId: string;
  recordResCount: number;
  /** 101 to 104, a number on the wire. */
  uploadType: number;
  decalarationFlag: string;
  /** The lines in the interface's wire shape (domain/push-line.ts, lineToWire). */
  ebrcBulkGenDtos: Record<string, unknown>[];
};

export type AckStatus = 'Validated' | 'Failed';

export type PushIrmToGenEbrcResponse = {
  /** Null when the push is refused (ackStatus Failed). */
  dgftAckId: string | null;
  requestId: string;
  ackStatus: AckStatus;
  recordResCount: number;
  errorDetails: WireErrorDetail[];
};

export type GetRequestStatusRequest = { requestId: string };

export type WireRecordStatus = {
  serialNo: number;
  status: 'PENDING' | 'GENERATED' | 'FAILED';
  ebrcNumber: string | null;
  ebrcDate: WireDate | null;
  errorDetails: WireErrorDetail[];
};

export type ProcessingStatus = 'Pending' | 'Processed' | 'Errored';

export type GetRequestStatusResponse = {
  /** Null for a push refused at acknowledgement, and for a requestId never received. */
  dgftAckId: string | null;
  requestId: string;
  recordResCount: number;
  recordProCount: number;
  recordFailCount: number;
  processingStatus: ProcessingStatus;
  ebrcBulkGenStatusLst: WireRecordStatus[];
  /**
   * Decided (the doc is silent): the refusal reasons of a push refused at acknowledgement, as its acknowledgement
   * gave them; for a requestId never received, one entry with code REQUEST_NOT_RECEIVED_CODE. Absent otherwise.
   */
  errorDetails?: WireErrorDetail[];
};

/**
 * Decided: the code in a status answer's errorDetails for a requestId the authority never received. It travels in
 * the signed envelope, so a stray 404 (a wrong URL, a proxy) can never be read as "never received".
 */
export const REQUEST_NOT_RECEIVED_CODE = 'REQUEST_NOT_RECEIVED';

export type FetchEbrcDetailsRequest = {
  iecCode: string;
  /** Optional filters are null. */
  eBRCIssueFromDt: WireDate | null;
  eBRCIssueToDt: WireDate | null;
  sbCumInvoiceNumber: string | null;
  sbCumInvoiceDate: WireDate | null;
};

export type WireEbrc = {
  ebrcNumber: string;
  ebrcDate: WireDate;
  irmNumber: string;
  sbCumInvoiceNumber: string;
  sbCumInvoiceDate: WireDate;
  realisedValueFCC: WireAmount;
  currency: string;
  iecCode: string;
  status: string;
};

export type FetchEbrcDetailsResponse = { eBRCRespList: WireEbrc[] };

/** The plain request and response of each enveloped operation. */
export type EnvelopedMessages = {
  fetchIRMDetails: { request: FetchIrmDetailsRequest; response: FetchIrmDetailsResponse };
  pushIRMToGenEBRC: { request: PushIrmToGenEbrcRequest; response: PushIrmToGenEbrcResponse };
  getRequestStatus: { request: GetRequestStatusRequest; response: GetRequestStatusResponse };
  fetchEBRCDetails: { request: FetchEbrcDetailsRequest; response: FetchEbrcDetailsResponse };
};

/** The body of every enveloped request and response. */
export type EnvelopeBody = { data: string; sign: string };

/**
 * Decided (the doc names the codes, not their carrier): the authority answers ERR01-ERR06 with this plain body,
 * outside the envelope, since it may not hold the call's secret (ERR04, ERR05). HTTP 401 for ERR01, 400 otherwise.
 */
export type AuthorityErrorBody = { errorCode: string; errorMessage: string };
