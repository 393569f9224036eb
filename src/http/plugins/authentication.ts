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
  app.addHook('onRequest', async (request) => {
    const header = request.headers['x-api-key'];
    const apiKey = Array.isArray(header) ? header[0] : header;
    if (!apiKey) throw new AppError('api_key_missing', 'Send your API key in the x-api-key header.');
    const principal = await authenticator.authenticate(apiKey);
    if (!principal) throw new AppError('api_key_invalid', 'The API key in x-api-key is unknown or revoked.');
    request.principal = principal;
  });
}
