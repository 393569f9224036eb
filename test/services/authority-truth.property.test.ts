import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import { describeEachBackend, type Harness } from '../support/harness.ts';
import { amendIrmAtBank, cancelIrmAtBank, expirePull, portalEbrc } from '../support/outside.ts';
import { cents, irmNow, lineFor, money, pushBody, usableIrms, verifiedCustomer } from '../support/workflow.ts';

/**
 * Property (contract 13): this service's pushes (some of whose lines fail at processing) interleaved in any order with
 * what the exporter does elsewhere (portal eBRCs, the bank's amendments and cancellations). After every pull, every
 * IRM's available amount here is the authority's less exactly what this service holds that the authority has not
 * acknowledged (nothing, once every push is answered: the sandbox acknowledges at once), 0 for a cancelled IRM; a
 * refusal for an amount shows the authority's amount at once, without waiting for the reuse interval; and every push
 * the service reports Validated is one the authority accepted within its balance.
 */

type Action =
  | { kind: 'push'; irm: number; cents: number; failAtProcessing: boolean; stale: boolean }
  | { kind: 'process' }
  | { kind: 'portal'; irm: number; cents: number }
  | { kind: 'amend'; irm: number; name: string }
  | { kind: 'cancel'; irm: number }
  | { kind: 'pull' };

const IRMS = 4;

const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('push' as const), irm: fc.nat(IRMS - 1), cents: fc.integer({ min: 1, max: 5_000 }), failAtProcessing: fc.boolean(), stale: fc.boolean() }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'process' as const }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('portal' as const), irm: fc.nat(IRMS - 1), cents: fc.integer({ min: 1, max: 5_000 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('amend' as const), irm: fc.nat(IRMS - 1), name: fc.constantFrom('Amended One Ltd', 'Amended Two GmbH') }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), irm: fc.nat(IRMS - 1) }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'pull' as const }) },
);

/** The authority's own figures for an IRM, read from the sandbox program's storage. */
async function atTheAuthority(h: Harness, irmNumber: string): Promise<{ available: bigint; cancelled: boolean }> {
  const { rows: [row] } = await sql<{ available: string; irm_status: string }>`
    select available_amount::text as available, irm_status from authority_sandbox.irms where irm_number = ${irmNumber}`.execute(h.sandbox.database.db);
  assert.ok(row, irmNumber);
  return { available: cents(row.available), cancelled: row.irm_status === 'C' };
}

/** This service's requests on the customer's IRMs that the authority has not acknowledged yet, per IRM number. */
async function heldHere(h: Harness, customerId: string): Promise<Map<string, bigint>> {
  const { rows } = await sql<{ irm_number: string; held: string }>`
    select line.irm_number, sum(line.mapped_amount)::text as held from genebrc_requests request
    join genebrc_request_lines line on line.request_id = request.id
    where request.platform_customer_id = ${customerId} and request.status = 'SUBMITTING' and line.reserved
    group by line.irm_number`.execute(h.database.db);
  return new Map(rows.map((row) => [row.irm_number, cents(row.held)]));
}

/**
 * How many requests the authority has processed: it processes on its own clock (SANDBOX_PROCESSING_DELAY_MS after
 * receipt), so a check that saw this number move saw the authority change under it and proves nothing.
 */
async function processedAtTheAuthority(h: Harness): Promise<number> {
  const { rows: [row] } = await sql<{ processed: number }>`
    select count(*)::int as processed from authority_sandbox.requests where processed_at is not null`.execute(h.sandbox.database.db);
  return Number(row?.processed ?? 0);
}

/**
 * Pulls the customer's IRMs and checks one against the authority, again (a bounded number of times) while the
 * authority processed a request between the pull and the reading of its figures.
 */
async function assertFollowsAfterPull(h: Harness, customerId: string, irmNumber: string, when: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const before = await processedAtTheAuthority(h);
    await expirePull(h, customerId);
    const ours = await irmNow(h, customerId, irmNumber);
    if (attempt < 5 && (await processedAtTheAuthority(h)) !== before) continue;
    return assertOursFollow(h, customerId, irmNumber, ours, when);
  }
}

async function assertFollowsTheAuthority(h: Harness, customerId: string, irmNumber: string, when: string): Promise<void> {
  return assertOursFollow(h, customerId, irmNumber, await irmNow(h, customerId, irmNumber), when);
}

async function assertOursFollow(h: Harness, customerId: string, irmNumber: string, ours: any, when: string): Promise<void> {
  const theirs = await atTheAuthority(h, irmNumber);
  const held = (await heldHere(h, customerId)).get(irmNumber) ?? 0n;
  const expected = theirs.cancelled || theirs.available < held ? 0n : theirs.available - held;
  assert.equal(cents(ours.irmAvailableAmt), expected, `${when}: IRM ${irmNumber} shows ${ours.irmAvailableAmt}, the authority ${theirs.available} less ${held} held`);
  assert.equal(ours.irmStatus === 'cancelled', theirs.cancelled, `${when}: IRM ${irmNumber} cancelled here exactly when there`);
}

describeEachBackend(
  'The authority is the source of truth (property)',
  (h) => {
    test('pushes, processing failures and outside changes in any order: every IRM follows the authority', async () => {
      const customer = await verifiedCustomer(h, 'property@example.com');
      const irms = (await usableIrms(h, customer, 40)).filter((irm) => cents(irm.irmAvailableAmt) > 50_000n).slice(0, IRMS);
      assert.equal(irms.length, IRMS);
      const numbers = irms.map((irm) => irm.irmNumber as string);
      const open: string[] = [];
      let serial = 0;

      await fc.assert(
        fc.asyncProperty(fc.array(action, { minLength: 1, maxLength: 8 }), async (actions) => {
          for (const step of actions) {
            const when = `${JSON.stringify(step)} in ${JSON.stringify(actions)}`;
            if (step.kind === 'push') {
              const irmNumber = numbers[step.irm]!;
              const shown = await irmNow(h, customer, irmNumber);
              // A stale push declares the amount the IRM had when first listed: the wedge of the issue, when it moved since.
              const declared = step.stale ? irms[step.irm] : shown;
              const amount = money(BigInt(step.cents));
              const line = lineFor(declared, ++serial, amount, step.failAtProcessing ? { billNo: 'SANDBOX-FAIL' } : {});
              const processedBefore = await processedAtTheAuthority(h);
              const answer = await h.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(customer, [line]) });
              assert.equal(answer.status, 200, `${when}: ${answer.text}`);
              if (answer.body.ackStatus === 'Validated') {
                open.push(answer.body.requestId);
                const { rows: [accepted] } = await sql<{ ack_status: string }>`
                  select ack_status from authority_sandbox.requests where request_id = ${answer.body.requestId}`.execute(h.sandbox.database.db);
                assert.equal(accepted?.ack_status, 'Validated', `${when}: acknowledged here, accepted there`);
                assert.ok((await atTheAuthority(h, irmNumber)).available >= 0n);
              } else if (answer.body.errorDetails.some((detail: any) => ['ERR23', 'ERR38'].includes(detail.code))) {
                // No wedge: the refusal itself brought the authority's amount, within the reuse interval (unless the
                // authority processed a request since the push: then its figures moved after the refusal's pull).
                if ((await processedAtTheAuthority(h)) === processedBefore) {
                  await assertFollowsTheAuthority(h, customer, irmNumber, `right after a refusal, ${when}`);
                }
              }
            } else if (step.kind === 'process') {
              for (const requestId of open.splice(0)) {
                const status = await h.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: customer, requestId } });
                assert.equal(status.status, 200, status.text);
              }
            } else if (step.kind === 'portal') {
              const theirs = await atTheAuthority(h, numbers[step.irm]!);
              if (!theirs.cancelled && theirs.available >= BigInt(step.cents)) await portalEbrc(h, numbers[step.irm]!, money(BigInt(step.cents)));
            } else if (step.kind === 'amend') {
              if (!(await atTheAuthority(h, numbers[step.irm]!)).cancelled) await amendIrmAtBank(h, numbers[step.irm]!, { remitterName: step.name });
            } else if (step.kind === 'cancel') {
              // One IRM at most is cancelled, so that the others keep being pushed to.
              if (step.irm === 0) await cancelIrmAtBank(h, numbers[0]!);
            } else {
              for (const irmNumber of numbers) await assertFollowsAfterPull(h, customer, irmNumber, `after a pull, ${when}`);
            }
          }
          for (const irmNumber of numbers) await assertFollowsAfterPull(h, customer, irmNumber, `after the run ${JSON.stringify(actions)}`);
        }),
        { numRuns: 8, endOnFailure: true },
      );
    });
  },
  { env: { AUTHORITY_TIMEOUT_MS: '5000' } },
);
