import { CANCELLED_AT_AUTHORITY, isMappableIrm } from '../domain/irm-status.ts';
import { parseDecimalString } from '../domain/money.ts';
import * as store from '../store/irms.ts';
import { requireVerified, type ServiceContext } from './context.ts';
import { requireCustomer } from './customers.ts';
import type { IrmPuller } from './irms.ts';
import { CSV_CONTENT_TYPE, writeTemplate, XLSX_CONTENT_TYPE, type SpreadsheetFormat, type TemplateIrm } from './spreadsheets/template.ts';
import { fileNamePart, readingAhead, type Download } from './spreadsheets/write.ts';

/** The template's query (contract 11): its format and the IRM list's filters, not paged. */
export type IrmTemplateQuery = {
  format: SpreadsheetFormat;
  irmNumber?: string | undefined;
  fromDate?: string | undefined;
  toDate?: string | undefined;
};

/** A template ready to be sent. */
export type IrmTemplateDownload = Download;

const CONTENT_TYPES: Record<SpreadsheetFormat, string> = { csv: CSV_CONTENT_TYPE, xlsx: XLSX_CONTENT_TYPE };

/** `irm-template-<IEC, else the customer id>-<UTC date YYYYMMDD>.<format>`. */
export function templateFileName(customer: { id: string; iec_code: string | null }, format: SpreadsheetFormat, at: Date): string {
  const owner = fileNamePart(customer.iec_code ?? customer.id);
  const day = at.toISOString().slice(0, 10).replaceAll('-', '');
  return `irm-template-${owner}-${day}.${format}`;
}

/** The customer's IRMs in the list's order, read a batch at a time, as template rows: only those a push may map. */
async function* mappableIrms(rows: AsyncIterable<store.IrmForTemplate>): AsyncGenerator<TemplateIrm> {
  for await (const row of rows) {
    const available = parseDecimalString(row.irm_available_amt);
    const cancelled = row.authority_status === CANCELLED_AT_AUTHORITY;
    if (!isMappableIrm({ cancelled, availableCents: available, purposeOfRemittance: row.purpose_of_remittance })) continue;
    yield {
      irmNumber: row.irm_number,
      irmDt: row.irm_issue_date,
      irmIfscCode: row.ifsc_code,
      irmAdCode: row.remittance_ad_code,
      irmFCC: row.remittance_fcc,
      irmPurposeCode: row.purpose_of_remittance,
      available,
    };
  }
}

/**
 * The template of a customer's IRMs (contract 11). As the IRM list does, it needs a verified customer (409) and pulls
 * the IRMs from the authority first unless a pull is recent (IrmPuller: at most once per IRM_REFRESH_INTERVAL_SECONDS,
 * concurrent pulls shared), so a customer that never pulled gets its IRMs, and an outage is a 502/504 here too. The
 * rows are then read from the store in keyset batches while the file is written (store.irmsInListOrder): the first
 * batch is read before this returns, so that a failure up to there is answered as a problem, and a template of
 * 100,000 IRMs never sits in memory.
 */
export async function irmTemplate(
  context: ServiceContext,
  puller: IrmPuller,
  platformId: string,
  customerId: string,
  query: IrmTemplateQuery,
  now: Date = new Date(),
): Promise<IrmTemplateDownload> {
  const customer = requireVerified(await requireCustomer(context.db, platformId, customerId));
  await puller.pull(customer);
  const rows = mappableIrms(
    store.irmsInListOrder(context.db, { customerId: customer.id, irmNumber: query.irmNumber, fromDate: query.fromDate, toDate: query.toDate }),
  );
  const readRows = await readingAhead(rows);
  return {
    fileName: templateFileName(customer, query.format, now),
    contentType: CONTENT_TYPES[query.format],
    write: (out) => writeTemplate(query.format, readRows, out),
  };
}
