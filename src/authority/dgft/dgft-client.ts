/**
 * The production client of the authority's wire protocol (authority-wire.md): tokens, the `{data, sign}` envelope
 * with the exact-case headers, the error table and retries. Every answer's signature is verified before anything in
 * it is read; mapping.ts turns the verified plain answers into the service's types.
 */
import { randomUUID } from 'node:crypto';
import type { CallOptions, IrmFetch, IrmQuery, PushMessage, RequestStatusAnswer } from '../authority.ts';
import type { CredentialSet } from '../protocol/credentials.ts';
import { EnvelopeError, envelopeJson, openResponse, sealRequest } from '../protocol/envelope.ts';
import { AUTHORITY_ERROR_CODES, isAuthorityErrorCode } from '../protocol/error-codes.ts';
import type { AccessTokenRequest, EnvelopedMessages, EnvelopedOperation, OperationName } from '../protocol/messages.ts';
import { HEADER_NAMES, JSON_CONTENT_TYPE, OPERATION_PATHS } from '../protocol/messages.ts';
import { sealClientSecret } from '../protocol/token-secret.ts';
import type { EbrcFetch, EbrcQuery } from '../authority.ts';
import type { PushOutcome } from './mapping.ts';
import {
  UnreadableAnswer,
  ebrcQueryToWire,
  ebrcsFromWire,
  irmQueryToWire,
  irmsFromWire,
  pushMessageToWire,
  pushOutcomeFromWire,
  requestStatusFromWire,
  requestStatusQueryToWire,
} from './mapping.ts';
import type { IssuedToken } from './token-cache.ts';
import { createTokenCache } from './token-cache.ts';
import type { CallScope, HttpAnswer, RetryPolicy } from './transport.ts';
import { DEFAULT_RETRY_POLICY, TransientFailure, openCallScope, postJson, withRetries } from './transport.ts';
import { WireFailure } from './wire-failure.ts';

export type DgftClientOptions = {
  /** AUTHORITY_URL: the base of the enveloped operations, e.g. https://host/genebrc. */
  baseUrl: string;
  /** AUTHORITY_TOKEN_URL: the base of getAccessToken; baseUrl when absent. */
  tokenBaseUrl?: string | undefined;
  /** AUTHORITY_EGRESS_IP: the address the authority sees, named in ip_not_whitelisted failures. */
  egressIp?: string | undefined;
  retry?: Partial<RetryPolicy> | undefined;
  /** How long before expiry a token is renewed (default 30 s, at most half its lifetime). */
  tokenRenewalMarginMs?: number | undefined;
  now?: (() => number) | undefined;
};

export type DgftClient = {
  getAccessToken(credentials: CredentialSet, options?: CallOptions): Promise<string>;
  fetchIrmDetails(credentials: CredentialSet, query: IrmQuery, options?: CallOptions): Promise<IrmFetch>;
  pushIrmToGenEbrc(credentials: CredentialSet, message: PushMessage, options?: CallOptions): Promise<PushOutcome>;
  /** Null when the authority never received that requestId. */
  getRequestStatus(credentials: CredentialSet, requestId: string, options?: CallOptions): Promise<RequestStatusAnswer | null>;
  fetchEbrcDetails(credentials: CredentialSet, query: EbrcQuery, options?: CallOptions): Promise<EbrcFetch>;
};

const DEFAULT_TOKEN_RENEWAL_MARGIN_MS = 30_000;

/** What an enveloped exchange yields when the authority refuses its access token (HTTP 401). */
const TOKEN_REFUSED = Symbol('token refused');

export function createDgftClient(options: DgftClientOptions): DgftClient {
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const tokenBaseUrl = (options.tokenBaseUrl ?? options.baseUrl).replace(/\/+$/, '');
  const now = options.now ?? Date.now;
  const tokens = createTokenCache({
    requestToken,
    renewalMarginMs: options.tokenRenewalMarginMs ?? DEFAULT_TOKEN_RENEWAL_MARGIN_MS,
    now,
  });

  async function requestToken(credentials: CredentialSet): Promise<IssuedToken> {
    const scope = openCallScope('getAccessToken', policy, undefined);
    return withRetries(scope, async () => {
      const request: AccessTokenRequest = {
        client_id: credentials.clientId,
        client_secret: await sealClientSecret(credentials.clientSecret),
      };
      const headers = { [HEADER_NAMES.apiKey]: credentials.apiKey, [HEADER_NAMES.contentType]: JSON_CONTENT_TYPE };
      const answer = await postJson(`${tokenBaseUrl}${OPERATION_PATHS.getAccessToken}`, headers, JSON.stringify(request), scope);
      if (answer.status === 401) {
        const code = authorityCodeOf(answer.body);
        throw new WireFailure('credentials_invalid', 'getAccessToken', 'The authority refused the client id or secret (HTTP 401).', {
          httpStatus: 401,
          ...(code === null ? {} : { authorityCode: code }),
        });
      }
      refuseUnlessAnswered(answer, scope, credentials);
      const body = answer.body as Record<string, unknown>;
      const { accessToken, expiresIn } = body;
      if (typeof accessToken !== 'string' || accessToken.length === 0 || typeof expiresIn !== 'number' || !(expiresIn > 0)) {
        throw misconfigured('getAccessToken', credentials, 'The token answer lacks an accessToken or a positive expiresIn.');
      }
      return { accessToken, expiresInSeconds: expiresIn };
    });
  }

  async function call<O extends EnvelopedOperation>(
    operation: O,
    credentials: CredentialSet,
    request: EnvelopedMessages[O]['request'],
    callerSignal: AbortSignal | undefined,
  ): Promise<Record<string, unknown>> {
    const scope = openCallScope(operation, policy, callerSignal);
    const token = await tokens.current(credentials, scope.signal);
    const answer = await withRetries(scope, () => exchange(scope, credentials, token, request));
    if (answer !== TOKEN_REFUSED) return answer;
    const renewed = await tokens.renewAfterRefusal(credentials, token, scope.signal);
    const retried = await withRetries(scope, () => exchange(scope, credentials, renewed, request));
    if (retried !== TOKEN_REFUSED) return retried;
    throw new WireFailure('credentials_invalid', operation, `The authority refused a freshly issued access token for ${operation} (HTTP 401).`, { httpStatus: 401 });
  }

  async function exchange(
    scope: CallScope,
    credentials: CredentialSet,
    accessToken: string,
    request: object,
  ): Promise<Record<string, unknown> | typeof TOKEN_REFUSED> {
    const profile = credentials.envelopeProfile;
    const sealed = await sealRequest(request, {
      profile,
      authorityPublicKey: credentials.authorityPublicKey,
      userPrivateKey: credentials.userPrivateKey,
    });
    const headers = {
      [HEADER_NAMES.accessToken]: accessToken,
      [HEADER_NAMES.clientId]: credentials.clientId,
      [HEADER_NAMES.secretVal]: sealed.secretVal,
      [HEADER_NAMES.messageId]: randomUUID(),
      [HEADER_NAMES.apiKey]: credentials.apiKey,
      [HEADER_NAMES.contentType]: JSON_CONTENT_TYPE,
    };
    const answer = await postJson(`${baseUrl}${OPERATION_PATHS[scope.operation]}`, headers, envelopeJson(sealed.body), scope);
    if (answer.status === 401) return TOKEN_REFUSED;
    refuseUnlessAnswered(answer, scope, credentials);
    try {
      return await openResponse(answer.body, { profile, secret: sealed.secret, authorityPublicKey: credentials.authorityPublicKey });
    } catch (error) {
      if (!(error instanceof EnvelopeError)) throw error;
      throw misconfigured(scope.operation, credentials, `The answer fails ${error.code} on our side: ${error.message}`);
    }
  }

  /** Throws for every answer but a 2xx that is not an error body; a 401 is the caller's to handle. */
  function refuseUnlessAnswered(answer: HttpAnswer, scope: CallScope, credentials: CredentialSet): void {
    const { status, body } = answer;
    if (status === 403) {
      const egress = options.egressIp === undefined ? 'this service\'s egress IP' : `the egress IP ${options.egressIp}`;
      throw new WireFailure('ip_not_whitelisted', scope.operation, `The authority does not accept calls from ${egress}: it must be whitelisted (HTTP 403).`, {
        httpStatus: 403,
        ...(options.egressIp === undefined ? {} : { egressIp: options.egressIp }),
      });
    }
    if (status === 429 || status >= 500) {
      throw new TransientFailure('unavailable', `${scope.operation} answered HTTP ${status}.`, answer.retryAfterMs);
    }
    const code = authorityCodeOf(body);
    if (code !== null) throw authorityRefusal(code, status, body, scope, credentials);
    if (status < 200 || status > 299) throw misconfigured(scope.operation, credentials, `The authority answered HTTP ${status}.`, { httpStatus: status });
    if (typeof body !== 'object' || body === null) throw misconfigured(scope.operation, credentials, 'The answer is not a JSON object.');
  }

  function authorityRefusal(code: string, status: number, body: unknown, scope: CallScope, credentials: CredentialSet): WireFailure {
    const said = (body as { errorMessage?: unknown }).errorMessage;
    const meaning = isAuthorityErrorCode(code) ? AUTHORITY_ERROR_CODES[code].meaning : 'a code this client does not know.';
    const message = `The authority answered ${code} to ${scope.operation}${typeof said === 'string' ? ` ("${said}")` : ''}: ${meaning}`;
    if (code === 'ERR01') return new WireFailure('credentials_invalid', scope.operation, message, { httpStatus: status, authorityCode: code });
    return misconfigured(scope.operation, credentials, message, { httpStatus: status, authorityCode: code });
  }

  function read<T>(operation: OperationName, credentials: CredentialSet, answer: Record<string, unknown>, map: (answer: Record<string, unknown>) => T): T {
    try {
      return map(answer);
    } catch (error) {
      if (!(error instanceof UnreadableAnswer)) throw error;
      throw misconfigured(operation, credentials, `The authority's answer to ${operation} does not read as the protocol says: ${error.message}`);
    }
  }

  return {
    getAccessToken(credentials, callOptions) {
      return tokens.current(credentials, openCallScope('getAccessToken', policy, callOptions?.signal).signal);
    },
    async fetchIrmDetails(credentials, query, callOptions) {
      const answer = await call('fetchIRMDetails', credentials, irmQueryToWire(query), callOptions?.signal);
      return read('fetchIRMDetails', credentials, answer, irmsFromWire);
    },
    async pushIrmToGenEbrc(credentials, message, callOptions) {
      const answer = await call('pushIRMToGenEBRC', credentials, pushMessageToWire(message), callOptions?.signal);
      return read('pushIRMToGenEBRC', credentials, answer, (plain) => pushOutcomeFromWire(plain, message.requestId));
    },
    async getRequestStatus(credentials, requestId, callOptions) {
      const answer = await call('getRequestStatus', credentials, requestStatusQueryToWire(requestId), callOptions?.signal);
      return read('getRequestStatus', credentials, answer, (plain) => requestStatusFromWire(plain, requestId));
    },
    async fetchEbrcDetails(credentials, query, callOptions) {
      const answer = await call('fetchEBRCDetails', credentials, ebrcQueryToWire(query), callOptions?.signal);
      return read('fetchEBRCDetails', credentials, answer, ebrcsFromWire);
    },
  };
}

function misconfigured(
  operation: OperationName,
  credentials: CredentialSet,
  message: string,
  details: { httpStatus?: number; authorityCode?: string } = {},
): WireFailure {
  const profile = credentials.envelopeProfile;
  return new WireFailure('misconfigured', operation, `${message} (envelope profile ${profile})`, { ...details, profile });
}

/** The authority's code when the body is its plain error body. */
function authorityCodeOf(body: unknown): string | null {
  if (typeof body !== 'object' || body === null) return null;
  const code = (body as { errorCode?: unknown }).errorCode;
  return typeof code === 'string' && code.length > 0 ? code : null;
}
