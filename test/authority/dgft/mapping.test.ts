import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  UnreadableAnswer,
  amountFromWire,
  ebrcQueryToWire,
  irmQueryToWire,
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
