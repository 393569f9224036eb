import type { FieldProblem } from './push-line.ts';
import { normalizeUploadType, type UploadTypeCode } from './upload-type.ts';

/** The only declaration the authority takes: the exporter declares the mapping true. */
export const DECLARATION_FLAG = 'Y';

/**
 * The checks on a push's message fields, beside its lines: `uploadType` is one the authority knows, and
 * `decalarationFlag` is Y (ERR36 when empty, ERR37 otherwise). A push and a spreadsheet upload's form both run them.
 */
export function checkPushMessage(fields: { uploadType: unknown; decalarationFlag: string }): { uploadType: UploadTypeCode | null; problems: FieldProblem[] } {
  const uploadType = normalizeUploadType(fields.uploadType);
  const problems: FieldProblem[] = [];
  if (uploadType === null) {
    problems.push({
      path: '/uploadType',
      code: 'invalid_upload_type',
      message: 'uploadType must be 101, 102, 103 or 104 (string or number), or DIRECT_EXPORT, GOODS, SOFTEX, SERVICES or DEEMED_EXPORT.',
    });
  }
  if (fields.decalarationFlag !== DECLARATION_FLAG) {
    problems.push({
      path: '/decalarationFlag',
      code: fields.decalarationFlag === '' ? 'ERR36' : 'ERR37',
      message: 'decalarationFlag must be Y: the exporter declares the mapping true.',
    });
  }
  return { uploadType, problems };
}
