import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Line, RawLine } from '../../src/domain/push-line.ts';
import { normaliseLines } from '../../src/domain/push-line.ts';
import type { ErrorDetail, IrmSnapshot, PushRule, PushRuleInput } from '../../src/domain/push-rules.ts';
import {
  checkAdvanceInvoiceDates,
  checkClubbedBanks,
  checkClubbedCurrencies,
  checkClubbedPurposeCodes,
  checkDeductions,
  checkDuplicateSerialNumbers,
  checkIrmAvailableAmounts,
  checkIrmBalances,
  checkIrmCurrencies,
  checkIrmIfscCodes,
  checkIrmIssueDates,
  checkIrmPurposeCodes,
  checkIrmsExist,
  checkItServicePurposeCodes,
  checkMappedAmounts,
  checkPortCodes,
  checkPurposeCodes,
  checkPushRules,
  checkRecordCount,
  checkThirdPartyExportFlags,
  checkVostroFlags,
  checkVostroTypes,
} from '../../src/domain/push-rules.ts';
import type { UploadTypeCode } from '../../src/domain/upload-type.ts';

const IRM: IrmSnapshot = {
  irmNumber: 'IRM1',
  irmIssueDate: '15092025',
  ifscCode: 'ABCD0123456',
  remittanceFCC: 'USD',
  purposeOfRemittance: 'P0102',
  availableCents: 100_000n,
  remittanceDate: '15092025',
};

const LINE: Line = {
  serialNo: 1,
  uploadType: '101',
  branchSlNo: 0,
  irmIfscCode: IRM.ifscCode,
  irmAdCode: '6390004',
  irmNumber: IRM.irmNumber,
  irmDt: IRM.irmIssueDate,
  irmFCC: IRM.remittanceFCC,
  irmPurposeCode: IRM.purposeOfRemittance,
  irmRemitAmtFCC: IRM.availableCents,
  sbCumInvoiceNumber: '15392',
  sbCumInvoiceDate: '14092025',
  portCode: 'INDEL4',
  billNo: '9807',
  sbCumInvoiceFCC: 'USD',
  sbCumInvoiceValueinFCC: 100_000n,
  mappedIRMAmountFCC: 50_000n,
  isVostro: 'N',
  vostroType: null,
  mappedORMAmountFCC: null,
  isThirdPartyExport: null,
  commissionValDeduct: null,
  commissionValInfo: null,
  discountValDeduct: null,
  discountValInfo: null,
  insuranceValDeduct: null,
  insuranceValInfo: null,
  otherDeductionDeduct: null,
  otherdeductionsInfo: null,
  freightValDeduct: null,
  freightValInfo: null,
  sacCode1: null,
  sacCode2: null,
  serviceTypeModesValue: null,
  isGstAvail: null,
  gstinInvoiceNumber: null,
  gstinInvoiceDate: null,
};

function line(overrides: Partial<Line> = {}): Line {
  return { ...LINE, ...overrides };
}

function pushOf(lines: Line[], options: { irms?: IrmSnapshot[]; uploadType?: UploadTypeCode; recordResCount?: number } = {}): PushRuleInput {
  const irms = options.irms ?? [IRM];
  return {
    recordResCount: options.recordResCount ?? lines.length,
    uploadType: options.uploadType ?? lines[0]?.uploadType ?? '101',
    lines,
    irms: new Map(irms.map((irm) => [irm.irmNumber, irm])),
  };
}

function codesOf(errors: ErrorDetail[]): [number | null, string | null, string][] {
  return errors.map((e) => [e.serialNo, e.field, e.code]);
}

function assertNoErrors(rule: PushRule, input: PushRuleInput): void {
  assert.deepEqual(rule(input), []);
}

test('a push that keeps every rule has no errors', () => {
  assert.deepEqual(checkPushRules(pushOf([line()])), []);
});

test('the public sample, whose IRM is unknown, fails with ERR18 only', () => {
  const sample: RawLine = {
    serialNo: 1, uploadType: 101, branchSlNo: 0, irmIfscCode: 'ABCD0123456', irmAdCode: '6390004',
    irmNumber: 'glm97d9cc1c1fe81b9b', irmDt: '15092025', irmFCC: 'INR', irmPurposeCode: 'P0103',
    irmRemitAmtFCC: 94404.25, sbCumInvoiceNumber: '15392', sbCumInvoiceDate: '14092025', portCode: 'INDEL4',
    billNo: '9807', sbCumInvoiceFCC: 'INR', sbCumInvoiceValueinFCC: 94404.25, mappedIRMAmountFCC: 1566,
    isVostro: 'Y', vostroType: 'SVRA', mappedORMAmountFCC: null, isThirdPartyExport: null, commissionValDeduct: null,
    discountValInfo: null, insuranceValDeduct: null, insuranceValInfo: null, otherDeductionDeduct: null,
    otherdeductionsInfo: null, freightValDeduct: null, freightValInfo: null, sacCode1: '998599', sacCode2: null,
    serviceTypeModesValue: null,
  };
  const { lines } = normaliseLines([sample], '101');
  assert.deepEqual(codesOf(checkPushRules(pushOf(lines, { irms: [] }))), [[1, 'irmNumber', 'ERR18']]);
});

test('checkPushRules reports every violation, not just the first', () => {
  const errors = checkPushRules(pushOf(
    [line({ portCode: 'XXXXX1' }), line({ serialNo: 1, irmPurposeCode: 'P0101', irmNumber: 'NOPE' })],
    { recordResCount: 3 },
  ));
  assert.deepEqual(codesOf(errors), [
    [null, 'recordResCount', 'ERR08'],
    [1, 'serialNo', 'ERR11'],
    [1, 'irmNumber', 'ERR18'],
    [1, 'irmPurposeCode', 'ERR21'],
    [1, 'portCode', 'ERR30'],
    [1, 'irmPurposeCode', 'ERR39'],
  ]);
});

describe('message-level rules', () => {
  test('ERR08: recordResCount differs from the number of lines', () => {
    assertNoErrors(checkRecordCount, pushOf([line()], { recordResCount: 1 }));
    const errors = checkRecordCount(pushOf([line()], { recordResCount: 2 }));
    assert.deepEqual(codesOf(errors), [[null, 'recordResCount', 'ERR08']]);
    assert.match(errors[0]?.message ?? '', /recordResCount is 2 but the message has 1 lines/);
  });

  test('ERR11: a serialNo used twice is reported on each repeat', () => {
    assertNoErrors(checkDuplicateSerialNumbers, pushOf([line({ serialNo: 1 }), line({ serialNo: 2 })]));
    const errors = checkDuplicateSerialNumbers(pushOf([1, 2, 1, 1].map((serialNo) => line({ serialNo }))));
    assert.deepEqual(codesOf(errors), [[1, 'serialNo', 'ERR11'], [1, 'serialNo', 'ERR11']]);
  });
});

describe('the line against its IRM', () => {
  test('ERR18: the IRM is unknown', () => {
    assertNoErrors(checkIrmsExist, pushOf([line()]));
    assert.deepEqual(codesOf(checkIrmsExist(pushOf([line({ irmNumber: 'IRM404' })]))), [[1, 'irmNumber', 'ERR18']]);
  });

  test('ERR19: irmDt differs from the IRM issue date', () => {
    assertNoErrors(checkIrmIssueDates, pushOf([line()]));
    assert.deepEqual(codesOf(checkIrmIssueDates(pushOf([line({ irmDt: '16092025' })]))), [[1, 'irmDt', 'ERR19']]);
  });

  test('ERR15: irmIfscCode differs from the IRM IFSC', () => {
    assertNoErrors(checkIrmIfscCodes, pushOf([line()]));
    assert.deepEqual(codesOf(checkIrmIfscCodes(pushOf([line({ irmIfscCode: 'WXYZ0123456' })]))), [[1, 'irmIfscCode', 'ERR15']]);
  });

  test('ERR20: irmFCC differs from the IRM currency', () => {
    assertNoErrors(checkIrmCurrencies, pushOf([line()]));
    assert.deepEqual(codesOf(checkIrmCurrencies(pushOf([line({ irmFCC: 'EUR' })]))), [[1, 'irmFCC', 'ERR20']]);
  });

  test('ERR22: irmPurposeCode differs from the IRM purpose', () => {
    assertNoErrors(checkIrmPurposeCodes, pushOf([line()]));
    assert.deepEqual(codesOf(checkIrmPurposeCodes(pushOf([line({ irmPurposeCode: 'P0104' })]))), [[1, 'irmPurposeCode', 'ERR22']]);
  });

  test('ERR23: irmRemitAmtFCC differs from the IRM available amount', () => {
    assertNoErrors(checkIrmAvailableAmounts, pushOf([line()]));
    const errors = checkIrmAvailableAmounts(pushOf([line({ irmRemitAmtFCC: 100_001n })]));
    assert.deepEqual(codesOf(errors), [[1, 'irmRemitAmtFCC', 'ERR23']]);
    assert.match(errors[0]?.message ?? '', /1000\.01 does not match the available amount 1000\.00/);
  });

  test('ERR19, ERR15, ERR20, ERR22 and ERR23 are not reported for an unknown IRM', () => {
    const unknown = line({ irmNumber: 'IRM404', irmDt: '01012020', irmIfscCode: 'X', irmFCC: 'EUR', irmPurposeCode: 'P0104', irmRemitAmtFCC: 1n });
    for (const rule of [checkIrmIssueDates, checkIrmIfscCodes, checkIrmCurrencies, checkIrmPurposeCodes, checkIrmAvailableAmounts]) {
      assertNoErrors(rule, pushOf([unknown]));
    }
  });
});

describe('purpose codes', () => {
  test('ERR21: a code outside the annexure', () => {
    assertNoErrors(checkPurposeCodes, pushOf([line({ irmPurposeCode: 'P1701' })]));
    assert.deepEqual(codesOf(checkPurposeCodes(pushOf([line({ irmPurposeCode: 'P0105' })]))), [[1, 'irmPurposeCode', 'ERR21']]);
  });

  test('ERR21: P0101 and P0108 cannot generate an eBRC', () => {
    const errors = checkPurposeCodes(pushOf([line({ irmPurposeCode: 'P0101' }), line({ serialNo: 2, irmPurposeCode: 'P0108' })]));
    assert.deepEqual(codesOf(errors), [[1, 'irmPurposeCode', 'ERR21'], [2, 'irmPurposeCode', 'ERR21']]);
    assert.match(errors[0]?.message ?? '', /P0101 cannot be used to generate an eBRC/);
  });

  test('ERR39: IT services (102) accept only P0802, P0803, P0807 and P0103', () => {
    const it = (irmPurposeCode: string) => line({ uploadType: '102', irmPurposeCode });
    assertNoErrors(checkItServicePurposeCodes, pushOf(['P0802', 'P0803', 'P0807', 'P0103'].map(it)));
    assert.deepEqual(codesOf(checkItServicePurposeCodes(pushOf([it('P0806')]))), [[1, 'irmPurposeCode', 'ERR39']]);
    assertNoErrors(checkItServicePurposeCodes, pushOf([line({ uploadType: '103', irmPurposeCode: 'P0806' })]));
  });

  test('ERR39: an advance (P0103) is invoiced on or after the remittance date', () => {
    const advance = (sbCumInvoiceDate: string) => line({ irmPurposeCode: 'P0103', sbCumInvoiceDate });
    assertNoErrors(checkAdvanceInvoiceDates, pushOf([advance('15092025'), advance('01012026')]));
    assert.deepEqual(codesOf(checkAdvanceInvoiceDates(pushOf([advance('14092025')]))), [[1, 'sbCumInvoiceDate', 'ERR39']]);
    assertNoErrors(checkAdvanceInvoiceDates, pushOf([line({ sbCumInvoiceDate: '14092025' })]));
  });
});

describe('amounts', () => {
  test('invalid_mapped_amount: mapping 0', () => {
    assert.deepEqual(codesOf(checkMappedAmounts(pushOf([line({ mappedIRMAmountFCC: 0n })]))),
      [[1, 'mappedIRMAmountFCC', 'invalid_mapped_amount']]);
  });

  test('ERR38: a line maps more than its irmRemitAmtFCC', () => {
    assertNoErrors(checkMappedAmounts, pushOf([line({ mappedIRMAmountFCC: 100_000n })]));
    assert.deepEqual(codesOf(checkMappedAmounts(pushOf([line({ mappedIRMAmountFCC: 100_001n })]))),
      [[1, 'mappedIRMAmountFCC', 'ERR38']]);
  });

  test('ERR38: the lines of one IRM together exceed its available amount, reported on each of them', () => {
    const other: IrmSnapshot = { ...IRM, irmNumber: 'IRM2' };
    const irms = [IRM, other];
    assertNoErrors(checkIrmBalances, pushOf([
      line({ serialNo: 1, mappedIRMAmountFCC: 60_000n }),
      line({ serialNo: 2, mappedIRMAmountFCC: 40_000n }),
      line({ serialNo: 3, irmNumber: 'IRM2', mappedIRMAmountFCC: 60_000n }),
    ], { irms }));
    const errors = checkIrmBalances(pushOf([
      line({ serialNo: 1, mappedIRMAmountFCC: 60_000n }),
      line({ serialNo: 2, irmNumber: 'IRM2', mappedIRMAmountFCC: 60_000n }),
      line({ serialNo: 3, mappedIRMAmountFCC: 40_001n }),
    ], { irms }));
    assert.deepEqual(codesOf(errors), [[1, 'mappedIRMAmountFCC', 'ERR38'], [3, 'mappedIRMAmountFCC', 'ERR38']]);
    assert.match(errors[0]?.message ?? '', /1000\.01 in total, more than its available amount 1000\.00/);
  });

  test('deductions_exceed_mapped: the five deductions exceed mappedIRMAmountFCC', () => {
    const deducting = (freightValDeduct: bigint) => line({
      mappedIRMAmountFCC: 50_000n,
      commissionValDeduct: 10_000n,
      discountValDeduct: 10_000n,
      insuranceValDeduct: 10_000n,
      otherDeductionDeduct: 10_000n,
      freightValDeduct,
      freightValInfo: 99_999_999n,
    });
    assertNoErrors(checkDeductions, pushOf([deducting(10_000n)]));
    assert.deepEqual(codesOf(checkDeductions(pushOf([deducting(10_001n)]))),
      [[1, 'mappedIRMAmountFCC', 'deductions_exceed_mapped']]);
  });
});

describe('ports and flags', () => {
  test('ERR30: port code not in the port master', () => {
    assertNoErrors(checkPortCodes, pushOf([line({ portCode: 'INNSA1' })]));
    assert.deepEqual(codesOf(checkPortCodes(pushOf([line({ portCode: 'INXXX9' })]))), [[1, 'portCode', 'ERR30']]);
  });

  test('ERR32: isVostro not Y or N', () => {
    assertNoErrors(checkVostroFlags, pushOf([line({ isVostro: 'N' }), line({ isVostro: null })]));
    assert.deepEqual(codesOf(checkVostroFlags(pushOf([line({ isVostro: 'y' })]))), [[1, 'isVostro', 'ERR32']]);
  });

  test('ERR33: vostroType is SVRA or NVRA, given exactly when isVostro is Y', () => {
    assertNoErrors(checkVostroTypes, pushOf([
      line({ isVostro: 'Y', vostroType: 'SVRA' }),
      line({ isVostro: 'Y', vostroType: 'NVRA' }),
      line({ isVostro: 'N', vostroType: null }),
      line({ isVostro: null, vostroType: null }),
    ]));
    for (const vostro of [
      { isVostro: 'Y', vostroType: null },
      { isVostro: 'N', vostroType: 'SVRA' },
      { isVostro: null, vostroType: 'NVRA' },
      { isVostro: 'Y', vostroType: 'XXXX' },
    ]) {
      assert.deepEqual(codesOf(checkVostroTypes(pushOf([line(vostro)]))), [[1, 'vostroType', 'ERR33']], JSON.stringify(vostro));
    }
  });

  test('ERR34: isThirdPartyExport not Y or N', () => {
    assertNoErrors(checkThirdPartyExportFlags, pushOf([line({ isThirdPartyExport: 'Y' }), line({ isThirdPartyExport: null })]));
    assert.deepEqual(codesOf(checkThirdPartyExportFlags(pushOf([line({ isThirdPartyExport: 'YES' })]))),
      [[1, 'isThirdPartyExport', 'ERR34']]);
  });
});

describe('clubbing: lines sharing one sbCumInvoiceNumber form one eBRC', () => {
  test('ERR20: clubbed IRMs in different currencies', () => {
    const lines = [line({ serialNo: 1 }), line({ serialNo: 2, irmFCC: 'EUR' }), line({ serialNo: 3, sbCumInvoiceNumber: '999', irmFCC: 'GBP' })];
    assert.deepEqual(codesOf(checkClubbedCurrencies(pushOf(lines))), [[2, 'irmFCC', 'ERR20']]);
  });

  test('ERR15: clubbed IRMs from different banks', () => {
    assertNoErrors(checkClubbedBanks, pushOf([line({ serialNo: 1 }), line({ serialNo: 2 })]));
    const lines = [line({ serialNo: 1 }), line({ serialNo: 2, irmIfscCode: 'WXYZ0123456' })];
    assert.deepEqual(codesOf(checkClubbedBanks(pushOf(lines))), [[2, 'irmIfscCode', 'ERR15']]);
  });

  test('ERR39: two purpose codes other than P0103 clubbed', () => {
    const club = (serialNo: number, irmPurposeCode: string) => line({ serialNo, irmPurposeCode });
    assertNoErrors(checkClubbedPurposeCodes, pushOf([club(1, 'P0103'), club(2, 'P0102'), club(3, 'P0102'), club(4, 'P0103')]));
    assertNoErrors(checkClubbedPurposeCodes, pushOf([club(1, 'P0102'), line({ serialNo: 2, sbCumInvoiceNumber: '2', irmPurposeCode: 'P0104' })]));
    assert.deepEqual(codesOf(checkClubbedPurposeCodes(pushOf([club(1, 'P0103'), club(2, 'P0102'), club(3, 'P0104')]))),
      [[3, 'irmPurposeCode', 'ERR39']]);
  });
});
