import type { FastifyInstance } from 'fastify';
import { AppError } from '../../errors.ts';
import { adminTokenMatches } from '../../services/admin-token.ts';

const CHALLENGE = 'Bearer realm="ebrc-gateway admin"';

/**
 * The admin API's one check (contract 10), on every route of its scope: `Authorization: Bearer <token>`, compared in
 * constant time. Without a token (no ADMIN_TOKEN, not the embedded default) the API is off: every path answers 404 as
 * a path no route has does. The routes stay registered either way, so the OpenAPI document is the same everywhere.
 */
export function registerAdminAuthentication(app: FastifyInstance, token: string | undefined): void {
  app.addHook('onRequest', (request, _reply, done) => {
    if (token === undefined) {
      const path = (request.url.split('?')[0] ?? '').slice(0, 200);
      return done(new AppError('not_found', `There is no ${request.method} ${path}.`));
    }
    const header = request.headers.authorization;
    if (!header) {
      return done(new AppError('admin_token_missing', 'Send the admin token as Authorization: Bearer <token>.', { headers: { 'www-authenticate': CHALLENGE } }));
    }
    const bearer = /^Bearer +(\S+) *$/i.exec(header);
    if (!bearer || !adminTokenMatches(bearer[1]!, token)) {
      return done(
        new AppError('admin_token_invalid', 'The Authorization header does not hold the admin token (Authorization: Bearer <token>).', {
          headers: { 'www-authenticate': `${CHALLENGE}, error="invalid_token"` },
        }),
      );
    }
    done();
  });
}
