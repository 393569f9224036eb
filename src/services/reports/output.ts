import type { Writable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import { formatCents, type Cents } from '../../domain/money.ts';
import type { ServiceContext } from '../context.ts';
import { CSV_CONTENT_TYPE, fileNamePart, writeSpreadsheet, XLSX_CONTENT_TYPE, type Download } from '../spreadsheets/write.ts';

export type ReportFormat = 'csv' | 'xlsx' | 'json';

/** What the reports need of the service: its database alone (they read the store, never the authority). */
export type ReportContext = Pick<ServiceContext, 'db'>;

/** A report's query (contract 16): its format and the period, inclusive, on the date the report names. */
export type ReportQuery = { format: ReportFormat; fromDate?: string | undefined; toDate?: string | undefined };

/** A column of a report: its header (the row's key in json) and its cell as text, null when empty. */
export type Column<R> = { header: string; cell(row: R): string | null };

/** What a report is made of: its rows' columns, and its totals per currency with theirs. */
export type ReportShape<R, T> = {
  name: string;
  columns: readonly Column<R>[];
  /** A row in json: its cells by header unless the report says otherwise. */
  json?: (row: R) => unknown;
  totalsName: string;
  totalsColumns: readonly Column<T>[];
};

const CONTENT_TYPES: Record<ReportFormat, string> = {
  csv: CSV_CONTENT_TYPE,
  xlsx: XLSX_CONTENT_TYPE,
  json: 'application/json; charset=utf-8',
};

/** How many json rows go out in one chunk. */
const JSON_ROWS_A_CHUNK = 200;

function cellsOf<R>(columns: readonly Column<R>[], row: R): (string | null)[] {
  return columns.map((column) => column.cell(row));
}

function objectOf<R>(columns: readonly Column<R>[], row: R): Record<string, string | null> {
  return Object.fromEntries(columns.map((column) => [column.header, column.cell(row)]));
}

/**
 * `{"rows": [...], "totals": [...]}`, streamed: the rows as they are read, then the totals as they are (objects whose
 * amounts are decimal text), which `totals` gives once every row has been read. pipeline() carries the backpressure of `out` back to the reading of the rows.
 */
async function writeJson<R, T>(shape: ReportShape<R, T>, rows: AsyncIterable<R>, totals: () => readonly T[], out: Writable): Promise<void> {
  const rowJson = shape.json ?? ((row: R) => objectOf(shape.columns, row));
  await pipeline(
    async function* chunks() {
      let chunk = '{"rows":[';
      let count = 0;
      for await (const row of rows) {
        chunk += (count === 0 ? '' : ',') + JSON.stringify(rowJson(row));
        if (++count % JSON_ROWS_A_CHUNK === 0) {
          yield chunk;
          chunk = '';
        }
      }
      yield `${chunk}],"totals":${JSON.stringify(totals())}}\n`;
    },
    out,
  );
  await finished(out);
}

/**
 * Writes a report: its rows, then its totals (CSV: a section after an empty line; XLSX: a second worksheet; json:
 * `totals`). `totals` is called once every row has been read. Ends `out` when the report is complete; when anything
 * fails first, destroys `out` with the error and rejects, so that a cut-off report never passes for a whole one.
 */
export async function writeReport<R, T>(
  format: ReportFormat,
  shape: ReportShape<R, T>,
  rows: AsyncIterable<R>,
  totals: () => readonly T[],
  out: Writable,
): Promise<void> {
  if (format === 'json') return writeJson(shape, rows, totals, out);
  await writeSpreadsheet(
    format,
    [
      { name: shape.name, header: shape.columns.map((column) => column.header), rows: mapRows(rows, (row) => cellsOf(shape.columns, row)) },
      { name: shape.totalsName, header: shape.totalsColumns.map((column) => column.header), rows: mapRows(totalsOnceRead(totals), (total) => cellsOf(shape.totalsColumns, total)) },
    ],
    out,
  );
}

async function* mapRows<R, C>(rows: AsyncIterable<R> | Iterable<R>, map: (row: R) => C): AsyncGenerator<C> {
  for await (const row of rows) yield map(row);
}

/** The totals, asked for when the iteration starts: after the sheet of rows before it has been read to its end. */
function* totalsOnceRead<T>(totals: () => readonly T[]): Generator<T> {
  yield* totals();
}

/** A report ready to be sent (`write`), or to be looked at first (`preview`): one or the other, once. */
export type Report = Download & {
  /** The header and the first `count` rows' cells, read and nothing more. */
  preview(count: number): Promise<{ header: string[]; rows: (string | null)[][] }>;
};

/**
 * The report over `rows`, named `<owner>-<report>-<from>-<to>.<format>` (contract 16); `totals` is called once every
 * row has been written.
 */
export function makeReport<R, T>(
  report: { owner: string; name: string; query: ReportQuery; now: Date },
  shape: ReportShape<R, T>,
  rows: AsyncGenerator<R>,
  totals: () => readonly T[],
): Report {
  const { fromDate, toDate, format } = report.query;
  // Without fromDate the report starts with the first entry; without toDate it runs to today (UTC).
  const from = fromDate ?? 'start';
  const to = toDate ?? report.now.toISOString().slice(0, 10);
  return {
    fileName: `${fileNamePart(report.owner)}-${report.name}-${from}-${to}.${format}`,
    contentType: CONTENT_TYPES[format],
    write: (out) => writeReport(format, shape, rows, totals, out),
    async preview(count) {
      const first: (string | null)[][] = [];
      if (count > 0) {
        // Leaving the loop ends the reading of the rows (their generators' finally blocks run).
        for await (const row of rows) {
          first.push(cellsOf(shape.columns, row));
          if (first.length === count) break;
        }
      }
      return { header: shape.columns.map((column) => column.header), rows: first };
    },
  };
}

/** Sums per currency, each an exact amount; currencies in alphabetical order. */
export class CurrencyTotals<K extends string> {
  readonly #keys: readonly K[];
  readonly #byCurrency = new Map<string, { count: number; sums: Record<K, Cents> }>();

  constructor(keys: readonly K[]) {
    this.#keys = keys;
  }

  add(currency: string, amounts: Record<K, Cents>): void {
    let entry = this.#byCurrency.get(currency);
    if (entry === undefined) {
      entry = { count: 0, sums: Object.fromEntries(this.#keys.map((key) => [key, 0n])) as Record<K, Cents> };
      this.#byCurrency.set(currency, entry);
    }
    entry.count += 1;
    for (const key of this.#keys) entry.sums[key] += amounts[key];
  }

  /** `{currency, count, <each key>: "1234.50"}`, by currency. */
  rows(): ({ currency: string; count: number } & Record<K, string>)[] {
    return [...this.#byCurrency.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([currency, { count, sums }]) => ({
        currency,
        count,
        ...(Object.fromEntries(this.#keys.map((key) => [key, formatCents(sums[key])])) as Record<K, string>),
      }));
  }
}
