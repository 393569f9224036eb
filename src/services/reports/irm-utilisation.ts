import { CANCELLED_AT_AUTHORITY, irmStatusOf } from '../../domain/irm-status.ts';
import { formatCents, parseDecimalString, sumCents } from '../../domain/money.ts';
import { irmsInListOrder, type IrmRow } from '../../store/irms.ts';
import * as store from '../../store/reports.ts';
import { requireCustomer } from '../customers.ts';
import { readingAhead } from '../spreadsheets/write.ts';
import { CurrencyTotals, makeReport, type Column, type ReportContext, type ReportQuery, type Report, type ReportShape } from './output.ts';

/** One IRM of the report, with the eBRCs it was mapped to. */
type UtilisationRow = { irm: IrmRow; cancelled: boolean; ebrcs: store.MappedEbrcRow[] };

const AMOUNTS = ['remittedValue', 'utilisedValue', 'availableValue', 'realisedValue'] as const;

type UtilisationTotal = ReturnType<CurrencyTotals<(typeof AMOUNTS)[number]>['rows']>[number];

const money = (text: string): string => formatCents(parseDecimalString(text));

/** What the IRM's eBRCs realised: those that stand (a cancelled eBRC gave its amount back). */
function realised(row: UtilisationRow): bigint {
  return sumCents(row.ebrcs.filter((ebrc) => ebrc.status === 'generated').map((ebrc) => parseDecimalString(ebrc.realised_value_fcc)));
}

/** `EBRC1 100.00; EBRC2 50.00 cancelled`: each eBRC's number and amount, in date order. */
function ebrcList(row: UtilisationRow): string | null {
  if (row.ebrcs.length === 0) return null;
  return row.ebrcs
    .map((ebrc) => `${ebrc.ebrc_number} ${money(ebrc.realised_value_fcc)}${ebrc.status === 'cancelled' ? ' cancelled' : ''}`)
    .join('; ');
}

const COLUMNS: readonly Column<UtilisationRow>[] = [
  { header: 'irmNumber', cell: ({ irm }) => irm.irm_number },
  { header: 'irmIssueDate', cell: ({ irm }) => irm.irm_issue_date },
  { header: 'remittanceDate', cell: ({ irm }) => irm.remittance_date },
  {
    header: 'irmStatus',
    cell: ({ irm, cancelled }) =>
      irmStatusOf({ cancelled, availableCents: parseDecimalString(irm.irm_available_amt), utilisedCents: parseDecimalString(irm.irm_utilized_amt) }),
  },
  { header: 'ifscCode', cell: ({ irm }) => irm.ifsc_code },
  { header: 'remittanceAdCode', cell: ({ irm }) => irm.remittance_ad_code },
  { header: 'purposeOfRemittance', cell: ({ irm }) => irm.purpose_of_remittance },
  { header: 'remitterName', cell: ({ irm }) => irm.remitter_name },
  { header: 'remitterCountry', cell: ({ irm }) => irm.remitter_country },
  { header: 'currency', cell: ({ irm }) => irm.remittance_fcc },
  { header: 'remittedValue', cell: ({ irm }) => money(irm.remittance_fcc_amount) },
  { header: 'utilisedValue', cell: ({ irm }) => money(irm.irm_utilized_amt) },
  { header: 'availableValue', cell: ({ irm }) => money(irm.irm_available_amt) },
  { header: 'realisedValue', cell: (row) => formatCents(realised(row)) },
  { header: 'ebrcCount', cell: (row) => String(row.ebrcs.length) },
  { header: 'ebrcs', cell: ebrcList },
];

const IRM_UTILISATION: ReportShape<UtilisationRow, UtilisationTotal> = {
  name: 'IRM utilisation',
  columns: COLUMNS,
  // In json the eBRCs are a list of objects rather than one cell of text.
  json: (row) => ({
    ...Object.fromEntries(COLUMNS.filter((column) => column.header !== 'ebrcs').map((column) => [column.header, column.cell(row)])),
    ebrcs: row.ebrcs.map((ebrc) => ({ ebrcNumber: ebrc.ebrc_number, ebrcDate: ebrc.ebrc_date, realisedValue: money(ebrc.realised_value_fcc), status: ebrc.status })),
  }),
  totalsName: 'Totals',
  totalsColumns: [
    { header: 'currency', cell: (total) => total.currency },
    { header: 'count', cell: (total) => String(total.count) },
    ...AMOUNTS.map((key) => ({ header: key, cell: (total: UtilisationTotal) => total[key] })),
  ],
};

/**
 * The customer's IRMs in the list's order, a batch at a time, each with the eBRCs mapped to it (one statement per
 * batch), counted into `totals` unless cancelled at the authority.
 */
async function* utilisationRows(
  context: ReportContext,
  customerId: string,
  query: ReportQuery,
  totals: CurrencyTotals<(typeof AMOUNTS)[number]>,
): AsyncGenerator<UtilisationRow> {
  let batch: IrmRow[] = [];
  const flush = async function* (): AsyncGenerator<UtilisationRow> {
    const ebrcs = await store.ebrcsOfIrms(context.db, customerId, batch.map((irm) => irm.irm_number));
    const byIrm = Map.groupBy(ebrcs, (ebrc) => ebrc.irm_number);
    for (const irm of batch) {
      const row = { irm, cancelled: irm.authority_status === CANCELLED_AT_AUTHORITY, ebrcs: byIrm.get(irm.irm_number) ?? [] };
      if (!row.cancelled) {
        totals.add(irm.remittance_fcc, {
          remittedValue: parseDecimalString(irm.remittance_fcc_amount),
          utilisedValue: parseDecimalString(irm.irm_utilized_amt),
          availableValue: parseDecimalString(irm.irm_available_amt),
          realisedValue: realised(row),
        });
      }
      yield row;
    }
    batch = [];
  };
  for await (const irm of irmsInListOrder(context.db, { customerId, fromDate: query.fromDate, toDate: query.toDate })) {
    batch.push(irm);
    if (batch.length === store.REPORT_READ_BATCH) yield* flush();
  }
  yield* flush();
}

/**
 * The IRM utilisation report (contract 16): one row per IRM issued within the period, in the IRM list's order, with
 * its remitted, utilised and available amounts as stored (as of the last pull or reconciliation: this reads the
 * store, never the authority), its status and the eBRCs it was mapped to; totals per currency.
 */
export async function irmUtilisation(
  context: ReportContext,
  platformId: string,
  customerId: string,
  query: ReportQuery,
  now: Date = new Date(),
): Promise<Report> {
  const customer = await requireCustomer(context.db, platformId, customerId);
  const totals = new CurrencyTotals(AMOUNTS);
  const rows = await readingAhead(utilisationRows(context, customer.id, query, totals));
  return makeReport({ owner: customer.iec_code ?? customer.id, name: 'irm-utilisation', query, now }, IRM_UTILISATION, rows, () => totals.rows());
}
