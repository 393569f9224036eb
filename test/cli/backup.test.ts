import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import pg from 'pg';
import { openDatabase } from '../../src/store/database.ts';
import { gatewayApiKey, gatewayEnv, httpClient, ROOT, startGateway, stopGateway, waitUntilReady, type Running } from '../support/gateway.ts';
import { backends, postgresUrl, scratchDatabase, startTestSandbox, type Backend } from '../support/harness.ts';
import { runProgram } from '../support/run.ts';
import { cents, firstRefresh, lineFor, pushBody, sleep, usableIrms, verifiedCustomer, waitForFinal } from '../support/workflow.ts';

/**
 * Backups while the service runs, under a stream of pushes: on the embedded database `npm run cli -- backup <file>`
 * (through the running service's admin API) and `restore <file>` into a new data folder; on PostgreSQL pg_dump and
 * pg_restore into a fresh database, as the README says. The copy is consistent (every IRM's balance is its lines'),
 * and a service started on it answers every read taken before the backup exactly as before.
 */

const cli = (env: Record<string, string>, ...args: string[]) => runProgram(process.execPath, [path.join(ROOT, 'src/cli/main.ts'), ...args], env);

type Client = ReturnType<typeof httpClient>;

/** Reads of what existed before the backup, none of which the pushes during it change. */
async function readsOf(client: Client, customerId: string, requestIds: string[], irmNumbers: string[], eventIds: string[]): Promise<unknown[]> {
  const answers: unknown[] = [];
  const keep = (answer: { status: number; body: any }) => answers.push({ status: answer.status, body: answer.body });
  keep(await client.request('GET', `/api/v1/platform-customers/${customerId}`));
  for (const requestId of requestIds) {
    keep(await client.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: customerId, requestId } }));
    keep(await client.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: customerId, requestId } }));
  }
  for (const irmNumber of irmNumbers) keep(await client.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: customerId, irmNumber }, body: {} }));
  for (const eventId of eventIds) keep(await client.request('GET', `/api/v1/events/${eventId}`));
  return answers;
}

/** The copy's books: each IRM's balance adds up, and what it has utilised is exactly its reserved and generated lines. */
async function assertBooksBalance(storage: { dataDir: string; databaseUrl?: string | undefined }): Promise<number> {
  const database = await openDatabase({ databaseUrl: storage.databaseUrl, dataDir: storage.dataDir });
  try {
    return await database.scriptTransaction(async (query) => {
      const irms = await query(`select i.irm_number, i.remittance_fcc_amount::text as amount, i.irm_available_amt::text as available,
              i.irm_utilized_amt::text as utilised,
              coalesce((select sum(l.mapped_amount) from genebrc_request_lines l where l.irm_id = i.id and (l.reserved or l.status = 'GENERATED')), 0)::text as held
         from irms i`);
      for (const irm of irms) {
        assert.equal(cents(String(irm.available)) + cents(String(irm.utilised)), cents(String(irm.amount)), `IRM ${irm.irm_number} adds up`);
        assert.equal(cents(String(irm.utilised)), cents(String(irm.held)), `IRM ${irm.irm_number}: utilised is its reserved and generated lines`);
      }
      const [requests] = await query('select count(*)::int as count from genebrc_requests');
      return Number(requests!.count);
    });
  } finally {
    await database.close();
  }
}

async function backupAndRestore(backend: Backend, t: { diagnostic(message: string): void }): Promise<void> {
  const scratch = await scratchDatabase(backend);
  const sandbox = await startTestSandbox(scratch, { processingDelayMs: 100, pushAnswerDelayMs: 50 });
  const env = gatewayEnv(scratch, sandbox.url, { IRM_REFRESH_INTERVAL_SECONDS: '86400', RATE_LIMIT_PER_SECOND: '100000', RATE_LIMIT_BURST: '100000' });
  const backupFile = path.join(scratch.dataDir, '..', `${path.basename(scratch.dataDir)}-backup.${backend === 'embedded' ? 'tar.gz' : 'dump'}`);
  const restoredDir = fs.mkdtempSync(`${scratch.dataDir}-restored-`);
  let restoredUrl: string | undefined;
  let gateway: Running | undefined;
  try {
    gateway = startGateway(env);
    const base = await waitUntilReady(gateway);
    const apiKey = await gatewayApiKey(gateway, scratch, 'Backup platform');
    const client = httpClient(base, apiKey, 60_000);
    const customerId = await verifiedCustomer(client, `backup-${backend}@example.com`);
    await firstRefresh(client, customerId);
    const irms = await usableIrms(client, customerId, 40);
    const before = irms.slice(0, 3);
    const requestIds: string[] = [];
    for (const [index, irm] of before.entries()) {
      const pushed = await client.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(customerId, [lineFor(irm, 1, 1, { billNo: `BK${index}` })]) });
      assert.equal(pushed.status, 200, pushed.text);
      requestIds.push(pushed.body.requestId);
      await waitForFinal(client, customerId, pushed.body.requestId, 60_000);
    }
    const events = await client.request('GET', '/api/v1/events', { query: { limit: 20 } });
    assert.equal(events.status, 200, events.text);
    const eventIds = events.body.items.map((event: { id: string }) => event.id);
    assert.ok(eventIds.length >= 3, events.text);
    const irmNumbers = before.map((irm) => irm.irmNumber);
    const expected = await readsOf(client, customerId, requestIds, irmNumbers, eventIds);

    // Pushes keep coming while the backup is taken.
    let pushing = true;
    let during = 0;
    const queue = irms.slice(3);
    const workers = Array.from({ length: 3 }, async () => {
      while (pushing && queue.length > 0) {
        const irm = queue.shift()!;
        const pushed = await client.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(customerId, [lineFor(irm, 1, 1, { billNo: `BD${queue.length}` })]) });
        assert.equal(pushed.status, 200, pushed.text);
        during += 1;
      }
    });
    await sleep(300);
    if (backend === 'embedded') {
      const backup = await cli({ DATA_DIR: scratch.dataDir }, 'backup', backupFile, '--json');
      assert.equal(backup.code, 0, backup.stderr + backup.stdout);
      const answer = JSON.parse(backup.stdout);
      assert.equal(answer.file, backupFile);
      assert.equal(answer.bytes, fs.statSync(backupFile).size);
      assert.equal(fs.statSync(backupFile).mode & 0o777, 0o600, 'the backup is readable by its owner only');
      const again = await cli({ DATA_DIR: scratch.dataDir }, 'backup', backupFile);
      assert.equal(again.code, 2, 'an existing file is never overwritten');
      const held = await cli({ DATA_DIR: scratch.dataDir }, 'restore', backupFile);
      assert.equal(held.code, 1);
      assert.match(held.stderr, /Cannot run "restore": the embedded database .* is held by the running service/);
    } else {
      // The README's command, as pasted there.
      const dump = await runProgram('pg_dump', ['--format=custom', `--file=${backupFile}`, scratch.databaseUrl!], {});
      assert.equal(dump.code, 0, dump.stderr);
      const refused = await cli({ DATA_DIR: scratch.dataDir, DATABASE_URL: scratch.databaseUrl! }, 'backup', `${backupFile}.cli`);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /back up PostgreSQL with pg_dump/);
    }
    await sleep(300);
    pushing = false;
    await Promise.all(workers);
    assert.ok(during > 0, 'pushes ran while the backup was taken');
    await stopGateway(gateway);
    gateway = undefined;

    // Restored somewhere new: the embedded folder gets the key file beside it, PostgreSQL a fresh database.
    let restoredEnv: Record<string, string>;
    if (backend === 'embedded') {
      fs.copyFileSync(path.join(scratch.dataDir, 'encryption.key'), path.join(restoredDir, 'encryption.key'));
      const restore = await cli({ DATA_DIR: restoredDir }, 'restore', backupFile);
      assert.equal(restore.code, 0, restore.stderr + restore.stdout);
      assert.match(restore.stdout, /^Restored .* into /);
      restoredEnv = { ...env, DATA_DIR: restoredDir };
    } else {
      const name = `${new URL(scratch.databaseUrl!).pathname.slice(1)}_restored`;
      const admin = new pg.Client({ connectionString: postgresUrl()! });
      await admin.connect();
      await admin.query(`create database ${name}`);
      await admin.end();
      const url = new URL(scratch.databaseUrl!);
      url.pathname = `/${name}`;
      restoredUrl = url.toString();
      const restore = await runProgram('pg_restore', ['--no-owner', '--exit-on-error', `--dbname=${restoredUrl}`, backupFile], {});
      assert.equal(restore.code, 0, restore.stderr);
      restoredEnv = { ...env, DATA_DIR: restoredDir, DATABASE_URL: restoredUrl };
    }
    const requests = await assertBooksBalance({ dataDir: restoredDir, databaseUrl: restoredUrl });
    assert.ok(requests >= requestIds.length, `the copy holds the requests made before it (${requests})`);

    gateway = startGateway(restoredEnv);
    const restored = httpClient(await waitUntilReady(gateway), apiKey, 60_000);
    assert.deepEqual(await readsOf(restored, customerId, requestIds, irmNumbers, eventIds), expected);
    t.diagnostic(`${backend}: ${during} pushes during the backup; the copy holds ${requests} requests; ${fs.statSync(backupFile).size} bytes`);
  } finally {
    await stopGateway(gateway);
    await sandbox.close();
    if (restoredUrl) {
      const admin = new pg.Client({ connectionString: postgresUrl()! });
      await admin.connect();
      await admin.query(`drop database if exists ${new URL(restoredUrl).pathname.slice(1)} with (force)`);
      await admin.end();
    }
    fs.rmSync(restoredDir, { recursive: true, force: true });
    fs.rmSync(backupFile, { force: true });
    await scratch.drop();
  }
}

for (const backend of backends()) {
  describe(`backup and restore [${backend}]`, () => {
    test('a copy taken under pushes restores into a service that answers every earlier read as before', async (t) => backupAndRestore(backend, t));
  });
}
