import { auditSourceOf } from '../../audit-source.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, notFound } from '../../../errors.ts';
import { isRole } from '../../../domain/console-roles.ts';
import { createConsoleUser, listConsoleUsers, requireConsoleUser, updateConsoleUser, type ConsoleUser } from '../../../services/console-users.ts';
import type { Api } from '../../deps.ts';
import { AdminListQuery } from '../../../schemas/admin.ts';
import { formFields, optional, text, validated, type Problem } from '../forms.ts';
import type { ConsoleDeps, ConsolePage } from '../page.ts';
import { CONSOLE_PREFIX, failureOf, platformOf, queryOf, redirectTo, render, signedIn } from '../render.ts';

const USERS = `${CONSOLE_PREFIX}/users`;
const PAGE_SIZE = 50;
const LABELS = { email: 'E-mail', password: 'Password', role: 'Role' };

const NOTICES: Record<string, string> = {
  created: 'The user is created: give them their e-mail and password (they may then change neither here; they can set up two-factor sign-in).',
  role: 'The role is changed: it applies from their next page.',
  disabled: 'The user is disabled and signed out everywhere.',
  enabled: 'The user is enabled: they can sign in again.',
};

type CreateForm = { values: { email: string; role: string }; fields: Record<string, string>; problem: Problem | null };

async function listPage(request: FastifyRequest, reply: FastifyReply, deps: ConsoleDeps, create?: CreateForm, problem: Problem | null = null): Promise<FastifyReply> {
  const query = queryOf(request);
  const paging = validated<{ page: number; limit: number }>(AdminListQuery, { page: optional(query, 'page') ?? '1', limit: String(PAGE_SIZE) }, 'query');
  const page = await listConsoleUsers(deps.database.db, platformOf(request), paging);
  const shown = problem ?? create?.problem ?? null;
  return render(
    request,
    reply,
    'users/list',
    {
      title: 'Users',
      page,
      create: create ?? { values: { email: '', role: 'operator' }, fields: {}, problem: null },
      problem,
      notice: shown === null ? (NOTICES[text(query, 'notice')] ?? null) : null,
    },
    shown?.status ?? 200,
  );
}

/** One of the platform's users; another platform's, or none, is a 404 like a missing one. */
async function userOfPlatform(deps: ConsoleDeps, platformId: string, userId: string): Promise<ConsoleUser> {
  const user = await requireConsoleUser(deps.database.db, userId);
  if (user.platformId !== platformId) throw notFound(`Console user ${userId}`);
  return user;
}

/** An owner changes others: changing their own role or disabling themselves could leave the platform without one. */
function notSelf(request: FastifyRequest, user: ConsoleUser, what: string): void {
  if (user.id === signedIn(request).userId) {
    throw new AppError('validation_failed', `You cannot ${what} yourself: ask another owner of your platform, or your operator.`);
  }
}

/** The platform's console users, managed by its owners: create, change role, disable and enable. */
export const usersPage: ConsolePage = {
  routes(app: Api, deps: ConsoleDeps): void {
    app.get('/users', async (request, reply) => listPage(request, reply, deps));

    app.post('/users', { config: { audit: 'console_user.create' } }, async (request, reply) => {
      const fields = formFields(request.body);
      const values = { email: text(fields, 'email'), role: text(fields, 'role') };
      try {
        const role = isRole(values.role) ? values.role : undefined;
        if (role === undefined) {
          throw new AppError('validation_failed', 'The request has an invalid field: role must be one of: owner, operator, viewer.', {
            errors: [{ path: '/role', code: 'invalid_value', message: 'role must be one of: owner, operator, viewer.' }],
          });
        }
        await createConsoleUser(deps.database.db, platformOf(request), { email: values.email, password: text(fields, 'password', { raw: true }), role }, auditSourceOf(request));
        return redirectTo(reply, USERS, 'created');
      } catch (error) {
        const problem = failureOf(request, error, LABELS);
        return listPage(request, reply, deps, { values, fields: problem.fields, problem });
      }
    });

    app.post('/users/:id/role', { config: { audit: 'console_user.update' } }, async (request, reply) => {
      const { id } = request.params as { id: string };
      const user = await userOfPlatform(deps, platformOf(request), id);
      const role = text(formFields(request.body), 'role');
      try {
        notSelf(request, user, 'change the role of');
        if (!isRole(role)) throw new AppError('validation_failed', 'Choose a role: owner, operator or viewer.');
        await updateConsoleUser(deps.database.db, user.id, { role }, auditSourceOf(request));
      } catch (error) {
        return listPage(request, reply, deps, undefined, failureOf(request, error));
      }
      return redirectTo(reply, USERS, 'role');
    });

    app.post('/users/:id/disabled', { config: { audit: ['console_user.disable', 'console_user.enable'] } }, async (request, reply) => {
      const { id } = request.params as { id: string };
      const user = await userOfPlatform(deps, platformOf(request), id);
      const disabled = text(formFields(request.body), 'disabled') === 'true';
      try {
        if (disabled) notSelf(request, user, 'disable');
        await updateConsoleUser(deps.database.db, user.id, { disabled }, auditSourceOf(request));
      } catch (error) {
        return listPage(request, reply, deps, undefined, failureOf(request, error));
      }
      return redirectTo(reply, USERS, disabled ? 'disabled' : 'enabled');
    });
  },
};
