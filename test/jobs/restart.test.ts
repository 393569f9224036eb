import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { API_KEY, gatewayApiKey, gatewayEnv, httpClient, startGateway, stopGateway, waitUntilReady, type Running } from '../support/gateway.ts';
import { postgresUrl, scratchDatabase, startTestSandbox } from '../support/harness.ts';
import { cents, irmNow, lineFor, pushBody, usableIrms, verifiedCustomer, waitForFinal } from '../support/workflow.ts';

/**
 * Push, SIGKILL right after the acknowledgement (before the sandbox has processed it), start again on the same
 * data, and wait: the request reaches its final state with an eBRC number without anybody asking for status. The
 * client, unsure of its first answer, retries the push with the same Idempotency-Key after the restart: it gets the
 * same acknowledgement, and there is still one request and one reservation.
 */
async function killAndRestart(backend: 'embedded' | 'postgres'): Promise<void> {
  const scratch = await scratchDatabase(backend);
  // The authority runs here, in the test's process: the service is killed, not the authority. It processes a push
  // 2 s after accepting it, so the kill comes before.
  const sandbox = await startTestSandbox(scratch, { processingDelayMs: 2_000 }).catch(async (error: unknown) => {
    await scratch.drop();
    throw error;
  });
  const env = gatewayEnv(scratch, sandbox.url);
  let gateway: Running | undefined;
  try {
    gateway = startGateway(env);
    const firstBase = await waitUntilReady(gateway);
    const apiKey = await gatewayApiKey(gateway, scratch, 'Restart platform');
    const client = httpClient(firstBase, apiKey);
    const id = await verifiedCustomer(client, 'restart@example.com');
    const [irm] = await usableIrms(client, id, 1);
    const push = { body: pushBody(id, [lineFor(irm, 1, 12.5)]), headers: { 'idempotency-key': `restart-${backend}` } };
    const ack = await client.request('POST', '/api/v1/genebrc/push-irm', push);
    gateway.child.kill('SIGKILL');
    assert.equal(ack.status, 200, ack.text);
    assert.equal(ack.body.ackStatus, 'Validated', ack.text);
    await gateway.exited;
    assert.equal(gateway.child.signalCode, 'SIGKILL');

    const lockFile = path.join(scratch.dataDir, 'ebrc-gateway.lock');
    const killedPid = gateway.child.pid;
    if (backend === 'embedded') assert.equal(Number.parseInt(fs.readFileSync(lockFile, 'utf8'), 10), killedPid, 'the killed process left its lock');

    // Same folder (its lock file names a dead process, and is taken over) or same database.
    gateway = startGateway(env);
    const restarted = httpClient(await waitUntilReady(gateway), apiKey);
    if (backend === 'embedded') {
      assert.equal(Number.parseInt(fs.readFileSync(lockFile, 'utf8'), 10), gateway.child.pid);
      assert.doesNotMatch(gateway.output(), API_KEY, 'no second demo platform');
    }
    const retried = await restarted.request('POST', '/api/v1/genebrc/push-irm', push);
    assert.equal(retried.status, 200, retried.text);
    assert.equal(retried.headers['idempotent-replayed'], 'true');
    assert.deepEqual(retried.body, ack.body, 'the retry after the kill gets the first acknowledgement');
    const done = await waitForFinal(restarted, id, ack.body.requestId, 30_000);
    assert.equal(done.status, 'PROCESSED', JSON.stringify(done));
    assert.equal(done.authorityAckId, ack.body.authorityAckId);
    assert.ok(done.processedAt);
    assert.match(done.ebrcBulkGenStatusList[0].ebrcNumber, /^EBRC\d{18}$/);
    const atAuthority = await sandbox.database.db
      .selectFrom('authority_sandbox.request_lines')
      .select('ebrc_number')
      .where('request_id', '=', ack.body.requestId)
      .execute();
    assert.deepEqual(atAuthority.map((line) => line.ebrc_number), [done.ebrcBulkGenStatusList[0].ebrcNumber], 'the authority holds the request once, with that eBRC number');
    const listed = await restarted.request('GET', '/api/v1/genebrc', { query: { platformCustomerId: id } });
    assert.equal(listed.body.length, 1, 'the acknowledged request is there once');
    const after = await irmNow(restarted, id, irm.irmNumber);
    assert.equal(cents(after.irmUtilizedAmt), cents(irm.irmUtilizedAmt) + 1250n, 'its amount is utilised once');
    assert.equal(cents(after.irmAvailableAmt), cents(irm.irmAvailableAmt) - 1250n);
  } finally {
    try {
      await stopGateway(gateway);
      await sandbox.close();
    } finally {
      await scratch.drop();
    }
  }
}

describe('a gateway killed after acknowledging a push', () => {
  test('finishes the request after a restart on the embedded database', () => killAndRestart('embedded'));
  test('finishes the request after a restart on PostgreSQL', { skip: postgresUrl() ? false : 'no PostgreSQL for the tests' }, () =>
    killAndRestart('postgres'));
});
