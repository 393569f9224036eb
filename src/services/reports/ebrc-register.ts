import { formatCents, parseDecimalString, parseMoney } from '../../domain/money.ts';
import * as store from '../../store/reports.ts';
import { requireCustomer } from '../customers.ts';
import { readingAhead } from '../spreadsheets/write.ts';
import { CurrencyTotals, makeReport, type Column, type ReportContext, type ReportQuery, type Report, type ReportShape } from './output.ts';

/** A register row of the platform-wide register: the eBRC and the customer it belongs to. */
type PlatformRegisterRow = store.RegisterReportRow & { customer: store.ReportCustomerRow };

/** The realised value is summed only over the eBRCs that stand: a cancelled one proves no realisation. */
const REALISED = ['realisedValue'] as const;

/** An amount the request line carried (a JSON number as pushed) as exact decimal text with two places. */
function lineAmount(value: unknown): string | null {
  if (typeof value !== 'number') return typeof value === 'string' ? value : null;
  const cents = parseMoney(value);
  return cents === null ? String(value) : formatCents(cents);
}

function lineText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  return typeof value === 'string' ? value : String(value);
}

function lineField(name: string, format: (value: unknown) => string | null = lineText): Column<store.RegisterReportRow> {
  return { header: name, cell: (row) => (row.line === null ? null : format(row.line[name])) };
}

/** The columns of the register (contract 16): the eBRC, the invoice and shipping bill, the IRM, the deductions. */
const REGISTER_COLUMNS: readonly Column<store.RegisterReportRow>[] = [
  { header: 'ebrcNumber', cell: (row) => row.ebrc_number },
  { header: 'ebrcDate', cell: (row) => row.ebrc_date },
  { header: 'status', cell: (row) => row.status },
  { header: 'source', cell: (row) => row.source },
  { header: 'requestId', cell: (row) => row.request_id },
  { header: 'sbCumInvoiceNumber', cell: (row) => row.sb_cum_invoice_number },
  { header: 'sbCumInvoiceDate', cell: (row) => row.sb_cum_invoice_date },
  lineField('portCode'),
  lineField('billNo'),
  lineField('sbCumInvoiceFCC'),
  lineField('sbCumInvoiceValueinFCC', lineAmount),
  { header: 'irmNumber', cell: (row) => row.irm_number },
  { header: 'irmDt', cell: (row) => row.irm_issue_date },
  { header: 'irmIfscCode', cell: (row) => row.ifsc_code },
  { header: 'irmAdCode', cell: (row) => row.remittance_ad_code },
  { header: 'irmPurposeCode', cell: (row) => row.purpose_of_remittance },
  { header: 'remitterName', cell: (row) => row.remitter_name },
  { header: 'remitterCountry', cell: (row) => row.remitter_country },
  { header: 'currency', cell: (row) => row.currency },
  { header: 'realisedValueFCC', cell: (row) => formatCents(parseDecimalString(row.realised_value_fcc)) },
  lineField('commissionValDeduct', lineAmount),
  lineField('commissionValInfo'),
  lineField('discountValDeduct', lineAmount),
  lineField('discountValInfo'),
  lineField('insuranceValDeduct', lineAmount),
  lineField('insuranceValInfo'),
  lineField('freightValDeduct', lineAmount),
  lineField('freightValInfo'),
  lineField('otherDeductionDeduct', lineAmount),
  lineField('otherdeductionsInfo'),
];

type RegisterTotal = ReturnType<CurrencyTotals<'realisedValue'>['rows']>[number];

const TOTALS_COLUMNS: readonly Column<RegisterTotal>[] = [
  { header: 'currency', cell: (total) => total.currency },
  { header: 'count', cell: (total) => String(total.count) },
  { header: 'realisedValue', cell: (total) => total.realisedValue },
];

const CUSTOMER_REGISTER: ReportShape<store.RegisterReportRow, RegisterTotal> = {
  name: 'eBRC register',
  columns: REGISTER_COLUMNS,
  totalsName: 'Totals',
  totalsColumns: TOTALS_COLUMNS,
};

const PLATFORM_REGISTER: ReportShape<PlatformRegisterRow, RegisterTotal> = {
  name: 'eBRC register',
  columns: [
    { header: 'platformCustomerId', cell: (row) => row.customer.id },
    { header: 'customerName', cell: (row) => row.customer.name },
    { header: 'iecCode', cell: (row) => row.customer.iec_code },
    ...REGISTER_COLUMNS,
  ],
  totalsName: 'Totals',
  totalsColumns: TOTALS_COLUMNS,
};

/** The rows as they pass, counted into `totals` when their eBRC stands. */
async function* counted<R extends store.RegisterReportRow>(rows: AsyncIterable<R>, totals: CurrencyTotals<'realisedValue'>): AsyncGenerator<R> {
  for await (const row of rows) {
    if (row.status === 'generated') totals.add(row.currency, { realisedValue: parseDecimalString(row.realised_value_fcc) });
    yield row;
  }
}

/**
 * A customer's eBRC register (contract 16): one row per eBRC of the register dated within the period, in the eBRC
 * list's order, with totals per currency. Read from the store in keyset batches while it is written; the first batch
 * is read before this returns, so that a failure up to there is answered as a problem.
 */
export async function customerEbrcRegister(
  context: ReportContext,
  platformId: string,
  customerId: string,
  query: ReportQuery,
  now: Date = new Date(),
): Promise<Report> {
  const customer = await requireCustomer(context.db, platformId, customerId);
  const totals = new CurrencyTotals(REALISED);
  const rows = await readingAhead(counted(store.registerInListOrder(context.db, customer.id, query), totals));
  return makeReport({ owner: customer.iec_code ?? customer.id, name: 'ebrc-register', query, now }, CUSTOMER_REGISTER, rows, () => totals.rows());
}

async function* platformRows(context: ReportContext, platformId: string, query: ReportQuery): AsyncGenerator<PlatformRegisterRow> {
  for await (const customer of store.customersOfPlatform(context.db, platformId)) {
    for await (const row of store.registerInListOrder(context.db, customer.id, query)) yield { ...row, customer };
  }
}

/** The register of every customer of the platform, customer after customer (by id), each in the eBRC list's order. */
export async function platformEbrcRegister(context: ReportContext, platformId: string, query: ReportQuery, now: Date = new Date()): Promise<Report> {
  const totals = new CurrencyTotals(REALISED);
  const rows = await readingAhead(counted(platformRows(context, platformId, query), totals));
  return makeReport({ owner: 'all-customers', name: 'ebrc-register', query, now }, PLATFORM_REGISTER, rows, () => totals.rows());
}
