import type { Api, Deps } from '../../deps.ts';
import { listEvents } from '../../../services/events.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer } from '../../../schemas/common.ts';
import { EVENT_EXAMPLES, EventListQuery, EventListSchema } from '../../../schemas/events.ts';
import { problems } from '../../../schemas/problems.ts';
import { requireDateRange } from '../date-range.ts';

export function listEventsRoute(app: Api, deps: Deps): void {
  app.get(
    '/events',
    {
      schema: {
        tags: ['Events'],
        operationId: 'listEvents',
        summary: 'List events',
        description:
          "The platform's events, newest first, kept at least 30 days. `type` and `platformCustomerId` (one of the " +
          "platform's customers, else 404) narrow the list; `fromDate` and `toDate` filter `timestamp` (UTC days, inclusive).",
        security: [{ apiKey: [] }],
        querystring: EventListQuery,
        response: { 200: answer(EventListSchema, "A page of the platform's events, newest first, and how many match", EVENT_EXAMPLES.eventList), ...problems(404) },
      },
    },
    async (request) => {
      requireDateRange(request.query);
      return listEvents(deps.database.db, platformOf(request), request.query);
    },
  );
}
