import { AppError } from '../../errors.ts';
import { roleAllows, type ConsoleRole } from '../../domain/console-roles.ts';

/**
 * The role each console route needs (contract 14), in this one place: `owner` for the platform's users and API keys,
 * `operator` for what changes customers, credentials, pushes, uploads and webhooks, `viewer` (everyone) for reading
 * and for a user's own account. A route is named `METHOD /console/path` as it is registered; the console refuses to
 * start with a route that is missing here (or here without a route), and answers a role below it with 403
 * `forbidden_for_role`. Views ask `it.can('POST /console/…')` before showing a form or a link to one.
 */
export const CONSOLE_ROUTE_ROLES = {
  'GET /console': 'viewer',
  'GET /console/overview': 'viewer',
  'GET /console/customers': 'viewer',
  'POST /console/customers': 'operator',
  'GET /console/customers/:id': 'viewer',
  'POST /console/customers/:id/check-credentials': 'operator',
  'POST /console/customers/:id/reconcile': 'operator',
  'POST /console/customers/:id/api-credentials': 'operator',
  'GET /console/customers/:id/irms': 'viewer',
  'POST /console/customers/:id/irms/refresh': 'operator',
  'GET /console/customers/:id/ebrcs': 'viewer',
  'GET /console/customers/:id/ebrcs/:ebrcNumber/certificate.pdf': 'viewer',
  'GET /console/customers/:id/irm-template': 'viewer',
  'GET /console/generate': 'operator',
  'POST /console/generate/irms': 'operator',
  'POST /console/generate/lines': 'operator',
  'POST /console/generate/push': 'operator',
  'GET /console/requests': 'viewer',
  'GET /console/requests/:customerId/:requestId': 'viewer',
  'GET /console/uploads': 'viewer',
  'POST /console/uploads': 'operator',
  'GET /console/uploads/template': 'viewer',
  'GET /console/uploads/:id': 'viewer',
  'GET /console/uploads/:id/progress': 'viewer',
  'GET /console/reports': 'viewer',
  'GET /console/reports/download': 'viewer',
  'GET /console/webhooks': 'viewer',
  'POST /console/webhooks': 'operator',
  'GET /console/webhooks/:id': 'viewer',
  'POST /console/webhooks/:id/test': 'operator',
  'POST /console/webhooks/:id/redeliver': 'operator',
  'POST /console/webhooks/:id/status': 'operator',
  'POST /console/webhooks/:id/rotate': 'operator',
  'GET /console/events': 'viewer',
  'GET /console/events/:id': 'viewer',
  'POST /console/events/:id/redeliver': 'operator',
  'GET /console/api-keys': 'viewer',
  'POST /console/api-keys': 'owner',
  'GET /console/api-keys/:id/issued': 'owner',
  'GET /console/api-keys/:id/revoke': 'owner',
  'POST /console/api-keys/:id/revoke': 'owner',
  'GET /console/audit-log': 'viewer',
  'GET /console/audit-log/export.csv': 'viewer',
  'GET /console/notifications': 'viewer',
  'POST /console/notifications': 'viewer',
  'GET /console/outbox': 'owner',
  'GET /console/outbox/:id': 'owner',
  'GET /console/invitations': 'owner',
  'POST /console/invitations': 'owner',
  'GET /console/users': 'owner',
  'POST /console/users': 'owner',
  'POST /console/users/:id/role': 'owner',
  'POST /console/users/:id/disabled': 'owner',
  'GET /console/account': 'viewer',
  'POST /console/account/sessions/:id/end': 'viewer',
  'POST /console/account/sessions/end-others': 'viewer',
  'GET /console/account/two-factor': 'viewer',
  'POST /console/account/two-factor': 'viewer',
  'GET /console/sign-in/code': 'viewer',
  'POST /console/sign-in/code': 'viewer',
} as const satisfies Record<string, ConsoleRole>;

export type ConsoleRoute = keyof typeof CONSOLE_ROUTE_ROLES;

/** The route's key in CONSOLE_ROUTE_ROLES: a HEAD is its GET's; a trailing slash does not count. */
export function routeKey(method: string, url: string): string {
  return `${method === 'HEAD' ? 'GET' : method} ${url.replace(/\/+$/, '')}`;
}

/** The role a route needs; undefined for a route not in the map (the console's public routes only). */
export function roleNeeded(method: string, url: string): ConsoleRole | undefined {
  return (CONSOLE_ROUTE_ROLES as Record<string, ConsoleRole>)[routeKey(method, url)];
}

/** Whether a user of `role` may use the route. */
export function may(role: ConsoleRole, route: ConsoleRoute): boolean {
  return roleAllows(role, CONSOLE_ROUTE_ROLES[route]);
}

const ARTICLE: Record<ConsoleRole, string> = { owner: 'an owner', operator: 'an operator', viewer: 'a viewer' };

/** 403 forbidden_for_role: what the route needs, and what the user is. */
export function forbiddenForRole(role: ConsoleRole, needed: ConsoleRole): AppError {
  const who = needed === 'owner' ? 'an owner' : `${ARTICLE[needed]} or an owner`;
  return new AppError(
    'forbidden_for_role',
    `This needs the ${needed} role: only ${who} of your platform may use it, and you are ${ARTICLE[role]}. Ask an owner to change your role, or to do it for you.`,
  );
}
