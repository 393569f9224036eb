/**
 * A small authority for the client's tests: node:http on 127.0.0.1, speaking the protocol through the protocol
 * module's authority side, with answers and faults the test chooses.
 */
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPairSync } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { parseCredentialSet } from '../../../src/authority/protocol/credentials.ts';
import type { CredentialSet } from '../../../src/authority/protocol/credentials.ts';
import { EnvelopeError, openRequest, readEnvelopeHeaders, sealResponse } from '../../../src/authority/protocol/envelope.ts';
import type { EnvelopeProfile } from '../../../src/authority/protocol/envelope.ts';
import { AUTHORITY_ERROR_CODES } from '../../../src/authority/protocol/error-codes.ts';
import type { AuthorityErrorBody, EnvelopedOperation, PushIrmToGenEbrcResponse } from '../../../src/authority/protocol/messages.ts';
import { HEADER_NAMES, OPERATION_PATHS } from '../../../src/authority/protocol/messages.ts';
import { checkClientSecret } from '../../../src/authority/protocol/token-secret.ts';

/**
 * What the next call to a path meets instead of a normal answer:
 * an HTTP status (with an optional body and headers), `reset` (the socket is destroyed before any answer), `hang`
 * (no answer ever), `forge` (a normal answer signed with a key that is not the authority's), or `lose` (the call is
 * processed, then the socket is destroyed: the answer is lost on the way back).
 */
export type Interception =
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | 'reset'
  | 'hang'
  | 'forge'
  | 'lose';

export type RecordedCall = {
  path: string;
  /** Header names exactly as they arrived. */
  headerNames: string[];
  headers: http.IncomingHttpHeaders;
  /** The opened plain request of an enveloped call. */
  message: Record<string, unknown> | null;
};

type Handler = (request: Record<string, unknown>) => object;

const CLIENT_ID = 'client-7781';
const CLIENT_SECRET = 'client-secret-of-7781';
const API_KEY = 'gateway-key-7781';
export const FAKE_IEC = '0599001001';

export type FakeAuthority = {
  url: string;
  /** The exporter's credential set, as the service would hold it. */
  credentials: CredentialSet;
  calls: RecordedCall[];
  /** The profile the authority speaks with this client. */
  profile: EnvelopeProfile;
  /** The token lifetime it states. */
  expiresIn: number;
  /** When set, every access token is refused with HTTP 401. */
  refuseEveryToken: boolean;
  handlers: Partial<Record<EnvelopedOperation, Handler>>;
  intercept(path: string, ...interceptions: Interception[]): void;
  /** Back to a well-behaved authority: no recorded calls, no interceptions, spec-sha256, 300 s tokens. */
  reset(): void;
  /** Refuses the tokens issued so far, as an authority does when they expire early. */
  revokeTokens(): void;
  callsTo(path: string): RecordedCall[];
  close(): Promise<void>;
};

export async function startFakeAuthority(options: { profile?: EnvelopeProfile } = {}): Promise<FakeAuthority> {
  const authorityKeys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const userKeys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const forgerKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  const parsed = parseCredentialSet({
    iecCode: FAKE_IEC,
    client_Id: CLIENT_ID,
    client_secret: CLIENT_SECRET,
    'x-Api-Key': API_KEY,
    dgftpublicKey: authorityKeys.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
    userprivateKey: userKeys.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
  }, 'spec-sha256');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));

  const validTokens = new Set<string>();
  const interceptions = new Map<string, Interception[]>();
  const receivedRequestIds = new Set<string>();
  let tokenSequence = 0;

  const fake: FakeAuthority = {
    url: '',
    credentials: parsed.credentials,
    calls: [],
    profile: options.profile ?? 'spec-sha256',
    expiresIn: 300,
    refuseEveryToken: false,
    handlers: {
      pushIRMToGenEBRC: (request) => acknowledge(request, receivedRequestIds),
    },
    intercept(path, ...more) {
      interceptions.set(path, [...(interceptions.get(path) ?? []), ...more]);
    },
    reset() {
      fake.calls.length = 0;
      interceptions.clear();
      fake.profile = options.profile ?? 'spec-sha256';
      fake.expiresIn = 300;
      fake.refuseEveryToken = false;
    },
    revokeTokens() {
      validTokens.clear();
    },
    callsTo(path) {
      return fake.calls.filter((call) => call.path === path);
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = req.url ?? '';
    const rawBody = await readBody(req);
    const call: RecordedCall = { path, headerNames: req.rawHeaders.filter((_, i) => i % 2 === 0), headers: req.headers, message: null };
    fake.calls.push(call);

    const interception = interceptions.get(path)?.shift();
    if (interception === 'reset') return void req.socket.destroy();
    if (interception === 'hang') return;
    if (typeof interception === 'object') return sendJson(res, interception.status, interception.body ?? {}, interception.headers);

    if (req.headers[HEADER_NAMES.apiKey] !== API_KEY) return sendJson(res, 401, { message: 'Unauthorized' });
    if (path === OPERATION_PATHS.getAccessToken) return issueToken(rawBody, res);

    const operation = (Object.keys(OPERATION_PATHS) as (keyof typeof OPERATION_PATHS)[])
      .find((name) => OPERATION_PATHS[name] === path && name !== 'getAccessToken') as EnvelopedOperation | undefined;
    if (operation === undefined) return sendJson(res, 404, { message: 'Not found' });

    let opened;
    try {
      const headers = readEnvelopeHeaders(req.headers);
      if (fake.refuseEveryToken || !validTokens.has(headers.accessToken)) return sendJson(res, 401, { message: 'token expired' });
      if (headers.clientId !== CLIENT_ID) return sendError(res, 'ERR01');
      opened = await openRequest({
        rawBody,
        secretVal: headers.secretVal,
        profile: fake.profile,
        authorityPrivateKey: authorityKeys.privateKey,
        userPublicKey: userKeys.publicKey,
      });
    } catch (error) {
      if (error instanceof EnvelopeError) return sendError(res, error.code);
      throw error;
    }
    call.message = opened.message;
    const handler = fake.handlers[operation];
    if (handler === undefined) return sendJson(res, 500, { message: `no handler for ${operation}` });
    const signingKey: KeyObject = interception === 'forge' ? forgerKey : authorityKeys.privateKey;
    const answer = await sealResponse(handler(opened.message), { profile: fake.profile, secret: opened.secret, authorityPrivateKey: signingKey });
    if (interception === 'lose') return void req.socket.destroy();
    sendJson(res, 200, answer);
  }

  async function issueToken(rawBody: string, res: ServerResponse): Promise<void> {
    const request = JSON.parse(rawBody) as { client_id?: unknown; client_secret?: unknown };
    const secretMatches = typeof request.client_secret === 'string' && await checkClientSecret(request.client_secret, CLIENT_SECRET);
    if (request.client_id !== CLIENT_ID || !secretMatches) return sendError(res, 'ERR01');
    const accessToken = `token-${++tokenSequence}`;
    validTokens.add(accessToken);
    sendJson(res, 200, { accessToken, expiresIn: fake.expiresIn, client_id: CLIENT_ID });
  }

  const server = http.createServer((req, res) => {
    serve(req, res).catch((error: unknown) => sendJson(res, 500, { message: String(error) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}

function acknowledge(request: Record<string, unknown>, received: Set<string>): PushIrmToGenEbrcResponse {
  const requestId = String(request.requestId);
  const recordResCount = Number(request.recordResCount);
  if (received.has(requestId)) {
    return {
      dgftAckId: null,
      requestId,
      ackStatus: 'Failed',
      recordResCount,
      errorDetails: [{ serialNo: null, field: 'requestId', code: 'ERR09', message: 'requestId already received.' }],
    };
  }
  received.add(requestId);
  return { dgftAckId: `ACK-${received.size}`, requestId, ackStatus: 'Validated', recordResCount, errorDetails: [] };
}

function sendError(res: ServerResponse, code: keyof typeof AUTHORITY_ERROR_CODES): void {
  const entry = AUTHORITY_ERROR_CODES[code];
  const body: AuthorityErrorBody = { errorCode: code, errorMessage: entry.meaning };
  sendJson(res, entry.httpStatus ?? 200, body);
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
