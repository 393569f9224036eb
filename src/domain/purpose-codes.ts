// Valid inward purpose codes, as the authority's annexure lists them; "A-B" is the inclusive range.
const ANNEXURE_PURPOSE_CODES = [
  'P0101-P0104', 'P0108', 'P0109', 'P0201', 'P0202', 'P0205', 'P0207', 'P0208', 'P0211', 'P0214-P0226',
  'P0301', 'P0302', 'P0304-P0306', 'P0308', 'P0501', 'P0502', 'P0601-P0603', 'P0605', 'P0607-P0612',
  'P0701-P0703', 'P0801-P0809', 'P0901', 'P0902', 'P1002-P1011', 'P1013-P1022', 'P1099', 'P1101',
  'P1103-P1109', 'P1201', 'P1203', 'P1505', 'P1601', 'P1602', 'P1701',
];

function expandPurposeCodes(entry: string): string[] {
  const [first = '', last = first] = entry.split('-');
  const from = Number(first.slice(1));
  const to = Number(last.slice(1));
  return Array.from({ length: to - from + 1 }, (_, i) => `P${String(from + i).padStart(4, '0')}`);
}

export const VALID_PURPOSE_CODES: ReadonlySet<string> = new Set(ANNEXURE_PURPOSE_CODES.flatMap(expandPurposeCodes));

/** Valid purpose codes that cannot be used to generate an eBRC. */
export const BANNED_PURPOSE_CODES: ReadonlySet<string> = new Set(['P0101', 'P0108']);

/** Advance for exports: may be clubbed with any other code; its invoice date is on or after the remittance date. */
export const ADVANCE_PURPOSE_CODE = 'P0103';

/** The only purpose codes an IT services (SOFTEX, uploadType 102) eBRC accepts. */
export const IT_SERVICE_PURPOSE_CODES: ReadonlySet<string> = new Set(['P0802', 'P0803', 'P0807', ADVANCE_PURPOSE_CODE]);

/** The authority's port master (the subset this service knows): seaports, airports and inland container depots. */
export const PORT_CODES: ReadonlySet<string> = new Set([
  'INDEL4', 'INMAA1', 'INBOM4', 'INNSA1', 'INMUN1', 'INCCU1', 'INBLR4', 'INHYD4', 'INCOK1', 'INTUT1',
  'INVTZ1', 'INPAV1', 'INHZA1', 'INAMD4', 'INMAA4', 'INBOM1', 'INDEL1', 'INCCU4', 'INGOI4', 'INPNQ4',
  'INJAI4', 'INLKO4', 'INATQ4', 'INCJB4', 'INTRV4', 'INIXE1', 'INKAT1', 'INPPT1', 'INHAL1', 'INKRI1',
  'INSTT1', 'INVIZ4', 'INBBI4', 'INIXR4', 'INNAG4', 'INSXR4', 'INIXC4', 'INGAU4', 'INDER6', 'INTKD6',
]);
