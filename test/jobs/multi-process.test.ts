import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { postgresUrl } from '../support/harness.ts';
import { startTwoServices, type ServiceName, type TwoServices } from '../support/two-services.ts';
import { cents, lineFor, pushBody, usableIrms, verifiedCustomer, waitForFinal } from '../support/workflow.ts';

/**
 * Two service processes (two createService instances, each with its own pool, pg-boss and poller) on one
 * PostgreSQL database, as contract 8 allows, both talking to one sandbox authority program: requests pushed through
 * one are finished by either, once.
 */
describe('two services polling one PostgreSQL database', { skip: postgresUrl() ? false : 'no PostgreSQL for the tests' }, () => {
  let two: TwoServices | undefined;
  const statusCalls: Record<ServiceName, string[]> = { A: [], B: [] };
  // Bound lazily: the services start in before().
  const via = (name: ServiceName): ReturnType<TwoServices['via']> => ({
    request: (method, url, options) => two!.via(name).request(method, url, options),
  });
  const viaA = via('A');
  const viaB = via('B');

  before(async () => {
    two = await startTwoServices((name, adapter) => ({
      ...adapter,
      getStatus(credentials, requestId, options) {
        statusCalls[name].push(requestId);
        return adapter.getStatus(credentials, requestId, options);
      },
    }));
  });

  after(async () => {
    await two?.close();
  });

  test('requests pushed through A are finished by both pollers, each exactly once', async () => {
    const id = await verifiedCustomer(viaA, 'shared@example.com');
    const irms = await usableIrms(viaA, id, 12);
    // Ten requests; every third has a line that fails at processing.
    const acks = await Promise.all(
      irms.slice(0, 10).map((irm, index) =>
        viaA.request('POST', '/api/v1/genebrc/push-irm', {
          body: pushBody(id, [lineFor(irm, 1, 1.5), lineFor(irm, 2, 2.25, index % 3 === 0 ? { billNo: 'SANDBOX-FAIL' } : {})]),
        }),
      ),
    );
    for (const ack of acks) assert.equal(ack.body?.ackStatus, 'Validated', ack.text);

    // Followed through B: it sees what A stored, and nobody asks for status.
    const finals = await Promise.all(acks.map((ack) => waitForFinal(viaB, id, ack.body.requestId)));
    finals.forEach((record, index) => assert.equal(record.status, index % 3 === 0 ? 'PARTIALLY_PROCESSED' : 'PROCESSED', JSON.stringify(record)));

    // A's poller stops; what A still acknowledges is finished by B alone.
    const late = await Promise.all(
      irms.slice(10, 12).map((irm) => viaA.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(id, [lineFor(irm, 1, 4)]) })),
    );
    await two!.services.A.close();
    const lateFinals = await Promise.all(late.map((ack) => waitForFinal(viaB, id, ack.body.requestId)));
    for (const record of lateFinals) assert.equal(record.status, 'PROCESSED');
    for (const ack of late) assert.ok(statusCalls.B.includes(ack.body.requestId), 'B advanced what A left');

    const db = two!.services.B.database.db;
    const lines = await db
      .selectFrom('genebrc_request_lines')
      .innerJoin('genebrc_requests', 'genebrc_requests.id', 'genebrc_request_lines.request_id')
      .select(['genebrc_requests.request_id', 'genebrc_request_lines.serial_no', 'genebrc_request_lines.status', 'genebrc_request_lines.ebrc_number', 'genebrc_request_lines.reserved'])
      .where('genebrc_requests.platform_customer_id', '=', id)
      .execute();
    assert.equal(lines.length, 22);
    const generated = lines.filter((line) => line.status === 'GENERATED');
    assert.equal(generated.length, 22 - 4);
    assert.ok(generated.every((line) => line.ebrc_number !== null));
    assert.ok(lines.filter((line) => line.status === 'FAILED').every((line) => line.ebrc_number === null));
    assert.equal(new Set(generated.map((line) => line.ebrc_number)).size, generated.length, 'every eBRC number once');
    assert.ok(lines.every((line) => !line.reserved), 'nothing left reserved');

    // At the authority (the sandbox program's own storage): each line processed once, so exactly one eBRC number
    // was drawn per generated line.
    const authority = two!.sandbox.database.db;
    const sandboxLines = await authority
      .selectFrom('authority_sandbox.request_lines')
      .select(['request_id', 'serial_no', 'ebrc_number'])
      .where('status', '=', 'GENERATED')
      .execute();
    assert.equal(sandboxLines.length, generated.length);
    assert.equal(new Set(sandboxLines.map((line) => line.ebrc_number)).size, sandboxLines.length);
    const theirs = new Map(sandboxLines.map((line) => [`${line.request_id}/${line.serial_no}`, line.ebrc_number]));
    for (const line of generated) assert.equal(theirs.get(`${line.request_id}/${line.serial_no}`), line.ebrc_number);
    const { rows: [sequence] } = await sql<{ last: number; is_called: boolean }>`select last_value::int as last, is_called from authority_sandbox.ebrc_numbers`.execute(authority);
    assert.equal(sequence!.is_called ? sequence!.last : 0, generated.length, 'no eBRC number was drawn twice');

    // Balances add up, here and at the authority.
    const stored = await db.selectFrom('irms').selectAll().where('platform_customer_id', '=', id).where('irm_number', 'in', irms.map((irm) => irm.irmNumber)).execute();
    const theirIrms = new Map(
      (await authority.selectFrom('authority_sandbox.irms').select(['irm_number', sql<string>`available_amount::text`.as('available')]).execute())
        .map((row) => [row.irm_number, cents(row.available)]),
    );
    for (const [index, irm] of irms.entries()) {
      const row = stored.find((r) => r.irm_number === irm.irmNumber)!;
      const utilised = cents(row.irm_utilized_amt);
      const expected = index >= 10 ? 400n : index % 3 === 0 ? 150n : 375n;
      assert.equal(utilised, expected, `IRM ${irm.irmNumber}`);
      assert.equal(cents(row.irm_available_amt) + utilised, cents(row.remittance_fcc_amount));
      assert.equal(theirIrms.get(irm.irmNumber), cents(row.irm_available_amt), 'the authority agrees');
    }

    const byA = new Set(statusCalls.A);
    const byB = new Set(statusCalls.B);
    const firstTen = acks.map((ack) => ack.body.requestId);
    assert.ok(firstTen.every((requestId) => byA.has(requestId) || byB.has(requestId)));
    assert.deepEqual(two!.problems, [], 'neither poller logged a warning or an error');
  });
});
