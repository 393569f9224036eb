import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createDgftClient } from '../../../src/authority/dgft/dgft-client.ts';
import type { DgftClient, DgftClientOptions } from '../../../src/authority/dgft/dgft-client.ts';
import { failsWith } from '../../support/wire-failures.ts';
import type { PushMessage } from '../../../src/authority/authority.ts';
import { OPERATION_PATHS, REQUEST_NOT_RECEIVED_CODE } from '../../../src/authority/protocol/messages.ts';
import type { FakeAuthority } from './fake-authority.ts';
import { FAKE_IEC, startFakeAuthority } from './fake-authority.ts';

const FAST_RETRIES = { deadlineMs: 2_000, attemptTimeoutMs: 300, firstBackoffMs: 10, maxBackoffMs: 50 };
/** For tests that count calls: on a loaded machine an answer can take over 300 ms, and a timed-out attempt is retried. */
const PATIENT_RETRIES = { ...FAST_RETRIES, deadlineMs: 30_000, attemptTimeoutMs: 10_000 };
const TOKEN = OPERATION_PATHS.getAccessToken;
const IRMS = OPERATION_PATHS.fetchIRMDetails;
const PUSH = OPERATION_PATHS.pushIRMToGenEBRC;
const STATUS = OPERATION_PATHS.getRequestStatus;
const EBRCS = OPERATION_PATHS.fetchEBRCDetails;

const WIRE_IRM = {
  irmNumber: 'IRM0001',
  irmIssueDate: '15092025',
  irmStatus: 'F',
  ifscCode: 'HDFC0000001',
  remittanceAdCode: '6390005',
  remittanceDate: '14092025',
  remittanceFCC: 'USD',
  remittanceFCCAmount: 94404.25,
  ormAmountFCC: 0,
  irmAvailableAmt: '94404.25',
  irmUtilizedAmt: '0',
  iecCode: FAKE_IEC,
  panNumber: 'AAACE1234F',
  remitterName: 'Zürich Imports AG',
  remitterCountry: 'CH',
  purposeOfRemittance: 'P0802',
};

let authority: FakeAuthority;
let clock: number;

function client(options: Partial<DgftClientOptions> = {}): DgftClient {
  return createDgftClient({ baseUrl: authority.url, retry: FAST_RETRIES, now: () => clock, ...options });
}

function fetchIrms(dgft: DgftClient) {
  return dgft.fetchIrmDetails(authority.credentials, { iecCode: FAKE_IEC }).then((fetched) => fetched.irms);
}

function pushMessage(requestId: string): PushMessage {
  return { iecNumber: FAKE_IEC, requestId, recordResCount: 1, uploadType: '103', decalarationFlag: 'Y', ebrcBulkGenDtos: [{ serialNo: 1 }] };
}

before(async () => {
  authority = await startFakeAuthority();
});

after(() => authority.close());

beforeEach(() => {
  clock = 1_000_000;
  authority.reset();
  authority.handlers.fetchIRMDetails = () => ({ irmResplst: [WIRE_IRM] });
});

describe('access tokens', () => {
  test('one token serves every call until 30 s before it expires, then it is renewed', async () => {
    const dgft = client({ retry: PATIENT_RETRIES });
    await fetchIrms(dgft);
    await fetchIrms(dgft);
    await dgft.getAccessToken(authority.credentials);
    assert.equal(authority.callsTo(TOKEN).length, 1);

    clock += 269_000;
    await fetchIrms(dgft);
    assert.equal(authority.callsTo(TOKEN).length, 1);

    clock += 2_000;
    await fetchIrms(dgft);
    await fetchIrms(dgft);
    assert.equal(authority.callsTo(TOKEN).length, 2);
    assert.equal(authority.callsTo(IRMS).length, 5);
  });

  test('concurrent callers share one token request', async () => {
    const dgft = client({ retry: PATIENT_RETRIES });
    await Promise.all(Array.from({ length: 10 }, () => fetchIrms(dgft)));
    assert.equal(authority.callsTo(TOKEN).length, 1);
    assert.equal(authority.callsTo(IRMS).length, 10);
  });

  test('a 401 in flight renews the token once and retries the call once', async () => {
    const dgft = client({ retry: PATIENT_RETRIES });
    await fetchIrms(dgft);
    authority.revokeTokens();
    authority.calls.length = 0;

    assert.equal((await fetchIrms(dgft)).length, 1);
    assert.equal(authority.callsTo(TOKEN).length, 1);
    assert.equal(authority.callsTo(IRMS).length, 2);
    const [refused, retried] = authority.callsTo(IRMS);
    assert.notEqual(refused?.headers.accesstoken, retried?.headers.accesstoken);
  });

  test('callers refused together share one renewal', async () => {
    const dgft = client({ retry: PATIENT_RETRIES });
    await fetchIrms(dgft);
    authority.revokeTokens();
    authority.calls.length = 0;
    await Promise.all(Array.from({ length: 5 }, () => fetchIrms(dgft)));
    assert.equal(authority.callsTo(TOKEN).length, 1);
  });

  test('a renewed token refused again means the credentials are invalid, after exactly one retry', async () => {
    const dgft = client({ retry: PATIENT_RETRIES });
    authority.refuseEveryToken = true;
    const failure = await failsWith(fetchIrms(dgft), 'credentials_invalid');
    assert.equal(failure.httpStatus, 401);
    assert.equal(authority.callsTo(TOKEN).length, 2);
    assert.equal(authority.callsTo(IRMS).length, 2);
  });

  test('a wrong client secret is refused at the token call: credentials invalid', async () => {
    const credentials = { ...authority.credentials, clientSecret: 'not-the-secret' };
    const failure = await failsWith(client().fetchIrmDetails(credentials, { iecCode: FAKE_IEC }), 'credentials_invalid');
    assert.equal(failure.operation, 'getAccessToken');
    assert.equal(failure.httpStatus, 401);
    assert.equal(failure.authorityCode, 'ERR01');
    assert.equal(authority.callsTo(TOKEN).length, 1, 'not retried');
    assert.equal(authority.callsTo(IRMS).length, 0);
  });

  test('the token cache keeps one token per credential set', async () => {
    const dgft = client({ retry: PATIENT_RETRIES });
    await fetchIrms(dgft);
    const other = { ...authority.credentials, apiKey: 'another-gateway-key' };
    await assert.rejects(dgft.getAccessToken(other));
    await fetchIrms(dgft);
    assert.equal(authority.callsTo(TOKEN).length, 2);
  });
});

describe('headers', () => {
  test('every call carries the headers in their exact case; the token call its x-api-key', async () => {
    const dgft = client();
    await fetchIrms(dgft);
    await dgft.pushIrmToGenEbrc(authority.credentials, pushMessage('REQ-HEADERS'));
    authority.handlers.getRequestStatus = ({ requestId }) => notReceived(String(requestId));
    await dgft.getRequestStatus(authority.credentials, 'REQ-HEADERS');
    authority.handlers.fetchEBRCDetails = () => ({ eBRCRespList: [] });
    await dgft.fetchEbrcDetails(authority.credentials, { iecCode: FAKE_IEC });

    const [tokenCall, ...enveloped] = authority.calls;
    assert.equal(tokenCall?.path, TOKEN);
    assert.ok(tokenCall.headerNames.includes('x-api-key'));
    assert.ok(tokenCall.headerNames.includes('Content-Type'));
    assert.deepEqual(enveloped.map((call) => call.path), [IRMS, PUSH, STATUS, EBRCS]);
    const messageIds = new Set<string>();
    for (const call of enveloped) {
      for (const name of ['accessToken', 'client_id', 'secretVal', 'messageID', 'x-api-key', 'Content-Type']) {
        assert.ok(call.headerNames.includes(name), `${call.path} lacks ${name}: ${call.headerNames.join(', ')}`);
      }
      assert.equal(call.headers['content-type'], 'application/json');
      assert.equal(call.headers['x-api-key'], authority.credentials.apiKey);
      assert.equal(call.headers.client_id, authority.credentials.clientId);
      const messageId = String(call.headers.messageid);
      assert.ok(messageId.length > 0 && messageId.length <= 50);
      messageIds.add(messageId);
    }
    assert.equal(messageIds.size, enveloped.length, 'a fresh messageID per call');
  });

  test('the plain requests name the fields as the wire does', async () => {
    const dgft = client();
    await dgft.fetchIrmDetails(authority.credentials, { iecCode: FAKE_IEC, fromDate: '2025-04-01', toDate: '2026-03-31' });
    await dgft.pushIrmToGenEbrc(authority.credentials, pushMessage('REQ-FIELDS'));
    authority.handlers.fetchEBRCDetails = () => ({ eBRCRespList: [] });
    await dgft.fetchEbrcDetails(authority.credentials, { iecCode: FAKE_IEC, fromDate: '2025-04-01' });
    assert.deepEqual(authority.callsTo(IRMS)[0]?.message, { iecCode: FAKE_IEC, irmFromDate: '01042025', irmToDate: '31032026', irmNumber: '' });
    assert.deepEqual(authority.callsTo(PUSH)[0]?.message, {
      iecNumber: FAKE_IEC, requestId: 'REQ-FIELDS', recordResCount: 1, uploadType: 103, decalarationFlag: 'Y', ebrcBulkGenDtos: [{ serialNo: 1 }],
    });
    assert.deepEqual(authority.callsTo(EBRCS)[0]?.message, {
      iecCode: FAKE_IEC, eBRCIssueFromDt: '01042025', eBRCIssueToDt: null, sbCumInvoiceNumber: null, sbCumInvoiceDate: null,
    });
  });
});

describe('the error table', () => {
  test('an answer whose signature is not the authority\'s is refused as a misconfiguration', async () => {
    const dgft = client();
    authority.intercept(IRMS, 'forge');
    const failure = await failsWith(fetchIrms(dgft), 'misconfigured');
    assert.equal(failure.profile, 'spec-sha256');
    assert.match(failure.message, /ERR06/);
    assert.equal(authority.callsTo(IRMS).length, 1, 'not retried');
  });

  test('HTTP 403 is ip_not_whitelisted, naming the configured egress address', async () => {
    authority.intercept(IRMS, { status: 403, body: { message: 'Forbidden' } });
    const failure = await failsWith(fetchIrms(client({ egressIp: '203.0.113.7' })), 'ip_not_whitelisted');
    assert.equal(failure.egressIp, '203.0.113.7');
    assert.match(failure.message, /203\.0\.113\.7/);
    authority.intercept(TOKEN, { status: 403 });
    assert.equal((await failsWith(fetchIrms(client()), 'ip_not_whitelisted')).egressIp, null);
  });

  test('ERR01 is credentials_invalid, at the token call and in flight', async () => {
    authority.intercept(TOKEN, { status: 401, body: { errorCode: 'ERR01', errorMessage: 'Invalid client id or secret' } });
    const atToken = await failsWith(fetchIrms(client()), 'credentials_invalid');
    assert.equal(atToken.operation, 'getAccessToken');
    assert.equal(authority.callsTo(IRMS).length, 0);

    authority.intercept(IRMS, { status: 400, body: { errorCode: 'ERR01', errorMessage: 'Invalid client id' } });
    const inFlight = await failsWith(fetchIrms(client()), 'credentials_invalid');
    assert.equal(inFlight.authorityCode, 'ERR01');
    assert.equal(inFlight.operation, 'fetchIRMDetails');
  });

  test('a profile the authority does not speak meets ERR05: a misconfiguration naming the profile', async () => {
    authority.profile = 'java-pbkdf2';
    const failure = await failsWith(fetchIrms(client()), 'misconfigured');
    assert.equal(failure.authorityCode, 'ERR05');
    assert.equal(failure.profile, 'spec-sha256');
    assert.match(failure.message, /spec-sha256/);
    assert.equal(authority.callsTo(IRMS).length, 1, 'not retried');
  });

  test('ERR02-ERR06 are each a misconfiguration', async () => {
    for (const code of ['ERR02', 'ERR03', 'ERR04', 'ERR05', 'ERR06']) {
      authority.intercept(IRMS, { status: 400, body: { errorCode: code, errorMessage: 'refused' } });
      const failure = await failsWith(fetchIrms(client()), 'misconfigured');
      assert.equal(failure.authorityCode, code);
      assert.equal(failure.profile, 'spec-sha256');
    }
  });

  test('the java-pbkdf2 profile works end to end when both sides speak it', async () => {
    authority.profile = 'java-pbkdf2';
    const credentials = { ...authority.credentials, envelopeProfile: 'java-pbkdf2' as const };
    const { irms } = await client().fetchIrmDetails(credentials, { iecCode: FAKE_IEC });
    assert.equal(irms[0]?.irmNumber, 'IRM0001');
  });

  test('429 then 200 succeeds after the Retry-After pause', async () => {
    authority.intercept(IRMS, { status: 429, headers: { 'Retry-After': '1' } });
    const startedAt = Date.now();
    const irms = await fetchIrms(client());
    assert.equal(irms.length, 1);
    assert.ok(Date.now() - startedAt >= 1_000, 'waited as Retry-After asked');
    assert.equal(authority.callsTo(IRMS).length, 2);
  });

  test('a Retry-After beyond the deadline fails at once as unavailable', async () => {
    authority.intercept(IRMS, { status: 429, headers: { 'Retry-After': '60' } });
    const startedAt = Date.now();
    await failsWith(fetchIrms(client()), 'unavailable');
    assert.ok(Date.now() - startedAt < 1_000);
  });

  test('5xx until the deadline: retried with backoff, then unavailable', async () => {
    authority.intercept(IRMS, ...Array.from({ length: 1_000 }, () => ({ status: 503 })));
    const startedAt = Date.now();
    await failsWith(fetchIrms(client()), 'unavailable');
    const elapsed = Date.now() - startedAt;
    assert.ok(elapsed <= FAST_RETRIES.deadlineMs + 200, `${elapsed} ms`);
    assert.ok(authority.callsTo(IRMS).length >= 5, `${authority.callsTo(IRMS).length} attempts`);
  });

  test('a connection reset is retried', async () => {
    authority.intercept(IRMS, 'reset', { status: 502 });
    assert.equal((await fetchIrms(client())).length, 1);
    assert.equal(authority.callsTo(IRMS).length, 3);
  });

  test('an authority that never answers: timeout within the deadline', async () => {
    authority.intercept(IRMS, ...Array.from({ length: 100 }, () => 'hang' as const));
    const startedAt = Date.now();
    await failsWith(fetchIrms(client()), 'timeout');
    assert.ok(Date.now() - startedAt <= FAST_RETRIES.deadlineMs + 200);
  });

  test('the caller\'s own signal ends the call as a timeout', async () => {
    authority.intercept(IRMS, 'hang', 'hang', 'hang', 'hang', 'hang');
    const startedAt = Date.now();
    await failsWith(client().fetchIrmDetails(authority.credentials, { iecCode: FAKE_IEC }, { signal: AbortSignal.timeout(150) }), 'timeout');
    assert.ok(Date.now() - startedAt < 1_000);
  });
});

describe('pushes', () => {
  test('ERR09 on a push is "already received", not an error', async () => {
    const dgft = client();
    const first = await dgft.pushIrmToGenEbrc(authority.credentials, pushMessage('REQ-ERR09'));
    assert.equal(first.kind, 'acknowledged');
    const { ackId, ...acknowledgement } = first.acknowledgement;
    assert.match(ackId ?? '', /^ACK-/);
    assert.deepEqual(acknowledgement, { requestId: 'REQ-ERR09', ackStatus: 'Validated', recordResCount: 1, errorDetails: [] });
    assert.deepEqual(await dgft.pushIrmToGenEbrc(authority.credentials, pushMessage('REQ-ERR09')), { kind: 'already_received', requestId: 'REQ-ERR09' });
  });

  test('a push whose acknowledgement is lost is retried and meets ERR09, never a second request', async () => {
    authority.intercept(PUSH, 'lose');
    const outcome = await client().pushIrmToGenEbrc(authority.credentials, pushMessage('REQ-LOST'));
    assert.deepEqual(outcome, { kind: 'already_received', requestId: 'REQ-LOST' });
    assert.equal(authority.callsTo(PUSH).length, 2);
  });
});

describe('answers mapped to the service\'s types', () => {
  test('IRMs: dates from ddMMyyyy, money exact from numbers and strings, amended and cancelled IRMs kept with their status', async () => {
    authority.handlers.fetchIRMDetails = () => ({
      irmResplst: [
        WIRE_IRM,
        { ...WIRE_IRM, irmNumber: 'IRM0002', irmStatus: 'A', remittanceFCCAmount: '1566', ormAmountFCC: null, irmAvailableAmt: 0.1, irmUtilizedAmt: '1565.90' },
        { ...WIRE_IRM, irmNumber: 'IRM0003', irmStatus: 'C' },
        { ...WIRE_IRM, irmNumber: 'IRM0004', remittanceFCCAmount: 70368744177663.99, irmAvailableAmt: '99999999999999.99', irmUtilizedAmt: '0.100' },
      ],
    });
    const irms = await fetchIrms(client());
    assert.deepEqual(irms.map((irm) => [irm.irmNumber, irm.irmStatus]), [['IRM0001', 'F'], ['IRM0002', 'A'], ['IRM0003', 'C'], ['IRM0004', 'F']]);
    assert.deepEqual(irms[0], {
      irmNumber: 'IRM0001',
      irmStatus: 'F',
      irmIssueDate: '2025-09-15',
      ifscCode: 'HDFC0000001',
      remittanceAdCode: '6390005',
      remittanceDate: '2025-09-14',
      remittanceFCC: 'USD',
      remittanceFCCAmount: '94404.25',
      ormAmountFCC: '0.00',
      irmAvailableAmt: '94404.25',
      irmUtilizedAmt: '0.00',
      iecCode: FAKE_IEC,
      panNumber: 'AAACE1234F',
      remitterName: 'Zürich Imports AG',
      remitterCountry: 'CH',
      purposeOfRemittance: 'P0802',
    });
    assert.deepEqual(
      [irms[1]!, irms[3]!].map((irm) => [irm.remittanceFCCAmount, irm.ormAmountFCC, irm.irmAvailableAmt, irm.irmUtilizedAmt]),
      [['1566.00', '0.00', '0.10', '1565.90'], ['70368744177663.99', '0.00', '99999999999999.99', '0.10']],
    );
  });

  test('an IRM whose amount cannot be read exactly, or whose date is not ddMMyyyy, is reported and the others kept', async () => {
    for (const broken of [{ irmAvailableAmt: 1.005 }, { irmAvailableAmt: '12.345' }, { irmAvailableAmt: '-3.00' }, { irmAvailableAmt: '1e3' }, { irmIssueDate: '2025-09-15' }, { irmIssueDate: '31022025' }]) {
      authority.handlers.fetchIRMDetails = () => ({ irmResplst: [{ ...WIRE_IRM, irmNumber: 'IRM-ODD', ...broken }, WIRE_IRM] });
      const { irms, unreadable } = await client().fetchIrmDetails(authority.credentials, { iecCode: FAKE_IEC });
      assert.deepEqual(irms.map((irm) => irm.irmNumber), ['IRM0001']);
      assert.equal(unreadable.length, 1);
      assert.equal(unreadable[0]!.irmNumber, 'IRM-ODD');
      assert.match(unreadable[0]!.reason, new RegExp(Object.keys(broken)[0] ?? ''));
    }
    authority.handlers.fetchIRMDetails = () => ({ irmResplst: 'not a list' });
    await failsWith(fetchIrms(client()), 'misconfigured');
  });

  test('request status: records, eBRC dates and a Processed request with failed records', async () => {
    authority.handlers.getRequestStatus = ({ requestId }) => ({
      dgftAckId: 'ACK-9',
      requestId,
      recordResCount: 2,
      recordProCount: 1,
      recordFailCount: 1,
      processingStatus: 'Processed',
      ebrcBulkGenStatusLst: [
        { serialNo: 1, status: 'GENERATED', ebrcNumber: 'EBRC202609010000000001', ebrcDate: '01092026', errorDetails: [] },
        { serialNo: '2', status: 'FAILED', ebrcNumber: null, ebrcDate: null, errorDetails: [{ serialNo: 2, field: 'billNo', code: 'ERR40', message: 'Shipping bill not found.' }] },
      ],
    });
    assert.deepEqual(await client().getRequestStatus(authority.credentials, 'REQ-STATUS'), {
      ackId: 'ACK-9',
      requestId: 'REQ-STATUS',
      ackStatus: 'Validated',
      errorDetails: [],
      recordResCount: 2,
      recordProCount: 1,
      recordFailCount: 1,
      processingStatus: 'Processed',
      records: [
        { serialNo: 1, status: 'GENERATED', ebrcNumber: 'EBRC202609010000000001', ebrcDate: '2026-09-01', errorDetails: [] },
        { serialNo: 2, status: 'FAILED', ebrcNumber: null, ebrcDate: null, errorDetails: [{ serialNo: 2, field: 'billNo', code: 'ERR40', message: 'Shipping bill not found.' }] },
      ],
    });
  });

  test('request status: a requestId the authority never received is null', async () => {
    authority.handlers.getRequestStatus = ({ requestId }) => notReceived(String(requestId));
    assert.equal(await client().getRequestStatus(authority.credentials, 'REQ-UNKNOWN'), null);
  });

  test('eBRC details: dates and realised value', async () => {
    authority.handlers.fetchEBRCDetails = () => ({
      eBRCRespList: [{
        ebrcNumber: 'EBRC1',
        ebrcDate: '02092026',
        irmNumber: 'IRM0001',
        sbCumInvoiceNumber: 'INV-77',
        sbCumInvoiceDate: '28082026',
        realisedValueFCC: 12_345.6,
        currency: 'USD',
        iecCode: FAKE_IEC,
        status: 'GENERATED',
      }],
    });
    assert.deepEqual((await client().fetchEbrcDetails(authority.credentials, { iecCode: FAKE_IEC })).ebrcs, [{
      ebrcNumber: 'EBRC1',
      ebrcDate: '2026-09-02',
      irmNumber: 'IRM0001',
      sbCumInvoiceNumber: 'INV-77',
      sbCumInvoiceDate: '2026-08-28',
      realisedValueFCC: '12345.60',
      currency: 'USD',
      iecCode: FAKE_IEC,
      status: 'GENERATED',
    }]);
  });

  test('an eBRC that cannot be read is reported and the others kept; an answer without the list is misconfigured', async () => {
    const wire = { ebrcNumber: 'EBRC1', ebrcDate: '02092026', irmNumber: 'IRM0001', sbCumInvoiceNumber: 'INV-77', sbCumInvoiceDate: '28082026', realisedValueFCC: 100, currency: 'USD', iecCode: FAKE_IEC, status: 'GENERATED' };
    for (const broken of [{ realisedValueFCC: 1.005 }, { ebrcDate: '2026-09-02' }, { sbCumInvoiceDate: '31022026' }, { currency: '' }]) {
      authority.handlers.fetchEBRCDetails = () => ({ eBRCRespList: [{ ...wire, ebrcNumber: 'EBRC-ODD', ...broken }, wire] });
      const { ebrcs, unreadable } = await client().fetchEbrcDetails(authority.credentials, { iecCode: FAKE_IEC });
      assert.deepEqual(ebrcs.map((ebrc) => ebrc.ebrcNumber), ['EBRC1']);
      assert.deepEqual(unreadable.map((entry) => [entry.index, entry.ebrcNumber]), [[0, 'EBRC-ODD']]);
      assert.match(unreadable[0]!.reason, new RegExp(Object.keys(broken)[0] ?? ''));
    }
    authority.handlers.fetchEBRCDetails = () => ({ eBRCRespList: 'not a list' });
    await failsWith(client().fetchEbrcDetails(authority.credentials, { iecCode: FAKE_IEC }), 'misconfigured');
  });
});

function notReceived(requestId: string) {
  return {
    dgftAckId: null,
    requestId,
    recordResCount: 0,
    recordProCount: 0,
    recordFailCount: 0,
    processingStatus: 'Errored',
    ebrcBulkGenStatusLst: [],
    errorDetails: [{ serialNo: null, field: 'requestId', code: REQUEST_NOT_RECEIVED_CODE, message: 'Not received.' }],
  };
}
