import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Api, Deps } from '../../deps.ts';
import { auditCsv, listAuditLog, type AuditListQuery } from '../../../services/audit.ts';
import { AUDIT_LOG_PAGE_EXAMPLE, AuditLogListSchema, AuditLogQuery } from '../../../schemas/audit-log.ts';
import { platformOf } from '../../plugins/authentication.ts';
import { answer } from '../../../schemas/common.ts';
import { problems } from '../../../schemas/problems.ts';
import { requireDateRange } from '../date-range.ts';
import { sendDownload } from '../download.ts';

export const AUDIT_LOG_DESCRIPTION =
  'Newest first. `actorType`, `action`, `targetType`, `targetId` narrow the list; `fromDate` and `toDate` filter `at` ' +
  '(UTC days, inclusive). With `format=csv` or `Accept: text/csv`: every matching entry (not a page) as a CSV ' +
  'attachment with a header row, streamed; a cell that would start with = + - @, a tab or a carriage return gets a ' +
  'leading single quote. Entries are append-only and hash-chained per platform (`npm run cli -- audit-verify`); none ' +
  'holds a secret.';

/** Whether the caller asked for the CSV export (format=csv, or Accept: text/csv without format=json). */
export function wantsCsv(request: FastifyRequest, format: string | undefined): boolean {
  if (format !== undefined) return format === 'csv';
  return /\btext\/csv\b/i.test(request.headers.accept ?? '');
}

/** The page (json) or the CSV export of the entries `query` selects. */
export async function answerAuditLog(request: FastifyRequest, reply: FastifyReply, deps: Deps, query: AuditListQuery & { format?: string | undefined }) {
  requireDateRange(query);
  const { format: _format, ...selection } = query;
  if (wantsCsv(request, query.format)) return sendDownload(request, reply, auditCsv(deps.database.db, selection, new Date()), 'audit log');
  return listAuditLog(deps.database.db, selection);
}

export function listAuditLogRoute(app: Api, deps: Deps): void {
  app.get(
    '/audit-log',
    {
      schema: {
        tags: ['Audit log'],
        operationId: 'listAuditLog',
        summary: "List the platform's audit trail",
        description: `Every change made to the platform (through the API, the console, the admin API or the CLI), every console sign-in and sign-out, and the background changes that matter (a request settled, credentials the authority refused). ${AUDIT_LOG_DESCRIPTION}`,
        security: [{ apiKey: [] }],
        querystring: AuditLogQuery,
        response: { 200: answer(AuditLogListSchema, "A page of the platform's entries, newest first, and how many match", AUDIT_LOG_PAGE_EXAMPLE), ...problems() },
      },
    },
    async (request, reply) => answerAuditLog(request, reply, deps, { ...request.query, platformId: platformOf(request) }),
  );
}
