import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { recordAuditAlone } from '../../services/audit.ts';
import type { ConsoleSessions } from '../../services/console-sessions.ts';
import type { TwoFactor } from '../../services/two-factor.ts';
import type { Schema } from '../../store/schema.ts';
import { auditSourceOf } from '../audit-source.ts';
import type { Api } from '../deps.ts';
import { formFields, text } from './forms.ts';
import { CONSOLE_PREFIX, isHttps, queryOf, redirectTo, render, signedIn, SIGN_IN_FAILURES_PARAM } from './render.ts';

/** The session cookie: a random token (its SHA-256 is what the database keeps), HttpOnly, SameSite=Lax, /console only. */
export const SESSION_COOKIE = 'ebrc_console_session';
/** The second step of a sign-in with two factors: the code from the authenticator app, or a recovery code. */
export const CODE_PATH = `${CONSOLE_PREFIX}/sign-in/code`;

const NOTICES: Record<string, string> = {
  'signed-out': 'You have signed out.',
  expired: 'Your session has ended. Sign in again to go on.',
  'password-reset': 'Your password is changed, and every session of your account has ended. Sign in with the new password.',
  'invitation-accepted': 'Your account is ready. Sign in with your e-mail address and the password you chose.',
};

/**
 * Where to go after signing in: the page asked for before (a console path of this service only, never another
 * site), else the console's first page.
 */
export function afterSignIn(next: string | undefined): string {
  if (next === undefined || !next.startsWith(`${CONSOLE_PREFIX}/`) || next.startsWith('//') || /[\\\s]/.test(next)) return CONSOLE_PREFIX;
  if (next.startsWith(`${CONSOLE_PREFIX}/sign-`)) return CONSOLE_PREFIX;
  return next;
}

/** The page to go to after a sign-in, telling the user of the wrong passwords for their address since the last one. */
function withSignInFailures(path: string, failures: number): string {
  if (failures === 0) return path;
  return `${path}${path.includes('?') ? '&' : '?'}${SIGN_IN_FAILURES_PARAM}=${failures}`;
}

function waitText(seconds: number): string {
  if (seconds < 90) return `${seconds} seconds`;
  return `${Math.ceil(seconds / 60)} minutes`;
}

function signInPage(
  request: FastifyRequest,
  reply: FastifyReply,
  values: { email: string; next: string },
  problem: { status: number; title: string; detail: string } | null,
  notice: string | null = null,
): Promise<FastifyReply> {
  return render(request, reply, 'sign-in', { title: 'Sign in', values, problem, notice, fields: {} }, problem?.status ?? 200);
}

function codePage(
  request: FastifyRequest,
  reply: FastifyReply,
  next: string,
  problem: { status: number; title: string; detail: string } | null,
): Promise<FastifyReply> {
  return render(request, reply, 'sign-in-code', { title: 'Two-factor sign-in', values: { next }, problem, fields: {} }, problem?.status ?? 200);
}

/**
 * Sign-in and sign-out: public routes (no session needed), each POST with its CSRF token like any other. A user with
 * a second factor is sent from the password to the code: its session opens nothing else until the code is right.
 */
export function signInRoutes(app: Api, sessions: ConsoleSessions, twoFactor: TwoFactor, sessionHours: number, db: Kysely<Schema>): void {
  app.get('/sign-in', { config: { consolePublic: true } }, async (request, reply) => {
    const query = queryOf(request);
    const next = text(query, 'next');
    if (request.consoleSession !== null) return reply.redirect(afterSignIn(next), 303);
    return signInPage(request, reply, { email: '', next }, null, NOTICES[text(query, 'notice')] ?? null);
  });

  app.post('/sign-in', { config: { consolePublic: true, audit: 'console_user.sign_in' } }, async (request, reply) => {
    const fields = formFields(request.body);
    const email = text(fields, 'email');
    const next = text(fields, 'next');
    const result = await sessions.signIn(email, text(fields, 'password', { raw: true }), request.ip);
    // Every attempt is in the audit trail: a success in its platform's chain (for a user with a second factor, when its
    // code passes), a refusal (the user is not known to whoever tries) in the operator-wide one, by the e-mail address
    // typed. Never the password.
    const from = auditSourceOf(request);
    if (result.outcome !== 'signed_in') {
      await recordAuditAlone(db, { ...from, actor: { type: 'console_user', id: null, label: email.slice(0, 254) } }, {
        platformId: null,
        action: 'console_user.sign_in',
        target: null,
        outcome: 'failed',
      });
    } else if (result.session.secondFactorPassed) {
      await recordAuditAlone(db, { ...from, actor: { type: 'console_user', id: result.session.userId, label: result.session.email } }, {
        platformId: result.session.platformId,
        action: 'console_user.sign_in',
        target: { type: 'console_user', id: result.session.userId },
      });
    }
    switch (result.outcome) {
      case 'signed_in':
        reply.setCookie(SESSION_COOKIE, result.token, {
          path: CONSOLE_PREFIX,
          httpOnly: true,
          sameSite: 'lax',
          secure: isHttps(request),
          maxAge: sessionHours * 60 * 60,
        });
        request.log.info({ consoleUser: result.session.userId, platform: result.session.platformId, failedAttemptsSince: result.failedAttemptsSince }, 'console sign-in');
        if (!result.session.secondFactorPassed) {
          const then = withSignInFailures(afterSignIn(next), result.failedAttemptsSince);
          return reply.redirect(`${CODE_PATH}?${new URLSearchParams({ next: then }).toString()}`, 303);
        }
        return reply.redirect(withSignInFailures(afterSignIn(next), result.failedAttemptsSince), 303);
      case 'refused':
        request.log.info('console sign-in refused: wrong e-mail or password');
        return signInPage(request, reply, { email, next }, {
          status: 401,
          title: 'Wrong e-mail or password',
          detail: 'Check both and try again. After several wrong tries, you will have to wait before trying again.',
        });
      case 'disabled':
        request.log.info('console sign-in refused: the user is disabled');
        return signInPage(request, reply, { email, next }, {
          status: 403,
          title: 'This user is disabled',
          detail: 'An operator has disabled this console user. Ask your operator to enable it again.',
        });
      case 'slowed':
        request.log.warn({ retryAfterSeconds: result.retryAfterSeconds }, 'console sign-in slowed: too many failures');
        reply.header('retry-after', String(result.retryAfterSeconds));
        return signInPage(request, reply, { email, next }, {
          status: 429,
          title: 'Too many failed sign-ins',
          detail: `There were too many wrong passwords for this e-mail address from your network, or from your network for any address. Wait ${waitText(result.retryAfterSeconds)}, then try again; from another network you can sign in at once.`,
        });
    }
  });

  app.get('/sign-in/code', { config: { consoleSecondFactor: true } }, async (request, reply) => {
    const next = text(queryOf(request), 'next');
    if (signedIn(request).secondFactorPassed) return reply.redirect(afterSignIn(next), 303);
    return codePage(request, reply, next, null);
  });

  app.post('/sign-in/code', { config: { consoleSecondFactor: true, audit: 'console_user.sign_in' } }, async (request, reply) => {
    const session = signedIn(request);
    const fields = formFields(request.body);
    const next = text(fields, 'next');
    if (session.secondFactorPassed) return reply.redirect(afterSignIn(next), 303);
    const result = await twoFactor.check(session.userId, text(fields, 'code').slice(0, 64));
    await recordAuditAlone(db, auditSourceOf(request), {
      platformId: session.platformId,
      action: 'console_user.sign_in',
      target: { type: 'console_user', id: session.userId },
      ...(result.outcome === 'passed' ? {} : { outcome: 'failed' as const }),
    });
    switch (result.outcome) {
      case 'passed': {
        await sessions.passSecondFactor(request.cookies[SESSION_COOKIE]);
        request.log.info({ consoleUser: session.userId, by: result.by }, 'console sign-in: second factor passed');
        if (result.by === 'totp') return reply.redirect(afterSignIn(next), 303);
        return redirectTo(reply, `${CONSOLE_PREFIX}/account`, result.recoveryCodesLeft === 1 ? 'recovery-code-used-1' : `recovery-code-used`);
      }
      case 'wrong':
        request.log.info({ consoleUser: session.userId }, 'console sign-in refused: wrong code');
        return codePage(request, reply, next, {
          status: 401,
          title: 'Wrong code',
          detail: 'Type the 6 digits your authenticator app shows now, or one of your unused recovery codes. After several wrong codes, you will have to wait before trying again.',
        });
      case 'slowed':
        request.log.warn({ consoleUser: session.userId, retryAfterSeconds: result.retryAfterSeconds }, 'console sign-in slowed: too many wrong codes');
        reply.header('retry-after', String(result.retryAfterSeconds));
        return codePage(request, reply, next, {
          status: 429,
          title: 'Too many wrong codes',
          detail: `There were too many wrong codes for this user. Wait ${waitText(result.retryAfterSeconds)}, then try again.`,
        });
    }
  });

  // Public too, so that a session that has just expired can still sign out cleanly.
  app.post('/sign-out', { config: { consolePublic: true, audit: 'console_user.sign_out' } }, async (request, reply) => {
    await sessions.signOut(request.cookies[SESSION_COOKIE]);
    const session = request.consoleSession;
    if (session !== null) {
      await recordAuditAlone(db, auditSourceOf(request), { platformId: session.platformId, action: 'console_user.sign_out', target: { type: 'console_user', id: session.userId } });
    }
    reply.clearCookie(SESSION_COOKIE, { path: CONSOLE_PREFIX });
    return redirectTo(reply, `${CONSOLE_PREFIX}/sign-in`, 'signed-out');
  });
}
