import type { FastifyReply, FastifyRequest } from 'fastify';
import { ACTOR_TYPES, AUDIT_ACTIONS } from '../../../domain/audit.ts';
import { auditCsv, listAuditLog, type AuditEntry } from '../../../services/audit.ts';
import { AuditLogQuery } from '../../../schemas/audit-log.ts';
import type { Api, Deps } from '../../deps.ts';
import { requireDateRange } from '../../routes/date-range.ts';
import { sendDownload } from '../../routes/download.ts';
import { optional, validated, type Problem } from '../forms.ts';
import type { ConsolePage } from '../page.ts';
import { failureOf, platformOf, queryOf, render } from '../render.ts';

const AUDIT_LOG = '/console/audit-log';
const PAGE_SIZE = 25;
const FILTER_LABELS = { actorType: 'Actor', action: 'Action', fromDate: 'From', toDate: 'To', page: 'Page' };

type Filters = { actorType: string; action: string; fromDate: string; toDate: string };

function filtersOf(request: FastifyRequest): Filters {
  const query = queryOf(request);
  return {
    actorType: optional(query, 'actorType') ?? '',
    action: optional(query, 'action') ?? '',
    fromDate: optional(query, 'fromDate') ?? '',
    toDate: optional(query, 'toDate') ?? '',
  };
}

/** The filters as the API's query checks them (its schema and date-range rule). */
function checkedQuery(request: FastifyRequest, filters: Filters, limit: number) {
  const checked = validated<{ page: number; limit: number; actorType?: string; action?: string; fromDate?: string; toDate?: string }>(
    AuditLogQuery,
    {
      ...Object.fromEntries(Object.entries(filters).filter(([, value]) => value !== '')),
      page: optional(queryOf(request), 'page') ?? '1',
      limit: String(limit),
    },
    'query',
  );
  requireDateRange(checked);
  return checked;
}

async function listPage(request: FastifyRequest, reply: FastifyReply, deps: Deps): Promise<FastifyReply> {
  const platformId = platformOf(request);
  const filters = filtersOf(request);
  let page: { items: AuditEntry[]; meta: { totalItems: number; totalPages: number; currentPage: number } } = { items: [], meta: { totalItems: 0, totalPages: 0, currentPage: 1 } };
  let problem: Problem | null = null;
  try {
    page = await listAuditLog(deps.database.db, { ...checkedQuery(request, filters, PAGE_SIZE), platformId });
  } catch (error) {
    problem = failureOf(request, error, FILTER_LABELS);
  }
  const filtered = Object.values(filters).some((value) => value !== '');
  const exportQuery = new URLSearchParams(Object.entries(filters).filter(([, value]) => value !== ''));
  return render(
    request,
    reply,
    'audit-log/list',
    { title: 'Audit log', page, filters, filtered, actorTypes: ACTOR_TYPES, actions: AUDIT_ACTIONS, exportHref: `${AUDIT_LOG}/export.csv${exportQuery.size > 0 ? `?${exportQuery}` : ''}`, problem },
    problem?.status ?? 200,
  );
}

/**
 * The console's audit log: the platform's entries with the API's filters, and the same as CSV. Linked from the API keys
 * page, not the navigation: one more entry there wraps the top bar onto a second row at 1440 px.
 */
export const auditLogPage: ConsolePage = {
  routes(app: Api, deps: Deps): void {
    app.get('/audit-log', async (request, reply) => listPage(request, reply, deps));
    app.get('/audit-log/export.csv', async (request, reply) => {
      const platformId = platformOf(request);
      const { page: _page, limit: _limit, ...selection } = checkedQuery(request, filtersOf(request), 1);
      return sendDownload(request, reply, auditCsv(deps.database.db, { ...selection, platformId }, new Date()), 'audit log');
    });
  },
};
