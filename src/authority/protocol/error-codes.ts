/**
 * The authority's codes below the rule violations (domain.md, "Other authority error codes"; authority-wire.md,
 * "Errors and retries"). ERR01-ERR06 refuse the call before its message is read and come in a plain
 * AuthorityErrorBody; ERR07-ERR09 refuse a readable push and come in its acknowledgement's errorDetails, like the
 * rule violations ERR10-ERR39. Which envelope fault is ERR02, ERR03 or ERR04 is this project's reading of the codes'
 * one-line names; envelope.ts raises them in this sense.
 */
export type AuthorityErrorLayer = 'credentials' | 'envelope' | 'message';

export type AuthorityErrorCarrier = 'error_body' | 'error_details';

export type AuthorityErrorCodeEntry = {
  layer: AuthorityErrorLayer;
  carriedIn: AuthorityErrorCarrier;
  /** The HTTP status of an error body; null for codes carried in errorDetails of an HTTP 200 answer. */
  httpStatus: 401 | 400 | null;
  meaning: string;
};

export const AUTHORITY_ERROR_CODES = {
  ERR01: {
    layer: 'credentials',
    carriedIn: 'error_body',
    httpStatus: 401,
    meaning: 'The client id or client secret is wrong.',
  },
  ERR02: {
    layer: 'envelope',
    carriedIn: 'error_body',
    httpStatus: 400,
    meaning: 'A mandatory header (accessToken, client_id, secretVal, messageID) is missing or empty, or messageID is longer than 50 characters.',
  },
  ERR03: {
    layer: 'envelope',
    carriedIn: 'error_body',
    httpStatus: 400,
    meaning: 'Invalid JSON: the body is not a JSON object with the strings data and sign, or data does not decrypt to the base64 text of a JSON object.',
  },
  ERR04: {
    layer: 'envelope',
    carriedIn: 'error_body',
    httpStatus: 400,
    meaning: "Invalid secret value: secretVal is not base64, does not decrypt with the authority's private key (RSA-OAEP SHA-256), or is not 32 printable ASCII characters.",
  },
  ERR05: {
    layer: 'envelope',
    carriedIn: 'error_body',
    httpStatus: 400,
    meaning: "Cannot decrypt: data is not base64, is too short for IV, salt and tag, or fails AES-256-GCM authentication (the profile's key derivation or IV differs, or data was altered).",
  },
  ERR06: {
    layer: 'envelope',
    carriedIn: 'error_body',
    httpStatus: 400,
    meaning: "Signature mismatch: sign is not base64 or does not verify with the user's public key over the profile's sign input.",
  },
  ERR07: {
    layer: 'message',
    carriedIn: 'error_details',
    httpStatus: null,
    meaning: 'The requestId is missing or longer than 50 characters.',
  },
  ERR08: {
    layer: 'message',
    carriedIn: 'error_details',
    httpStatus: null,
    meaning: 'recordResCount differs from the number of lines.',
  },
  ERR09: {
    layer: 'message',
    carriedIn: 'error_details',
    httpStatus: null,
    meaning: 'That requestId has already been received: its outcome is read with getRequestStatus.',
  },
} as const satisfies Record<string, AuthorityErrorCodeEntry>;

export type AuthorityErrorCode = keyof typeof AUTHORITY_ERROR_CODES;

export type EnvelopeErrorCode = 'ERR02' | 'ERR03' | 'ERR04' | 'ERR05' | 'ERR06';

export function isAuthorityErrorCode(code: string): code is AuthorityErrorCode {
  return Object.hasOwn(AUTHORITY_ERROR_CODES, code);
}
