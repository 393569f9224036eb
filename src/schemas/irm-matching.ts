import { Type } from 'typebox';
import { EXAMPLE_CUSTOMER_ID, Money, Nullable, Text, type Examples } from './common.ts';
import { MAX_LINES } from './genebrc-requests.ts';

// ---- Matching (contract 11): POST /platform-customers/{id}/irm/match ----

/** At most this many invoices in one match request. */
export const MAX_MATCH_INVOICES = 5_000;

const MatchInvoiceSchema = Type.Object(
  {
    sbCumInvoiceNumber: Type.String({
      minLength: 1,
      maxLength: 50,
      description: 'Unique in the request. As in a push: for uploadType 101 a shipping bill of 1-7 digits (ERR25), otherwise 1-20 characters (ERR26, ERR27)',
    }),
    sbCumInvoiceDate: Text(20, 'ddMMyyyy or YYYY-MM-DD, a real date (ERR28); the pushes carry it as ddMMyyyy'),
    sbCumInvoiceFCC: Text(10, '3-letter currency code: only IRMs in this currency can pay the invoice'),
    sbCumInvoiceValueinFCC: Type.Number({ description: 'The invoice value: above 0, at most two decimals' }),
    portCode: Text(20, '6-character port code from the port master (ERR29, ERR30)'),
    billNo: Text(50, 'At most 20 characters (ERR31)'),
    buyerName: Type.Optional(Nullable(Type.String({ maxLength: 200 }), {
      description: "Compared with each IRM's remitter name, legal suffixes (Ltd, Inc, GmbH…), case, punctuation and accents ignored. Without it an invoice is matched only one-to-one, on amount, date and country",
    })),
    buyerCountry: Type.Optional(Nullable(Type.String({ maxLength: 100 }), { description: "The buyer's country, as an ISO code (US, GB) or a name (United States); compared with the remitter's" })),
  },
  { additionalProperties: false },
);

const ChargeToleranceSchema = Type.Object(
  {
    percent: Type.Optional(Type.Number({
      minimum: 0,
      maximum: 100,
      default: 2,
      description: 'Percent of the invoice value an invoice may be short by, 0 to 100 with at most two decimals (2 = 2%); 0 accepts exact payments only',
    })),
    maxAmount: Type.Optional(Nullable(Type.Number({ description: 'An amount with at most two decimals' }), {
      default: 50,
      description: "The most an invoice may be short by, in units of the invoice's own currency; null for no cap",
    })),
  },
  {
    additionalProperties: false,
    default: { percent: 2, maxAmount: 50 },
    description: 'Bank charges: an invoice counts as paid when the IRMs mapped to it fall short of its value by at most min(percent of the value, maxAmount). Default 2% capped at 50 units',
  },
);

export const MatchBodySchema = Type.Object(
  {
    uploadType: Type.Union([Type.String({ maxLength: 20 }), Type.Integer()], {
      description: 'The eBRCs to come, as in a push: 101-104 or DIRECT_EXPORT/GOODS, SOFTEX, SERVICES, DEEMED_EXPORT. SOFTEX (102) maps only the IT service purpose codes',
    }),
    chargeTolerance: Type.Optional(ChargeToleranceSchema),
    maxDaysAfterInvoice: Type.Optional(Type.Integer({
      minimum: 1,
      maximum: 3650,
      default: 365,
      description: 'How many days after the invoice a payment may come (and, for an advance P0103, before it), 1 to 3650; by remittanceDate',
    })),
    invoices: Type.Array(MatchInvoiceSchema, { minItems: 1, maxItems: MAX_MATCH_INVOICES, description: `1 to ${MAX_MATCH_INVOICES} invoices` }),
  },
  { additionalProperties: false },
);

/** A line of a proposed push: the fields the match fills in; the optional ones (deductions, vostro, GST…) are yours to add. */
const MatchPushLineSchema = Type.Object(
  {
    serialNo: Type.Integer(),
    uploadType: Type.Integer(),
    branchSlNo: Type.Integer(),
    irmIfscCode: Type.String(),
    irmAdCode: Type.String(),
    irmNumber: Type.String(),
    irmDt: Type.String({ description: "The IRM's issue date, ddMMyyyy" }),
    irmFCC: Type.String(),
    irmPurposeCode: Type.String(),
    irmRemitAmtFCC: Type.Number({ description: "The IRM's available amount when this push is sent after the ones before it in `pushes`" }),
    sbCumInvoiceNumber: Type.String(),
    sbCumInvoiceDate: Type.String({ description: 'ddMMyyyy' }),
    portCode: Type.String(),
    billNo: Type.String(),
    sbCumInvoiceFCC: Type.String(),
    sbCumInvoiceValueinFCC: Type.Number(),
    mappedIRMAmountFCC: Type.Number(),
  },
  { additionalProperties: false },
);

const MatchPushSchema = Type.Object(
  {
    platformCustomerId: Type.String(),
    recordResCount: Type.Integer(),
    uploadType: Type.String({ description: 'The code, 101-104' }),
    decalarationFlag: Type.Literal('Y'),
    ebrcBulkGenDtos: Type.Array(MatchPushLineSchema, { maxItems: MAX_LINES }),
  },
  { additionalProperties: false, description: 'A body for POST /api/v1/genebrc/push-irm, as it is' },
);

export const MatchAnswerSchema = Type.Object({
  allocations: Type.Array(
    Type.Object({
      sbCumInvoiceNumber: Type.String(),
      irmNumber: Type.String(),
      mappedIRMAmountFCC: Money,
      confidence: Type.Number({ minimum: 0, maximum: 1, description: 'How strong the evidence is, 0 to 1 (docs/matching.md): 0.9 and above an exact amount from a same-named remitter' }),
      reasons: Type.Array(Type.String(), { description: 'Why: currency, amount, names, dates, one sentence each' }),
    }),
    { description: "Which IRM pays how much of which invoice: the invoices' order as sent" },
  ),
  unmatchedInvoices: Type.Array(Type.Object({ sbCumInvoiceNumber: Type.String(), remaining: Money }), {
    description: 'Invoices not paid in full (nothing mapped, or short by more than the charge tolerance), with what is left',
  }),
  unusedIrms: Type.Array(Type.Object({ irmNumber: Type.String(), available: Money }), {
    description: "IRMs the match considered (mappable, in the invoices' currencies, received within the dates the invoices allow) that keep a balance, with that balance",
  }),
  pushes: Type.Array(MatchPushSchema, {
    description: 'Ready push bodies of at most 999 lines, together holding every allocation once; send them in this order (an IRM split over two pushes quotes its balance after the first)',
  }),
  parameters: Type.Object(
    {
      uploadType: Type.String(),
      chargeTolerance: Type.Object({ percent: Type.Number(), maxAmount: Nullable(Type.Number()) }),
      maxDaysAfterInvoice: Type.Integer(),
    },
    { description: 'What the match applied, defaults included' },
  ),
});

/**
 * Five invoices against demo.exporter's sandbox IRMs of April 2025 (the same in every sandbox): one paid exactly, one
 * short by bank charges, an advance, two paid by one IRM; the EUR one finds no payment.
 */
const EXAMPLE_MATCH_REQUEST = {
  uploadType: '101',
  chargeTolerance: { percent: 2, maxAmount: 50 },
  maxDaysAfterInvoice: 30,
  invoices: [
    { sbCumInvoiceNumber: '4120031', sbCumInvoiceDate: '24032025', sbCumInvoiceFCC: 'USD', sbCumInvoiceValueinFCC: 11312.29, portCode: 'INNSA1', billNo: 'EXP/2025/031', buyerName: 'NORTHWIND TRADERS, INC.', buyerCountry: 'United States' },
    { sbCumInvoiceNumber: '4120032', sbCumInvoiceDate: '2025-03-25', sbCumInvoiceFCC: 'USD', sbCumInvoiceValueinFCC: 34480, portCode: 'INNSA1', billNo: 'EXP/2025/032', buyerName: 'Granite Peak Retail Corporation', buyerCountry: 'US' },
    { sbCumInvoiceNumber: '4120033', sbCumInvoiceDate: '28032025', sbCumInvoiceFCC: 'USD', sbCumInvoiceValueinFCC: 6200, portCode: 'INBOM4', billNo: 'EXP/2025/033', buyerName: 'Maple Leaf Distributors Limited', buyerCountry: 'Canada' },
    { sbCumInvoiceNumber: '4120034', sbCumInvoiceDate: '28032025', sbCumInvoiceFCC: 'USD', sbCumInvoiceValueinFCC: 5184.68, portCode: 'INBOM4', billNo: 'EXP/2025/034', buyerName: 'Maple Leaf Distributors Limited', buyerCountry: 'Canada' },
    { sbCumInvoiceNumber: '4120035', sbCumInvoiceDate: '10042025', sbCumInvoiceFCC: 'USD', sbCumInvoiceValueinFCC: 50691.25, portCode: 'INDEL4', billNo: 'EXP/2025/035', buyerName: 'Blue Harbor Imports', buyerCountry: 'US' },
    { sbCumInvoiceNumber: '4120036', sbCumInvoiceDate: '01032025', sbCumInvoiceFCC: 'EUR', sbCumInvoiceValueinFCC: 9800, portCode: 'INDEL4', billNo: 'EXP/2025/036', buyerName: 'Van der Berg Groothandel B.V.', buyerCountry: 'Netherlands' },
  ],
};

export const MATCH_EXAMPLES = {
  request: {
    matched: {
      summary: 'Six invoices: exact, short by bank charges, two paid by one IRM, an advance, and one unpaid',
      description: "Against the sandbox account demo.exporter's IRMs (every sandbox has them)",
      value: EXAMPLE_MATCH_REQUEST,
    },
  },
  answer: {
    matched: {
      summary: 'Five invoices paid by four IRMs, in one push; the EUR invoice unpaid',
      description: 'unusedIrms is shortened here to its first 3 entries (the sandbox answers 72: every USD and EUR IRM with a balance received within the 30 days the invoices allow)',
      value: {
        allocations: [
          {
            sbCumInvoiceNumber: '4120031',
            irmNumber: 'HDFCIR0599001001000007',
            mappedIRMAmountFCC: 11312.29,
            confidence: 0.99,
            reasons: [
              'same currency USD',
              'IRM balance 11312.29 equals the invoice value',
              'remitter "Northwind Traders Inc" is buyer "NORTHWIND TRADERS, INC." once legal suffixes, case and punctuation are ignored',
              "remitter country US is the buyer's",
              'received 2025-04-01, 8 days after invoice date 2025-03-24',
            ],
          },
          {
            sbCumInvoiceNumber: '4120032',
            irmNumber: 'ICICIR0599001001000013',
            mappedIRMAmountFCC: 34445.18,
            confidence: 0.9,
            reasons: [
              'same currency USD',
              'IRM balance 34445.18 is the invoice value 34480.00 less 34.82 of bank charges (tolerance 50.00)',
              'remitter "Granite Peak Retail Corp" is buyer "Granite Peak Retail Corporation" once legal suffixes, case and punctuation are ignored',
              "remitter country US is the buyer's",
              'received 2025-04-03, 9 days after invoice date 2025-03-25',
            ],
          },
          {
            sbCumInvoiceNumber: '4120033',
            irmNumber: 'ICICIR0599001001000025',
            mappedIRMAmountFCC: 6200,
            confidence: 0.84,
            reasons: [
              'same currency USD',
              'IRM balance 11384.68 settles 2 invoices totalling 11384.68 exactly',
              'remitter "Maple Leaf Distributors Ltd" is buyer "Maple Leaf Distributors Limited" once legal suffixes, case and punctuation are ignored',
              "remitter country CA is the buyer's",
              'received 2025-04-08, 11 days after invoice date 2025-03-28',
            ],
          },
          {
            sbCumInvoiceNumber: '4120034',
            irmNumber: 'ICICIR0599001001000025',
            mappedIRMAmountFCC: 5184.68,
            confidence: 0.84,
            reasons: [
              'same currency USD',
              'IRM balance 11384.68 settles 2 invoices totalling 11384.68 exactly',
              'remitter "Maple Leaf Distributors Ltd" is buyer "Maple Leaf Distributors Limited" once legal suffixes, case and punctuation are ignored',
              "remitter country CA is the buyer's",
              'received 2025-04-08, 11 days after invoice date 2025-03-28',
            ],
          },
          {
            sbCumInvoiceNumber: '4120035',
            irmNumber: 'ICICIR0599001001000005',
            mappedIRMAmountFCC: 50691.25,
            confidence: 0.99,
            reasons: [
              'same currency USD',
              'IRM balance 50691.25 equals the invoice value',
              'remitter "Blue Harbor Imports LLC" is buyer "Blue Harbor Imports" once legal suffixes, case and punctuation are ignored',
              "remitter country US is the buyer's",
              'advance (P0103) received 2025-04-02, 8 days before invoice date 2025-04-10',
            ],
          },
        ],
        unmatchedInvoices: [{ sbCumInvoiceNumber: '4120036', remaining: 9800 }],
        unusedIrms: [
          { irmNumber: 'ICICIR0599001001000000', available: 1358.87 },
          { irmNumber: 'ICICIR0599001001000001', available: 27892.68 },
          { irmNumber: 'ICICIR0599001001000003', available: 59727.28 },
        ],
        pushes: [
          {
            platformCustomerId: EXAMPLE_CUSTOMER_ID,
            recordResCount: 5,
            uploadType: '101',
            decalarationFlag: 'Y',
            ebrcBulkGenDtos: [
              {
                serialNo: 1,
                uploadType: 101,
                branchSlNo: 0,
                irmIfscCode: 'ICIC0000104',
                irmAdCode: '6390004',
                irmNumber: 'ICICIR0599001001000025',
                irmDt: '09042025',
                irmFCC: 'USD',
                irmPurposeCode: 'P0102',
                irmRemitAmtFCC: 11384.68,
                sbCumInvoiceNumber: '4120033',
                sbCumInvoiceDate: '28032025',
                portCode: 'INBOM4',
                billNo: 'EXP/2025/033',
                sbCumInvoiceFCC: 'USD',
                sbCumInvoiceValueinFCC: 6200,
                mappedIRMAmountFCC: 6200,
              },
              {
                serialNo: 2,
                uploadType: 101,
                branchSlNo: 0,
                irmIfscCode: 'ICIC0000104',
                irmAdCode: '6390004',
                irmNumber: 'ICICIR0599001001000025',
                irmDt: '09042025',
                irmFCC: 'USD',
                irmPurposeCode: 'P0102',
                irmRemitAmtFCC: 11384.68,
                sbCumInvoiceNumber: '4120034',
                sbCumInvoiceDate: '28032025',
                portCode: 'INBOM4',
                billNo: 'EXP/2025/034',
                sbCumInvoiceFCC: 'USD',
                sbCumInvoiceValueinFCC: 5184.68,
                mappedIRMAmountFCC: 5184.68,
              },
              {
                serialNo: 3,
                uploadType: 101,
                branchSlNo: 0,
                irmIfscCode: 'HDFC0000240',
                irmAdCode: '0510002',
                irmNumber: 'HDFCIR0599001001000007',
                irmDt: '03042025',
                irmFCC: 'USD',
                irmPurposeCode: 'P0102',
                irmRemitAmtFCC: 11312.29,
                sbCumInvoiceNumber: '4120031',
                sbCumInvoiceDate: '24032025',
                portCode: 'INNSA1',
                billNo: 'EXP/2025/031',
                sbCumInvoiceFCC: 'USD',
                sbCumInvoiceValueinFCC: 11312.29,
                mappedIRMAmountFCC: 11312.29,
              },
              {
                serialNo: 4,
                uploadType: 101,
                branchSlNo: 0,
                irmIfscCode: 'ICIC0000104',
                irmAdCode: '6390004',
                irmNumber: 'ICICIR0599001001000013',
                irmDt: '05042025',
                irmFCC: 'USD',
                irmPurposeCode: 'P0102',
                irmRemitAmtFCC: 34445.18,
                sbCumInvoiceNumber: '4120032',
                sbCumInvoiceDate: '25032025',
                portCode: 'INNSA1',
                billNo: 'EXP/2025/032',
                sbCumInvoiceFCC: 'USD',
                sbCumInvoiceValueinFCC: 34480,
                mappedIRMAmountFCC: 34445.18,
              },
              {
                serialNo: 5,
                uploadType: 101,
                branchSlNo: 0,
                irmIfscCode: 'ICIC0000104',
                irmAdCode: '6390004',
                irmNumber: 'ICICIR0599001001000005',
                irmDt: '02042025',
                irmFCC: 'USD',
                irmPurposeCode: 'P0103',
                irmRemitAmtFCC: 50691.25,
                sbCumInvoiceNumber: '4120035',
                sbCumInvoiceDate: '10042025',
                portCode: 'INDEL4',
                billNo: 'EXP/2025/035',
                sbCumInvoiceFCC: 'USD',
                sbCumInvoiceValueinFCC: 50691.25,
                mappedIRMAmountFCC: 50691.25,
              },
            ],
          },
        ],
        parameters: { uploadType: '101', chargeTolerance: { percent: 2, maxAmount: 50 }, maxDaysAfterInvoice: 30 },
      },
    },
  },
} satisfies Record<string, Examples>;
