/**
 * The sandbox authority's HTTP side: the authority's wire protocol (authority-wire.md, authority-protocol.md) as
 * src/authority/dgft's client speaks it, plus POST /sandbox/issueApiCredentials, the portal's and the bank's test
 * helpers (POST /sandbox/portal/..., /sandbox/bank/...: outside-changes.ts) and GET /health.
 *
 * A protocol call passes, in this order (the first that fails answers):
 *   the IP allow-list (403) → x-api-key, a known key (401 "Unauthorized", the gateway's authorizer) → the rate limit
 *   of that key's client (429 with Retry-After) → Content-Type and the envelope headers, in their exact case (ERR02)
 *   → client_id, the key's own (ERR01) → accessToken, live and issued to that client (401) → the account's behaviour
 *   (expired: ERR01) → the envelope (ERR03-ERR06) → the account's behaviour (outage: 503; slow: no answer; both
 *   except for a credential check's one-day fetchIRMDetails) → the operation.
 * ERRxx answers are `{errorCode, errorMessage}`; the gateway's other answers are `{message}`.
 *
 * Values that make a push misbehave on purpose (billNo of any line):
 *   SANDBOX-OUTAGE  HTTP 503; nothing is stored.
 *   SANDBOX-SLOW    no answer: the call is held until the caller goes away; nothing is stored.
 *   SANDBOX-LOST    stored and accepted, then the connection is destroyed before the answer.
 *   SANDBOX-FAIL    accepted; the line fails at processing (authority.ts).
 */
import { isIP } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BlockList } from 'node:net';
import Fastify from 'fastify';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import { ENVELOPE_PROFILES, EnvelopeError, envelopeJson, isEnvelopeProfile, openRequest, readEnvelopeHeaders, sealResponse } from '../src/authority/protocol/envelope.ts';
import type { EnvelopeHeaders, EnvelopeProfile } from '../src/authority/protocol/envelope.ts';
import { AUTHORITY_ERROR_CODES } from '../src/authority/protocol/error-codes.ts';
import type { AuthorityErrorCode } from '../src/authority/protocol/error-codes.ts';
import type { AuthorityErrorBody, EnvelopedOperation } from '../src/authority/protocol/messages.ts';
import { HEADER_NAMES, JSON_CONTENT_TYPE, OPERATION_PATHS } from '../src/authority/protocol/messages.ts';
import { checkClientSecret } from '../src/authority/protocol/token-secret.ts';
import { OUTAGE_PASSWORD, SANDBOX_PASSWORD, SLOW_PASSWORD, findSandboxAccount, findSandboxAccountByIec } from './accounts.ts';
import type { SandboxAccount } from './accounts.ts';
import type { SandboxAuthority } from './authority.ts';
import type { CredentialRegistry, SandboxCredentialSet, TokenStore } from './credentials.ts';
import { HelperRefusal, type OutsideChanges } from './outside-changes.ts';
import { createRateLimiter } from './rate-limit.ts';
import type { SandboxSchema } from './store/schema.ts';
import { readEbrcFilters, readIrmFilters, readRequestId } from './wire-requests.ts';

const OUTAGE_BILL_NO = 'SANDBOX-OUTAGE';
const SLOW_BILL_NO = 'SANDBOX-SLOW';
const LOST_BILL_NO = 'SANDBOX-LOST';

// A 999-line push, base64 twice over, is above Fastify's default 1 MiB.
const BODY_LIMIT = 16 * 1024 * 1024;
const IPV4_MAPPED_PREFIX = '::ffff:';

export type SandboxServerOptions = {
  db: Kysely<SandboxSchema>;
  authority: SandboxAuthority;
  outside: OutsideChanges;
  credentials: CredentialRegistry;
  tokens: TokenStore;
  allowedIps: BlockList | null;
  rateLimitPerSecond: number;
  rateLimitBurst: number;
  pushAnswerDelayMs: number;
  /** The embedded database's folder, absolute, or null on PostgreSQL: /health names it, with the pid. */
  dataDir: string | null;
  logger: FastifyBaseLogger;
  now: () => Date;
};

/** What an operation makes of a call: an answer to seal, or one of the push's deliberate faults. */
type Outcome =
  | { kind: 'answer'; message: object }
  | { kind: 'outage' }
  | { kind: 'hang' }
  | { kind: 'lose' };

type Operation = (set: SandboxCredentialSet, message: Record<string, unknown>, log: FastifyBaseLogger) => Promise<Outcome>;

export function buildSandboxServer(options: SandboxServerOptions): FastifyInstance {
  const { authority, credentials, tokens, now } = options;
  const rateLimiter = createRateLimiter({ ratePerSecond: options.rateLimitPerSecond, burst: options.rateLimitBurst });

  const app = Fastify({
    loggerInstance: options.logger,
    bodyLimit: BODY_LIMIT,
    // Every connection is closed at once, the calls held on purpose included: waiting for idle keep-alive
    // connections to drain can take Fastify's whole keep-alive timeout (72 s) once a caller has given up on a held call.
    forceCloseConnections: true,
  });
  // The work of calls whose connection was closed goes on; close() waits for it before the storage is closed.
  const handlersRunning = new Set<Promise<unknown>>();
  app.addHook('onClose', async () => {
    await Promise.allSettled(handlersRunning);
  });
  const post = (path: string, handler: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>): void => {
    app.post(path, (request, reply) => {
      const running = handler(request, reply);
      handlersRunning.add(running);
      const settle = () => handlersRunning.delete(running);
      running.then(settle, settle);
      return running;
    });
  };
  // Every body is kept as it came: the envelope is opened from the raw text, and Content-Type is checked by hand.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ message: 'Not Found' }));
  app.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
    const status = error.statusCode ?? 500;
    if (status >= 500) request.log.error({ err: error }, 'the sandbox failed to answer a call');
    return reply.code(status).send({ message: status >= 500 ? 'Internal Server Error' : error.message });
  });

  /** The gateway's checks; the caller's credential set when they pass, else null with the refusal sent. */
  function admit(request: FastifyRequest, reply: FastifyReply): SandboxCredentialSet | null {
    const ip = callerIp(request);
    if (options.allowedIps !== null && !options.allowedIps.check(ip, isIP(ip) === 6 ? 'ipv6' : 'ipv4')) {
      request.log.warn({ ip }, 'refused a caller outside SANDBOX_ALLOWED_IPS');
      void reply.code(403).send({ message: `Forbidden: ${ip} is not whitelisted.` });
      return null;
    }
    const apiKey = exactHeaders(request).get(HEADER_NAMES.apiKey);
    const set = apiKey === undefined ? undefined : credentials.byApiKey(apiKey);
    if (set === undefined) {
      void reply.code(401).send({ message: 'Unauthorized' });
      return null;
    }
    const retryAfterSeconds = rateLimiter.take(set.clientId);
    if (retryAfterSeconds !== null) {
      void reply.code(429).header('Retry-After', String(retryAfterSeconds)).send({ message: 'Too Many Requests' });
      return null;
    }
    return set;
  }

  post(OPERATION_PATHS.getAccessToken, async (request, reply) => {
    const set = admit(request, reply);
    if (set === null) return reply;
    try {
      requireJsonContentType(request);
    } catch (error) {
      return sendEnvelopeError(reply, error);
    }
    const body = parseJsonObject(bodyText(request));
    if (body === null || typeof body.client_id !== 'string' || typeof body.client_secret !== 'string') {
      return sendError(reply, 'ERR03', 'The body must be a JSON object with the strings client_id and client_secret.');
    }
    if (body.client_id !== set.clientId || !(await checkClientSecret(body.client_secret, set.clientSecret))) {
      return sendError(reply, 'ERR01', 'The client id or client secret is wrong.');
    }
    if (set.account.behaviour === 'credentials_expired') return sendError(reply, 'ERR01', expiredMessage(set));
    return reply.send(await tokens.issue(set, now()));
  });

  const operations: Record<EnvelopedOperation, Operation> = {
    fetchIRMDetails: async (set, message) =>
      ({ kind: 'answer', message: await authority.fetchIrms(set.account, readIrmFilters(message)) }),
    pushIRMToGenEBRC: async (set, message, log) => {
      const lines: unknown[] = Array.isArray(message.ebrcBulkGenDtos) ? message.ebrcBulkGenDtos : [];
      const billNos = new Set(lines.map((line) => (line as { billNo?: unknown } | null)?.billNo));
      if (billNos.has(OUTAGE_BILL_NO)) return { kind: 'outage' };
      if (billNos.has(SLOW_BILL_NO)) return { kind: 'hang' };
      const acknowledgement = await authority.receivePush(set.account, message);
      log.info(
        { requestId: acknowledgement.requestId, ackStatus: acknowledgement.ackStatus, codes: acknowledgement.errorDetails.map((detail) => detail.code) },
        'push received',
      );
      if (options.pushAnswerDelayMs > 0) await sleep(options.pushAnswerDelayMs);
      if (acknowledgement.ackStatus === 'Validated' && billNos.has(LOST_BILL_NO)) return { kind: 'lose' };
      return { kind: 'answer', message: acknowledgement };
    },
    getRequestStatus: async (set, message) =>
      ({ kind: 'answer', message: await authority.requestStatus(set.account, readRequestId(message)) }),
    fetchEBRCDetails: async (set, message) =>
      ({ kind: 'answer', message: await authority.fetchEbrcs(set.account, readEbrcFilters(message)) }),
  };

  for (const operation of Object.keys(operations) as EnvelopedOperation[]) {
    post(OPERATION_PATHS[operation], async (request, reply) => {
      const set = admit(request, reply);
      if (set === null) return reply;
      const profile = credentials.profileOf(set);
      let headers: EnvelopeHeaders;
      try {
        requireJsonContentType(request);
        headers = readExactEnvelopeHeaders(request);
      } catch (error) {
        return sendEnvelopeError(reply, error);
      }
      if (headers.clientId !== set.clientId) return sendError(reply, 'ERR01', 'client_id is not the client of this x-api-key.');
      if (!(await tokens.isValid(headers.accessToken, set.clientId, now()))) {
        return reply.code(401).send({ message: 'The access token is not valid for this client, or has expired.' });
      }
      if (set.account.behaviour === 'credentials_expired') return sendError(reply, 'ERR01', expiredMessage(set));

      try {
        const opened = await openRequest({
          rawBody: bodyText(request),
          secretVal: headers.secretVal,
          profile,
          authorityPrivateKey: credentials.authorityPrivateKey,
          userPublicKey: set.userPublicKey,
        });
        if (set.account.behaviour !== 'normal' && !isCredentialCheck(operation, opened.message)) {
          return set.account.behaviour === 'outage' ? unavailable(reply) : hold(request, reply);
        }
        const outcome = await operations[operation](set, opened.message, request.log);
        if (outcome.kind === 'outage') return unavailable(reply);
        if (outcome.kind === 'hang') return hold(request, reply);
        if (outcome.kind === 'lose') return lose(request, reply);
        const sealed = await sealResponse(outcome.message, { profile, secret: opened.secret, authorityPrivateKey: credentials.authorityPrivateKey });
        return reply.type('application/json; charset=utf-8').send(envelopeJson(sealed));
      } catch (error) {
        return sendEnvelopeError(reply, error, profile);
      }
    });
  }

  post('/sandbox/issueApiCredentials', async (request, reply) => {
    const body = parseJsonObject(bodyText(request));
    if (body === null || typeof body.username !== 'string' || typeof body.password !== 'string') {
      return reply.code(400).send({ error: 'invalid_request', message: 'The body must be a JSON object with the strings username and password.' });
    }
    const requestedProfile = body.envelopeProfile ?? null;
    if (requestedProfile !== null && !isEnvelopeProfile(requestedProfile)) {
      return reply.code(400).send({ error: 'invalid_request', message: `envelopeProfile must be one of ${ENVELOPE_PROFILES.join(', ')}.` });
    }
    if (body.password === OUTAGE_PASSWORD) return reply.code(502).send({ error: 'unavailable', message: 'The authority is unavailable.' });
    if (body.password === SLOW_PASSWORD) return hold(request, reply);
    const account = findSandboxAccount(body.username);
    const set = account === undefined ? undefined : credentials.byUsername(account.username);
    if (set === undefined || body.password !== SANDBOX_PASSWORD) {
      return reply.code(401).send({ error: 'credentials_invalid', message: 'Unknown username or wrong password.' });
    }
    if (set.account.behaviour === 'credentials_expired') {
      return reply.code(401).send({ error: 'credentials_expired', message: expiredMessage(set) });
    }
    if (isEnvelopeProfile(requestedProfile)) await credentials.issueForProfile(set, requestedProfile);
    request.log.info({ username: set.account.username, envelopeProfile: credentials.profileOf(set) }, 'API credential set issued');
    return reply.send(credentials.credentialFile(set));
  });

  /**
   * The portal's and the bank's test helpers (outside-changes.ts): plain JSON, no envelope or token, like
   * issueApiCredentials. The body names the account by `iecCode`; a refusal is `{error, message}` with its status.
   */
  const helper = (path: string, status: number, work: (account: SandboxAccount, body: Record<string, unknown>, params: Record<string, string>) => Promise<object>) =>
    post(path, async (request, reply) => {
      const body = parseJsonObject(bodyText(request));
      if (body === null) return reply.code(400).send({ error: 'invalid_request', message: 'The body must be a JSON object.' });
      const account = typeof body.iecCode === 'string' ? findSandboxAccountByIec(body.iecCode) : undefined;
      if (account === undefined) return reply.code(404).send({ error: 'unknown_iec', message: 'iecCode must be the IEC of a sandbox test account.' });
      try {
        const changed = await work(account, body, request.params as Record<string, string>);
        request.log.info({ path, iecCode: account.iecCode }, 'a test helper changed the authority\'s data');
        return reply.code(status).send(changed);
      } catch (error) {
        if (!(error instanceof HelperRefusal)) throw error;
        return reply.code(error.status).send({ error: 'refused', message: error.message });
      }
    });
  helper('/sandbox/portal/ebrcs', 201, (account, body) => options.outside.portalEbrc(account, body));
  helper('/sandbox/portal/ebrcs/:ebrcNumber/cancel', 200, (account, _body, params) => options.outside.cancelEbrc(account, params.ebrcNumber ?? ''));
  helper('/sandbox/bank/irms', 201, (account, body) => options.outside.bankIrm(account, body));
  helper('/sandbox/bank/irms/:irmNumber/amend', 200, (account, body, params) => options.outside.amendIrm(account, params.irmNumber ?? '', body));
  helper('/sandbox/bank/irms/:irmNumber/cancel', 200, (account, _body, params) => options.outside.cancelIrm(account, params.irmNumber ?? ''));

  // `program` says which program answers: `npm start` reuses a sandbox already on SANDBOX_PORT only when it is one.
  app.get('/health', async (request, reply) => {
    try {
      await sql`select 1`.execute(options.db);
      // The pid and the data folder let a service that finds this sandbox running say which process it is, and stop it
      // with itself when the sandbox keeps its state in that service's data folder.
      return reply.send({ status: 'ok', program: 'authority-sandbox', pid: process.pid, dataDir: options.dataDir });
    } catch (error) {
      request.log.error({ err: error }, 'the health check cannot reach the database');
      return reply.code(503).send({ status: 'unavailable', program: 'authority-sandbox' });
    }
  });

  return app;
}

/**
 * What a credential check sends after its token (a service's check: the IEC's IRMs of one day). outage.exporter and
 * slow.exporter answer it, so they validate; every other call of theirs meets the outage or is held.
 */
function isCredentialCheck(operation: EnvelopedOperation, message: Record<string, unknown>): boolean {
  if (operation !== 'fetchIRMDetails') return false;
  const { irmFromDate, irmToDate } = message;
  return typeof irmFromDate === 'string' && irmFromDate !== '' && irmFromDate === irmToDate;
}

/** The caller's address as the allow-list compares it: an IPv4 caller of an IPv6 socket as plain IPv4. */
function callerIp(request: FastifyRequest): string {
  const address = request.socket.remoteAddress ?? '';
  return address.startsWith(IPV4_MAPPED_PREFIX) && isIP(address.slice(IPV4_MAPPED_PREFIX.length)) === 4
    ? address.slice(IPV4_MAPPED_PREFIX.length)
    : address;
}

/** The headers under the names exactly as they came (Node lower-cases request.headers). */
function exactHeaders(request: FastifyRequest): Map<string, string> {
  const raw = request.raw.rawHeaders;
  const headers = new Map<string, string>();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] ?? '';
    if (!headers.has(name)) headers.set(name, raw[i + 1] ?? '');
  }
  return headers;
}

/** ERR02 naming the header when it came in another case than the authority reads. */
function requireExactCase(request: FastifyRequest, name: string): string | undefined {
  const value = exactHeaders(request).get(name);
  if (value !== undefined) return value;
  const sentAs = request.raw.rawHeaders.find((candidate, index) => index % 2 === 0 && candidate.toLowerCase() === name.toLowerCase());
  if (sentAs !== undefined) {
    throw new EnvelopeError('ERR02', `The header ${name} came as ${sentAs}; the authority reads header names in their exact case.`);
  }
  return undefined;
}

function requireJsonContentType(request: FastifyRequest): void {
  const contentType = requireExactCase(request, HEADER_NAMES.contentType);
  if (contentType?.split(';')[0]?.trim().toLowerCase() !== JSON_CONTENT_TYPE) {
    throw new EnvelopeError('ERR02', `The header ${HEADER_NAMES.contentType}: ${JSON_CONTENT_TYPE} is missing.`);
  }
}

function readExactEnvelopeHeaders(request: FastifyRequest): EnvelopeHeaders {
  const names = [HEADER_NAMES.accessToken, HEADER_NAMES.clientId, HEADER_NAMES.secretVal, HEADER_NAMES.messageId];
  // readEnvelopeHeaders looks names up lower-cased, as Node gives them; only the exact-case ones are handed over.
  return readEnvelopeHeaders(Object.fromEntries(names.map((name) => [name.toLowerCase(), requireExactCase(request, name)])));
}

function bodyText(request: FastifyRequest): string {
  return typeof request.body === 'string' ? request.body : '';
}

function parseJsonObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function expiredMessage(set: SandboxCredentialSet): string {
  return `The API credentials of ${set.account.username} have expired; the exporter must renew them at the authority.`;
}

function sendError(reply: FastifyReply, code: AuthorityErrorCode, errorMessage: string): FastifyReply {
  const body: AuthorityErrorBody = { errorCode: code, errorMessage };
  return reply.code(AUTHORITY_ERROR_CODES[code].httpStatus ?? 400).send(body);
}

function sendEnvelopeError(reply: FastifyReply, error: unknown, profile?: EnvelopeProfile): FastifyReply {
  if (!(error instanceof EnvelopeError)) throw error;
  const message = profile === undefined || (error.code !== 'ERR05' && error.code !== 'ERR06')
    ? error.message
    : `${error.message} (this credential set speaks envelope profile ${profile})`;
  return sendError(reply, error.code, message);
}

/** Never answers: the call is held until the caller goes away (or the sandbox closes). */
function hold(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  reply.hijack();
  request.log.info('holding a call without answer, on purpose');
  reply.raw.on('close', () => request.log.info('a held call ended'));
  return reply;
}

function unavailable(reply: FastifyReply): FastifyReply {
  return reply.code(503).send({ message: 'Service Unavailable' });
}

/** The answer is lost on the way back: the connection is destroyed after the work is done. */
function lose(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  reply.hijack();
  request.log.info('destroying the connection instead of answering, on purpose');
  request.raw.socket.destroy();
  return reply;
}
