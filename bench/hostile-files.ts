/**
 * `npm run bench:hostile-files`: what hostile and large spreadsheet files cost the service. Each file is built here
 * and checked as an upload is (checkInWorker: the bounded reader and the row checks in a worker thread with its heap
 * limit and deadline); the figures are the file's size, the time to the outcome, the process's peak RSS growth while
 * checking (the worker's heap included; sampled every 10 ms) and the outcome. The table is docs/reliability.md's
 * "Hostile files".
 */
import { SPREADSHEET_COLUMNS } from '../src/domain/spreadsheet-columns.ts';
import { checkInWorker } from '../src/services/spreadsheets/worker.ts';
import { archiveWithDeflated, deflatedRepeat, deflatedText, sharedStringsXml, sheetXml, workbookParts, zipOf } from '../test/support/xlsx-parts.ts';

const NS = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const HEADER_ROW = `<row r="1">${SPREADSHEET_COLUMNS.map((column) => `<c t="inlineStr"><is><t>${column}</t></is></c>`).join('')}</row>`;

function archive(sheet: Uint8Array, strings?: Uint8Array): Buffer {
  return archiveWithDeflated([
    ...Object.entries(workbookParts()).map(([name, text]) => ({ name, deflated: deflatedText(text), declaredSize: text.length })),
    { name: 'xl/worksheets/sheet1.xml', deflated: sheet, declaredSize: 100 },
    ...(strings === undefined ? [] : [{ name: 'xl/sharedStrings.xml', deflated: strings, declaredSize: 100 }]),
  ]);
}

const GOOD: Record<string, string> = {
  branchSlNo: '0', irmIfscCode: 'ABCD0123456', irmAdCode: '0390004', irmDt: '15092025', irmFCC: 'USD', irmPurposeCode: 'P0103',
  irmRemitAmtFCC: '94404.25', sbCumInvoiceDate: '14092025', portCode: 'INDEL4', sbCumInvoiceFCC: 'USD',
  sbCumInvoiceValueinFCC: '94404.25', mappedIRMAmountFCC: '1566.50', isVostro: 'N', sacCode1: '998599',
};

function csvRows(rows: number): Buffer {
  const lines = [SPREADSHEET_COLUMNS.join(',')];
  for (let index = 1; index <= rows; index++) {
    const values: Record<string, string> = { ...GOOD, irmNumber: `IRM${String(index).padStart(9, '0')}`, sbCumInvoiceNumber: String(1_000_000 + index), billNo: `B${index}` };
    lines.push(SPREADSHEET_COLUMNS.map((column) => values[column] ?? '').join(','));
  }
  return Buffer.from(lines.join('\n'));
}

function xlsxRows(rows: number): Buffer {
  const header = SPREADSHEET_COLUMNS.map((column) => ({ inline: column }));
  const body = Array.from({ length: rows }, (_, index) => {
    const values: Record<string, string> = { ...GOOD, irmNumber: `IRM${String(index).padStart(9, '0')}`, sbCumInvoiceNumber: String(1_000_000 + index), billNo: `B${index}` };
    return SPREADSHEET_COLUMNS.map((column) => (values[column] === undefined ? null : { inline: values[column]! }));
  });
  const { '[Content_Types].xml': types, ...rest } = workbookParts();
  return zipOf({ '[Content_Types].xml': types!, ...rest, 'xl/worksheets/sheet1.xml': sheetXml([header, ...body]), 'xl/sharedStrings.xml': sharedStringsXml([]) });
}

const FILES: { name: string; fileName: string; build: () => Buffer }[] = [
  {
    name: 'shared-strings bomb: 319 MiB of empty rich-text runs, sizes declared honestly (issue 23, finding 1)',
    fileName: 'bomb.xlsx',
    build: () => {
      const item = '<si><r><t></t></r></si>';
      return archive(deflatedText(sheetXml([[{ shared: 0 }]])), deflatedRepeat(`<sst xmlns="${NS}">`, item, Math.floor((319 * 2 ** 20) / item.length), '</sst>'));
    },
  },
  {
    name: 'one shared string of 10 million empty runs (about 300 MiB)',
    fileName: 'runs.xlsx',
    build: () => archive(deflatedText(sheetXml([[{ shared: 0 }]])), deflatedRepeat(`<sst xmlns="${NS}"><si>`, '<r><rPr><b/></rPr><t></t></r>', 10_000_000, '</si></sst>')),
  },
  {
    name: 'declared sizes that lie: a 600 MiB worksheet declared as 100 bytes',
    fileName: 'liar.xlsx',
    build: () => archive(deflatedRepeat(`<worksheet xmlns="${NS}"><sheetData>`, '<!-- padding -->', Math.floor((600 * 2 ** 20) / 16), '</sheetData></worksheet>')),
  },
  {
    name: 'a million rows of one cell',
    fileName: 'rows.xlsx',
    build: () => archive(deflatedRepeat(`<worksheet xmlns="${NS}"><sheetData>${HEADER_ROW}`, '<row><c t="inlineStr"><is><t>x</t></is></c></row>', 1_000_000, '</sheetData></worksheet>')),
  },
  {
    name: '50,000 rows, each with a cell in the last column (XFD)',
    fileName: 'wide.xlsx',
    build: () => archive(deflatedRepeat(`<worksheet xmlns="${NS}"><sheetData>${HEADER_ROW}`, '<row><c r="XFD1" t="b"><v>1</v></c></row>', 50_000, '</sheetData></worksheet>')),
  },
  {
    name: 'billion laughs (a DTD entity in the shared strings)',
    fileName: 'laughs.xlsx',
    build: () => archive(deflatedText(sheetXml([[{ shared: 0 }]])), deflatedText(`<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><sst xmlns="${NS}"><si><t>&b;</t></si></sst>`)),
  },
  { name: 'CSV of 27,000 valid rows (3.7 MB)', fileName: 'rows.csv', build: () => csvRows(27_000) },
  { name: 'CSV of 50,000 valid rows (the most an upload may have)', fileName: 'max.csv', build: () => csvRows(50_000) },
  { name: 'XLSX of 50,000 valid rows, inline strings', fileName: 'max.xlsx', build: () => xlsxRows(50_000) },
];

function outcomeOf(checked: Awaited<ReturnType<typeof checkInWorker>>): string {
  if (checked.problems.length === 0) return `accepted: ${checked.lineCount} lines in ${checked.pushes.length} pushes`;
  const first = checked.problems[0]!;
  return `rejected: ${first.code}${checked.problems.length > 1 ? ` (+${checked.problems.length - 1})` : ''}: ${first.message.slice(0, 90)}`;
}

console.log('| file | size | time | peak RSS growth | outcome |');
console.log('|---|---|---|---|---|');
for (const { name, fileName, build } of FILES) {
  const file = build();
  global.gc?.();
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 10);
  const started = performance.now();
  const checked = await checkInWorker({ file, fileName, uploadType: '101' });
  const elapsed = performance.now() - started;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  const size = file.length >= 2 ** 20 ? `${(file.length / 2 ** 20).toFixed(1)} MiB` : `${(file.length / 1024).toFixed(0)} KiB`;
  console.log(`| ${name} | ${size} | ${(elapsed / 1000).toFixed(1)} s | ${Math.round((peak - before) / 2 ** 20)} MiB | ${outcomeOf(checked)} |`);
}
