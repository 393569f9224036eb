import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ConsoleSession } from '../../services/console-sessions.ts';
import { AuthorityError } from '../../authority/authority.ts';
import { helpers } from './helpers.ts';
import { problemOf, type Problem } from './forms.ts';
import { may, roleNeeded, type ConsoleRoute } from './roles.ts';
import { roleAllows } from '../../domain/console-roles.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in console user's session; null on the console's public routes when nobody is signed in. */
    consoleSession: ConsoleSession | null;
    /** The navigation's entries, from the page registry (set by the console plugin). */
    consoleNav: readonly NavEntry[];
  }
}

/** Where the console lives; every link and redirect is under it. */
export const CONSOLE_PREFIX = '/console';

/** The signed-in user of a console route (every route but sign-in and the assets requires one). */
export function signedIn(request: FastifyRequest): ConsoleSession {
  const session = request.consoleSession;
  if (session === null) throw new Error('a console route that requires a session ran without one');
  return session;
}

/** The platform the signed-in user belongs to: every service call of a page is made for it, and it alone. */
export function platformOf(request: FastifyRequest): string {
  return signedIn(request).platformId;
}

export function isHttps(request: FastifyRequest): boolean {
  return request.protocol === 'https';
}

export type NavEntry = { label: string; href: string };

/**
 * The navigation for the user: the pages its role may open (and none but the code's or the enrolment's while one of
 * those is due), the current page marked (the entry whose path is the request's or a parent of it).
 */
function navigation(entries: readonly NavEntry[], path: string, session: ConsoleSession): (NavEntry & { current: boolean })[] {
  if (!session.secondFactorPassed || (session.requireTwoFactor && !session.twoFactorEnrolled)) return [];
  return entries
    .filter((entry) => roleAllows(session.role, roleNeeded('GET', entry.href) ?? 'owner'))
    .map((entry) => ({ ...entry, current: path === entry.href || path.startsWith(`${entry.href}/`) }));
}

/** The query parameter by which the page after a sign-in learns of the wrong passwords before it. */
export const SIGN_IN_FAILURES_PARAM = 'signInFailures';

/** The notice on the first page after a sign-in that followed wrong passwords for the user's address; else null. */
function signInFailuresNotice(request: FastifyRequest): string | null {
  const failures = Number((request.query as Record<string, unknown> | undefined)?.[SIGN_IN_FAILURES_PARAM]);
  if (request.consoleSession === null || !Number.isInteger(failures) || failures < 1 || failures > 1_000_000) return null;
  return `There ${failures === 1 ? 'was 1 wrong password' : `were ${failures} wrong passwords`} for your e-mail address since your last sign-in. If they were not yours, someone may be guessing it: tell your operator, and keep your password long and your own.`;
}

/**
 * Renders a view (src/http/console/views/<view>.eta) in the layout, with what every page has: the user, the
 * navigation, a CSRF token for its forms (`it.csrf`), the helpers (`it.h`) and the page's own data. Never cached.
 */
export async function render(
  request: FastifyRequest,
  reply: FastifyReply,
  view: string,
  data: Record<string, unknown> & { title: string },
  status = 200,
): Promise<FastifyReply> {
  const path = (request.url.split('?')[0] ?? '').replace(/\/+$/, '');
  const html = await reply.viewAsync(view, {
    problem: null,
    notice: null,
    ...data,
    signInNotice: signInFailuresNotice(request),
    session: request.consoleSession,
    nav: request.consoleSession === null ? [] : navigation(request.consoleNav, path, request.consoleSession),
    // Whether the user may use a route (a form's action, a link's page): forms it may not are not shown.
    can: (route: ConsoleRoute) => request.consoleSession !== null && may(request.consoleSession.role, route),
    csrf: reply.generateCsrf({ secure: isHttps(request) }),
    h: helpers,
  });
  return reply.code(status).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(html);
}

/**
 * A service's failure as a page shows it (see problemOf), logged as the API's error handler logs it; rethrown when
 * it is not one a user can act on, for the error page.
 */
export function failureOf(request: FastifyRequest, error: unknown, labels: Record<string, string> = {}): Problem {
  const problem = problemOf(error, labels);
  if (problem === null) throw error;
  if (error instanceof AuthorityError) {
    const logged = { failure: error.failure, authorityCode: error.authorityCode, httpStatus: error.httpStatus, profile: error.profile, reason: error.message };
    if (error.failure === 'misconfigured' || error.failure === 'ip_not_whitelisted') request.log.error(logged, 'the authority refused our side of the protocol');
    else request.log.warn(logged, 'authority call failed');
  }
  return problem;
}

/** A redirect after a form that worked (303: the browser GETs the page), with a notice the page shows. */
export function redirectTo(reply: FastifyReply, path: string, notice?: string): FastifyReply {
  return reply.redirect(notice === undefined ? path : helpers.href(path, { notice }), 303);
}

/** The query string's fields (Fastify parses it; without a schema its values are text, or lists of text). */
export function queryOf(request: FastifyRequest): Record<string, string | string[] | undefined> {
  return (request.query ?? {}) as Record<string, string | string[] | undefined>;
}
