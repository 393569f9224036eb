/** eBRC type: 101 direct export of goods, 102 SOFTEX, 103 services (non-IT), 104 deemed export. */
export type UploadTypeCode = '101' | '102' | '103' | '104';

const CODES: ReadonlySet<string> = new Set<UploadTypeCode>(['101', '102', '103', '104']);

const CODES_BY_WORD: ReadonlyMap<string, UploadTypeCode> = new Map([
  ['DIRECT_EXPORT', '101'],
  ['GOODS', '101'],
  ['SOFTEX', '102'],
  ['SERVICES', '103'],
  ['DEEMED_EXPORT', '104'],
]);

function isUploadTypeCode(s: string): s is UploadTypeCode {
  return CODES.has(s);
}

/** Accepts "101"-"104", the numbers 101-104, or a word (case-insensitive); anything else is null. */
export function normalizeUploadType(v: unknown): UploadTypeCode | null {
  if (typeof v === 'number') {
    const code = String(v);
    return isUploadTypeCode(code) ? code : null;
  }
  if (typeof v !== 'string') return null;
  if (isUploadTypeCode(v)) return v;
  return CODES_BY_WORD.get(v.toUpperCase()) ?? null;
}
