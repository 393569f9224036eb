import type { Api, Deps } from '../../../deps.ts';
import { auditSourceOf } from '../../../audit-source.ts';
import { platformOf } from '../../../plugins/authentication.ts';
import { answer, withExamples } from '../../../../schemas/common.ts';
import { problems } from '../../../../schemas/problems.ts';
import { BulkUploadRef, UPLOAD_EXAMPLES, UploadFormBody } from '../../../../schemas/uploads.ts';
import { readUploadForm, uploadedFileOf } from './form.ts';

export function createUploadRoute(app: Api, deps: Deps): void {
  app.post(
    '/genebrc/uploads',
    {
      config: { audit: 'bulk_upload.create' },
      schema: {
        tags: ['Spreadsheet upload'],
        operationId: 'createUpload',
        summary: 'Upload a spreadsheet of lines to push',
        description:
          'A CSV or XLSX file whose header row is the push line fields (download the template from ' +
          '`GET /api/v1/platform-customers/{id}/irm/template`). Every row is checked as a push checks its lines; if any row is ' +
          'malformed the upload is `rejected` with every problem by row and column, and nothing is pushed. Otherwise the rows ' +
          "are split into pushes of at most 999 lines (an IRM's rows kept together where they fit) and pushed in the " +
          'background: follow `rowsDone` with GET /api/v1/genebrc/uploads/{id}, or wait for the `bulk_upload.completed` event. ' +
          'The same file (by SHA-256) for the same customer within 24 h answers that upload with 200, unless it was rejected.',
        security: [{ apiKey: [] }],
        consumes: ['multipart/form-data'],
        body: withExamples(UploadFormBody, UPLOAD_EXAMPLES.upload.request),
        response: {
          200: answer(BulkUploadRef, 'The upload of the same file made within 24 h', UPLOAD_EXAMPLES.upload.same),
          202: answer(BulkUploadRef, 'The upload, accepted: its rows are checked and pushed in the background', UPLOAD_EXAMPLES.upload.accepted),
          ...problems(404, 409, 413, 415),
        },
      },
      preValidation: readUploadForm,
    },
    async (request, reply) => {
      const { created, upload } = await deps.uploads.accept(platformOf(request), request.body, uploadedFileOf(request), auditSourceOf(request));
      return reply.code(created ? 202 : 200).send(upload);
    },
  );
}
