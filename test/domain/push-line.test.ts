import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RawLine } from '../../src/domain/push-line.ts';
import { lineToWire, normaliseLines } from '../../src/domain/push-line.ts';
import type { UploadTypeCode } from '../../src/domain/upload-type.ts';

// The line of docs/examples/public-sample-push.json (the authority's public sample), verbatim.
const SAMPLE_LINE: RawLine = {
  serialNo: 1,
  uploadType: 101,
  branchSlNo: 0,
  irmIfscCode: 'ABCD0123456',
  irmAdCode: '6390004',
  irmNumber: 'glm97d9cc1c1fe81b9b',
  irmDt: '15092025',
  irmFCC: 'INR',
  irmPurposeCode: 'P0103',
  irmRemitAmtFCC: 94404.25,
  sbCumInvoiceNumber: '15392',
  sbCumInvoiceDate: '14092025',
  portCode: 'INDEL4',
  billNo: '9807',
  sbCumInvoiceFCC: 'INR',
  sbCumInvoiceValueinFCC: 94404.25,
  mappedIRMAmountFCC: 1566,
  isVostro: 'Y',
  vostroType: 'SVRA',
  mappedORMAmountFCC: null,
  isThirdPartyExport: null,
  commissionValDeduct: null,
  discountValInfo: null,
  insuranceValDeduct: null,
  insuranceValInfo: null,
  otherDeductionDeduct: null,
  otherdeductionsInfo: null,
  freightValDeduct: null,
  freightValInfo: null,
  sacCode1: '998599',
  sacCode2: null,
  serviceTypeModesValue: null,
};

function problemsOf(overrides: Partial<RawLine>, uploadType: UploadTypeCode = '101') {
  return normaliseLines([{ ...SAMPLE_LINE, uploadType: Number(uploadType), ...overrides }], uploadType).problems;
}

function assertOneProblem(overrides: Partial<RawLine>, field: keyof RawLine, code: string, uploadType: UploadTypeCode = '101') {
  const problems = problemsOf(overrides, uploadType);
  assert.equal(problems.length, 1, JSON.stringify(problems));
  const [problem] = problems;
  assert.equal(problem?.path, `/ebrcBulkGenDtos/0/${field}`);
  assert.equal(problem?.code, code);
  assert.match(problem?.message ?? '', new RegExp(`^${field} must be `));
}

describe('normaliseLines: the public sample', () => {
  test('normalises with no problems', () => {
    const { lines, problems } = normaliseLines([SAMPLE_LINE], '101');
    assert.deepEqual(problems, []);
    assert.equal(lines.length, 1);
    const [line] = lines;
    assert.equal(line?.uploadType, '101');
    assert.equal(line?.irmRemitAmtFCC, 9440425n);
    assert.equal(line?.sbCumInvoiceValueinFCC, 9440425n);
    assert.equal(line?.mappedIRMAmountFCC, 156600n);
    assert.equal(line?.irmDt, '15092025');
    assert.equal(line?.sbCumInvoiceDate, '14092025');
    assert.equal(line?.discountValDeduct, null);
    assert.equal(line?.commissionValInfo, null);
    assert.equal(line?.isGstAvail, null);
    assert.equal(line?.gstinInvoiceDate, null);
  });

  test('goes back to its wire shape with every 2.4 field present', () => {
    const { lines } = normaliseLines([SAMPLE_LINE], '101');
    const [line] = lines;
    assert.ok(line);
    assert.deepEqual(lineToWire(line), {
      ...SAMPLE_LINE,
      commissionValInfo: null,
      discountValDeduct: null,
      isGstAvail: null,
      gstinInvoiceNumber: null,
      gstinInvoiceDate: null,
    });
    assert.equal(Object.keys(lineToWire(line)).length, 37);
  });
});

describe('normaliseLines: accepted variations', () => {
  test('dates as YYYY-MM-DD are stored as ddMMyyyy', () => {
    const { lines, problems } = normaliseLines(
      [{ ...SAMPLE_LINE, irmDt: '2025-09-15', sbCumInvoiceDate: '2024-02-29', isGstAvail: 'Y', gstinInvoiceDate: '2025-01-31' }],
      '101',
    );
    assert.deepEqual(problems, []);
    assert.equal(lines[0]?.irmDt, '15092025');
    assert.equal(lines[0]?.sbCumInvoiceDate, '29022024');
    assert.equal(lines[0]?.gstinInvoiceDate, '31012025');
  });

  test('the line uploadType may be the code as a string or a word', () => {
    assert.deepEqual(problemsOf({ uploadType: '101' }), []);
    assert.deepEqual(problemsOf({ uploadType: 'goods' }), []);
  });

  test('optional money is read in cents, including the …Info fields', () => {
    const { lines } = normaliseLines(
      [{ ...SAMPLE_LINE, mappedORMAmountFCC: 10.5, commissionValDeduct: 12.25, commissionValInfo: 3, freightValInfo: 0.1 }],
      '101',
    );
    assert.equal(lines[0]?.mappedORMAmountFCC, 1050n);
    assert.equal(lines[0]?.commissionValDeduct, 1225n);
    assert.equal(lines[0]?.commissionValInfo, 300n);
    assert.equal(lines[0]?.freightValInfo, 10n);
  });

  test('vostro and third-party flags are left to the push rules', () => {
    assert.deepEqual(problemsOf({ isVostro: 'X', vostroType: 'ABC', isThirdPartyExport: 'maybe' }), []);
  });
});

describe('normaliseLines: ERR codes', () => {
  test('ERR10: serialNo outside 1 to 999', () => {
    assertOneProblem({ serialNo: 0 }, 'serialNo', 'ERR10');
    assertOneProblem({ serialNo: 1000 }, 'serialNo', 'ERR10');
    assertOneProblem({ serialNo: 2.5 }, 'serialNo', 'ERR10');
    assert.deepEqual(problemsOf({ serialNo: 999 }), []);
  });

  test('ERR14: IFSC not exactly 11 characters', () => {
    assertOneProblem({ irmIfscCode: 'ABCD012345' }, 'irmIfscCode', 'ERR14');
    assertOneProblem({ irmIfscCode: 'ABCD01234567' }, 'irmIfscCode', 'ERR14');
  });

  test('ERR16: AD code not 7 characters', () => {
    assertOneProblem({ irmAdCode: '639000' }, 'irmAdCode', 'ERR16');
  });

  test('ERR17: irmDt not a real date', () => {
    assertOneProblem({ irmDt: '31042025' }, 'irmDt', 'ERR17');
    assertOneProblem({ irmDt: '29022023' }, 'irmDt', 'ERR17');
    assertOneProblem({ irmDt: '15/09/2025' }, 'irmDt', 'ERR17');
  });

  test('ERR28: sbCumInvoiceDate not a real date', () => {
    assertOneProblem({ sbCumInvoiceDate: '2025-02-30' }, 'sbCumInvoiceDate', 'ERR28');
  });

  test('ERR29: port code not 6 characters', () => {
    assertOneProblem({ portCode: 'INDEL' }, 'portCode', 'ERR29');
  });

  test('ERR31: billNo longer than 20 characters', () => {
    assert.deepEqual(problemsOf({ billNo: 'B'.repeat(20) }), []);
    assertOneProblem({ billNo: 'B'.repeat(21) }, 'billNo', 'ERR31');
  });

  test('ERR25: a shipping bill number (101) is 1 to 7 digits', () => {
    assert.deepEqual(problemsOf({ sbCumInvoiceNumber: '1234567' }), []);
    assertOneProblem({ sbCumInvoiceNumber: '12345678' }, 'sbCumInvoiceNumber', 'ERR25');
    assertOneProblem({ sbCumInvoiceNumber: '12A45' }, 'sbCumInvoiceNumber', 'ERR25');
    assertOneProblem({ sbCumInvoiceNumber: '' }, 'sbCumInvoiceNumber', 'ERR25');
  });

  test('ERR26: a SOFTEX number (102) is 1 to 20 characters', () => {
    assert.deepEqual(problemsOf({ sbCumInvoiceNumber: 'SOFTEX/2025/0001-ABC' }, '102'), []);
    assertOneProblem({ sbCumInvoiceNumber: 'S'.repeat(21) }, 'sbCumInvoiceNumber', 'ERR26', '102');
  });

  test('ERR27: an invoice number (103, 104) is 1 to 20 characters', () => {
    assert.deepEqual(problemsOf({ sbCumInvoiceNumber: 'INV-2025-000000001' }, '103'), []);
    assertOneProblem({ sbCumInvoiceNumber: 'I'.repeat(21) }, 'sbCumInvoiceNumber', 'ERR27', '103');
    assertOneProblem({ sbCumInvoiceNumber: 'I'.repeat(21) }, 'sbCumInvoiceNumber', 'ERR27', '104');
  });

  test('ERR35: invalid mappedORMAmountFCC', () => {
    assertOneProblem({ mappedORMAmountFCC: -5 }, 'mappedORMAmountFCC', 'ERR35');
    assertOneProblem({ mappedORMAmountFCC: 1.234 }, 'mappedORMAmountFCC', 'ERR35');
  });
});

describe('normaliseLines: other format problems', () => {
  test('invalid_money: three decimals, negative or too large', () => {
    assertOneProblem({ irmRemitAmtFCC: 94404.255 }, 'irmRemitAmtFCC', 'invalid_money');
    assertOneProblem({ mappedIRMAmountFCC: 1.005 }, 'mappedIRMAmountFCC', 'invalid_money');
    assertOneProblem({ sbCumInvoiceValueinFCC: -1 }, 'sbCumInvoiceValueinFCC', 'invalid_money');
    assertOneProblem({ sbCumInvoiceValueinFCC: 1e17 }, 'sbCumInvoiceValueinFCC', 'invalid_money');
    assertOneProblem({ discountValDeduct: 0.001 }, 'discountValDeduct', 'invalid_money');
    assertOneProblem({ otherdeductionsInfo: -0.5 }, 'otherdeductionsInfo', 'invalid_money');
  });

  test('invalid_date: gstinInvoiceDate', () => {
    assertOneProblem({ gstinInvoiceDate: '32012025' }, 'gstinInvoiceDate', 'invalid_date');
  });

  test('invalid_currency: not 3 uppercase letters', () => {
    assertOneProblem({ irmFCC: 'usd' }, 'irmFCC', 'invalid_currency');
    assertOneProblem({ sbCumInvoiceFCC: 'US' }, 'sbCumInvoiceFCC', 'invalid_currency');
  });

  test('invalid_purpose_code_format: not P and 4 digits', () => {
    assertOneProblem({ irmPurposeCode: 'P103' }, 'irmPurposeCode', 'invalid_purpose_code_format');
    assertOneProblem({ irmPurposeCode: 'p0103' }, 'irmPurposeCode', 'invalid_purpose_code_format');
  });

  test('upload_type_mismatch: the line uploadType differs from the message', () => {
    assertOneProblem({ uploadType: 102 }, 'uploadType', 'upload_type_mismatch');
    assertOneProblem({ uploadType: 999 }, 'uploadType', 'upload_type_mismatch');
  });

  test('invalid_flag: isGstAvail not Y or N', () => {
    assert.deepEqual(problemsOf({ isGstAvail: 'N' }), []);
    assertOneProblem({ isGstAvail: 'yes' }, 'isGstAvail', 'invalid_flag');
  });

  test('invalid_branch_serial: branchSlNo not an integer from 0 to 999', () => {
    assertOneProblem({ branchSlNo: 1000 }, 'branchSlNo', 'invalid_branch_serial');
    assertOneProblem({ branchSlNo: -1 }, 'branchSlNo', 'invalid_branch_serial');
  });
});

describe('normaliseLines: collecting problems', () => {
  test('collects every problem of every line, with JSON pointers', () => {
    const { lines, problems } = normaliseLines(
      [
        SAMPLE_LINE,
        { ...SAMPLE_LINE, serialNo: 2, irmDt: '31022025', portCode: 'X' },
        { ...SAMPLE_LINE, serialNo: 3, irmFCC: 'inr', mappedIRMAmountFCC: 0.015 },
      ],
      '101',
    );
    assert.deepEqual(lines, []);
    assert.deepEqual(problems.map((p) => [p.path, p.code]).sort(), [
      ['/ebrcBulkGenDtos/1/irmDt', 'ERR17'],
      ['/ebrcBulkGenDtos/1/portCode', 'ERR29'],
      ['/ebrcBulkGenDtos/2/irmFCC', 'invalid_currency'],
      ['/ebrcBulkGenDtos/2/mappedIRMAmountFCC', 'invalid_money'],
    ]);
  });

  test('uses the given base path', () => {
    const { problems } = normaliseLines([{ ...SAMPLE_LINE, irmAdCode: '1' }], '101', '/lines');
    assert.equal(problems[0]?.path, '/lines/0/irmAdCode');
  });

  test('messages name the field, what is expected and what was sent', () => {
    const [problem] = problemsOf({ irmIfscCode: 'SHORT' });
    assert.equal(problem?.message, 'irmIfscCode must be an IFSC of exactly 11 characters (got "SHORT").');
  });
});
