import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { auditSourceOf } from '../../audit-source.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { notFound } from '../../../errors.ts';
import { issuePlatformKey, listPlatformKeys, requireApiKey, revokePlatformKey, type ApiKeyAuthenticator, type ApiKeyView } from '../../../services/platforms.ts';
import type { Api, Deps } from '../../deps.ts';
import { AdminListQuery } from '../../../schemas/admin.ts';
import { optional, text, validated, type Problem } from '../forms.ts';
import type { ConsolePage } from '../page.ts';
import { CONSOLE_PREFIX, failureOf, isHttps, platformOf, queryOf, redirectTo, render, signedIn } from '../render.ts';

const API_KEYS = '/console/api-keys';
const PAGE_SIZE = 20;
/** The most keys read (100 a page) to tell whether a key is the platform's last active one. */
const LAST_KEY_SCAN_PAGES = 50;

/**
 * A key just issued travels from the POST that issues it to the page that shows it (POST, then redirect, then GET:
 * a reload never issues another) in a cookie of its own: encrypted and bound to the user and the key, scoped to the
 * API keys' pages, HttpOnly, for a few minutes, and cleared by the page that shows it, so that it is shown once. The
 * key is never in a URL, a log line or the database.
 */
const NEW_KEY_COOKIE = 'ebrc_console_new_key';
const NEW_KEY_COOKIE_PATH = `${CONSOLE_PREFIX}/api-keys`;
const NEW_KEY_SECONDS = 5 * 60;
const IV_BYTES = 12;
const TAG_BYTES = 16;

const NOTICES: Record<string, string> = {
  revoked: 'The key is revoked: the API refuses it from its next request (401 api_key_invalid).',
};

function cookieKeyOf(deps: Deps): Buffer {
  return Buffer.from(hkdfSync('sha256', deps.context.serverKey.credentialsKey, Buffer.alloc(0), 'ebrc-gateway console new API key', 32));
}

function sealNewKey(cookieKey: Buffer, boundTo: string, apiKey: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', cookieKey, iv);
  cipher.setAAD(Buffer.from(boundTo));
  const body = Buffer.concat([cipher.update(JSON.stringify({ apiKey, at: Date.now() }), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

/** The key sealed for `boundTo`, or null when it is not (another user's or key's, altered, or too old). */
function openNewKey(cookieKey: Buffer, boundTo: string, sealed: string | undefined): string | null {
  if (sealed === undefined || sealed === '') return null;
  try {
    const raw = Buffer.from(sealed, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', cookieKey, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(boundTo));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    const opened = JSON.parse(Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8')) as { apiKey?: unknown; at?: unknown };
    if (typeof opened.apiKey !== 'string' || typeof opened.at !== 'number' || Date.now() - opened.at > NEW_KEY_SECONDS * 1000) return null;
    return opened.apiKey;
  } catch {
    return null;
  }
}

/** One of the platform's keys; another platform's, or none, is a 404 like a missing one. */
async function keyOfPlatform(deps: Deps, platformId: string, keyId: string): Promise<ApiKeyView> {
  const key = await requireApiKey(deps.database.db, keyId);
  if (key.platformId !== platformId) throw notFound(`API key ${keyId}`);
  return key;
}

/** Whether the platform has an active key other than `keyId`. */
async function hasOtherActiveKey(deps: Deps, platformId: string, keyId: string): Promise<boolean> {
  for (let page = 1; page <= LAST_KEY_SCAN_PAGES; page++) {
    const keys = await listPlatformKeys(deps.database.db, platformId, { page, limit: 100 });
    if (keys.items.some((key) => key.id !== keyId && key.revokedAt === null)) return true;
    if (page >= keys.meta.totalPages) return false;
  }
  return true;
}

async function listPage(request: FastifyRequest, reply: FastifyReply, deps: Deps, problem: Problem | null = null): Promise<FastifyReply> {
  const query = queryOf(request);
  const checked = validated<{ page: number; limit: number }>(AdminListQuery, { page: optional(query, 'page') ?? '1', limit: String(PAGE_SIZE) }, 'query');
  const page = await listPlatformKeys(deps.database.db, platformOf(request), checked);
  const notice = problem === null ? (NOTICES[text(query, 'notice')] ?? null) : null;
  return render(request, reply, 'api-keys/list', { title: 'API keys', page, notice, problem }, problem?.status ?? 200);
}

async function revokePage(request: FastifyRequest, reply: FastifyReply, deps: Deps, problem: Problem | null = null): Promise<FastifyReply> {
  const platformId = platformOf(request);
  const { id } = request.params as { id: string };
  const key = await keyOfPlatform(deps, platformId, id);
  const last = key.revokedAt === null && !(await hasOtherActiveKey(deps, platformId, key.id));
  return render(request, reply, 'api-keys/revoke', { title: 'Revoke an API key', key, last, problem }, problem?.status ?? 200);
}

export const apiKeysPage: ConsolePage = {
  nav: { label: 'API keys', href: API_KEYS },
  routes(app: Api, deps: Deps): void {
    const authenticator: Pick<ApiKeyAuthenticator, 'forget'> | undefined = deps.apiKeyAuthenticator;
    // A revocation must take effect at once in this process: without its authenticator the page would not be right.
    if (authenticator === undefined) throw new Error('the console needs the API key authenticator (deps.apiKeyAuthenticator, set by buildApp)');
    const cookieKey = cookieKeyOf(deps);
    const boundTo = (request: FastifyRequest, keyId: string) => `${signedIn(request).userId}/${keyId}`;

    app.get('/api-keys', async (request, reply) => listPage(request, reply, deps));

    // Issues a key (the admin API's service) and sends the browser to the page that shows it, once.
    app.post('/api-keys', { config: { audit: 'api_key.issue' } }, async (request, reply) => {
      const issued = await issuePlatformKey(deps.database.db, platformOf(request), auditSourceOf(request));
      reply.setCookie(NEW_KEY_COOKIE, sealNewKey(cookieKey, boundTo(request, issued.id), issued.apiKey), {
        path: NEW_KEY_COOKIE_PATH,
        httpOnly: true,
        sameSite: 'strict',
        secure: isHttps(request),
        maxAge: NEW_KEY_SECONDS,
      });
      return reply.redirect(`${API_KEYS}/${issued.id}/issued`, 303);
    });

    // The new key, shown this once: the cookie that brought it is cleared, so a reload (or a later visit) does not show it.
    app.get('/api-keys/:id/issued', async (request, reply) => {
      const { id } = request.params as { id: string };
      const key = await keyOfPlatform(deps, platformOf(request), id);
      const sealed = request.cookies[NEW_KEY_COOKIE];
      if (sealed !== undefined) reply.clearCookie(NEW_KEY_COOKIE, { path: NEW_KEY_COOKIE_PATH });
      const apiKey = key.revokedAt === null ? openNewKey(cookieKey, boundTo(request, key.id), sealed) : null;
      return render(request, reply, 'api-keys/issued', { title: apiKey === null ? 'API key' : 'API key issued', key, apiKey });
    });

    app.get('/api-keys/:id/revoke', async (request, reply) => revokePage(request, reply, deps));

    // Revokes one of the platform's keys (the admin API's service), forgotten at once by this process's authenticator.
    app.post('/api-keys/:id/revoke', { config: { audit: 'api_key.revoke' } }, async (request, reply) => {
      const { id } = request.params as { id: string };
      const key = await keyOfPlatform(deps, platformOf(request), id);
      try {
        await revokePlatformKey(deps.database.db, key.id, auditSourceOf(request), authenticator);
      } catch (error) {
        const problem = failureOf(request, error);
        if (problem.code === 'not_found') throw error;
        return revokePage(request, reply, deps, problem);
      }
      return redirectTo(reply, API_KEYS, 'revoked');
    });
  },
};
