import type { Api, Deps } from '../../../deps.ts';
import { platformOf } from '../../../plugins/authentication.ts';
import { answer } from '../../../../schemas/common.ts';
import { problems } from '../../../../schemas/problems.ts';
import { UPLOAD_EXAMPLES, UploadListQuery, UploadListSchema } from '../../../../schemas/uploads.ts';

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
        response: { 200: answer(UploadListSchema, "A page of the platform's uploads, newest first, and how many there are", UPLOAD_EXAMPLES.uploadList), ...problems() },
      },
    },
    async (request) => deps.uploads.list(platformOf(request), request.query),
  );
}
