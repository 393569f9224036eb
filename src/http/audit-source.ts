import type { FastifyRequest } from 'fastify';
import type { AuditAction, AuditSource } from '../services/audit.ts';

declare module 'fastify' {
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
