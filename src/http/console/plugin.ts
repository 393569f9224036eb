import { hkdfSync } from 'node:crypto';
import path from 'node:path';
import fastifyCookie from '@fastify/cookie';
import fastifyCsrf from '@fastify/csrf-protection';
import fastifyFormbody from '@fastify/formbody';
import fastifyView from '@fastify/view';
import { Eta } from 'eta';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ConsoleSessions } from '../../services/console-sessions.ts';
import { DATABASE_RETRY_AFTER_SECONDS } from '../error-handler.ts';
import type { Api, Deps } from '../deps.ts';
import { ASSETS } from './assets.ts';
import { CONSOLE_PAGES } from './pages/index.ts';
import { problemOf } from './forms.ts';
import { CONSOLE_PREFIX, render, type NavEntry } from './render.ts';
import { signInRoutes, SESSION_COOKIE } from './sign-in.ts';
import { CONSOLE_ROUTE_ROLES, forbiddenForRole, roleNeeded, routeKey } from './roles.ts';
import { roleAllows } from '../../domain/console-roles.ts';
import { TwoFactor } from '../../services/two-factor.ts';
import { ENROLMENT_PATH } from './pages/account.ts';
import { CODE_PATH } from './sign-in.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A console route that needs no signed-in user (sign-in, the assets). */
    consolePublic?: boolean;
    /** A route a session waiting for its second factor may use (the code's page): every other sends it there. */
    consoleSecondFactor?: boolean;
    /** A route a user whose platform requires two factors may use before enrolling (the enrolment): others send it there. */
    consoleEnrolment?: boolean;
  }
}

const VIEWS = path.join(import.meta.dirname, 'views');
const ASSETS_ROUTE = `${CONSOLE_PREFIX}/assets/:name`;
const CSRF_COOKIE = 'ebrc_console_csrf';
/** Forms are small: the largest is an API credential set (five keys, a few KiB each). */
const FORM_BODY_LIMIT = 1024 * 1024;

/**
 * What every console answer carries: no script, style or form target but the console's own, never in a frame, no
 * referrer outside it. Views hold no inline script or style (the CSP refuses them).
 */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
};

const NAVIGATION: readonly NavEntry[] = CONSOLE_PAGES.flatMap((page) => (page.nav === undefined ? [] : [page.nav]));

/** `path`, with the GET asked for as where to go afterwards. */
function withNext(path: string, request: FastifyRequest): string {
  if (request.method !== 'GET') return path;
  return `${path}?${new URLSearchParams({ next: request.url }).toString()}`;
}

/** Where an unsigned visitor goes: the sign-in page, back to `next` afterwards (a GET's own path only). */
function signInRedirect(request: FastifyRequest, reply: FastifyReply, expired: boolean): FastifyReply {
  const params = new URLSearchParams();
  if (request.method === 'GET') params.set('next', request.url);
  if (expired) params.set('notice', 'expired');
  const query = params.toString();
  return reply.redirect(`${CONSOLE_PREFIX}/sign-in${query === '' ? '' : `?${query}`}`, 303);
}

/**
 * The web console (contract 10), registered by app.ts in a scope of its own under /console: none of /api/v1's API
 * key, rate limit or Idempotency-Key, and none of its routes in the OpenAPI document. Pages are server-rendered (eta
 * through @fastify/view) from the same services as the API, for the signed-in user's platform.
 *
 * Every route but sign-in and the assets requires a session (else a redirect to sign-in); every request other than
 * GET and HEAD a CSRF token (@fastify/csrf-protection: a secret in a signed HttpOnly cookie, a token in each form),
 * else a 403 page. Errors are pages too: a service's AppError with its status and the error table's title.
 */
export async function registerConsole(app: Api, deps: Deps): Promise<void> {
  const sessions = new ConsoleSessions({ db: deps.database.db, sessionHours: deps.config.consoleSessionHours });

  const twoFactor = new TwoFactor({ db: deps.database.db, vault: deps.context.vault });

  // None of the console is part of the API's OpenAPI document; every route but the public ones has its role in
  // CONSOLE_ROUTE_ROLES, and the map names no route that does not exist.
  const routesWithRoles = new Set<string>();
  app.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
    if (route.config?.consolePublic === true) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      const key = routeKey(method, route.url);
      if (roleNeeded(method, route.url) === undefined) throw new Error(`the console route ${key} has no role in CONSOLE_ROUTE_ROLES (src/http/console/roles.ts)`);
      routesWithRoles.add(key);
    }
  });
  app.addHook('onReady', async () => {
    const stale = Object.keys(CONSOLE_ROUTE_ROLES).filter((key) => !routesWithRoles.has(key));
    if (stale.length > 0) throw new Error(`CONSOLE_ROUTE_ROLES names routes the console does not have: ${stale.join(', ')}`);
  });

  // The CSRF cookie is signed with a key of its own, derived from the server's secret (as its other keys are).
  // Every key of the ring verifies (a cookie signed before a rotation stays good); the current one signs.
  const cookieKeys = deps.context.keyRing.keys.map((key) => Buffer.from(hkdfSync('sha256', key.credentialsKey, Buffer.alloc(0), 'ebrc-gateway console cookies', 32)));
  await app.register(fastifyCookie, { secret: cookieKeys });
  await app.register(fastifyFormbody, { bodyLimit: FORM_BODY_LIMIT });
  await app.register(fastifyCsrf, {
    cookieKey: CSRF_COOKIE,
    cookieOpts: { path: CONSOLE_PREFIX, sameSite: 'lax', httpOnly: true, signed: true },
    // Forms send it as a field; a script may send it as a header.
    getToken: (request) => {
      const field = (request.body as Record<string, unknown> | undefined)?._csrf;
      if (typeof field === 'string') return field;
      const header = request.headers['x-csrf-token'];
      return typeof header === 'string' ? header : undefined;
    },
  });
  await app.register(fastifyView, {
    engine: { eta: new Eta({ views: VIEWS, cache: true, autoEscape: true }) },
    root: VIEWS,
  });

  app.decorateRequest('consoleSession', null);
  app.decorateRequest('consoleNav', { getter: () => NAVIGATION });

  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(SECURITY_HEADERS);
    done();
  });
  // Who is signed in (the session cookie), as soon as the route is known and before any body is read: a route that
  // requires a user gets one or is never run, and a visitor without a session never has a body read.
  app.addHook('onRequest', async (request, reply) => {
    // The style sheet and the script are everyone's: no session to read.
    if (request.routeOptions.url === ASSETS_ROUTE) return;
    const token = request.cookies[SESSION_COOKIE];
    request.consoleSession = await sessions.resolve(token);
    const config = request.routeOptions.config;
    if (config.consolePublic === true) return;
    const session = request.consoleSession;
    if (session === null) {
      if (token !== undefined) reply.clearCookie(SESSION_COOKIE, { path: CONSOLE_PREFIX });
      return signInRedirect(request, reply, token !== undefined);
    }
    // The password alone opens nothing but the code's page, for a user with a second factor...
    if (!session.secondFactorPassed) {
      if (config.consoleSecondFactor === true) return;
      return reply.redirect(withNext(CODE_PATH, request), 303);
    }
    // ...and a user without one, whose platform requires it, sets it up before anything else.
    if (session.requireTwoFactor && !session.twoFactorEnrolled) {
      if (config.consoleEnrolment === true) return;
      return reply.redirect(withNext(ENROLMENT_PATH, request), 303);
    }
    const url = request.routeOptions.url;
    if (url === undefined) return;
    const needed = roleNeeded(request.method, url);
    if (needed === undefined) throw new Error(`the console route ${routeKey(request.method, url)} has no role`);
    if (!roleAllows(session.role, needed)) throw forbiddenForRole(session.role, needed);
  });
  // Then the CSRF token of anything that is not a GET or HEAD (a 403 page when it is missing or wrong).
  app.addHook('preHandler', (request, reply, done) => {
    if (request.method === 'GET' || request.method === 'HEAD') return done();
    app.csrfProtection(request, reply, done);
  });

  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    if (error.code === 'FST_CSRF_MISSING_SECRET' || error.code === 'FST_CSRF_INVALID_TOKEN') {
      return render(request, reply, 'error', {
        title: 'This form has expired',
        problem: {
          status: 403,
          title: 'This form has expired',
          detail: 'The form was sent without its security token, or with one from another visit, so nothing was done. Go back, reload the page and send the form again.',
        },
      }, 403);
    }
    if (deps.database.availability.failed('console', error, { message: 'the database is unavailable; the console answered 503', fields: { reqId: request.id } })) {
      reply.header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS));
      return render(request, reply, 'unavailable', { title: 'The database is unavailable', reference: request.id }, 503);
    }
    const problem = problemOf(error);
    if (problem !== null) return render(request, reply, 'error', { title: problem.title, problem }, problem.status);
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return render(request, reply, 'error', {
        title: 'Too large',
        problem: { status: 413, title: 'Too large', detail: `The form is larger than the ${FORM_BODY_LIMIT / 1024} KiB the console takes.` },
      }, 413);
    }
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      return render(request, reply, 'error', {
        title: 'The request could not be read',
        problem: { status: error.statusCode, title: 'The request could not be read', detail: 'Go back, reload the page and try again.' },
      }, error.statusCode);
    }
    request.log.error({ err: error }, 'unhandled error');
    return render(request, reply, 'error', {
      title: 'Something went wrong',
      problem: {
        status: 500,
        title: 'Something went wrong on our side',
        detail: `Nothing you did caused it. Try again in a moment; if it persists, give the operator this reference: ${request.id}.`,
      },
    }, 500);
  });
  app.setNotFoundHandler(async (request, reply) => {
    request.consoleSession ??= await sessions.resolve(request.cookies[SESSION_COOKIE]);
    return render(request, reply, 'error', {
      title: 'Not found',
      problem: { status: 404, title: 'Not found', detail: 'There is no such page. Use the navigation to find what you are looking for.' },
    }, 404);
  });

  app.get(ASSETS_ROUTE.slice(CONSOLE_PREFIX.length), { config: { consolePublic: true } }, async (request, reply) => {
    const asset = ASSETS.get((request.params as { name: string }).name);
    if (asset === undefined) return reply.callNotFound();
    return reply.type(asset.type).header('cache-control', 'public, max-age=86400').send(asset.body);
  });
  // The query goes along (the notice of a sign-in that followed wrong passwords, say).
  app.get('/', async (request, reply) => {
    const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
    return reply.redirect(`${NAVIGATION[0]?.href ?? `${CONSOLE_PREFIX}/sign-in`}${query}`, 303);
  });
  signInRoutes(app, sessions, twoFactor, deps.config.consoleSessionHours, deps.database.db);
  for (const page of CONSOLE_PAGES) page.routes(app, { ...deps, consoleSessions: sessions, twoFactor });
}
