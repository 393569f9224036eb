import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../errors.ts';
import { listCustomers } from '../../../services/customers.ts';
import { customerEbrcRegister, platformEbrcRegister } from '../../../services/reports/ebrc-register.ts';
import { irmUtilisation } from '../../../services/reports/irm-utilisation.ts';
import type { Report, ReportQuery as ReportQueryType } from '../../../services/reports/output.ts';
import type { Api, Deps } from '../../deps.ts';
import { requireDateRange } from '../../routes/date-range.ts';
import { sendDownload } from '../../routes/download.ts';
import { ReportQuery } from '../../../schemas/reports.ts';
import { optional, validated, type Problem } from '../forms.ts';
import type { ConsolePage } from '../page.ts';
import { failureOf, platformOf, queryOf, render } from '../render.ts';

const REPORTS = '/console/reports';
/** How many rows the page shows before the file is downloaded. */
const PREVIEW_ROWS = 20;
/** The customers the picker offers: the newest ones (as the uploads page offers them). */
const PICKER_SIZE = 100;

const KINDS = {
  'ebrc-register': { label: 'eBRC register', what: 'eBRC register' },
  'irm-utilisation': { label: 'IRM utilisation', what: 'IRM utilisation report' },
} as const;
type Kind = keyof typeof KINDS;

const LABELS = { fromDate: 'From', toDate: 'To', format: 'Format', customer: 'Customer', report: 'Report' };

type Choice = { report: Kind; customer: string; fromDate: string; toDate: string };

function choiceOf(request: FastifyRequest): Choice {
  const query = queryOf(request);
  const report = optional(query, 'report');
  return {
    report: report !== undefined && report in KINDS ? (report as Kind) : 'ebrc-register',
    customer: optional(query, 'customer') ?? '',
    fromDate: optional(query, 'fromDate') ?? '',
    toDate: optional(query, 'toDate') ?? '',
  };
}

/** The report the choice names, through the services the API's report routes call, for the user's platform. */
async function reportOf(request: FastifyRequest, deps: Deps, choice: Choice, format: string): Promise<Report> {
  const query = validated<ReportQueryType>(
    ReportQuery,
    { format, ...(choice.fromDate === '' ? {} : { fromDate: choice.fromDate }), ...(choice.toDate === '' ? {} : { toDate: choice.toDate }) },
    'query',
  );
  requireDateRange(query);
  const platformId = platformOf(request);
  if (choice.report === 'ebrc-register') {
    return choice.customer === ''
      ? platformEbrcRegister(deps.context, platformId, query)
      : customerEbrcRegister(deps.context, platformId, choice.customer, query);
  }
  if (choice.customer === '') {
    throw new AppError('validation_failed', 'The IRM utilisation report is made for one customer: choose it.', {
      errors: [{ path: '/customer', code: 'required', message: 'Choose the customer whose IRMs to report on.' }],
    });
  }
  return irmUtilisation(deps.context, platformId, choice.customer, query);
}

/** Quick periods for the picker: the month so far, the last month, the Indian financial year so far (April to March). */
function periods(today: Date): { label: string; fromDate: string; toDate: string }[] {
  const day = (date: Date) => date.toISOString().slice(0, 10);
  const year = today.getUTCFullYear();
  const month = today.getUTCMonth();
  const financialYear = month >= 3 ? year : year - 1;
  return [
    { label: 'This month', fromDate: day(new Date(Date.UTC(year, month, 1))), toDate: day(today) },
    { label: 'Last month', fromDate: day(new Date(Date.UTC(year, month - 1, 1))), toDate: day(new Date(Date.UTC(year, month, 0))) },
    { label: 'This financial year', fromDate: day(new Date(Date.UTC(financialYear, 3, 1))), toDate: day(today) },
  ];
}

async function showReports(request: FastifyRequest, reply: FastifyReply, deps: Deps): Promise<FastifyReply> {
  const choice = choiceOf(request);
  const customers = await listCustomers(deps.database.db, platformOf(request), { page: 1, limit: PICKER_SIZE });
  const asked = optional(queryOf(request), 'report') !== undefined;
  let preview: { header: string[]; rows: (string | null)[][] } | null = null;
  let problem: Problem | null = null;
  if (asked) {
    try {
      preview = await (await reportOf(request, deps, choice, 'json')).preview(PREVIEW_ROWS);
    } catch (error) {
      problem = failureOf(request, error, LABELS);
      // Another platform's customer (or none) is the 404 page.
      if (problem.code === 'not_found') throw error;
    }
  }
  return render(
    request,
    reply,
    'reports/index',
    {
      title: 'Reports',
      choice,
      kinds: Object.entries(KINDS).map(([value, kind]) => ({ value, label: kind.label })),
      customers: customers.items,
      periods: periods(new Date()),
      preview,
      previewRows: PREVIEW_ROWS,
      problem,
    },
    problem?.status ?? 200,
  );
}

export const reportsPage: ConsolePage = {
  nav: { label: 'Reports', href: REPORTS },
  routes(app: Api, deps: Deps): void {
    app.get('/reports', async (request, reply) => showReports(request, reply, deps));

    // The file: the API's report operations, streamed as their routes stream them.
    app.get('/reports/download', async (request, reply) => {
      const choice = choiceOf(request);
      const report = await reportOf(request, deps, choice, optional(queryOf(request), 'format') ?? 'csv');
      return sendDownload(request, reply, report, KINDS[choice.report].what);
    });
  },
};
