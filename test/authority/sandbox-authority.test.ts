import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Authority, AuthorityCredentials, AuthorityIrm, PushMessage } from '../../src/authority/authority.ts';
import { AuthorityError } from '../../src/authority/authority.ts';
import { createSandboxAuthority } from '../../src/authority/sandbox/sandbox-authority.ts';
import { SANDBOX_ACCOUNTS, findSandboxAccount } from '../../sandbox/accounts.ts';
import type { SandboxAccount } from '../../sandbox/accounts.ts';
import { generateIrms, issuedIrmCount } from '../../sandbox/irm-generator.ts';
import { openDatabase } from '../../src/store/database.ts';
import type { Database } from '../../src/store/database.ts';
import { migrate } from '../../src/store/migrate.ts';
import { centsToNumber, formatCents, parseDecimalString } from '../../src/domain/money.ts';
import { parseIsoDate, toDdMMyyyy } from '../../src/domain/dates.ts';
import { BANNED_PURPOSE_CODES, VALID_PURPOSE_CODES } from '../../src/domain/purpose-codes.ts';
import { backends, scratchDatabase } from '../support/harness.ts';

const PASSWORD = 'Sandbox@123';
const DEMO: AuthorityCredentials = { username: 'demo.exporter', password: PASSWORD };
const DEMO_IEC = '0599001001';
const PROCESSING_DELAY_MS = 5_000;
// A fixed clock keeps the IRM counts exact; IRMs materialised for a later clock stay invisible before it.
const START = new Date('2026-11-22T12:00:00Z');
const HOUR_MS = 3_600_000;


function account(username: string): SandboxAccount {
  const found = findSandboxAccount(username);
  assert.ok(found, username);
  return found;
}

function ddMMyyyy(iso: string): string {
  const date = parseIsoDate(iso);
  assert.ok(date, iso);
  return toDdMMyyyy(date);
}

function amount(decimal: string): number {
  return centsToNumber(parseDecimalString(decimal));
}

async function rejectsWith(promise: Promise<unknown>, failure: AuthorityError['failure']): Promise<void> {
  await assert.rejects(promise, (error: unknown) => error instanceof AuthorityError && error.failure === failure);
}

type LineOptions = { serialNo: number; mapped: string; billNo?: string; remit?: string; irmNumber?: string };

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
    sbCumInvoiceNumber: String(100_000 + options.serialNo),
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
  };
}

function pushMessage(lines: Record<string, unknown>[], overrides: Partial<PushMessage> = {}): PushMessage {
  return {
    iecNumber: DEMO_IEC,
    requestId: `test-${randomUUID()}`,
    recordResCount: lines.length,
    uploadType: '101',
    decalarationFlag: 'Y',
    ebrcBulkGenDtos: lines,
    ...overrides,
  };
}

/** A fraction of an amount, in whole cents. */
function share(decimal: string, numerator: bigint, denominator: bigint): string {
  return formatCents((parseDecimalString(decimal) * numerator) / denominator);
}

for (const backend of backends()) {
  describe(`sandbox authority (${backend})`, () => {
    let database: Database;
    let scratch: Awaited<ReturnType<typeof scratchDatabase>>;
    let clock: Date;
    let authority: Authority;
    // Untouched demo IRMs, each test takes its own.
    let freshIrms: AuthorityIrm[];

    const currentIrm = async (irmNumber: string): Promise<AuthorityIrm> => {
      const [irm] = await authority.fetchIrms(DEMO, { iecCode: DEMO_IEC, irmNumber });
      assert.ok(irm, irmNumber);
      return irm;
    };
    const takeIrm = (): AuthorityIrm => {
      const irm = freshIrms.pop();
      assert.ok(irm, 'out of fresh demo IRMs');
      return irm;
    };

    before(async () => {
      scratch = await scratchDatabase(backend);
      database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir });
      await migrate(database);
      clock = START;
      authority = createSandboxAuthority({ database, processingDelayMs: PROCESSING_DELAY_MS, now: () => clock });
      const irms = await authority.fetchIrms(DEMO, { iecCode: DEMO_IEC });
      freshIrms = irms.filter((irm) =>
        irm.irmAvailableAmt === irm.remittanceFCCAmount && !BANNED_PURPOSE_CODES.has(irm.purposeOfRemittance));
    });

    after(async () => {
      await database.close();
      await scratch.drop();
    });

    describe('credentials', () => {
      test('every documented account that validates tells its own IEC', async () => {
        const iecs = new Set<string>();
        for (const username of ['demo.exporter', 'services.exporter', 'vostro.exporter', 'bulk.exporter', 'outage.exporter', 'slow.exporter']) {
          const { iecCode } = await authority.checkCredentials({ username, password: PASSWORD });
          assert.equal(iecCode, account(username).iecCode);
          iecs.add(iecCode);
        }
        assert.equal(iecs.size, 6);
        assert.deepEqual((await authority.checkCredentials(DEMO)).iecCode, DEMO_IEC);
      });

      test('a wrong password or an unknown username is credentials_invalid', async () => {
        await rejectsWith(authority.checkCredentials({ username: 'demo.exporter', password: 'sandbox@123' }), 'credentials_invalid');
        await rejectsWith(authority.checkCredentials({ username: 'nobody.exporter', password: PASSWORD }), 'credentials_invalid');
      });

      test('expired.exporter is credentials_expired, for every call', async () => {
        const expired = { username: 'expired.exporter', password: PASSWORD };
        await rejectsWith(authority.checkCredentials(expired), 'credentials_expired');
        await rejectsWith(authority.fetchIrms(expired, { iecCode: account('expired.exporter').iecCode }), 'credentials_expired');
      });

      test('the outage password makes the check unavailable, for any username', async () => {
        await rejectsWith(authority.checkCredentials({ username: 'demo.exporter', password: 'Outage@502' }), 'unavailable');
        await rejectsWith(authority.checkCredentials({ username: 'anyone', password: 'Outage@502' }), 'unavailable');
      });

      test('the slow password hangs until the caller aborts, then times out', async () => {
        const started = Date.now();
        await rejectsWith(
          authority.checkCredentials({ username: 'demo.exporter', password: 'Slow@504' }, { signal: AbortSignal.timeout(100) }),
          'timeout');
        assert.ok(Date.now() - started >= 90);
      });

      test('outage.exporter and slow.exporter validate but fail every later call', async () => {
        const outage = { username: 'outage.exporter', password: PASSWORD };
        const slow = { username: 'slow.exporter', password: PASSWORD };
        await rejectsWith(authority.fetchIrms(outage, { iecCode: account('outage.exporter').iecCode }), 'unavailable');
        await rejectsWith(authority.push(outage, pushMessage([])), 'unavailable');
        await rejectsWith(authority.getStatus(outage, 'any'), 'unavailable');
        const signal = () => ({ signal: AbortSignal.timeout(50) });
        await rejectsWith(authority.fetchIrms(slow, { iecCode: account('slow.exporter').iecCode }, signal()), 'timeout');
        await rejectsWith(authority.push(slow, pushMessage([]), signal()), 'timeout');
        await rejectsWith(authority.getStatus(slow, 'any', signal()), 'timeout');
      });

      test('an already aborted signal times out at once', async () => {
        await rejectsWith(authority.checkCredentials(DEMO, { signal: AbortSignal.abort() }), 'timeout');
      });
    });

    describe('IRMs', () => {
      test('are deterministic: the generator gives the same IRMs every time, and fetch serves them', async () => {
        const demo = account('demo.exporter');
        assert.deepEqual(generateIrms(demo, 0, 200), generateIrms(demo, 0, 200));
        const fetched = await authority.fetchIrms(DEMO, { iecCode: DEMO_IEC });
        const expected = generateIrms(demo, 0, issuedIrmCount(demo.irmProfile, clock));
        assert.deepEqual(
          fetched.map((irm) => [irm.irmNumber, irm.irmIssueDate, irm.remittanceFCCAmount, irm.purposeOfRemittance]),
          expected.map((irm) => [irm.irmNumber, irm.irmIssueDate, irm.remittanceFCCAmount, irm.purposeOfRemittance]));
        assert.ok(fetched.length >= 1_000 && fetched.length <= 2_500, `demo has ${fetched.length} IRMs`);
      });

      test('have well-formed fields, a varied profile and numbers unique across accounts', () => {
        const numbers = new Set<string>();
        for (const owner of SANDBOX_ACCOUNTS) {
          for (const irm of generateIrms(owner, 0, 300)) {
            numbers.add(irm.irmNumber);
            assert.ok(irm.irmNumber.length <= 50);
            assert.match(irm.ifscCode, /^[A-Z]{4}0[A-Z0-9]{6}$/);
            assert.match(irm.remittanceAdCode, /^\d{7}$/);
            assert.match(irm.remittanceFCC, /^[A-Z]{3}$/);
            assert.match(irm.remittanceFCCAmount, /^\d+\.\d{2}$/);
            assert.equal(irm.irmAvailableAmt, irm.remittanceFCCAmount);
            assert.equal(irm.irmUtilizedAmt, '0.00');
            assert.equal(irm.ormAmountFCC, '0.00');
            assert.equal(irm.iecCode, owner.iecCode);
            assert.equal(irm.panNumber, owner.panNumber);
            assert.ok(VALID_PURPOSE_CODES.has(irm.purposeOfRemittance), irm.purposeOfRemittance);
            if (owner.username !== 'demo.exporter') assert.ok(!BANNED_PURPOSE_CODES.has(irm.purposeOfRemittance));
            const daysBefore = (Date.parse(irm.irmIssueDate) - Date.parse(irm.remittanceDate)) / (24 * HOUR_MS);
            assert.ok(daysBefore >= 0 && daysBefore <= 3, `${irm.remittanceDate} → ${irm.irmIssueDate}`);
          }
        }
        assert.equal(numbers.size, SANDBOX_ACCOUNTS.length * 300);
        const demoIrms = generateIrms(account('demo.exporter'), 0, 300);
        assert.deepEqual(new Set(demoIrms.map((irm) => irm.remittanceFCC)), new Set(['USD', 'EUR', 'GBP', 'INR']));
        assert.ok(new Set(demoIrms.map((irm) => irm.purposeOfRemittance)).size >= 5);
        const servicesCodes = new Set(generateIrms(account('services.exporter'), 0, 300).map((irm) => irm.purposeOfRemittance));
        assert.deepEqual(servicesCodes, new Set(['P0802', 'P0803', 'P0807', 'P0103']));
        assert.ok(generateIrms(account('vostro.exporter'), 0, 300).every((irm) => irm.remittanceFCC === 'INR'));
      });

      test('new IRMs arrive as time passes', async () => {
        const later = createSandboxAuthority({
          database,
          processingDelayMs: PROCESSING_DELAY_MS,
          now: () => new Date(clock.getTime() + 24 * HOUR_MS),
        });
        const now = await authority.fetchIrms(DEMO, { iecCode: DEMO_IEC });
        const tomorrow = await later.fetchIrms(DEMO, { iecCode: DEMO_IEC });
        assert.equal(tomorrow.length, now.length + 3);
        assert.deepEqual(tomorrow.slice(0, now.length).map((irm) => irm.irmNumber), now.map((irm) => irm.irmNumber));
        assert.equal((await authority.fetchIrms(DEMO, { iecCode: DEMO_IEC })).length, now.length);
      });

      test('bulk.exporter has thousands of IRMs', async () => {
        const bulk = account('bulk.exporter');
        const irms = await authority.fetchIrms({ username: 'bulk.exporter', password: PASSWORD }, { iecCode: bulk.iecCode });
        assert.equal(irms.length, issuedIrmCount(bulk.irmProfile, clock));
        assert.ok(irms.length > 4_500, `bulk has ${irms.length} IRMs`);
      });

      test('filter by IRM number and by an inclusive issue date range', async () => {
        const all = await authority.fetchIrms(DEMO, { iecCode: DEMO_IEC });
        const sample = all[100];
        assert.ok(sample);
        assert.deepEqual(
          (await authority.fetchIrms(DEMO, { iecCode: DEMO_IEC, irmNumber: sample.irmNumber })).map((irm) => irm.irmNumber),
          [sample.irmNumber]);
        assert.deepEqual(await authority.fetchIrms(DEMO, { iecCode: DEMO_IEC, irmNumber: 'NO-SUCH-IRM' }), []);

        const fromDate = '2025-06-01';
        const toDate = '2025-06-03';
        const inRange = await authority.fetchIrms(DEMO, { iecCode: DEMO_IEC, fromDate, toDate });
        assert.deepEqual(inRange, all.filter((irm) => irm.irmIssueDate >= fromDate && irm.irmIssueDate <= toDate));
        assert.equal(inRange.length, 9);
        assert.deepEqual(await authority.fetchIrms(DEMO, { iecCode: 'OTHER00000' }), []);
      });
    });

    describe('push and status', () => {
      test('a valid push is accepted at once, reserved, and processed after the delay with unique eBRC numbers', async () => {
        const first = takeIrm();
        const second = takeIrm();
        const firstMapped = share(first.irmAvailableAmt, 1n, 2n);
        const message = pushMessage([
          lineFor(first, { serialNo: 1, mapped: firstMapped }),
          lineFor(second, { serialNo: 2, mapped: second.irmAvailableAmt }),
        ]);
        const ack = await authority.push(DEMO, message);
        assert.equal(ack.ackStatus, 'Validated');
        assert.ok(ack.ackId);
        assert.deepEqual(ack.errorDetails, []);
        assert.equal(ack.requestId, message.requestId);
        assert.equal(ack.recordResCount, 2);

        const reserved = await currentIrm(first.irmNumber);
        assert.equal(reserved.irmUtilizedAmt, firstMapped);
        assert.equal(
          parseDecimalString(reserved.irmAvailableAmt) + parseDecimalString(reserved.irmUtilizedAmt),
          parseDecimalString(first.remittanceFCCAmount));
        assert.equal((await currentIrm(second.irmNumber)).irmAvailableAmt, '0.00');

        const pending = await authority.getStatus(DEMO, message.requestId);
        assert.equal(pending?.processingStatus, 'Pending');
        assert.deepEqual(pending?.records.map((record) => record.status), ['PENDING', 'PENDING']);

        clock = new Date(clock.getTime() + PROCESSING_DELAY_MS);
        const [processed, again] = await Promise.all([
          authority.getStatus(DEMO, message.requestId),
          authority.getStatus(DEMO, message.requestId),
        ]);
        assert.ok(processed);
        assert.deepEqual(again, processed);
        assert.equal(processed.processingStatus, 'Processed');
        assert.equal(processed.ackId, ack.ackId);
        assert.equal(processed.recordProCount, 2);
        assert.equal(processed.recordFailCount, 0);
        const numbers = processed.records.map((record) => record.ebrcNumber);
        for (const record of processed.records) {
          assert.equal(record.status, 'GENERATED');
          assert.match(record.ebrcNumber ?? '', /^EBRC20261122\d{10}$/);
          assert.equal(record.ebrcDate, '2026-11-22');
          assert.deepEqual(record.errorDetails, []);
        }
        assert.equal(new Set(numbers).size, 2);
        assert.equal((await currentIrm(first.irmNumber)).irmUtilizedAmt, firstMapped);
      });

      test('a SANDBOX-FAIL line fails at processing and gives its amount back: partially processed', async () => {
        const irm = takeIrm();
        const generatedShare = share(irm.irmAvailableAmt, 1n, 4n);
        const failedShare = share(irm.irmAvailableAmt, 1n, 2n);
        const message = pushMessage([
          lineFor(irm, { serialNo: 1, mapped: generatedShare }),
          lineFor(irm, { serialNo: 2, mapped: failedShare, billNo: 'SANDBOX-FAIL' }),
        ]);
        assert.equal((await authority.push(DEMO, message)).ackStatus, 'Validated');
        assert.equal(
          (await currentIrm(irm.irmNumber)).irmUtilizedAmt,
          formatCents(parseDecimalString(generatedShare) + parseDecimalString(failedShare)));

        clock = new Date(clock.getTime() + PROCESSING_DELAY_MS);
        const status = await authority.getStatus(DEMO, message.requestId);
        assert.equal(status?.processingStatus, 'Processed');
        assert.equal(status?.recordProCount, 1);
        assert.equal(status?.recordFailCount, 1);
        const failed = status?.records.find((record) => record.serialNo === 2);
        assert.equal(failed?.status, 'FAILED');
        assert.equal(failed?.ebrcNumber, null);
        assert.deepEqual(failed?.errorDetails.map((detail) => [detail.serialNo, detail.code]), [[2, 'ERR40']]);

        const after = await currentIrm(irm.irmNumber);
        assert.equal(after.irmUtilizedAmt, generatedShare);
        assert.equal(
          parseDecimalString(after.irmAvailableAmt),
          parseDecimalString(irm.remittanceFCCAmount) - parseDecimalString(generatedShare));
      });

      test('a push whose every line fails at processing ends Errored, with everything released', async () => {
        const irm = takeIrm();
        const message = pushMessage([lineFor(irm, { serialNo: 1, mapped: irm.irmAvailableAmt, billNo: 'SANDBOX-FAIL' })]);
        assert.equal((await authority.push(DEMO, message)).ackStatus, 'Validated');
        clock = new Date(clock.getTime() + PROCESSING_DELAY_MS);
        const status = await authority.getStatus(DEMO, message.requestId);
        assert.equal(status?.ackStatus, 'Validated');
        assert.equal(status?.processingStatus, 'Errored');
        assert.equal(status?.recordFailCount, 1);
        assert.equal((await currentIrm(irm.irmNumber)).irmAvailableAmt, irm.remittanceFCCAmount);
      });

      test('rule violations are refused with the authority codes, stored, and reported by status', async () => {
        const irm = takeIrm();
        const half = share(irm.irmAvailableAmt, 1n, 2n);
        const refusalCodes = async (message: PushMessage): Promise<string[]> => {
          const ack = await authority.push(DEMO, message);
          assert.equal(ack.ackStatus, 'Failed');
          assert.equal(ack.ackId, null);
          return ack.errorDetails.map((detail) => detail.code);
        };

        const countMismatch = pushMessage([lineFor(irm, { serialNo: 1, mapped: half })], { recordResCount: 2 });
        assert.deepEqual(await refusalCodes(countMismatch), ['ERR08']);
        const stored = await authority.getStatus(DEMO, countMismatch.requestId);
        assert.equal(stored?.ackStatus, 'Failed');
        assert.equal(stored?.processingStatus, 'Errored');
        assert.deepEqual(stored?.errorDetails.map((detail) => detail.code), ['ERR08']);

        assert.deepEqual(await refusalCodes(pushMessage([lineFor(irm, { serialNo: 1, mapped: half, irmNumber: 'NOSUCHIRM0001' })])), ['ERR18']);
        assert.deepEqual(await refusalCodes(pushMessage([lineFor(irm, { serialNo: 1, mapped: '1.00', remit: share(irm.irmAvailableAmt, 1n, 3n) })])), ['ERR23']);
        assert.deepEqual(
          await refusalCodes(pushMessage([
            lineFor(irm, { serialNo: 1, mapped: half }),
            { ...lineFor(irm, { serialNo: 2, mapped: half }), mappedIRMAmountFCC: amount(share(irm.irmAvailableAmt, 3n, 4n)) },
          ])),
          ['ERR38', 'ERR38']);
        assert.deepEqual(await refusalCodes(pushMessage([lineFor(irm, { serialNo: 1, mapped: half })], { requestId: 'x'.repeat(51) })), ['ERR07']);
        assert.deepEqual(await refusalCodes(pushMessage([lineFor(irm, { serialNo: 1, mapped: half })], { decalarationFlag: '' })), ['ERR36']);
        assert.deepEqual(await refusalCodes(pushMessage([lineFor(irm, { serialNo: 1, mapped: half })], { decalarationFlag: 'N' })), ['ERR37']);

        const accepted = pushMessage([lineFor(irm, { serialNo: 1, mapped: half })]);
        assert.equal((await authority.push(DEMO, accepted)).ackStatus, 'Validated');
        const current = await currentIrm(irm.irmNumber);
        const reused = pushMessage([lineFor(current, { serialNo: 1, mapped: '1.00' })], { requestId: accepted.requestId });
        assert.deepEqual(await refusalCodes(reused), ['ERR09']);
        assert.deepEqual(await refusalCodes(pushMessage([lineFor(current, { serialNo: 1, mapped: '1.00' })], { requestId: countMismatch.requestId })), ['ERR09']);
        assert.equal((await currentIrm(irm.irmNumber)).irmUtilizedAmt, half, 'refusals reserve nothing');
      });

      test('concurrent pushes against one IRM never map more than it holds', async () => {
        const irm = takeIrm();
        const third = share(irm.irmAvailableAmt, 1n, 3n);
        const acks = await Promise.all(Array.from({ length: 20 }, () =>
          authority.push(DEMO, pushMessage([lineFor(irm, { serialNo: 1, mapped: third })]))));
        const accepted = acks.filter((ack) => ack.ackStatus === 'Validated');
        assert.equal(accepted.length, 1);
        for (const ack of acks.filter((candidate) => candidate.ackStatus === 'Failed')) {
          assert.ok(ack.errorDetails.every((detail) => detail.code === 'ERR23' || detail.code === 'ERR38'));
        }

        // Pushes that each state the balance they see: they race, and the balance never goes below zero.
        const racers = Array.from({ length: 20 }, async () => {
          const current = await currentIrm(irm.irmNumber);
          return authority.push(DEMO, pushMessage([lineFor(current, { serialNo: 1, mapped: third })]));
        });
        await Promise.all(racers);
        const after = await currentIrm(irm.irmNumber);
        const available = parseDecimalString(after.irmAvailableAmt);
        const utilised = parseDecimalString(after.irmUtilizedAmt);
        assert.ok(available >= 0n);
        assert.ok(utilised <= parseDecimalString(irm.remittanceFCCAmount));
        assert.equal(available + utilised, parseDecimalString(irm.remittanceFCCAmount));
        assert.equal(utilised % parseDecimalString(third), 0n);
      });

      test('getStatus is null for an unknown requestId and for another account\'s', async () => {
        assert.equal(await authority.getStatus(DEMO, `unknown-${randomUUID()}`), null);
        const irm = takeIrm();
        const message = pushMessage([lineFor(irm, { serialNo: 1, mapped: '1.00' })]);
        assert.equal((await authority.push(DEMO, message)).ackStatus, 'Validated');
        assert.equal(await authority.getStatus({ username: 'services.exporter', password: PASSWORD }, message.requestId), null);
      });
    });

    describe('magic line values', () => {
      test('SANDBOX-OUTAGE: unavailable, nothing stored', async () => {
        const irm = takeIrm();
        const message = pushMessage([lineFor(irm, { serialNo: 1, mapped: '1.00', billNo: 'SANDBOX-OUTAGE' })]);
        await rejectsWith(authority.push(DEMO, message), 'unavailable');
        assert.equal(await authority.getStatus(DEMO, message.requestId), null);
        assert.equal((await currentIrm(irm.irmNumber)).irmUtilizedAmt, '0.00');
      });

      test('SANDBOX-SLOW: hangs until aborted, times out, nothing stored', async () => {
        const irm = takeIrm();
        const message = pushMessage([lineFor(irm, { serialNo: 1, mapped: '1.00', billNo: 'SANDBOX-SLOW' })]);
        await rejectsWith(authority.push(DEMO, message, { signal: AbortSignal.timeout(100) }), 'timeout');
        assert.equal(await authority.getStatus(DEMO, message.requestId), null);
        assert.equal((await currentIrm(irm.irmNumber)).irmUtilizedAmt, '0.00');
      });

      test('SANDBOX-LOST: stored and accepted, but the acknowledgement times out', async () => {
        const irm = takeIrm();
        const message = pushMessage([lineFor(irm, { serialNo: 1, mapped: '1.00', billNo: 'SANDBOX-LOST' })]);
        await rejectsWith(authority.push(DEMO, message), 'timeout');
        const status = await authority.getStatus(DEMO, message.requestId);
        assert.equal(status?.ackStatus, 'Validated');
        assert.ok(status?.ackId);
        assert.equal(status?.processingStatus, 'Pending');
        assert.equal((await currentIrm(irm.irmNumber)).irmUtilizedAmt, '1.00');
      });
    });
  });
}
