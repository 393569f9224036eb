import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AuthorityIrm, PushMessage, RequestStatusAnswer } from '../../src/authority/authority.ts';
import { createDgftClient } from '../../src/authority/dgft/dgft-client.ts';
import type { DgftClient } from '../../src/authority/dgft/dgft-client.ts';
import { failsWith } from '../support/wire-failures.ts';
import type { CredentialSet } from '../../src/authority/protocol/credentials.ts';
import { credentialSetToText, parseCredentialSet } from '../../src/authority/protocol/credentials.ts';
import { sealRequest } from '../../src/authority/protocol/envelope.ts';
import { OPERATION_PATHS } from '../../src/authority/protocol/messages.ts';
import { sealClientSecret } from '../../src/authority/protocol/token-secret.ts';
import { parseIsoDate, toDdMMyyyy } from '../../src/domain/dates.ts';
import { centsToNumber, formatCents, parseDecimalString } from '../../src/domain/money.ts';
import { BANNED_PURPOSE_CODES, VALID_PURPOSE_CODES } from '../../src/domain/purpose-codes.ts';
import { SANDBOX_ACCOUNTS, findSandboxAccount } from '../../sandbox/accounts.ts';
import type { SandboxAccount } from '../../sandbox/accounts.ts';
import { readAllowList } from '../../sandbox/config.ts';
import { generateIrms, issuedIrmCount } from '../../sandbox/irm-generator.ts';
import type { SandboxProgram } from '../../sandbox/program.ts';
import { backends, scratchDatabase } from '../support/harness.ts';
import { PASSWORD, issueCredentials, postJson, sandboxConfig, startQuietSandbox } from './support.ts';

const PROCESSING_DELAY_MS = 800;
const FAST_RETRIES = { deadlineMs: 5_000, attemptTimeoutMs: 2_000, firstBackoffMs: 50, maxBackoffMs: 200 };
// For calls that are meant to meet an outage or no answer at all.
const SHORT_RETRIES = { deadlineMs: 1_200, attemptTimeoutMs: 1_000, firstBackoffMs: 50, maxBackoffMs: 100 };
// For the failing accounts' every call: each one only has to show how it fails.
const TINY_RETRIES = { deadlineMs: 400, attemptTimeoutMs: 300, firstBackoffMs: 50, maxBackoffMs: 100 };
const DAY_MS = 86_400_000;
const NORMAL_ACCOUNTS = ['demo.exporter', 'services.exporter', 'vostro.exporter', 'bulk.exporter'];

function account(username: string): SandboxAccount {
  const found = findSandboxAccount(username);
  assert.ok(found, username);
  return found;
}

const DEMO_IEC = account('demo.exporter').iecCode;

function ddMMyyyy(iso: string): string {
  const date = parseIsoDate(iso);
  assert.ok(date, iso);
  return toDdMMyyyy(date);
}

function amount(decimal: string): number {
  return centsToNumber(parseDecimalString(decimal));
}

/** A fraction of an amount, in whole cents. */
function share(decimal: string, numerator: bigint, denominator: bigint): string {
  return formatCents((parseDecimalString(decimal) * numerator) / denominator);
}

const OPTIONAL_LINE_FIELDS = [
  'commissionValDeduct', 'commissionValInfo', 'discountValDeduct', 'discountValInfo', 'insuranceValDeduct',
  'insuranceValInfo', 'otherDeductionDeduct', 'otherdeductionsInfo', 'freightValDeduct', 'freightValInfo', 'sacCode1',
  'sacCode2', 'serviceTypeModesValue', 'isGstAvail', 'gstinInvoiceNumber', 'gstinInvoiceDate',
];

type LineOptions = { serialNo: number; mapped: string; billNo?: string; remit?: string; irmNumber?: string; invoice?: string };

function lineFor(irm: AuthorityIrm, options: LineOptions): Record<string, unknown> {
  return {
    serialNo: options.serialNo,
    uploadType: 101,
    branchSlNo: 0,
    irmIfscCode: irm.ifscCode,
    irmAdCode: irm.remittanceAdCode,
    irmNumber: options.irmNumber ?? irm.irmNumber,
    irmDt: ddMMyyyy(irm.irmIssueDate),
    irmFCC: irm.remittanceFCC,
    irmPurposeCode: irm.purposeOfRemittance,
    irmRemitAmtFCC: amount(options.remit ?? irm.irmAvailableAmt),
    sbCumInvoiceNumber: options.invoice ?? String(100_000 + options.serialNo),
    sbCumInvoiceDate: ddMMyyyy(irm.irmIssueDate),
    portCode: 'INDEL4',
    billNo: options.billNo ?? `BILL${options.serialNo}`,
    sbCumInvoiceFCC: irm.remittanceFCC,
    sbCumInvoiceValueinFCC: amount(options.mapped),
    mappedIRMAmountFCC: amount(options.mapped),
    isVostro: null,
    vostroType: null,
    mappedORMAmountFCC: null,
    isThirdPartyExport: null,
    // Every optional field, as the service sends them (domain/push-line.ts, lineToWire).
    ...Object.fromEntries(OPTIONAL_LINE_FIELDS.map((field) => [field, null])),
  };
}

function pushMessage(lines: Record<string, unknown>[], changes: Partial<PushMessage> = {}): PushMessage {
  return {
    iecNumber: DEMO_IEC,
    requestId: `sbx-${randomUUID()}`,
    recordResCount: lines.length,
    uploadType: '101',
    decalarationFlag: 'Y',
    ebrcBulkGenDtos: lines,
    ...changes,
  };
}

/** A random seven-digit shipping bill number, so one eBRC can be found by it. */
function invoiceNumber(): string {
  return String(1_000_000 + Math.floor(Math.random() * 9_000_000));
}

for (const backend of backends()) {
  describe(`the sandbox authority program (${backend})`, () => {
    let storage: Awaited<ReturnType<typeof scratchDatabase>>;
    let program: SandboxProgram;
    let client: DgftClient;
    let demo: CredentialSet;
    // Untouched demo IRMs; each test takes its own.
    let freshIrms: AuthorityIrm[];
    // What the tests leave behind, for the checks after a restart.
    const generatedEbrcs: string[] = [];
    let tokenBeforeRestarts = '';

    const restart = async (changes: Parameters<typeof sandboxConfig>[1] = {}, now?: () => Date): Promise<void> => {
      await program.close();
      program = await startQuietSandbox(sandboxConfig(storage, { processingDelayMs: PROCESSING_DELAY_MS, ...changes }), now);
      client = createDgftClient({ baseUrl: program.url, retry: FAST_RETRIES });
    };
    const takeIrm = (): AuthorityIrm => {
      const irm = freshIrms.pop();
      assert.ok(irm, 'out of fresh demo IRMs');
      return irm;
    };
    const currentIrm = async (irmNumber: string): Promise<AuthorityIrm> => {
      const [irm] = (await client.fetchIrmDetails(demo, { iecCode: DEMO_IEC, irmNumber })).irms;
      assert.ok(irm, irmNumber);
      return irm;
    };
    const pushAccepted = async (message: PushMessage): Promise<void> => {
      const outcome = await client.pushIrmToGenEbrc(demo, message);
      assert.equal(outcome.kind, 'acknowledged');
      assert.equal(outcome.kind === 'acknowledged' && outcome.acknowledgement.ackStatus, 'Validated');
    };
    /** A getRequestStatus call made by hand, with these headers besides x-api-key and Content-Type. */
    const statusCallByHand = async (headers: (sealed: { secretVal: string }) => Record<string, string>) => {
      const sealed = await sealRequest({ requestId: 'any' }, { profile: 'spec-sha256', authorityPublicKey: demo.authorityPublicKey, userPrivateKey: demo.userPrivateKey });
      return postJson(`${program.url}${OPERATION_PATHS.getRequestStatus}`, sealed.body, { 'x-api-key': demo.apiKey, ...headers(sealed) });
    };
    const exactHeaders = (accessToken: string) => (sealed: { secretVal: string }) =>
      ({ accessToken, client_id: demo.clientId, secretVal: sealed.secretVal, messageID: randomUUID() });
    const processed = async (requestId: string): Promise<RequestStatusAnswer> => {
      for (let attempt = 0; attempt < 100; attempt++) {
        const status = await client.getRequestStatus(demo, requestId);
        assert.ok(status, requestId);
        if (status.processingStatus !== 'Pending') return status;
        await sleep(100);
      }
      assert.fail(`${requestId} was not processed`);
    };

    before(async () => {
      storage = await scratchDatabase(backend, { empty: true });
      program = await startQuietSandbox(sandboxConfig(storage, { processingDelayMs: PROCESSING_DELAY_MS }));
      client = createDgftClient({ baseUrl: program.url, retry: FAST_RETRIES });
      demo = await issueCredentials(program.url, 'demo.exporter');
      const irms = (await client.fetchIrmDetails(demo, { iecCode: DEMO_IEC })).irms;
      freshIrms = irms.filter((irm) =>
        irm.irmAvailableAmt === irm.remittanceFCCAmount && !BANNED_PURPOSE_CODES.has(irm.purposeOfRemittance));
    });

    after(async () => {
      await program?.close();
      await storage?.drop();
    });

    test('issueApiCredentials gives each account its set in the authority\'s file format, or the documented failures', async () => {
      const issue = (body: object, signal?: AbortSignal) =>
        fetch(`${program.url}/sandbox/issueApiCredentials`, {
          method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body), ...(signal ? { signal } : {}),
        });
      const sets = new Map<string, Record<string, unknown>>();
      for (const owner of SANDBOX_ACCOUNTS.filter((candidate) => candidate.behaviour !== 'credentials_expired')) {
        const answer = await issue({ username: owner.username, password: PASSWORD });
        assert.equal(answer.status, 200, owner.username);
        const file = await answer.json() as Record<string, unknown>;
        assert.deepEqual(Object.keys(file).sort(),
          ['client_Id', 'client_secret', 'dgftpublicKey', 'envelopeProfile', 'iecCode', 'userprivateKey', 'x-Api-Key']);
        assert.equal(file.iecCode, owner.iecCode);
        assert.equal(file.envelopeProfile, 'spec-sha256');
        sets.set(owner.username, file);
      }
      assert.equal(new Set([...sets.values()].map((file) => file.client_Id)).size, sets.size);
      assert.equal(new Set([...sets.values()].map((file) => file.iecCode)).size, sets.size, 'every account has its own IEC');
      assert.equal(new Set([...sets.values()].map((file) => file.dgftpublicKey)).size, 1, 'one authority key for the whole sandbox');
      assert.deepEqual(await (await issue({ username: 'demo.exporter', password: PASSWORD })).json(), sets.get('demo.exporter'));

      const refused = async (body: object, status: number, error: string) => {
        const answer = await issue(body);
        assert.equal(answer.status, status, JSON.stringify(body));
        const said = await answer.json() as { error: string; message: string };
        assert.equal(said.error, error);
        return said.message;
      };
      await refused({ username: 'demo.exporter', password: 'sandbox@123' }, 401, 'credentials_invalid');
      await refused({ username: 'nobody.exporter', password: PASSWORD }, 401, 'credentials_invalid');
      assert.match(await refused({ username: 'expired.exporter', password: PASSWORD }, 401, 'credentials_expired'), /expired/);
      await refused({ username: 'demo.exporter', password: 'Outage@502' }, 502, 'unavailable');
      await refused({ username: 'anyone', password: 'Outage@502' }, 502, 'unavailable');
      await refused({ username: 'demo.exporter' }, 400, 'invalid_request');
      await assert.rejects(issue({ username: 'demo.exporter', password: 'Slow@504' }, AbortSignal.timeout(300)), { name: 'TimeoutError' });
    });

    test('a token for the set; a wrong client secret or API key is refused', async () => {
      assert.ok((await client.getAccessToken(demo)).length >= 32);
      const wrongSecret = await failsWith(client.getAccessToken({ ...demo, clientSecret: `${demo.clientSecret}x` }), 'credentials_invalid');
      assert.equal(wrongSecret.authorityCode, 'ERR01');
      const withoutKey = await postJson(`${program.url}${OPERATION_PATHS.getAccessToken}`, { client_id: demo.clientId, client_secret: 'x' });
      assert.equal(withoutKey.status, 401);
      assert.deepEqual(withoutKey.body, { message: 'Unauthorized' });
    });

    test('IRMs are the account\'s deterministic stream, with its filters', async () => {
      const demoAccount = account('demo.exporter');
      const fetched = (await client.fetchIrmDetails(demo, { iecCode: DEMO_IEC })).irms;
      const expected = generateIrms(demoAccount, 0, issuedIrmCount(demoAccount.irmProfile, new Date()));
      assert.ok(fetched.length > 1_000, `demo has ${fetched.length} IRMs`);
      assert.deepEqual(
        fetched.map((irm) => [irm.irmNumber, irm.irmIssueDate, irm.remittanceDate, irm.remittanceFCCAmount, irm.purposeOfRemittance, irm.ifscCode]),
        expected.map((irm) => [irm.irmNumber, irm.irmIssueDate, irm.remittanceDate, irm.remittanceFCCAmount, irm.purposeOfRemittance, irm.ifscCode]));

      const sample = fetched[100];
      assert.ok(sample);
      assert.deepEqual((await client.fetchIrmDetails(demo, { iecCode: DEMO_IEC, irmNumber: sample.irmNumber })).irms, [sample]);
      const inRange = (await client.fetchIrmDetails(demo, { iecCode: DEMO_IEC, fromDate: '2025-06-01', toDate: '2025-06-03' })).irms;
      assert.equal(inRange.length, 9);
      assert.deepEqual(inRange, fetched.filter((irm) => irm.irmIssueDate >= '2025-06-01' && irm.irmIssueDate <= '2025-06-03'));
      assert.deepEqual((await client.fetchIrmDetails(demo, { iecCode: 'OTHER00000' })).irms, []);
      assert.deepEqual((await client.fetchIrmDetails(demo, { iecCode: DEMO_IEC, irmNumber: 'NO-SUCH-IRM' })).irms, []);
    });

    test('every account\'s IRMs are well-formed, with its own profile, numbers unique across accounts; bulk.exporter has thousands', async () => {
      const numbers = new Set<string>();
      const served = new Map<string, AuthorityIrm[]>();
      // bulk.exporter's thousands of IRMs are one answer: on a loaded machine (a CI run beside other work) it took over
      // FAST_RETRIES' 2 s an attempt. Timing is not what this test is about.
      const patient = createDgftClient({ baseUrl: program.url, retry: { ...FAST_RETRIES, deadlineMs: 60_000, attemptTimeoutMs: 30_000 } });
      for (const username of NORMAL_ACCOUNTS) {
        const owner = account(username);
        const set = username === 'demo.exporter' ? demo : await issueCredentials(program.url, username);
        const countBefore = issuedIrmCount(owner.irmProfile, new Date());
        const irms = (await patient.fetchIrmDetails(set, { iecCode: owner.iecCode })).irms;
        const countAfter = issuedIrmCount(owner.irmProfile, new Date());
        assert.ok(irms.length >= countBefore && irms.length <= countAfter, `${username}: ${irms.length} IRMs, ${countBefore}-${countAfter} issued`);
        served.set(username, irms);
        for (const irm of irms) {
          numbers.add(irm.irmNumber);
          assert.ok(irm.irmNumber.length <= 50, irm.irmNumber);
          assert.match(irm.ifscCode, /^[A-Z]{4}0[A-Z0-9]{6}$/);
          assert.match(irm.remittanceAdCode, /^\d{7}$/);
          assert.match(irm.remittanceFCC, /^[A-Z]{3}$/);
          for (const value of [irm.remittanceFCCAmount, irm.irmAvailableAmt, irm.irmUtilizedAmt]) assert.match(value, /^\d+\.\d{2}$/);
          // The balance the sandbox keeps: what is mapped plus what is left is the remittance (demo's IRMs are pushed on).
          assert.equal(parseDecimalString(irm.irmAvailableAmt) + parseDecimalString(irm.irmUtilizedAmt), parseDecimalString(irm.remittanceFCCAmount));
          if (username !== 'demo.exporter') assert.equal(irm.irmUtilizedAmt, '0.00');
          assert.equal(irm.ormAmountFCC, '0.00');
          assert.equal(irm.iecCode, owner.iecCode);
          assert.equal(irm.panNumber, owner.panNumber);
          assert.ok(VALID_PURPOSE_CODES.has(irm.purposeOfRemittance), irm.purposeOfRemittance);
          if (username !== 'demo.exporter') assert.ok(!BANNED_PURPOSE_CODES.has(irm.purposeOfRemittance), `${username}: ${irm.purposeOfRemittance}`);
          const daysBefore = (Date.parse(irm.irmIssueDate) - Date.parse(irm.remittanceDate)) / DAY_MS;
          assert.ok(daysBefore >= 0 && daysBefore <= 3, `${irm.remittanceDate} → ${irm.irmIssueDate}`);
        }
      }
      const total = [...served.values()].reduce((sum, irms) => sum + irms.length, 0);
      assert.equal(numbers.size, total, 'IRM numbers are unique across accounts');

      const demoIrms = served.get('demo.exporter') ?? [];
      assert.deepEqual(new Set(demoIrms.map((irm) => irm.remittanceFCC)), new Set(['USD', 'EUR', 'GBP', 'INR']));
      assert.ok(new Set(demoIrms.map((irm) => irm.purposeOfRemittance)).size >= 5);
      assert.ok(demoIrms.some((irm) => BANNED_PURPOSE_CODES.has(irm.purposeOfRemittance)), 'demo.exporter shows the purpose codes that cannot make an eBRC');
      assert.deepEqual(new Set(served.get('services.exporter')?.map((irm) => irm.purposeOfRemittance)), new Set(['P0802', 'P0803', 'P0807', 'P0103']));
      assert.ok(served.get('vostro.exporter')?.every((irm) => irm.remittanceFCC === 'INR'));
      assert.ok((served.get('bulk.exporter')?.length ?? 0) > 4_500, `bulk has ${served.get('bulk.exporter')?.length} IRMs`);
    });

    test('a push is acknowledged at once with its amounts reserved, and processed after the delay into unique eBRC numbers', async () => {
      const first = takeIrm();
      const second = takeIrm();
      const firstMapped = share(first.irmAvailableAmt, 1n, 2n);
      const message = pushMessage([
        lineFor(first, { serialNo: 1, mapped: firstMapped }),
        lineFor(second, { serialNo: 2, mapped: second.irmAvailableAmt }),
      ]);
      const outcome = await client.pushIrmToGenEbrc(demo, message);
      assert.equal(outcome.kind, 'acknowledged');
      const ack = outcome.kind === 'acknowledged' ? outcome.acknowledgement : assert.fail();
      assert.equal(ack.ackStatus, 'Validated');
      assert.match(ack.ackId ?? '', /^ACK-/);
      assert.deepEqual(ack.errorDetails, []);
      assert.equal(ack.recordResCount, 2);
      const reserved = await currentIrm(first.irmNumber);
      assert.equal(reserved.irmUtilizedAmt, firstMapped);
      assert.equal(parseDecimalString(reserved.irmAvailableAmt) + parseDecimalString(reserved.irmUtilizedAmt), parseDecimalString(first.remittanceFCCAmount));
      assert.equal((await currentIrm(second.irmNumber)).irmAvailableAmt, '0.00');

      const pending = await client.getRequestStatus(demo, message.requestId);
      assert.equal(pending?.processingStatus, 'Pending');
      assert.deepEqual(pending?.records.map((record) => record.status), ['PENDING', 'PENDING']);

      // Once the delay has passed, status calls that meet the processing (theirs or the program's own) agree.
      await sleep(PROCESSING_DELAY_MS);
      const [one, other] = await Promise.all([client.getRequestStatus(demo, message.requestId), client.getRequestStatus(demo, message.requestId)]);
      assert.deepEqual(one, other);
      assert.notEqual(one?.processingStatus, 'Pending');
      const status = await processed(message.requestId);
      assert.deepEqual(status, one);
      assert.equal(status.processingStatus, 'Processed');
      assert.equal(status.ackId, ack.ackId);
      assert.equal(status.recordProCount, 2);
      assert.equal(status.recordFailCount, 0);
      const today = new Date().toISOString().slice(0, 10);
      for (const record of status.records) {
        assert.equal(record.status, 'GENERATED');
        assert.match(record.ebrcNumber ?? '', new RegExp(`^EBRC${today.replaceAll('-', '')}\\d{10}$`));
        assert.equal(record.ebrcDate, today);
        generatedEbrcs.push(record.ebrcNumber ?? '');
      }
      assert.equal(new Set(status.records.map((record) => record.ebrcNumber)).size, 2);
      assert.equal((await currentIrm(first.irmNumber)).irmUtilizedAmt, firstMapped, 'a generated line keeps its amount mapped');
    });

    test('SANDBOX-FAIL: the line fails at processing (ERR40) and its amount goes back, without anyone asking', async () => {
      const irm = takeIrm();
      const generatedShare = share(irm.irmAvailableAmt, 1n, 4n);
      const failedShare = share(irm.irmAvailableAmt, 1n, 2n);
      const message = pushMessage([
        lineFor(irm, { serialNo: 1, mapped: generatedShare }),
        lineFor(irm, { serialNo: 2, mapped: failedShare, billNo: 'SANDBOX-FAIL' }),
      ]);
      await pushAccepted(message);
      assert.equal((await currentIrm(irm.irmNumber)).irmUtilizedAmt,
        formatCents(parseDecimalString(generatedShare) + parseDecimalString(failedShare)));

      // fetchIRMDetails processes nothing: the balance moves back by the program's own processing.
      let released = false;
      for (let attempt = 0; attempt < 40 && !released; attempt++) {
        await sleep(100);
        released = (await currentIrm(irm.irmNumber)).irmUtilizedAmt === generatedShare;
      }
      assert.ok(released, 'the failed line\'s amount was given back');

      const status = await processed(message.requestId);
      assert.equal(status.processingStatus, 'Processed');
      assert.equal(status.recordProCount, 1);
      assert.equal(status.recordFailCount, 1);
      const failed = status.records.find((record) => record.serialNo === 2);
      assert.equal(failed?.status, 'FAILED');
      assert.equal(failed?.ebrcNumber, null);
      assert.deepEqual(failed?.errorDetails.map((detail) => [detail.serialNo, detail.code]), [[2, 'ERR40']]);
      generatedEbrcs.push(status.records.find((record) => record.serialNo === 1)?.ebrcNumber ?? '');
    });

    test('a push whose every line fails at processing ends Errored, with everything given back', async () => {
      const irm = takeIrm();
      const message = pushMessage([
        lineFor(irm, { serialNo: 1, mapped: share(irm.irmAvailableAmt, 1n, 2n), billNo: 'SANDBOX-FAIL' }),
        lineFor(irm, { serialNo: 2, mapped: share(irm.irmAvailableAmt, 1n, 4n), billNo: 'SANDBOX-FAIL' }),
      ]);
      await pushAccepted(message);
      const status = await processed(message.requestId);
      assert.equal(status.ackStatus, 'Validated');
      assert.ok(status.ackId);
      assert.equal(status.processingStatus, 'Errored');
      assert.equal(status.recordProCount, 0);
      assert.equal(status.recordFailCount, 2);
      assert.deepEqual(status.records.map((record) => [record.status, record.ebrcNumber, record.errorDetails.map((detail) => detail.code)]),
        [['FAILED', null, ['ERR40']], ['FAILED', null, ['ERR40']]]);
      const after = await currentIrm(irm.irmNumber);
      assert.deepEqual([after.irmAvailableAmt, after.irmUtilizedAmt], [irm.remittanceFCCAmount, '0.00']);
    });

    test('rule violations are a Failed acknowledgement with their codes, and a reused requestId is ERR09', async () => {
      const irm = takeIrm();
      const half = share(irm.irmAvailableAmt, 1n, 2n);
      const refusalCodes = async (message: PushMessage): Promise<string[]> => {
        const outcome = await client.pushIrmToGenEbrc(demo, message);
        assert.equal(outcome.kind, 'acknowledged');
        const ack = outcome.kind === 'acknowledged' ? outcome.acknowledgement : assert.fail();
        assert.equal(ack.ackStatus, 'Failed');
        assert.equal(ack.ackId, null);
        return ack.errorDetails.map((detail) => detail.code);
      };

      const unknownIrm = pushMessage([lineFor(irm, { serialNo: 1, mapped: half, irmNumber: 'NOSUCHIRM0001' })]);
      assert.deepEqual(await refusalCodes(unknownIrm), ['ERR18']);
      const refusedStatus = await client.getRequestStatus(demo, unknownIrm.requestId);
      assert.equal(refusedStatus?.ackStatus, 'Failed');
      assert.equal(refusedStatus?.processingStatus, 'Errored');
      assert.deepEqual(refusedStatus?.errorDetails.map((detail) => detail.code), ['ERR18']);

      assert.deepEqual(await refusalCodes(pushMessage([lineFor(irm, { serialNo: 1, mapped: '1.00', remit: share(irm.irmAvailableAmt, 1n, 3n) })])), ['ERR23']);
      assert.deepEqual(await refusalCodes(pushMessage([lineFor(irm, { serialNo: 1, mapped: half })], { recordResCount: 2 })), ['ERR08']);
      assert.deepEqual(await refusalCodes(pushMessage([lineFor(irm, { serialNo: 1, mapped: half })], { decalarationFlag: 'N' })), ['ERR37']);

      const accepted = pushMessage([lineFor(irm, { serialNo: 1, mapped: half })]);
      await pushAccepted(accepted);
      const current = await currentIrm(irm.irmNumber);
      const reused = await client.pushIrmToGenEbrc(demo, pushMessage([lineFor(current, { serialNo: 1, mapped: '1.00' })], { requestId: accepted.requestId }));
      assert.deepEqual(reused, { kind: 'already_received', requestId: accepted.requestId });
      assert.equal((await currentIrm(irm.irmNumber)).irmUtilizedAmt, half, 'refusals reserve nothing');
    });

    test('more refusals: ERR38 for lines that together map more than the IRM holds, ERR07, ERR36; a refused push\'s requestId is taken too', async () => {
      const irm = takeIrm();
      const half = share(irm.irmAvailableAmt, 1n, 2n);
      const refusal = async (message: PushMessage): Promise<string[]> => {
        const outcome = await client.pushIrmToGenEbrc(demo, message);
        assert.equal(outcome.kind, 'acknowledged', JSON.stringify(outcome));
        const ack = outcome.kind === 'acknowledged' ? outcome.acknowledgement : assert.fail();
        assert.equal(ack.ackStatus, 'Failed');
        assert.equal(ack.ackId, null);
        return ack.errorDetails.map((detail) => detail.code);
      };

      assert.deepEqual(await refusal(pushMessage([
        lineFor(irm, { serialNo: 1, mapped: half }),
        { ...lineFor(irm, { serialNo: 2, mapped: half }), mappedIRMAmountFCC: amount(share(irm.irmAvailableAmt, 3n, 4n)) },
      ])), ['ERR38', 'ERR38']);
      assert.deepEqual(await refusal(pushMessage([lineFor(irm, { serialNo: 1, mapped: half })], { requestId: 'x'.repeat(51) })), ['ERR07']);
      assert.deepEqual(await refusal(pushMessage([lineFor(irm, { serialNo: 1, mapped: half })], { decalarationFlag: '' })), ['ERR36']);

      const countMismatch = pushMessage([lineFor(irm, { serialNo: 1, mapped: half })], { recordResCount: 2 });
      assert.deepEqual(await refusal(countMismatch), ['ERR08']);
      const stored = await client.getRequestStatus(demo, countMismatch.requestId);
      assert.deepEqual([stored?.ackStatus, stored?.processingStatus, stored?.errorDetails.map((detail) => detail.code)], ['Failed', 'Errored', ['ERR08']]);
      const again = pushMessage([lineFor(irm, { serialNo: 1, mapped: half })], { requestId: countMismatch.requestId });
      assert.deepEqual(await client.pushIrmToGenEbrc(demo, again), { kind: 'already_received', requestId: countMismatch.requestId });
      const current = await currentIrm(irm.irmNumber);
      assert.deepEqual([current.irmAvailableAmt, current.irmUtilizedAmt], [irm.remittanceFCCAmount, '0.00'], 'refusals reserve nothing');
    });

    test('concurrent pushes against one IRM never map more than it holds', async () => {
      const irm = takeIrm();
      const third = share(irm.irmAvailableAmt, 1n, 3n);
      const outcomes = await Promise.all(Array.from({ length: 8 }, () =>
        client.pushIrmToGenEbrc(demo, pushMessage([lineFor(irm, { serialNo: 1, mapped: third })]))));
      const acks = outcomes.map((outcome) => (outcome.kind === 'acknowledged' ? outcome.acknowledgement : assert.fail()));
      assert.equal(acks.filter((ack) => ack.ackStatus === 'Validated').length, 1);
      for (const ack of acks.filter((candidate) => candidate.ackStatus === 'Failed')) {
        assert.ok(ack.errorDetails.every((detail) => detail.code === 'ERR23'), JSON.stringify(ack.errorDetails));
      }
      const after = await currentIrm(irm.irmNumber);
      assert.equal(after.irmUtilizedAmt, third);
    });

    test('pushes that each quote the balance they see race, and the balance never goes below zero', async () => {
      const irm = takeIrm();
      const third = share(irm.irmAvailableAmt, 1n, 3n);
      const outcomes = await Promise.all(Array.from({ length: 10 }, async () => {
        const seen = await currentIrm(irm.irmNumber);
        return client.pushIrmToGenEbrc(demo, pushMessage([lineFor(seen, { serialNo: 1, mapped: third })]));
      }));
      const acks = outcomes.map((outcome) => (outcome.kind === 'acknowledged' ? outcome.acknowledgement : assert.fail(JSON.stringify(outcome))));
      const accepted = acks.filter((ack) => ack.ackStatus === 'Validated').length;
      assert.ok(accepted >= 1 && accepted <= 3, `${accepted} accepted`);
      for (const ack of acks.filter((candidate) => candidate.ackStatus === 'Failed')) {
        assert.ok(ack.errorDetails.every((detail) => detail.code === 'ERR23' || detail.code === 'ERR38'), JSON.stringify(ack.errorDetails));
      }
      const after = await currentIrm(irm.irmNumber);
      const available = parseDecimalString(after.irmAvailableAmt);
      const utilised = parseDecimalString(after.irmUtilizedAmt);
      assert.ok(available >= 0n);
      assert.equal(available + utilised, parseDecimalString(irm.remittanceFCCAmount));
      assert.equal(utilised, parseDecimalString(third) * BigInt(accepted));
    });

    test('getRequestStatus knows only the pushes of the asking account: another account\'s requestId is unknown to it', async () => {
      assert.equal(await client.getRequestStatus(demo, `unknown-${randomUUID()}`), null);
      const irm = takeIrm();
      const message = pushMessage([lineFor(irm, { serialNo: 1, mapped: '1.00' })]);
      await pushAccepted(message);
      const services = await issueCredentials(program.url, 'services.exporter');
      assert.equal(await client.getRequestStatus(services, message.requestId), null);
      assert.equal((await client.getRequestStatus(demo, message.requestId))?.ackStatus, 'Validated');
    });

    test('a push of 999 lines, a body of more than 1 MiB, is accepted', async () => {
      const irm = takeIrm();
      const lines = Array.from({ length: 999 }, (_, index) => lineFor(irm, { serialNo: index + 1, mapped: '0.01', invoice: String(index + 1) }));
      const message = pushMessage(lines);
      // The envelope's data is base64 of the encryption of the message's base64 text.
      assert.ok(JSON.stringify(message).length * (4 / 3) ** 2 > 1024 * 1024);
      await pushAccepted(message);
      assert.equal((await currentIrm(irm.irmNumber)).irmUtilizedAmt, '9.99');
    });

    test('fetchEBRCDetails lists the generated eBRCs, with its filters', async () => {
      const irm = takeIrm();
      const invoice = invoiceNumber();
      const message = pushMessage([lineFor(irm, { serialNo: 1, mapped: irm.irmAvailableAmt, invoice })]);
      await pushAccepted(message);
      await sleep(PROCESSING_DELAY_MS);

      // Due pushes are processed before the list is made, so the new one is on it.
      const all = (await client.fetchEbrcDetails(demo, { iecCode: DEMO_IEC })).ebrcs;
      for (const ebrcNumber of generatedEbrcs) assert.ok(all.some((ebrc) => ebrc.ebrcNumber === ebrcNumber), ebrcNumber);
      const [byInvoice, ...others] = (await client.fetchEbrcDetails(demo, { iecCode: DEMO_IEC, sbCumInvoiceNumber: invoice })).ebrcs;
      assert.equal(others.length, 0);
      assert.ok(byInvoice);
      assert.deepEqual({ ...byInvoice, ebrcNumber: '' }, {
        ebrcNumber: '',
        ebrcDate: new Date().toISOString().slice(0, 10),
        irmNumber: irm.irmNumber,
        sbCumInvoiceNumber: invoice,
        sbCumInvoiceDate: irm.irmIssueDate,
        realisedValueFCC: irm.irmAvailableAmt,
        currency: irm.remittanceFCC,
        iecCode: DEMO_IEC,
        status: 'GENERATED',
      });
      generatedEbrcs.push(byInvoice.ebrcNumber);
      assert.equal((await client.fetchEbrcDetails(demo, { iecCode: DEMO_IEC, fromDate: '2025-01-01', toDate: '2025-12-31' })).ebrcs.length, 0);
      assert.deepEqual(await client.fetchEbrcDetails(demo, { iecCode: 'OTHER00000' }), { ebrcs: [], unreadable: [] });
    });

    test('SANDBOX-OUTAGE is 503 and SANDBOX-SLOW never answers, storing nothing; SANDBOX-LOST is stored, and its retry meets ERR09', async () => {
      const impatient = createDgftClient({ baseUrl: program.url, retry: SHORT_RETRIES });
      const irm = takeIrm();
      const outage = pushMessage([lineFor(irm, { serialNo: 1, mapped: '1.00', billNo: 'SANDBOX-OUTAGE' })]);
      await failsWith(impatient.pushIrmToGenEbrc(demo, outage), 'unavailable');
      assert.equal(await client.getRequestStatus(demo, outage.requestId), null);
      const slow = pushMessage([lineFor(irm, { serialNo: 1, mapped: '1.00', billNo: 'SANDBOX-SLOW' })]);
      await failsWith(impatient.pushIrmToGenEbrc(demo, slow), 'timeout');
      assert.equal(await client.getRequestStatus(demo, slow.requestId), null);
      assert.equal((await currentIrm(irm.irmNumber)).irmUtilizedAmt, '0.00');

      const lost = pushMessage([lineFor(irm, { serialNo: 1, mapped: '1.00', billNo: 'SANDBOX-LOST' })]);
      assert.deepEqual(await client.pushIrmToGenEbrc(demo, lost), { kind: 'already_received', requestId: lost.requestId });
      const status = await client.getRequestStatus(demo, lost.requestId);
      assert.equal(status?.ackStatus, 'Validated');
      assert.match(status?.ackId ?? '', /^ACK-/);
      assert.equal((await currentIrm(irm.irmNumber)).irmUtilizedAmt, '1.00');
    });

    test('outage.exporter finds the authority down and slow.exporter gets no answer at every call, once they hold their credentials', async () => {
      const impatient = createDgftClient({ baseUrl: program.url, retry: TINY_RETRIES });
      const outage = await issueCredentials(program.url, 'outage.exporter');
      const slow = await issueCredentials(program.url, 'slow.exporter');
      // Both validate: a token is issued; what follows fails.
      assert.ok(await impatient.getAccessToken(outage));
      assert.ok(await impatient.getAccessToken(slow));
      const emptyPush = (iecNumber: string) => pushMessage([], { iecNumber });
      await failsWith(impatient.fetchIrmDetails(outage, { iecCode: outage.iecCode }), 'unavailable');
      await failsWith(impatient.pushIrmToGenEbrc(outage, emptyPush(outage.iecCode)), 'unavailable');
      await failsWith(impatient.getRequestStatus(outage, 'any'), 'unavailable');
      await failsWith(impatient.fetchEbrcDetails(outage, { iecCode: outage.iecCode }), 'unavailable');
      await failsWith(impatient.fetchIrmDetails(slow, { iecCode: slow.iecCode }), 'timeout');
      await failsWith(impatient.pushIrmToGenEbrc(slow, emptyPush(slow.iecCode)), 'timeout');
      await failsWith(impatient.getRequestStatus(slow, 'any'), 'timeout');
    });

    test('expired.exporter\'s set, which the login no longer hands out, is refused with ERR01 at every call', async () => {
      // Its set as the sandbox keeps it (read from its storage, never written): what an exporter downloaded before
      // the credentials expired.
      const row = await program.database.db
        .selectFrom('authority_sandbox.credential_sets')
        .selectAll()
        .where('account_username', '=', 'expired.exporter')
        .executeTakeFirstOrThrow();
      const parsed = parseCredentialSet({
        iecCode: row.iec_code,
        client_Id: row.client_id,
        client_secret: row.client_secret,
        'x-Api-Key': row.api_key,
        dgftpublicKey: demo.authorityPublicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
        userprivateKey: row.user_private_key,
      }, 'spec-sha256');
      assert.ok(parsed.ok, JSON.stringify(parsed));
      const expired = parsed.credentials;
      assert.equal(expired.iecCode, account('expired.exporter').iecCode);
      const refusedToken = await failsWith(client.getAccessToken(expired), 'credentials_invalid');
      assert.deepEqual([refusedToken.httpStatus, refusedToken.authorityCode], [401, 'ERR01']);
      await failsWith(client.fetchIrmDetails(expired, { iecCode: expired.iecCode }), 'credentials_invalid');
      await failsWith(client.pushIrmToGenEbrc(expired, pushMessage([], { iecNumber: expired.iecCode })), 'credentials_invalid');
      await failsWith(client.getRequestStatus(expired, 'any'), 'credentials_invalid');
      // The sandbox says why, in the ERR01 body of the token call.
      const answer = await postJson(`${program.url}${OPERATION_PATHS.getAccessToken}`,
        { client_id: expired.clientId, client_secret: await sealClientSecret(expired.clientSecret) }, { 'x-api-key': expired.apiKey });
      assert.equal(answer.status, 401);
      assert.equal(answer.body.errorCode, 'ERR01');
      assert.match(answer.body.errorMessage, /expired/);
    });

    test('a wrong envelope profile is ERR05, a wrong user key ERR06; a set issued for java-pbkdf2 speaks it', async () => {
      const wrongProfile = await failsWith(client.fetchIrmDetails({ ...demo, envelopeProfile: 'java-pbkdf2' }, { iecCode: DEMO_IEC }), 'misconfigured');
      assert.equal(wrongProfile.authorityCode, 'ERR05');
      assert.match(wrongProfile.message, /spec-sha256/);
      const services = await issueCredentials(program.url, 'services.exporter', 'java-pbkdf2');
      assert.equal(services.envelopeProfile, 'java-pbkdf2');
      const wrongKey = await failsWith(client.fetchIrmDetails({ ...demo, userPrivateKey: services.userPrivateKey }, { iecCode: DEMO_IEC }), 'misconfigured');
      assert.equal(wrongKey.authorityCode, 'ERR06');
      const irms = (await client.fetchIrmDetails(services, { iecCode: services.iecCode, fromDate: '2025-05-01', toDate: '2025-05-31' })).irms;
      assert.ok(irms.length > 0);
      await failsWith(client.fetchIrmDetails({ ...services, envelopeProfile: 'spec-sha256' }, { iecCode: services.iecCode }), 'misconfigured');
    });

    test('header names are read in their exact case, and checked in the documented order', async () => {
      const accessToken = await client.getAccessToken(demo);
      tokenBeforeRestarts = accessToken;
      const exact = exactHeaders(accessToken);
      assert.equal((await statusCallByHand(exact)).status, 200);
      const lowerCased = await statusCallByHand((sealed) => {
        const { accessToken: token, ...others } = exact(sealed);
        return { ...others, accesstoken: token };
      });
      assert.equal(lowerCased.status, 400);
      assert.equal(lowerCased.body.errorCode, 'ERR02');
      assert.match(lowerCased.body.errorMessage, /accessToken came as accesstoken/);
      const withoutMessageId = await statusCallByHand((sealed) => {
        const { messageID: _, ...others } = exact(sealed);
        return others;
      });
      assert.deepEqual([withoutMessageId.status, withoutMessageId.body.errorCode], [400, 'ERR02']);
      const otherClient = await statusCallByHand((sealed) => ({ ...exact(sealed), client_id: 'someone-else' }));
      assert.deepEqual([otherClient.status, otherClient.body.errorCode], [401, 'ERR01']);
      const unknownToken = await statusCallByHand(exactHeaders('not-a-token'));
      assert.equal(unknownToken.status, 401);
      const badSecret = await statusCallByHand((sealed) => ({ ...exact(sealed), secretVal: 'bm90IGl0' }));
      assert.deepEqual([badSecret.status, badSecret.body.errorCode], [400, 'ERR04']);
    });

    test('with SANDBOX_PUSH_ANSWER_DELAY_MS a push is stored at once and answered after the delay', async () => {
      const delayMs = 600;
      await restart({ pushAnswerDelayMs: delayMs });
      const irm = takeIrm();
      const started = Date.now();
      const answered = pushAccepted(pushMessage([lineFor(irm, { serialNo: 1, mapped: '0.01' })]));
      let reservedAfterMs: number | undefined;
      while (reservedAfterMs === undefined && Date.now() - started < delayMs * 10) {
        if ((await currentIrm(irm.irmNumber)).irmUtilizedAmt === '0.01') reservedAfterMs = Date.now() - started;
        else await sleep(20);
      }
      await answered;
      const answeredAfterMs = Date.now() - started;
      assert.ok(reservedAfterMs !== undefined && reservedAfterMs < answeredAfterMs, `reserved after ${reservedAfterMs} ms, answered after ${answeredAfterMs} ms`);
      assert.ok(answeredAfterMs >= delayMs, `answered after ${answeredAfterMs} ms`);
    });

    test('after a restart with an allow-list: the same credential set, and 403 for a caller outside it', async () => {
      await restart({ allowedIps: readAllowList('10.20.30.40, 192.168.0.0/16') });
      assert.deepEqual(credentialSetToText(await issueCredentials(program.url, 'demo.exporter')), credentialSetToText(demo));
      const refused = await failsWith(client.fetchIrmDetails(demo, { iecCode: DEMO_IEC }), 'ip_not_whitelisted');
      assert.equal(refused.httpStatus, 403);
      assert.equal((await fetch(`${program.url}/health`)).status, 200);
    });

    test('after another restart a token issued before still works; 429 with Retry-After when one client floods it', async () => {
      await restart({ rateLimitPerSecond: 1, rateLimitBurst: 3 });
      assert.equal((await statusCallByHand(exactHeaders(tokenBeforeRestarts))).status, 200, 'a token outlives a restart');
      const answers = await Promise.all(Array.from({ length: 5 }, () =>
        postJson(`${program.url}${OPERATION_PATHS.getAccessToken}`, {}, { 'x-api-key': demo.apiKey })));
      // Two calls are left in the bucket (a refill of one more is possible on a slow machine); the rest wait.
      const statuses = answers.map((answer) => answer.status);
      assert.ok(statuses.every((status) => status === 400 || status === 429), statuses.join());
      assert.ok(statuses.filter((status) => status === 429).length >= 2, statuses.join());
      for (const answer of answers.filter((candidate) => candidate.status === 429)) {
        assert.equal(answer.headers.get('retry-after'), '1');
      }
      const other = await issueCredentials(program.url, 'vostro.exporter');
      assert.ok(await client.getAccessToken(other), 'another client has its own bucket');
    });
    test('after a restart a day later: the eBRCs and balances are kept, new IRMs have arrived, old tokens have expired', async () => {
      await restart({}, () => new Date(Date.now() + DAY_MS));
      assert.equal((await statusCallByHand(exactHeaders(tokenBeforeRestarts))).status, 401);
      const irms = (await client.fetchIrmDetails(demo, { iecCode: DEMO_IEC })).irms;
      const demoAccount = account('demo.exporter');
      assert.equal(irms.length, issuedIrmCount(demoAccount.irmProfile, new Date(Date.now() + DAY_MS)));
      assert.equal(irms.length, issuedIrmCount(demoAccount.irmProfile, new Date()) + 3);
      assert.ok(irms.some((irm) => irm.irmAvailableAmt !== irm.remittanceFCCAmount), 'the reservations are kept');
      const ebrcs = (await client.fetchEbrcDetails(demo, { iecCode: DEMO_IEC })).ebrcs.map((ebrc) => ebrc.ebrcNumber);
      for (const ebrcNumber of generatedEbrcs) assert.ok(ebrcs.includes(ebrcNumber), ebrcNumber);
    });

  });
}
