import type { FastifyReply, FastifyRequest } from 'fastify';
import { CONSOLE_ROLES } from '../../../domain/console-roles.ts';
import { notFound } from '../../../errors.ts';
import { auditSourceOf } from '../../audit-source.ts';
import {
  acceptInvitation,
  completePasswordReset,
  INVITATION_DAYS,
  invitationOfLink,
  inviteConsoleUser,
  listInvitations,
  requestPasswordReset,
  RESET_MINUTES,
  resetLinkUser,
} from '../../../services/mail/accounts.ts';
import { isTimeZone, NOTIFICATION_TITLES, NOTIFICATION_TYPES } from '../../../services/mail/messages.ts';
import { deliveryOf, SEALED_NOTE, type Delivery } from '../../../services/mail/outbox.ts';
import { findMailOfPlatform, listMail, monthlyReportChoice, preferencesOf, savePreferences } from '../../../store/mail.ts';
import type { Api, Deps } from '../../deps.ts';
import { formFields, optional, text, type Problem } from '../forms.ts';
import type { ConsolePage } from '../page.ts';
import { CONSOLE_PREFIX, failureOf, platformOf, queryOf, redirectTo, render, signedIn } from '../render.ts';

const PAGE_SIZE = 50;
const DELIVERIES: readonly { value: Delivery; label: string }[] = [
  { value: 'immediate', label: 'At once' },
  { value: 'daily', label: 'In the daily summary' },
  { value: 'off', label: 'Never' },
];
/** The runtime's zones under their current IANA names (ICU still lists a few by their old ones). */
const RENAMED: Readonly<Record<string, string>> = {
  'Asia/Calcutta': 'Asia/Kolkata',
  'Asia/Katmandu': 'Asia/Kathmandu',
  'Asia/Rangoon': 'Asia/Yangon',
  'Asia/Saigon': 'Asia/Ho_Chi_Minh',
  'Europe/Kiev': 'Europe/Kyiv',
};
const ZONES = ['UTC', ...Intl.supportedValuesOf('timeZone').filter((zone) => zone !== 'UTC').map((zone) => RENAMED[zone] ?? zone)];

const NOTICES: Record<string, string> = {
  saved: 'Your notification choices are saved.',
  invited: 'The invitation is on its way: it shows in the Outbox until it is sent.',
};

const MONTHLY_REPORT_OPTIONS = [
  { value: 'off', label: 'Off' },
  { value: 'on', label: 'On: the eBRC register of the month just ended, attached as CSV' },
];

async function preferencesPage(request: FastifyRequest, reply: FastifyReply, deps: Deps, problem: Problem | null = null): Promise<FastifyReply> {
  const session = signedIn(request);
  const chosen = await preferencesOf(deps.database.db, session.userId);
  const user = await deps.database.db.selectFrom('console_users').select('time_zone').where('id', '=', session.userId).executeTakeFirstOrThrow();
  const types = NOTIFICATION_TYPES.map((type) => ({ type, title: NOTIFICATION_TITLES[type], delivery: deliveryOf(chosen, type, session.role) }));
  const monthlyReport = (await monthlyReportChoice(deps.database.db, session.userId)) ? 'on' : 'off';
  const notice = problem === null ? (NOTICES[text(queryOf(request), 'notice')] ?? null) : null;
  return render(request, reply, 'mail/notifications', { title: 'Notifications', types, deliveries: DELIVERIES, zones: ZONES.includes(user.time_zone) ? ZONES : [user.time_zone, ...ZONES], timeZone: user.time_zone, monthlyReport, monthlyReportOptions: MONTHLY_REPORT_OPTIONS, email: session.email, notice, problem }, problem?.status ?? 200);
}

/** Notification choices: per type, at once, in the daily summary or never; and the time zone of the messages. */
export const notificationsPage: ConsolePage = {
  routes(app: Api, deps: Deps): void {
    app.get('/notifications', async (request, reply) => preferencesPage(request, reply, deps));
    app.post('/notifications', { config: { audit: 'console_user.update' } }, async (request, reply) => {
      const fields = formFields(request.body);
      const choices: Record<string, Delivery> = {};
      for (const type of NOTIFICATION_TYPES) {
        const value = text(fields, type);
        if (!DELIVERIES.some((delivery) => delivery.value === value)) {
          return preferencesPage(request, reply, deps, { status: 400, code: 'validation_failed', title: 'The request has invalid fields', detail: `Choose how to hear of “${NOTIFICATION_TITLES[type]}”.`, fields: {} });
        }
        choices[type] = value as Delivery;
      }
      const zone = text(fields, 'timeZone');
      if (!isTimeZone(zone)) {
        return preferencesPage(request, reply, deps, { status: 400, code: 'validation_failed', title: 'The request has invalid fields', detail: `“${zone}” is not a time zone: choose one from the list (such as Asia/Kolkata).`, fields: {} });
      }
      // A form without the field (an older page) leaves the choice as it is.
      const monthly = optional(fields, 'monthlyReport');
      if (monthly !== undefined && monthly !== 'on' && monthly !== 'off') {
        return preferencesPage(request, reply, deps, { status: 400, code: 'validation_failed', title: 'The request has invalid fields', detail: 'Choose whether to get the monthly report: on or off.', fields: {} });
      }
      await deps.database.db.transaction().execute((tx) => savePreferences(tx, signedIn(request).userId, choices, zone, monthly === undefined ? undefined : monthly === 'on'));
      return redirectTo(reply, `${CONSOLE_PREFIX}/notifications`, 'saved');
    });
  },
};

/**
 * The platform's messages, newest first, with their state and the reason of the last failed attempt: where a newcomer
 * without SMTP_URL finds the .eml files' messages. Owners only.
 */
export const outboxPage: ConsolePage = {
  routes(app: Api, deps: Deps): void {
    app.get('/outbox', async (request, reply) => {
      const page = Math.max(1, Math.min(10_000, Number.parseInt(optional(queryOf(request), 'page') ?? '1', 10) || 1));
      const rows = await listMail(deps.database.db, platformOf(request), (page - 1) * PAGE_SIZE, PAGE_SIZE);
      return render(request, reply, 'mail/outbox', {
        title: 'Outbox',
        messages: rows.slice(0, PAGE_SIZE),
        page,
        more: rows.length > PAGE_SIZE,
        smtp: deps.config.smtpUrl !== undefined,
        folder: `${deps.config.dataDir}/mail`,
      });
    });
    app.get('/outbox/:id', async (request, reply) => {
      const { id } = request.params as { id: string };
      const row = /^[0-9a-f-]{36}$/.test(id) ? await findMailOfPlatform(deps.database.db, platformOf(request), id) : undefined;
      if (row === undefined) throw notFound(`Message ${id}`);
      const body = row.sealed ? (row.status === 'sent' ? SEALED_NOTE : 'This message holds a single-use link: its text is shown only to its recipient.') : row.text_body;
      return render(request, reply, 'mail/message', { title: row.subject, message: row, body, smtp: deps.config.smtpUrl !== undefined, file: `${deps.config.dataDir}/mail/${row.id}.eml` });
    });
  },
};

async function teamPage(request: FastifyRequest, reply: FastifyReply, deps: Deps, values = { email: '', role: 'operator' }, problem: Problem | null = null): Promise<FastifyReply> {
  const invitations = await listInvitations(deps.database.db, platformOf(request));
  const notice = problem === null ? (NOTICES[text(queryOf(request), 'notice')] ?? null) : null;
  return render(request, reply, 'mail/team', { title: 'Invitations', invitations, roles: CONSOLE_ROLES, values, days: INVITATION_DAYS, notice, problem }, problem?.status ?? 200);
}

/** Invitations to the platform's console by e-mail, with a role (owners only). */
export const invitationsPage: ConsolePage = {
  routes(app: Api, deps: Deps): void {
    app.get('/invitations', async (request, reply) => teamPage(request, reply, deps));
    app.post('/invitations', { config: { audit: 'console_user.invite' } }, async (request, reply) => {
      const fields = formFields(request.body);
      const values = { email: text(fields, 'email'), role: text(fields, 'role') };
      const session = signedIn(request);
      try {
        await inviteConsoleUser(deps.database.db, deps.mail, { platformId: session.platformId, inviter: { id: session.userId, email: session.email }, email: values.email, role: values.role }, auditSourceOf(request));
      } catch (error) {
        return teamPage(request, reply, deps, values, failureOf(request, error, { email: 'E-mail', role: 'Role' }));
      }
      request.log.info({ consoleUser: session.userId, role: values.role }, 'console invitation sent');
      return redirectTo(reply, `${CONSOLE_PREFIX}/invitations`, 'invited');
    });
  },
};

const LINK_GONE = {
  status: 410,
  title: 'This link no longer works',
  detail: 'It was used already, or it has expired. Ask for a new one.',
};

/**
 * The pages reached from e-mail, without a session: asking for a password reset (the same answer whatever the
 * address), choosing a new password from a reset link, and accepting an invitation.
 */
export const accountLinksPage: ConsolePage = {
  routes(app: Api, deps: Deps): void {
    const open = { config: { consolePublic: true } };
    app.get('/password-reset', open, async (request, reply) => render(request, reply, 'mail/password-reset', { title: 'Reset your password', sent: false, minutes: RESET_MINUTES }));
    app.post('/password-reset', { config: { consolePublic: true, audit: 'console_user.password_reset' } }, async (request, reply) => {
      await requestPasswordReset(deps.database.db, deps.mail, text(formFields(request.body), 'email'));
      return render(request, reply, 'mail/password-reset', { title: 'Reset your password', sent: true, minutes: RESET_MINUTES });
    });

    app.get('/reset/:token', open, async (request, reply) => {
      const { token } = request.params as { token: string };
      const user = await resetLinkUser(deps.database.db, token);
      if (user === null) return render(request, reply, 'mail/link-gone', { title: LINK_GONE.title, problem: LINK_GONE, again: `${CONSOLE_PREFIX}/password-reset` }, 410);
      return render(request, reply, 'mail/choose-password', { title: 'Choose a new password', email: user.email, action: `${CONSOLE_PREFIX}/reset/${token}`, button: 'Set the new password' });
    });
    app.post('/reset/:token', { config: { consolePublic: true, audit: 'console_user.password_reset' } }, async (request, reply) => {
      const { token } = request.params as { token: string };
      const fields = formFields(request.body);
      const password = text(fields, 'password', { raw: true });
      const user = await resetLinkUser(deps.database.db, token);
      if (user === null) return render(request, reply, 'mail/link-gone', { title: LINK_GONE.title, problem: LINK_GONE, again: `${CONSOLE_PREFIX}/password-reset` }, 410);
      const mismatch = password !== text(fields, 'confirm', { raw: true });
      try {
        if (mismatch) throw new Error('mismatch');
        if (!(await completePasswordReset(deps.database.db, token, password, auditSourceOf(request)))) {
          return render(request, reply, 'mail/link-gone', { title: LINK_GONE.title, problem: LINK_GONE, again: `${CONSOLE_PREFIX}/password-reset` }, 410);
        }
      } catch (error) {
        const problem = mismatch ? { status: 400, title: 'The passwords differ', detail: 'Type the same new password in both fields.' } : failureOf(request, error, { password: 'New password' });
        return render(request, reply, 'mail/choose-password', { title: 'Choose a new password', email: user.email, action: `${CONSOLE_PREFIX}/reset/${token}`, button: 'Set the new password', problem }, problem.status);
      }
      request.log.info({ consoleUser: user.userId }, 'console password reset; every session of the user ended');
      return redirectTo(reply, `${CONSOLE_PREFIX}/sign-in`, 'password-reset');
    });

    app.get('/invite/:token', open, async (request, reply) => {
      const { token } = request.params as { token: string };
      const invitation = await invitationOfLink(deps.database.db, token);
      if (invitation === null) return render(request, reply, 'mail/link-gone', { title: LINK_GONE.title, problem: { ...LINK_GONE, detail: 'It was used already, or it has expired. Ask whoever invited you for a new invitation.' }, again: null }, 410);
      return render(request, reply, 'mail/choose-password', { title: `Join ${invitation.platformName}`, email: invitation.email, invitation, action: `${CONSOLE_PREFIX}/invite/${token}`, button: 'Create my account' });
    });
    app.post('/invite/:token', { config: { consolePublic: true, audit: 'console_user.create' } }, async (request, reply) => {
      const { token } = request.params as { token: string };
      const fields = formFields(request.body);
      const password = text(fields, 'password', { raw: true });
      const invitation = await invitationOfLink(deps.database.db, token);
      const gone = () => render(request, reply, 'mail/link-gone', { title: LINK_GONE.title, problem: LINK_GONE, again: null }, 410);
      if (invitation === null) return gone();
      const mismatch = password !== text(fields, 'confirm', { raw: true });
      try {
        if (mismatch) throw new Error('mismatch');
        const user = await acceptInvitation(deps.database.db, token, password, auditSourceOf(request));
        if (user === null) return gone();
        request.log.info({ consoleUser: user.id, platform: user.platformId }, 'console invitation accepted');
      } catch (error) {
        const problem = mismatch ? { status: 400, title: 'The passwords differ', detail: 'Type the same password in both fields.' } : failureOf(request, error, { password: 'Password' });
        return render(request, reply, 'mail/choose-password', { title: `Join ${invitation.platformName}`, email: invitation.email, invitation, action: `${CONSOLE_PREFIX}/invite/${token}`, button: 'Create my account', problem }, problem.status);
      }
      return redirectTo(reply, `${CONSOLE_PREFIX}/sign-in`, 'invitation-accepted');
    });
  },
};
