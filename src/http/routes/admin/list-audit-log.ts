import type { Api, Deps } from '../../deps.ts';
import { AdminAuditLogQuery, AUDIT_LOG_PAGE_EXAMPLE, AuditLogListSchema } from '../../../schemas/audit-log.ts';
import { answer } from '../../../schemas/common.ts';
import { adminProblems } from '../../../schemas/problems.ts';
import { answerAuditLog, AUDIT_LOG_DESCRIPTION } from '../audit-log/list.ts';

export function listAuditLogAdminRoute(app: Api, deps: Deps): void {
  app.get(
    '/audit-log',
    {
      schema: {
        tags: ['Admin'],
        operationId: 'listAuditLogAdmin',
        summary: 'List the audit trail of every platform',
        description: `Every platform's entries and the operator-wide ones (refused sign-ins); \`platformId\` narrows it to one platform. ${AUDIT_LOG_DESCRIPTION}`,
        security: [{ adminToken: [] }],
        querystring: AdminAuditLogQuery,
        response: { 200: answer(AuditLogListSchema, 'A page of entries, newest first, and how many match', AUDIT_LOG_PAGE_EXAMPLE), ...adminProblems() },
      },
    },
    async (request, reply) => answerAuditLog(request, reply, deps, request.query),
  );
}
