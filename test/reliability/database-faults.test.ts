import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { SandboxProgram } from '../../sandbox/program.ts';
import { openDatabase } from '../../src/store/database.ts';
import { gatewayApiKey, gatewayEnv, httpClient, startGateway, stopGateway, waitUntilReady, type Running } from '../support/gateway.ts';
import { backends, scratchDatabase, startTestSandbox, type TestResponse } from '../support/harness.ts';
import { assertLedgerConsistent, statusFigures, type AcknowledgedPush } from '../support/invariants.ts';
import { privatePostgresUnavailable, startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres.ts';
import { PushStream } from '../support/push-stream.ts';
import { Random, reportFigures, runSeed, scaled } from '../support/reliability.ts';
import { firstRefresh, lineFor, pushBody, sleep, usableIrms, verifiedCustomer } from '../support/workflow.ts';

/**
 * The service (`node src/main.ts`, on PostgreSQL) with its database broken under it, on a PostgreSQL server of the
 * test's own (never the shared one): connections terminated under concurrent keyed pushes, the database stopped under
 * load and started again, restarted during a 999-line push that the client retries with the same key, and down when
 * the service starts. The sandbox authority runs in this process and is never broken. After all of it, the ledger is
 * checked against the authority: nothing acknowledged lost, nothing doubled, every balance equal.
 *
 * RELIABILITY_SCALE=long: more terminations, and the 20 s outage of the reliability review (quick: 6 s).
 */

const TERMINATIONS = scaled(4, 12);
const OUTAGE_MS = scaled(6_000, 20_000);
const WORKERS = 4;
const STREAM_IRMS = scaled(80, 300);
const BIG_PUSH_LINES = 999;
/** The 999 lines map these IRMs, a few lines each (together well within each IRM's amount). */
const BIG_PUSH_IRMS = 400;
/** Contract 17: answers during an outage within 3 s; serving again within 5 s of the database's return. */
const OUTAGE_ANSWER_MS = 3_000;
const RECOVERY_MS = 5_000;
const SETTLE_TIMEOUT_MS = scaled(120_000, 300_000);

const unavailable = await privatePostgresUnavailable();

type Client = ReturnType<typeof httpClient>;

describe('database faults under load [postgres, a server of the test\'s own]', { skip: unavailable ?? false, concurrency: false }, () => {
  let server: PrivatePostgres;
  let sandboxScratch: Awaited<ReturnType<typeof scratchDatabase>>;
  let sandbox: SandboxProgram;
  let dataDir: string;
  let env: Record<string, string>;
  let gateway: Running;
  let client: Client;
  let base: string;
  let apiKey: string;
  let customerId: string;
  let stream: PushStream;
  let bigPushIrms: any[];
  const random = new Random(runSeed());
  const outputs: string[] = [];
  const acknowledged: AcknowledgedPush[] = [];
  const figures: Record<string, number | string | boolean> = {};

  /** WORKERS clients pushing and polling until `stop()`. */
  function load(): { stop(): Promise<void> } {
    let stopping = false;
    const workers = Array.from({ length: WORKERS }, async () => {
      while (!stopping && stream.usableIrms > 0) {
        if (random.chance(0.7)) await stream.pushOnce(client);
        else await stream.pollOnce(client);
        // Answers come in milliseconds during an outage: a real client would not spin.
        await sleep(20);
      }
    });
    return {
      async stop() {
        stopping = true;
        await Promise.all(workers);
      },
    };
  }

  /** Retries every push without an answer yet (lost, 503, held) with its key until each has one. */
  async function settleUnanswered(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (stream.unansweredCount > 0) {
      assert.ok(Date.now() < deadline, `${stream.unansweredCount} pushes still unanswered after ${timeoutMs} ms`);
      await stream.retryUnanswered(client);
      if (stream.unansweredCount > 0) await sleep(500);
    }
  }

  function assertAlive(running: Running): void {
    assert.equal(running.child.exitCode, null, `the service exited: ${running.output().slice(-3000)}`);
    assert.equal(running.child.signalCode, null, `the service was killed: ${running.output().slice(-3000)}`);
  }

  before(async () => {
    server = await startPrivatePostgres();
    // The authority's storage is not the one broken: the shared server when there is one, else the embedded database.
    sandboxScratch = await scratchDatabase(backends().includes('postgres') ? 'postgres' : 'embedded');
    sandbox = await startTestSandbox(sandboxScratch, { processingDelayMs: 200 });
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-db-faults-'));
    env = gatewayEnv({ dataDir, databaseUrl: server.url }, sandbox.url, {
      AUTHORITY_TIMEOUT_MS: '3000',
      RATE_LIMIT_PER_SECOND: '100000',
      RATE_LIMIT_BURST: '100000',
    });
    gateway = startGateway(env);
    base = await waitUntilReady(gateway);
    apiKey = await gatewayApiKey(gateway, { dataDir, databaseUrl: server.url }, 'Database faults');
    client = httpClient(base, apiKey, 30_000);
    customerId = await verifiedCustomer(client, 'database-faults@example.com');
    await firstRefresh(client, customerId);
    const irms = await usableIrms(client, customerId, STREAM_IRMS + BIG_PUSH_IRMS);
    stream = new PushStream(customerId, irms.slice(0, STREAM_IRMS), random, { maxLines: 3, failLineRate: 0.1 });
    bigPushIrms = irms.slice(STREAM_IRMS);
  });

  after(async () => {
    try {
      await stopGateway(gateway);
      await sandbox?.close();
      await sandboxScratch?.drop();
    } finally {
      await server?.destroy();
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('connections terminated under concurrent keyed pushes: the process lives, every push is answered', async () => {
    const running = load();
    let terminated = 0;
    for (let round = 0; round < TERMINATIONS; round++) {
      await sleep(random.int(300, 1_200));
      terminated += await server.terminateConnections();
      assertAlive(gateway);
    }
    await sleep(500);
    await running.stop();
    await settleUnanswered();
    assertAlive(gateway);
    assert.deepEqual(stream.unexpected, [], 'every answer was one the contract allows (200, or 503 database_unavailable)');
    figures['connections terminated'] = terminated;
    figures['503 answers while connections were cut'] = stream.counts.databaseUnavailable;
  });

  test('a database outage under load: 503 within 3 s, /ready 503, /health 200, serving again within 5 s', async () => {
    const running = load();
    await sleep(1_000);
    const outputBefore = gateway.output().length;
    await server.stop('fast');
    const stoppedAt = Date.now();
    const answers: { status: number; ms: number; code?: string; retryAfter?: string }[] = [];
    const readiness: number[] = [];
    const health: number[] = [];
    while (Date.now() - stoppedAt < OUTAGE_MS) {
      const started = Date.now();
      const answer = await client.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: customerId, requestId: 'EBRCGW-NONE' } });
      answers.push({ status: answer.status, ms: Date.now() - started, code: answer.body?.code, retryAfter: String(answer.headers['retry-after']) });
      readiness.push((await fetch(`${base}/ready`)).status);
      health.push((await fetch(`${base}/health`)).status);
      assertAlive(gateway);
      await sleep(250);
    }
    const outageOutput = gateway.output().slice(outputBefore);
    await server.start();
    const startedAt = Date.now();
    let readyMs: number | undefined;
    while (readyMs === undefined) {
      if ((await fetch(`${base}/ready`)).status === 200) readyMs = Date.now() - startedAt;
      else if (Date.now() - startedAt > 30_000) assert.fail('not ready 30 s after the database came back');
      else await sleep(50);
    }
    // A request that needs the database, answered as before the outage.
    const listed = await client.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: customerId, limit: 1 } });
    const servingMs = Date.now() - startedAt;
    await sleep(1_000);
    await running.stop();
    await settleUnanswered();

    // The first probe may have been answered before the outage was seen; every later one is the contract's 503.
    const during = answers.slice(1);
    assert.ok(during.length >= 3, 'the outage was probed');
    for (const answer of during) {
      assert.deepEqual({ status: answer.status, code: answer.code, retryAfter: answer.retryAfter }, { status: 503, code: 'database_unavailable', retryAfter: '2' });
      assert.ok(answer.ms < OUTAGE_ANSWER_MS, `answered in ${answer.ms} ms during the outage`);
    }
    assert.ok(readiness.slice(1).every((status) => status === 503), `/ready during the outage: ${readiness.join(',')}`);
    assert.ok(health.every((status) => status === 200), `/health during the outage: ${health.join(',')}`);
    assert.equal(listed.status, 200, listed.text);
    assert.ok(servingMs < RECOVERY_MS, `serving again ${servingMs} ms after the database came back`);
    assert.deepEqual(stream.unexpected, [], 'every answer was one the contract allows');

    // Logs: no stack, no unhandled error, each component's outage line at most once per 30 s, then one line of recovery.
    const lines = outageOutput.split('\n').filter((line) => line.startsWith('{'));
    const errorLines = lines.filter((line) => /"level":(50|60)/.test(line));
    const perMessage = new Map<string, number>();
    for (const line of errorLines) {
      const msg = (JSON.parse(line) as { msg: string }).msg;
      perMessage.set(msg, (perMessage.get(msg) ?? 0) + 1);
    }
    const allowed = Math.ceil(OUTAGE_MS / 30_000);
    for (const [msg, count] of perMessage) assert.ok(count <= allowed, `"${msg}" logged ${count} times in a ${OUTAGE_MS} ms outage`);
    assert.ok(!errorLines.some((line) => line.includes('unhandled error')), 'no unhandled error during the outage');
    await sleep(200);
    assert.match(gateway.output().slice(outputBefore), /database reachable again/);

    const during503 = during.map((answer) => answer.ms).sort((a, b) => a - b);
    figures['outage ms'] = OUTAGE_MS;
    figures['outage: probes answered 503 (max ms)'] = `${during.length} (${during503.at(-1)})`;
    figures['outage: error log lines'] = errorLines.length;
    figures['outage: ready again after (ms)'] = readyMs;
    figures['outage: serving again after (ms)'] = servingMs;
  });

  test('a restart during a 999-line push: the retry with the same key gets the authority\'s acknowledgement, sent once', async () => {
    const key = randomUUID();
    const irmOf = (index: number) => bigPushIrms[index % bigPushIrms.length];
    const lines = Array.from({ length: BIG_PUSH_LINES }, (_, index) => lineFor(irmOf(index), index + 1, 1));
    const body = pushBody(customerId, lines);
    const send = () => client.request('POST', '/api/v1/genebrc/push-irm', { body, headers: { 'idempotency-key': key } }).catch((error: unknown) => error as Error);
    const first = send();
    await sleep(random.int(150, 400));
    await server.stop('fast');
    await sleep(1_000);
    await server.start();
    const answers: (TestResponse | Error)[] = [await first];
    const startedAt = Date.now();
    let final: TestResponse | undefined;
    while (final === undefined) {
      const last = answers.at(-1)!;
      if (!(last instanceof Error) && last.status === 200) final = last;
      else {
        assert.ok(Date.now() - startedAt < 60_000, `no acknowledgement 60 s after the restart: ${answers.map((a) => (a instanceof Error ? a.message : `${a.status} ${a.text.slice(0, 200)}`)).join(' | ')}`);
        await sleep(1_000);
        answers.push(await send());
      }
    }
    const statuses = answers.map((answer) => (answer instanceof Error ? 'no answer' : answer.status));
    for (const answer of answers) {
      if (answer instanceof Error) continue;
      assert.ok([200, 503, 409].includes(answer.status), `answer ${answer.status}: ${answer.text.slice(0, 300)}`);
      assert.ok(!/ECONN|statusCode|127\.0\.0\.1|\bat \w+ \(/.test(answer.text), `no driver code, address or stack in an answer: ${answer.text.slice(0, 300)}`);
      if (answer.status !== 200) assert.match(String(answer.headers['content-type']), /^application\/problem\+json/);
    }
    assert.equal(final.body.ackStatus, 'Validated', final.text);
    // Once the key was released by the 5xx answer, the retry never waits out a lease.
    assert.ok(statuses.filter((status) => status === 409).length <= 2, `answers: ${statuses.join(', ')}`);
    const atAuthority = await sandbox.database.db.selectFrom('authority_sandbox.requests').select('request_id').where('request_id', '=', final.body.requestId).execute();
    assert.equal(atAuthority.length, 1, 'the authority holds the push once');
    acknowledged.push({
      requestId: final.body.requestId,
      authorityAckId: final.body.authorityAckId,
      lines: lines.map((_, index) => ({ serialNo: index + 1, irmNumber: irmOf(index).irmNumber, mappedCents: 100n })),
    });
    figures['999-line push: answers until acknowledged'] = statuses.join(', ');
  });

  test('a start before the database: one line per attempt, then serving; DATABASE_WAIT_SECONDS ends it with one line', async () => {
    await stopGateway(gateway);
    outputs.push(gateway.output());
    await server.stop('fast');

    const giving = startGateway({ ...env, DATABASE_WAIT_SECONDS: '2' });
    const [code] = (await giving.exited) as [number | null];
    assert.equal(code, 1, giving.output());
    const stderrLine = giving.output().split('\n').filter((line) => line.startsWith('ebrc-gateway:'));
    assert.equal(stderrLine.length, 1, giving.output());
    assert.match(stderrLine[0]!, new RegExp(`the database at 127\\.0\\.0\\.1:${server.port} did not answer within DATABASE_WAIT_SECONDS=2`));
    assert.ok(!/\n\s+at /.test(giving.output()), `no stack trace: ${giving.output()}`);

    gateway = startGateway(env);
    const waiting = new RegExp(`waiting for the database at 127\\.0\\.0\\.1:${server.port}: connection refused`, 'g');
    const deadline = Date.now() + 30_000;
    while ((gateway.output().match(waiting)?.length ?? 0) < 3) {
      assertAlive(gateway);
      assert.ok(Date.now() < deadline, `no waiting lines: ${gateway.output()}`);
      await sleep(100);
    }
    assert.ok(!/\n\s+at /.test(gateway.output()), 'no stack trace while waiting');
    await server.start();
    base = await waitUntilReady(gateway, 30_000);
    client = httpClient(base, apiKey, 30_000);
    figures['start before the database: waiting lines'] = gateway.output().match(waiting)?.length ?? 0;
  });

  test('afterwards: nothing lost, nothing doubled, every balance equal to the authority\'s', async (t) => {
    await settleUnanswered();
    const settleStarted = Date.now();
    for (;;) {
      const open = await client.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: customerId, status: 'PENDING', limit: 1 } });
      assert.equal(open.status, 200, open.text);
      if (open.headers['x-total-count'] === '0') break;
      assert.ok(Date.now() - settleStarted < SETTLE_TIMEOUT_MS, `${open.headers['x-total-count']} requests still open`);
      await sleep(500);
    }
    await stopGateway(gateway);
    outputs.push(gateway.output());
    assert.deepEqual(stream.unexpected, []);
    const database = await openDatabase({ databaseUrl: server.url, dataDir });
    try {
      const ledger = await assertLedgerConsistent(database, sandbox.database, { acknowledged: [...stream.acknowledged, ...acknowledged], exactEbrcSequence: true });
      const twice = await database.executor.executeSql(
        'select sb_cum_invoice_number from genebrc_request_lines group by sb_cum_invoice_number having count(distinct request_id) > 1',
      );
      assert.deepEqual((twice as { rows: unknown[] }).rows, [], 'no push is stored twice');
      const logs = outputs.join('\n');
      assert.ok(!logs.includes("Unhandled 'error' event"), 'no unhandled error event');
      assert.ok(!logs.includes('"msg":"unhandled error"'), 'no request failed unexpectedly');
      reportFigures(t, 'database faults [postgres]', {
        ...figures,
        pushes: stream.counts.pushes,
        'pushes acknowledged Validated': stream.counts.validated + acknowledged.length,
        '503 database_unavailable answers (pushes and polls)': stream.counts.databaseUnavailable,
        'retries answered from the first run': stream.counts.retriesReplayed,
        'retries run afresh': stream.counts.retriesRun,
        'retries held (409) then retried': stream.counts.retriesHeld,
        'final statuses': statusFigures(ledger.byStatus),
        'lines generated (each eBRC once)': ledger.generatedLines,
        'IRMs whose ledger was checked': ledger.irmsChecked,
        'acknowledged requests lost': 0,
        'requests doubled': 0,
      });
    } finally {
      await database.close();
    }
  });
});
