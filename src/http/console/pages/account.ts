import type { FastifyReply, FastifyRequest } from 'fastify';
import { notFound } from '../../../errors.ts';
import { recordAuditAlone } from '../../../services/audit.ts';
import { auditSourceOf } from '../../audit-source.ts';
import type { Api } from '../../deps.ts';
import { formFields, text } from '../forms.ts';
import type { ConsoleDeps, ConsolePage } from '../page.ts';
import { CONSOLE_PREFIX, queryOf, redirectTo, render, signedIn } from '../render.ts';
import { afterSignIn } from '../sign-in.ts';

const ACCOUNT = `${CONSOLE_PREFIX}/account`;
/** Where a user sets up two-factor sign-in (and where one whose platform requires it is sent first). */
export const ENROLMENT_PATH = `${ACCOUNT}/two-factor`;

const NOTICES: Record<string, string> = {
  'session-ended': 'That session has ended: whoever used it is signed out.',
  'others-ended': 'Every other session has ended: you are signed in here only.',
  'recovery-code-used': 'You signed in with a recovery code, which will not work again. If your phone is lost, ask your operator to reset your second factor, and set it up again.',
  'recovery-code-used-1': 'You signed in with a recovery code, which will not work again, and you have one left. Ask your operator to reset your second factor, and set it up again.',
};

async function accountPage(request: FastifyRequest, reply: FastifyReply, deps: ConsoleDeps): Promise<FastifyReply> {
  const session = signedIn(request);
  const sessions = await deps.consoleSessions.listOwn(session.userId, session.sessionId);
  return render(request, reply, 'account/index', { title: 'Your account', sessions, notice: NOTICES[text(queryOf(request), 'notice')] ?? null });
}

async function enrolmentPage(request: FastifyRequest, reply: FastifyReply, deps: ConsoleDeps, next: string, problem: { status: number; title: string; detail: string } | null = null): Promise<FastifyReply> {
  const session = signedIn(request);
  const enrolment = await deps.twoFactor.startEnrolment(session.userId, session.email);
  if (enrolment === null) return reply.redirect(ACCOUNT, 303);
  return render(
    request,
    reply,
    'account/two-factor',
    { title: 'Set up two-factor sign-in', enrolment, required: session.requireTwoFactor, next, problem, fields: {} },
    problem?.status ?? 200,
  );
}

/** The signed-in user's own account: its sessions (ending any of them) and its two-factor sign-in. */
export const accountSettingsPage: ConsolePage = {
  routes(app: Api, deps: ConsoleDeps): void {
    app.get('/account', async (request, reply) => accountPage(request, reply, deps));

    app.post('/account/sessions/:id/end', { config: { audit: 'console_user.sign_out' } }, async (request, reply) => {
      const session = signedIn(request);
      const { id } = request.params as { id: string };
      if (!(await deps.consoleSessions.endOwn(session.userId, id))) throw notFound('Session');
      await recordAuditAlone(deps.database.db, auditSourceOf(request), { platformId: session.platformId, action: 'console_user.sign_out', target: { type: 'console_user', id: session.userId } });
      // Ending this very session is signing out.
      if (id === session.sessionId) return redirectTo(reply, `${CONSOLE_PREFIX}/sign-in`, 'signed-out');
      return redirectTo(reply, ACCOUNT, 'session-ended');
    });

    app.post('/account/sessions/end-others', { config: { audit: 'console_user.sign_out' } }, async (request, reply) => {
      const session = signedIn(request);
      await deps.consoleSessions.endOthers(session.userId, session.sessionId);
      await recordAuditAlone(deps.database.db, auditSourceOf(request), { platformId: session.platformId, action: 'console_user.sign_out', target: { type: 'console_user', id: session.userId } });
      return redirectTo(reply, ACCOUNT, 'others-ended');
    });

    app.get('/account/two-factor', { config: { consoleEnrolment: true } }, async (request, reply) =>
      enrolmentPage(request, reply, deps, text(queryOf(request), 'next')),
    );

    // A right code from the new secret completes the enrolment: the recovery codes are shown in this answer, once.
    app.post('/account/two-factor', { config: { consoleEnrolment: true, audit: 'console_user.two_factor_enrol' } }, async (request, reply) => {
      const session = signedIn(request);
      const fields = formFields(request.body);
      const next = text(fields, 'next');
      const result = await deps.twoFactor.confirmEnrolment(session.userId, text(fields, 'code').slice(0, 64));
      switch (result.outcome) {
        case 'enrolled':
          request.log.info({ consoleUser: session.userId }, 'console user enrolled a second factor');
          await recordAuditAlone(deps.database.db, auditSourceOf(request), {
            platformId: session.platformId,
            action: 'console_user.two_factor_enrol',
            target: { type: 'console_user', id: session.userId },
          });
          return render(request, reply, 'account/recovery-codes', { title: 'Your recovery codes', recoveryCodes: result.recoveryCodes, next: afterSignIn(next) });
        case 'already':
          return reply.redirect(ACCOUNT, 303);
        case 'wrong':
          return enrolmentPage(request, reply, deps, next, {
            status: 400,
            title: 'Wrong code',
            detail: 'The code does not match the new secret. Check that the app added the account shown here (scan the code again if in doubt), then type the 6 digits it shows now.',
          });
        case 'slowed':
          reply.header('retry-after', String(result.retryAfterSeconds));
          return enrolmentPage(request, reply, deps, next, {
            status: 429,
            title: 'Too many wrong codes',
            detail: `Wait ${result.retryAfterSeconds} seconds, then try again.`,
          });
      }
    });
  },
};
