import type { Api, Deps } from '../../deps.ts';
import { getEvent } from '../../../services/events.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer } from '../../../schemas/common.ts';
import { EVENT_EXAMPLES, EventParams, EventRef } from '../../../schemas/events.ts';
import { problems } from '../../../schemas/problems.ts';

export function getEventRoute(app: Api, deps: Deps): void {
  app.get(
    '/events/:id',
    {
      schema: {
        tags: ['Events'],
        operationId: 'getEvent',
        summary: 'Get an event',
        security: [{ apiKey: [] }],
        params: EventParams,
        response: { 200: answer(EventRef, 'The event', EVENT_EXAMPLES.event), ...problems(404) },
      },
    },
    async (request) => getEvent(deps.database.db, platformOf(request), request.params.id),
  );
}
