import { PassThrough } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Download } from '../../services/spreadsheets/write.ts';

/** The failure of a download whose client closed the connection first: Fastify destroyed the body, nothing broke. */
function clientWentAway(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ERR_STREAM_PREMATURE_CLOSE' || code === 'ABORT_ERR' || code === 'ERR_STREAM_DESTROYED';
}

/**
 * Sends a file as an attachment (never cached: it holds a customer's data), streamed as it is written. The file's `write` ends the body when the file is
 * complete and destroys it on any failure: Fastify then cuts the connection without ending the chunked body, so a
 * client never takes part of a file for all of it. HEAD (which Fastify answers with the GET handler) gets the headers
 * without the file being made.
 */
export function sendDownload(request: FastifyRequest, reply: FastifyReply, download: Download, what: string): FastifyReply {
  reply.type(download.contentType).header('cache-control', 'no-store').header('content-disposition', `attachment; filename="${download.fileName}"`);
  if (request.method === 'HEAD') return reply.send();
  const body = new PassThrough();
  download.write(body).catch((error: unknown) => {
    if (clientWentAway(error)) request.log.info(`the client closed the connection before the ${what} was complete`);
    else request.log.error({ err: error }, `the ${what} failed while it was being sent`);
    body.destroy(error instanceof Error ? error : new Error(String(error)));
  });
  return reply.send(body);
}
