import type { Api, Deps } from '../../../deps.ts';
import { platformOf } from '../../../plugins/authentication.ts';
import { answer, MORE_EXAMPLES, problems, UploadListQuery, UploadListSchema } from '../../../schemas.ts';

export function listUploadsRoute(app: Api, deps: Deps): void {
  app.get(
    '/genebrc/uploads',
    {
      schema: {
        tags: ['Spreadsheet upload'],
        operationId: 'listUploads',
        summary: 'List uploads',
        description: 'Newest first; `platformCustomerId` keeps one customer\'s.',
        security: [{ apiKey: [] }],
        querystring: UploadListQuery,
        response: { 200: answer(UploadListSchema, "A page of the platform's uploads, newest first, and how many there are", MORE_EXAMPLES.uploadList), ...problems() },
      },
    },
    async (request) => deps.uploads.list(platformOf(request), request.query),
  );
}
