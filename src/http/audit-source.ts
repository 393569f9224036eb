import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuditAction } from '../domain/audit.ts';
import type { AuditSource } from '../services/audit.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route of the app with the audit action(s) it declares: what the route-list test walks. */
    auditedRoutes: RouteAudit[];
  }
  interface FastifyContextConfig {
    /**
     * The audit action(s) a route that changes something records (contract 14). Every POST, PUT, PATCH and DELETE
     * route declares them, or is on the allow-list of routes that change nothing (test/http/audit-routes.test.ts).
     */
    audit?: AuditAction | readonly AuditAction[];
  }
}

/**
 * Who makes the request's change, for the audit trail: the API key (its id and display prefix, never the key), the
 * signed-in console user (id and e-mail), or the admin token's holder; with the client's address, user agent and the
 * request's x-request-id.
 */
export function auditSourceOf(request: FastifyRequest): AuditSource {
  const userAgent = request.headers['user-agent'];
  const from = { ip: request.ip ?? null, userAgent: typeof userAgent === 'string' ? userAgent : null, requestId: request.id };
  const principal = (request as { principal?: FastifyRequest['principal'] | null }).principal;
  if (principal) return { actor: { type: 'api_key', id: principal.keyId, label: principal.keyPrefix }, ...from };
  const session = (request as { consoleSession?: FastifyRequest['consoleSession'] }).consoleSession;
  if (session) return { actor: { type: 'console_user', id: session.userId, label: session.email }, ...from };
  return { actor: { type: 'admin', id: null, label: 'admin token' }, ...from };
}

export type RouteAudit = { method: string; url: string; audit: AuditAction | readonly AuditAction[] | undefined };

/** Collects every route registered after it (in every scope) with its declared audit action(s), as app.auditedRoutes. */
export function collectAuditedRoutes(app: FastifyInstance): void {
  const routes: RouteAudit[] = [];
  app.decorate('auditedRoutes', routes);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routes.push({ method, url: route.url, audit: route.config?.audit });
  });
}
