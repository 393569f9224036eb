import { sql } from 'kysely';
import type { Api, Deps } from '../deps.ts';
import { Type } from 'typebox';
import { answer } from '../../schemas/common.ts';

export function healthRoutes(app: Api, deps: Deps): void {
  app.get(
    '/health',
    {
      schema: {
        tags: ['Operations'],
        operationId: 'getHealth',
        summary: 'The process is up',
        description: 'Liveness: answers as long as the process serves HTTP, whatever the database. No API key.',
        response: { 200: answer(Type.Object({ status: Type.Literal('ok') }), 'The process is up', { up: { summary: 'Up', value: { status: 'ok' } } }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/ready',
    {
      schema: {
        tags: ['Operations'],
        operationId: 'getReadiness',
        summary: 'The database answers',
        description: 'Readiness: 200 when the database answers a query, else 503 (take the instance out of rotation); 503 too from the moment the process is told to stop (SIGTERM). No API key.',
        response: {
          200: answer(Type.Object({ status: Type.Literal('ready') }), 'The database answers', { ready: { summary: 'Ready', value: { status: 'ready' } } }),
          503: answer(Type.Object({ status: Type.Literal('unavailable') }), 'The database does not answer', {
            unavailable: { summary: 'Not ready', value: { status: 'unavailable' } },
          }),
        },
      },
    },
    async (_request, reply) => {
      try {
        await sql`select 1`.execute(deps.database.db);
        return { status: 'ready' as const };
      } catch {
        return reply.code(503).send({ status: 'unavailable' as const });
      }
    },
  );
}
