import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  UnreadableAnswer,
  amountFromWire,
  ebrcQueryToWire,
  ebrcsFromWire,
  irmQueryToWire,
  irmsFromWire,
  pushMessageToWire,
  pushOutcomeFromWire,
  requestStatusFromWire,
} from '../../../src/authority/dgft/mapping.ts';

describe('amounts', () => {
  test('numbers and strings become exact two-decimal text', () => {
    const cases: [unknown, string][] = [
      [0, '0.00'],
      [0.1, '0.10'],
      [0.3, '0.30'],
      [1566, '1566.00'],
      [94404.25, '94404.25'],
      [12_345.6, '12345.60'],
      [70_368_744_177_663.99, '70368744177663.99'],
      ['0', '0.00'],
      ['12', '12.00'],
      ['007.5', '7.50'],
      ['100.500', '100.50'],
      [' 94404.25 ', '94404.25'],
      ['99999999999999.99', '99999999999999.99'],
    ];
    for (const [wire, text] of cases) assert.equal(amountFromWire(wire, 'x'), text, JSON.stringify(wire));
  });

  test('anything that would need rounding or is not an amount is refused, naming the field', () => {
    for (const wire of [1.005, 0.1 + 0.2, -1, Number.NaN, '12.345', '-3.00', '1e3', '', '12,50', null, true, '100000000000000000.00', 1e17]) {
      assert.throws(() => amountFromWire(wire, 'irmResplst[0].irmAvailableAmt'), (error: unknown) =>
        error instanceof UnreadableAnswer && error.message.includes('irmResplst[0].irmAvailableAmt'), JSON.stringify(wire));
    }
  });
});

describe('requests', () => {
  test('IRM and eBRC queries carry ddMMyyyy dates; unused IRM filters are "", unused eBRC filters null', () => {
    assert.deepEqual(irmQueryToWire({ iecCode: '0599001001' }), { iecCode: '0599001001', irmFromDate: '', irmToDate: '', irmNumber: '' });
    assert.deepEqual(irmQueryToWire({ iecCode: '0599001001', irmNumber: 'IRM1', fromDate: '2024-02-29', toDate: '2024-12-31' }), {
      iecCode: '0599001001', irmFromDate: '29022024', irmToDate: '31122024', irmNumber: 'IRM1',
    });
    assert.deepEqual(ebrcQueryToWire({ iecCode: '0599001001', toDate: '2026-01-05', sbCumInvoiceNumber: 'INV-1', sbCumInvoiceDate: '2025-12-01' }), {
      iecCode: '0599001001', eBRCIssueFromDt: null, eBRCIssueToDt: '05012026', sbCumInvoiceNumber: 'INV-1', sbCumInvoiceDate: '01122025',
    });
    assert.throws(() => irmQueryToWire({ iecCode: '0599001001', fromDate: '2025-02-30' }), RangeError);
  });

  test('a push sends uploadType as a number', () => {
    const message = { iecNumber: '0599001001', requestId: 'R1', recordResCount: 0, uploadType: '102', decalarationFlag: 'Y', ebrcBulkGenDtos: [] };
    assert.equal(pushMessageToWire(message).uploadType, 102);
    assert.throws(() => pushMessageToWire({ ...message, uploadType: '105' }), RangeError);
  });
});

describe('answers', () => {
  test('a Failed acknowledgement keeps its codes; one with ERR09 means already received', () => {
    const refused = {
      dgftAckId: null,
      requestId: 'R1',
      ackStatus: 'Failed',
      recordResCount: '1',
      errorDetails: [{ serialNo: '1', field: 'irmNumber', code: 'ERR18', message: 'IRM not found.' }],
    };
    assert.deepEqual(pushOutcomeFromWire(refused, 'R1'), {
      kind: 'acknowledged',
      acknowledgement: {
        ackId: null, requestId: 'R1', ackStatus: 'Failed', recordResCount: 1,
        errorDetails: [{ serialNo: 1, field: 'irmNumber', code: 'ERR18', message: 'IRM not found.' }],
      },
    });
    const reused = { ...refused, errorDetails: [{ serialNo: null, field: 'requestId', code: 'ERR09', message: 'Used.' }, ...refused.errorDetails] };
    assert.deepEqual(pushOutcomeFromWire(reused, 'R1'), { kind: 'already_received', requestId: 'R1' });
  });

  test('an answer about another requestId, or a Validated one without an ack id, is unreadable', () => {
    const validated = { dgftAckId: 'ACK-1', requestId: 'R1', ackStatus: 'Validated', recordResCount: 1, errorDetails: [] };
    assert.throws(() => pushOutcomeFromWire(validated, 'R2'), UnreadableAnswer);
    assert.throws(() => pushOutcomeFromWire({ ...validated, dgftAckId: null }, 'R1'), UnreadableAnswer);
    assert.throws(() => pushOutcomeFromWire({ ...validated, ackStatus: 'OK' }, 'R1'), UnreadableAnswer);
  });

  test('text the database cannot keep in a status answer (a NUL, half a surrogate pair) is kept with U+FFFD, not refused', () => {
    const status = requestStatusFromWire({
      dgftAckId: 'ACK-1',
      requestId: 'R1',
      recordResCount: 2,
      recordProCount: 1,
      recordFailCount: 1,
      processingStatus: 'Processed',
      ebrcBulkGenStatusLst: [
        { serialNo: 1, status: 'GENERATED', ebrcNumber: 'EBRC\u00001', ebrcDate: '01092026', errorDetails: [] },
        { serialNo: 2, status: 'FAILED', errorDetails: [{ serialNo: 2, field: 'bill\ud800No', code: 'ERR\u000040', message: 'Shipping bill \u0000not found \udc00.' }] },
      ],
      errorDetails: [],
    }, 'R1');
    assert.equal(status?.records[0]!.ebrcNumber, 'EBRC\uFFFD1');
    assert.deepEqual(status?.records[1]!.errorDetails, [{ serialNo: 2, field: 'bill\uFFFDNo', code: 'ERR\uFFFD40', message: 'Shipping bill \uFFFDnot found \uFFFD.' }]);
    const refused = pushOutcomeFromWire({ dgftAckId: null, requestId: 'R1', ackStatus: 'Failed', recordResCount: 1, errorDetails: [{ serialNo: 1, field: null, code: 'ERR18', message: 'IRM \u0000not found.' }] }, 'R1');
    assert.equal(refused.kind === 'acknowledged' ? refused.acknowledgement.errorDetails[0]!.message : null, 'IRM \uFFFDnot found.');
  });

  test('the status of a push refused at acknowledgement: Failed, with the refusal\'s codes', () => {
    const status = requestStatusFromWire({
      dgftAckId: null,
      requestId: 'R1',
      recordResCount: 1,
      recordProCount: 0,
      recordFailCount: 0,
      processingStatus: 'Errored',
      ebrcBulkGenStatusLst: [],
      errorDetails: [{ serialNo: 1, field: 'irmNumber', code: 'ERR18', message: 'IRM not found.' }],
    }, 'R1');
    assert.equal(status?.ackStatus, 'Failed');
    assert.equal(status?.ackId, null);
    assert.deepEqual(status?.errorDetails.map((detail) => detail.code), ['ERR18']);
  });
});

describe('IRMs as the authority sends them (contract 13: store what it says, never refuse it)', () => {
  const wireIrm = (fields: Record<string, unknown> = {}) => ({
    irmNumber: 'IRM0001', irmIssueDate: '01062025', irmStatus: 'F', ifscCode: 'HDFC0000001', remittanceAdCode: '0510001',
    remittanceDate: '31052025', remittanceFCC: 'USD', remittanceFCCAmount: 6400, ormAmountFCC: 400, irmAvailableAmt: 6000,
    irmUtilizedAmt: 0, iecCode: '0599001001', panNumber: 'AACCD1001D', remitterName: 'Buyer Inc', remitterCountry: 'US',
    purposeOfRemittance: 'P0103', ...fields,
  });

  test('cancelled (C) and amended (A) IRMs are kept, with their status; the figures keep no assumed relation', () => {
    const { irms, unreadable } = irmsFromWire({ irmResplst: [wireIrm(), wireIrm({ irmNumber: 'IRM0002', irmStatus: 'C' }), wireIrm({ irmNumber: 'IRM0003', irmStatus: 'A' })] });
    assert.deepEqual(unreadable, []);
    assert.deepEqual(irms.map((irm) => [irm.irmNumber, irm.irmStatus]), [['IRM0001', 'F'], ['IRM0002', 'C'], ['IRM0003', 'A']]);
    assert.deepEqual([irms[0]!.remittanceFCCAmount, irms[0]!.ormAmountFCC, irms[0]!.irmAvailableAmt, irms[0]!.irmUtilizedAmt], ['6400.00', '400.00', '6000.00', '0.00']);
  });

  test('string amounts, statuses in any case or spelled out, absent optional fields', () => {
    const { irms, unreadable } = irmsFromWire({
      irmResplst: [
        wireIrm({ remittanceFCCAmount: ' 6400.5 ', irmAvailableAmt: '6000', irmUtilizedAmt: '0.50', irmStatus: 'c' }),
        wireIrm({ irmNumber: 'IRM0002', irmStatus: 'Cancelled' }),
        wireIrm({ irmNumber: 'IRM0003', irmStatus: undefined, ormAmountFCC: null, irmUtilizedAmt: undefined, panNumber: '', remitterName: null, remitterCountry: undefined, remittanceAdCode: undefined, ifscCode: undefined, purposeOfRemittance: undefined, iecCode: undefined, remittanceDate: undefined }),
        wireIrm({ irmNumber: 'IRM0004', irmStatus: 'X' }),
      ],
    });
    assert.deepEqual(unreadable, []);
    assert.deepEqual([irms[0]!.remittanceFCCAmount, irms[0]!.irmAvailableAmt, irms[0]!.irmUtilizedAmt, irms[0]!.irmStatus], ['6400.50', '6000.00', '0.50', 'C']);
    assert.equal(irms[1]!.irmStatus, 'C');
    const sparse = irms[2]!;
    assert.deepEqual(
      [sparse.irmStatus, sparse.ormAmountFCC, sparse.irmUtilizedAmt, sparse.panNumber, sparse.remitterName, sparse.remitterCountry, sparse.ifscCode, sparse.remittanceDate],
      ['F', '0.00', '0.00', '', '', '', '', '2025-06-01'],
    );
    assert.equal(irms[3]!.irmStatus, 'X', 'an unknown status is kept as it came; it is not a cancellation');
  });

  test('an IRM that cannot be read is reported and the others kept: one odd IRM never fails a pull', () => {
    const odd = [
      wireIrm({ irmNumber: 'BAD1', irmAvailableAmt: '-5.00' }),
      wireIrm({ irmNumber: 'BAD2', remittanceFCCAmount: 6400.005 }),
      wireIrm({ irmNumber: '' }),
      wireIrm({ irmNumber: 'BAD4', irmIssueDate: '2025-06-01' }),
      'not an object',
      wireIrm({ irmNumber: 'BAD6', irmStatus: 7 }),
      wireIrm({ irmNumber: '   ' }),
      wireIrm({ irmNumber: 'BAD8', remitterName: 'nul\u0000byte' }),
      wireIrm({ irmNumber: 'BAD9', remitterName: 'half \ud800 pair' }),
    ];
    const { irms, unreadable } = irmsFromWire({ irmResplst: [wireIrm(), ...odd, wireIrm({ irmNumber: 'IRM0009' })] });
    assert.deepEqual(irms.map((irm) => irm.irmNumber), ['IRM0001', 'IRM0009']);
    assert.deepEqual(unreadable.map((entry) => [entry.index, entry.irmNumber]), [[1, 'BAD1'], [2, 'BAD2'], [3, null], [4, 'BAD4'], [5, null], [6, 'BAD6'], [7, '   '], [8, 'BAD8'], [9, 'BAD9']]);
    assert.ok(unreadable.every((entry) => entry.reason.length > 0));
    assert.throws(() => irmsFromWire({ irmResplst: 'nope' }), UnreadableAnswer, 'an answer without the list is unreadable');
  });

  test('property: whatever each IRM carries, reading never throws and every IRM is either read or reported', () => {
    const anything = fc.oneof(fc.constant(undefined), fc.constant(null), fc.string({ unit: 'binary' }), fc.double(), fc.integer(), fc.boolean(), fc.constant('12.34'), fc.constant('01062025'));
    fc.assert(
      fc.property(fc.array(fc.dictionary(fc.constantFrom(...Object.keys(wireIrm())), anything).map((fields) => wireIrm(fields)), { maxLength: 20 }), (list) => {
        const { irms, unreadable } = irmsFromWire({ irmResplst: list });
        assert.equal(irms.length + unreadable.length, list.length);
        for (const irm of irms) {
          assert.match(irm.irmAvailableAmt, /^\d+\.\d\d$/);
          assert.notEqual(irm.irmNumber, '');
        }
      }),
    );
  });
});

describe('eBRCs as the authority sends them (contract 13: store what it says, never refuse it)', () => {
  const wireEbrc = (fields: Record<string, unknown> = {}) => ({
    ebrcNumber: 'EBRC0001', ebrcDate: '02092026', irmNumber: 'IRM0001', sbCumInvoiceNumber: 'INV-77', sbCumInvoiceDate: '28082026',
    realisedValueFCC: 12_345.6, currency: 'USD', iecCode: '0599001001', status: 'GENERATED', ...fields,
  });

  test('an eBRC that cannot be read is reported and the others kept: one odd eBRC never fails a sync', () => {
    const odd = [
      wireEbrc({ ebrcNumber: 'BAD1', realisedValueFCC: '12.345' }),
      wireEbrc({ ebrcNumber: 'BAD2', ebrcDate: '2026-09-02' }),
      wireEbrc({ ebrcNumber: '' }),
      wireEbrc({ ebrcNumber: '   ' }),
      'not an object',
      wireEbrc({ ebrcNumber: 'BAD6', currency: null }),
      wireEbrc({ ebrcNumber: 'BAD7', status: 7 }),
    ];
    // Text no column holds is kept with U+FFFD in its place, the number too (it is looked up by it).
    const repairable = [wireEbrc({ ebrcNumber: 'NUL\u00001', irmNumber: 'nul\u0000byte' }), wireEbrc({ ebrcNumber: 'HALF1', sbCumInvoiceNumber: 'half \ud800 pair' })];
    const { ebrcs, unreadable } = ebrcsFromWire({ eBRCRespList: [wireEbrc(), ...odd, ...repairable, wireEbrc({ ebrcNumber: 'EBRC0011' })] });
    assert.deepEqual(ebrcs.map((ebrc) => ebrc.ebrcNumber), ['EBRC0001', 'NUL\uFFFD1', 'HALF1', 'EBRC0011']);
    assert.deepEqual([ebrcs[1]!.irmNumber, ebrcs[2]!.sbCumInvoiceNumber], ['nul\uFFFDbyte', 'half \uFFFD pair']);
    assert.deepEqual(unreadable.map((entry) => [entry.index, entry.ebrcNumber]), [[1, 'BAD1'], [2, 'BAD2'], [3, null], [4, '   '], [5, null], [6, 'BAD6'], [7, 'BAD7']]);
    assert.match(unreadable[0]!.reason, /eBRCRespList\[1\]\.realisedValueFCC/);
    assert.match(unreadable[5]!.reason, /eBRCRespList\[6\]\.currency/);
    assert.throws(() => ebrcsFromWire({ eBRCRespList: 'nope' }), UnreadableAnswer, 'an answer without the list is unreadable');
  });

  test('a status left out reads as issued; the number is kept as sent, as the status answer keeps it; the value as exact text', () => {
    const { ebrcs, unreadable } = ebrcsFromWire({ eBRCRespList: [wireEbrc({ ebrcNumber: ' EBRC0002 ', status: undefined }), wireEbrc({ ebrcNumber: 'EBRC0003', status: 'Cancelled', realisedValueFCC: '94404.25' })] });
    assert.deepEqual(unreadable, []);
    assert.deepEqual(ebrcs.map((ebrc) => [ebrc.ebrcNumber, ebrc.status, ebrc.realisedValueFCC, ebrc.ebrcDate]), [
      [' EBRC0002 ', 'GENERATED', '12345.60', '2026-09-02'],
      ['EBRC0003', 'Cancelled', '94404.25', '2026-09-02'],
    ]);
  });

  test('property: whatever each eBRC carries, reading never throws and every eBRC is either read or reported', () => {
    const anything = fc.oneof(fc.constant(undefined), fc.constant(null), fc.string({ unit: 'binary' }), fc.double(), fc.integer(), fc.boolean(), fc.constant('12.34'), fc.constant('02092026'));
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.dictionary(fc.constantFrom(...Object.keys(wireEbrc())), anything).map((fields) => wireEbrc(fields)), anything), { maxLength: 20 }), (list) => {
        const { ebrcs, unreadable } = ebrcsFromWire({ eBRCRespList: list });
        assert.equal(ebrcs.length + unreadable.length, list.length);
        for (const ebrc of ebrcs) {
          assert.match(ebrc.realisedValueFCC, /^\d+\.\d\d$/);
          assert.match(ebrc.ebrcDate, /^\d{4}-\d\d-\d\d$/);
          assert.notEqual(ebrc.ebrcNumber.trim(), '');
          for (const value of Object.values(ebrc)) assert.ok(!value.includes('\u0000') && value.isWellFormed(), JSON.stringify(value));
        }
      }),
    );
  });
});
