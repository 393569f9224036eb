import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { ERROR_TABLE } from '../../errors.ts';

const ERROR_CODES_TEXT = Object.entries(ERROR_TABLE)
  .map(([code, { status, title }]) => `| ${status} | \`${code}\` | ${title} |`)
  .join('\n');

const DESCRIPTION = `Register exporters ("platform customers"), validate their credentials at the trade authority, pull
their IRMs and generate eBRCs for them. Every operation under /api/v1 needs the \`x-api-key\` header.

Errors are RFC 9457 problem documents (\`application/problem+json\`) with a stable \`code\`:

| status | code | meaning |
|---|---|---|
${ERROR_CODES_TEXT}

Every response carries \`x-request-id\`. Every POST takes an optional \`Idempotency-Key\` header (up to 255
characters, kept 24 h): a retry with the same key and body replays the first answer with \`Idempotent-Replayed: true\`.
Rate limits per API key are announced in the \`RateLimit-Policy\` and \`RateLimit\` headers.`;

/** OpenAPI 3.1 from the route schemas, at /openapi.json, and an interactive reference at /docs. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'ebrc-gateway', version: '1.0.0', description: DESCRIPTION },
      components: {
        securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' } },
      },
      tags: [
        { name: 'Platform customers', description: 'Exporters registered by your platform' },
        { name: 'IRMs', description: 'Inward remittances pulled from the authority' },
        { name: 'eBRC generation', description: 'Push lines, follow their status' },
        { name: 'eBRCs', description: "A customer's eBRCs, and each one's PDF summary" },
        { name: 'Operations', description: 'Health, readiness and metrics' },
      ],
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
