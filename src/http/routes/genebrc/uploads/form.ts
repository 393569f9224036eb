import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../../../../errors.ts';
import type { UploadedFile } from '../../../../services/bulk-uploads.ts';

/** At most 10 MiB of file (contract 11). */
export const MAX_UPLOAD_BYTES = 10 * 1024 * 1024;
const LIMITS = { fileSize: MAX_UPLOAD_BYTES, files: 1, fields: 10, fieldSize: 1024, parts: 12 };
const LIMIT_ERRORS: ReadonlySet<string> = new Set(['FST_REQ_FILE_TOO_LARGE', 'FST_FILES_LIMIT', 'FST_FIELDS_LIMIT', 'FST_PARTS_LIMIT']);

const files = new WeakMap<FastifyRequest, UploadedFile>();

/** The file a request's multipart body carried, once readUploadForm has read it. */
export function uploadedFileOf(request: FastifyRequest): UploadedFile {
  const file = files.get(request);
  if (file === undefined) throw new Error('readUploadForm did not run for this request');
  return file;
}

function tooLarge(): AppError {
  return new AppError('payload_too_large', `The upload is too large: one file of at most ${MAX_UPLOAD_BYTES / 1024 / 1024} MiB, with the three form fields.`);
}

/**
 * preValidation of the upload route: reads the multipart body (the form's fields and one `file`, hashed as it
 * streams in) into the body the route's schema checks. The file itself is kept aside (uploadedFileOf); the body
 * carries its SHA-256 in its place, so that an Idempotency-Key's fingerprint covers the file's content.
 */
export async function readUploadForm(request: FastifyRequest): Promise<void> {
  if (!request.isMultipart()) {
    throw new AppError('unsupported_media_type', 'Send the upload as multipart/form-data: the fields platformCustomerId, uploadType and decalarationFlag, and the file as `file`.');
  }
  const body: Record<string, string> = {};
  try {
    for await (const part of request.parts({ limits: LIMITS })) {
      if (part.type === 'field') {
        body[part.fieldname] = String(part.value);
        continue;
      }
      const hash = createHash('sha256');
      const chunks: Buffer[] = [];
      for await (const chunk of part.file) {
        hash.update(chunk as Buffer);
        chunks.push(chunk as Buffer);
      }
      if (part.file.truncated) throw tooLarge();
      const sha256 = hash.digest('hex');
      body[part.fieldname] = sha256;
      if (part.fieldname === 'file') {
        files.set(request, { fileName: part.filename || 'upload', contentType: part.mimetype, content: Buffer.concat(chunks), sha256 });
      }
    }
  } catch (error) {
    if (error instanceof AppError) throw error;
    const code = (error as { code?: string }).code;
    if (code !== undefined && LIMIT_ERRORS.has(code)) throw tooLarge();
    throw new AppError('validation_failed', 'The multipart body could not be read; send it again as multipart/form-data.', {
      errors: [{ path: '', code: 'invalid_multipart', message: error instanceof Error ? error.message : String(error) }],
    });
  }
  request.body = body;
}
