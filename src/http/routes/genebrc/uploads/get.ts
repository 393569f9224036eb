import type { Api, Deps } from '../../../deps.ts';
import { platformOf } from '../../../plugins/authentication.ts';
import { answer } from '../../../../schemas/common.ts';
import { problems } from '../../../../schemas/problems.ts';
import { BulkUploadRef, UPLOAD_EXAMPLES, UploadParams } from '../../../../schemas/uploads.ts';

export function getUploadRoute(app: Api, deps: Deps): void {
  app.get(
    '/genebrc/uploads/:id',
    {
      schema: {
        tags: ['Spreadsheet upload'],
        operationId: 'getUpload',
        summary: "Get an upload and its progress",
        security: [{ apiKey: [] }],
        params: UploadParams,
        response: { 200: answer(BulkUploadRef, 'The upload: its status, rowsDone, row problems and the requests it pushed', UPLOAD_EXAMPLES.upload.completed), ...problems(404) },
      },
    },
    async (request) => deps.uploads.get(platformOf(request), request.params.id),
  );
}
