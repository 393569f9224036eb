import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { Api, Deps } from '../../deps.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer } from '../../../schemas/common.ts';
import { GENEBRC_EXAMPLES, RequestListQuery, RequestRecordSchema } from '../../../schemas/genebrc-requests.ts';
import { problems } from '../../../schemas/problems.ts';
import { requireDateRange } from '../date-range.ts';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

function pageLink(url: URL, page: number, rel: string): string {
  url.searchParams.set('page', String(page));
  return `<${url.pathname}${url.search}>; rel="${rel}"`;
}

export function listRequestsRoute(app: Api, deps: Deps): void {
  app.get(
    '/genebrc',
    {
      schema: {
        tags: ['eBRC generation'],
        operationId: 'listGenebrcRequests',
        summary: "List a customer's GenEBRC requests",
        description:
          'A plain JSON array, newest first; the total is in `X-Total-Count` and the pages in `Link` ' +
          '(rel first, prev, next, last). `fromDate` and `toDate` filter `createdAt` (UTC days, inclusive).',
        security: [{ apiKey: [] }],
        querystring: RequestListQuery,
        response: {
          200: answer(Type.Array(RequestRecordSchema), "A page of the customer's requests, newest first; the total in X-Total-Count, the pages in Link", GENEBRC_EXAMPLES.requestList),
          ...problems(404),
        },
      },
    },
    async (request, reply) => {
      const { query } = request;
      requireDateRange(query);
      const { total, body } = await deps.requestList.page(platformOf(request), query);
      const lastPage = Math.max(1, Math.ceil(total / query.limit));
      const url = new URL(request.url, 'http://placeholder');
      const links = [pageLink(url, 1, 'first'), pageLink(url, lastPage, 'last')];
      if (query.page > 1) links.push(pageLink(url, Math.min(query.page - 1, lastPage), 'prev'));
      if (query.page < lastPage) links.push(pageLink(url, query.page + 1, 'next'));
      reply.header('X-Total-Count', String(total)).header('Link', links.join(', ')).type(JSON_CONTENT_TYPE);
      // Already JSON text (or a stream of it), which Fastify sends as it is: the schema above documents it, and its
      // serializer is not used (hence the reply without the schema's type).
      return (reply as FastifyReply).send(body);
    },
  );
}
