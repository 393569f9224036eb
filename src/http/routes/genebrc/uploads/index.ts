import multipart from '@fastify/multipart';
import type { Api, Deps } from '../../../deps.ts';
import { createUploadRoute } from './create.ts';
import { getUploadRoute } from './get.ts';
import { listUploadsRoute } from './list.ts';

/** The spreadsheet upload routes, in their own scope: only they take multipart bodies. */
export async function uploadRoutes(app: Api, deps: Deps): Promise<void> {
  await app.register(async (scope) => {
    const uploads = scope as unknown as Api;
    await uploads.register(multipart);
    createUploadRoute(uploads, deps);
    getUploadRoute(uploads, deps);
    listUploadsRoute(uploads, deps);
  });
}
