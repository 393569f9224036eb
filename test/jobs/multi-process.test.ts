import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import type { Authority } from '../../src/authority/authority.ts';
import { createSandboxAuthority } from '../../src/authority/sandbox/sandbox-authority.ts';
import { loadConfig } from '../../src/config.ts';
import { createService, type Service } from '../../src/service.ts';
import { createPlatform } from '../../src/services/platforms.ts';
import type { Database } from '../../src/store/database.ts';
import { postgresUrl, scratchDatabase, type TestResponse } from '../support/harness.ts';
import { cents, lineFor, pushBody, usableIrms, verifiedCustomer, waitForFinal } from '../support/workflow.ts';

/**
 * Two service processes (two createService instances, each with its own pool, pg-boss and poller) on one
 * PostgreSQL database, as contract 8 allows: requests pushed through one are finished by either, once.
 */
describe('two services polling one PostgreSQL database', { skip: postgresUrl() ? false : 'no PostgreSQL for the tests' }, () => {
  let scratch: Awaited<ReturnType<typeof scratchDatabase>>;
  const services: Record<'A' | 'B', Service | undefined> = { A: undefined, B: undefined };
  const statusCalls: Record<'A' | 'B', string[]> = { A: [], B: [] };
  const problems: string[] = [];
  let apiKey = '';

  function start(name: 'A' | 'B', env: Record<string, string>): Promise<Service> {
    const counting = (database: Database): Authority => {
      const sandbox = createSandboxAuthority({ database, processingDelayMs: 300 });
      return {
        ...sandbox,
        getStatus(credentials, requestId, options) {
          statusCalls[name].push(requestId);
          return sandbox.getStatus(credentials, requestId, options);
        },
      };
    };
    // Warnings and errors of either process (a failed advance, a job queue error) are collected.
    const logger = pino({ level: 'warn' }, { write: (line: string) => void problems.push(`${name}: ${line}`) });
    return createService({ config: loadConfig(env), logger, authority: counting });
  }

  function request(name: 'A' | 'B') {
    return async (method: string, url: string, options: { body?: unknown; query?: Record<string, string | number> } = {}): Promise<TestResponse> => {
      const response = await services[name]!.app.inject({
        method: method as 'GET',
        url,
        headers: { 'x-api-key': apiKey },
        ...(options.query ? { query: Object.fromEntries(Object.entries(options.query).map(([k, v]) => [k, String(v)])) } : {}),
        ...(options.body !== undefined ? { payload: options.body as object } : {}),
      });
      return { status: response.statusCode, headers: response.headers, body: response.body ? JSON.parse(response.body) : undefined, text: response.body };
    };
  }
  const viaA = { request: request('A') };
  const viaB = { request: request('B') };

  before(async () => {
    scratch = await scratchDatabase('postgres');
    const env = {
      DATABASE_URL: scratch.databaseUrl!,
      DATA_DIR: scratch.dataDir,
      ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      RUN_POLLER: 'true',
      POLL_INTERVAL_SECONDS: '1',
      RATE_LIMIT_PER_SECOND: '100000',
      RATE_LIMIT_BURST: '100000',
    };
    services.A = await start('A', env);
    services.B = await start('B', env);
    apiKey = (await createPlatform(services.A.database.db, 'Shared platform')).apiKey;
  });

  after(async () => {
    await services.A?.close();
    await services.B?.close();
    await scratch?.drop();
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
    await services.A!.close();
    const lateFinals = await Promise.all(late.map((ack) => waitForFinal(viaB, id, ack.body.requestId)));
    for (const record of lateFinals) assert.equal(record.status, 'PROCESSED');
    for (const ack of late) assert.ok(statusCalls.B.includes(ack.body.requestId), 'B advanced what A left');

    const db = services.B!.database.db;
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

    // At the authority: each line processed once, so exactly one eBRC number was drawn per generated line.
    const run = (text: string) => services.B!.database.executor.executeSql(text) as Promise<{ rows: any[] }>;
    const sandboxLines = (await run("select request_id, serial_no, ebrc_number from sandbox.request_lines where status = 'GENERATED'")).rows;
    assert.equal(sandboxLines.length, generated.length);
    assert.equal(new Set(sandboxLines.map((line) => line.ebrc_number)).size, sandboxLines.length);
    const theirs = new Map(sandboxLines.map((line) => [`${line.request_id}/${line.serial_no}`, line.ebrc_number]));
    for (const line of generated) assert.equal(theirs.get(`${line.request_id}/${line.serial_no}`), line.ebrc_number);
    const [sequence] = (await run('select last_value::int as last, is_called from sandbox.ebrc_numbers')).rows;
    assert.equal(sequence.is_called ? sequence.last : 0, generated.length, 'no eBRC number was drawn twice');

    // Balances add up, here and at the authority.
    const stored = await db.selectFrom('irms').selectAll().where('platform_customer_id', '=', id).where('irm_number', 'in', irms.map((irm) => irm.irmNumber)).execute();
    const theirIrms = new Map(
      (await run('select irm_number, available_amount from sandbox.irms')).rows.map((row) => [row.irm_number, cents(row.available_amount)]),
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
    assert.deepEqual(problems, [], 'neither poller logged a warning or an error');
  });
});
