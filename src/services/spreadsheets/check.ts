import { detectFormat, readRows, validateRows, type SheetRow, type SpreadsheetProblem } from './read.ts';
import { splitRows } from './split.ts';

export type CheckRequest = { file: Uint8Array; fileName: string; uploadType: string };

/** One planned push: the spreadsheet rows of its lines, and the lines as the JSON the store keeps. */
export type CheckedPush = { rows: number[]; linesJson: string };

/** What checking an uploaded file came to: its problems (then no pushes), or the pushes it splits into. */
export type CheckedUpload = { rowCount: number; lineCount: number; problems: SpreadsheetProblem[]; pushes: CheckedPush[] };

async function* counted(rows: AsyncIterable<SheetRow>, count: { rows: number }): AsyncGenerator<SheetRow> {
  for await (const row of rows) {
    count.rows++;
    yield row;
  }
}

/**
 * Reads and checks every row of an uploaded file (contract 11) and splits its lines into pushes. Pure work on the
 * file's bytes, run in a worker thread (./worker.ts) so that neither its time nor its memory is the service's.
 */
export async function checkSpreadsheet(request: CheckRequest): Promise<CheckedUpload> {
  const format = detectFormat({ fileName: request.fileName, head: request.file.subarray(0, 4) }) ?? 'csv';
  const count = { rows: 0 };
  const { lines, problems } = await validateRows(counted(readRows(format, request.file), count), { uploadType: request.uploadType });
  const pushes = problems.length > 0 ? [] : splitRows(lines).map((push) => ({ rows: push.rows, linesJson: JSON.stringify(push.lines) }));
  return { rowCount: count.rows, lineCount: lines.length, problems, pushes };
}
