/**
 * Request fields whose values are secrets, in every spelling the API takes: redacted from every log line, and entering
 * an Idempotency-Key fingerprint only as their own keyed digest.
 */
export const SECRET_FIELD_NAMES = [
  'authorityPassword',
  'password',
  'apiKey',
  'x-Api-Key',
  'clientSecret',
  'client_secret',
  'userPrivateKey',
  'userprivateKey',
  // A webhook endpoint's signing secret (answers of its creation and rotation).
  'secret',
] as const;
