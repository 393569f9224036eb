import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../../errors.ts';
import type { ApiKeyAuthenticator, Principal } from '../../services/platforms.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}

/** The platform that owns the request's API key; set by the authentication hook on every /api/v1 route. */
export function platformOf(request: FastifyRequest): string {
  return request.principal.platformId;
}

export function registerAuthentication(app: FastifyInstance, authenticator: ApiKeyAuthenticator): void {
  app.decorateRequest('principal', null as never);
  // Callback style: a key in the authenticator's cache (nearly every request) is settled without a promise.
  app.addHook('onRequest', (request, _reply, done) => {
    const header = request.headers['x-api-key'];
    const apiKey = Array.isArray(header) ? header[0] : header;
    if (!apiKey) return done(new AppError('api_key_missing', 'Send your API key in the x-api-key header.'));
    const settle = (principal: Principal | undefined): void => {
      if (!principal) return done(new AppError('api_key_invalid', 'The API key in x-api-key is unknown or revoked.'));
      request.principal = principal;
      done();
    };
    const found = authenticator.authenticate(apiKey);
    if (found instanceof Promise) found.then(settle, done);
    else settle(found);
  });
}
