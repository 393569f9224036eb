import { sql } from 'kysely';
import type { Api, Deps } from '../deps.ts';
import { Type } from 'typebox';
import { answer } from '../schemas.ts';

export function healthRoutes(app: Api, deps: Deps): void {
  app.get(
    '/health',
    { schema: { tags: ['Operations'], summary: 'The process is up', response: { 200: answer(Type.Object({ status: Type.Literal('ok') }), 'The process is up') } } },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/ready',
    {
      schema: {
        tags: ['Operations'],
        summary: 'The database answers',
        response: {
          200: answer(Type.Object({ status: Type.Literal('ready') }), 'The database answers'),
          503: answer(Type.Object({ status: Type.Literal('unavailable') }), 'The database does not answer'),
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
