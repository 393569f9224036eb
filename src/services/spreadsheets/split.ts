import type { RawLine } from '../../domain/push-line.ts';
import type { SheetLine } from './read.ts';

/** One push of an upload: its lines numbered 1..n (serialNo), and the spreadsheet row of each line, in the same order. */
export type UploadPush = { lines: RawLine[]; rows: number[] };

export const MAX_PUSH_LINES = 999;

/**
 * Splits an upload's lines into pushes of at most `maxLines` lines (contract 11) that keep an IRM's rows in one push
 * wherever they fit: the IRM groups are packed first-fit decreasing (largest group first, each into the first push
 * with room for all of it, else a new push). A group larger than a push fills whole pushes and packs its remainder
 * like any other group. Within a push lines keep the spreadsheet's order, and serial numbers are 1..n, whatever the
 * sheet's serialNo column said. Deterministic: the same lines always split the same way.
 */
export function splitRows(lines: readonly SheetLine[], maxLines = MAX_PUSH_LINES): UploadPush[] {
  if (!Number.isInteger(maxLines) || maxLines < 1) throw new RangeError(`maxLines must be a positive integer, got ${maxLines}`);
  const byIrm = new Map<string, SheetLine[]>();
  for (const sheetLine of lines) {
    const group = byIrm.get(sheetLine.line.irmNumber);
    if (group === undefined) byIrm.set(sheetLine.line.irmNumber, [sheetLine]);
    else group.push(sheetLine);
  }

  const bins: SheetLine[][] = [];
  const groups: SheetLine[][] = [];
  for (const group of byIrm.values()) {
    let rest = group;
    while (rest.length > maxLines) {
      bins.push(rest.slice(0, maxLines));
      rest = rest.slice(maxLines);
    }
    groups.push(rest);
  }
  // Largest first; ties in the sheet's order (a group's first row), so the split is stable.
  groups.sort((a, b) => b.length - a.length || a[0]!.row - b[0]!.row);
  for (const group of groups) {
    const bin = bins.find((candidate) => candidate.length + group.length <= maxLines);
    if (bin === undefined) bins.push([...group]);
    else bin.push(...group);
  }

  return bins
    .map((bin) => bin.sort((a, b) => a.row - b.row))
    .sort((a, b) => a[0]!.row - b[0]!.row)
    .map((bin) => ({
      lines: bin.map((sheetLine, index) => ({ ...sheetLine.line, serialNo: index + 1 })),
      rows: bin.map((sheetLine) => sheetLine.row),
    }));
}
