import { SYSTEM_SOURCE } from '../../src/services/audit.ts';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { createService, type Service } from '../../src/service.ts';
import { CredentialsVault, keyIdOf } from '../../src/services/credentials-vault.ts';
import { createPlatform } from '../../src/services/platforms.ts';
import { loadKeyRing } from '../../src/services/server-key.ts';
import { backends, injectRequest, scratchDatabase, startTestSandbox, type Backend } from '../support/harness.ts';
import { WebhookReceiver, type ReceivedRequest } from '../support/webhook-receiver.ts';
import { verifiedCustomer } from '../support/workflow.ts';

const CHILD = path.join(import.meta.dirname, '../support/reseal-child.ts');
const ENDPOINTS = 6;
const CHILD_BATCH = 3;

type Scratch = { dataDir: string; databaseUrl?: string };

function envFor(scratch: Scratch, keys: Record<string, string>, authorityUrl: string): Record<string, string> {
  return {
    DATA_DIR: scratch.dataDir,
    ...(scratch.databaseUrl ? { DATABASE_URL: scratch.databaseUrl } : {}),
    AUTHORITY_URL: authorityUrl,
    ...keys,
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    // Generous: this test is about keys, not about a sandbox slowed by a busy machine.
    AUTHORITY_TIMEOUT_MS: '60000',
    LOG_LEVEL: 'silent',
  };
}

function start(scratch: Scratch, keys: Record<string, string>, authorityUrl: string, runPoller: boolean): Promise<Service> {
  return createService({ config: loadConfig({ ...envFor(scratch, keys, authorityUrl), RUN_POLLER: String(runPoller) }), logger: false });
}

async function countsOf(service: Service): Promise<Record<string, number>> {
  const status = await service.keyRotation.status();
  return Object.fromEntries(status.keys.map(({ keyId, values }) => [keyId, values]));
}

/** Every sealed value the database holds, by key id, read straight from the rows. */
async function sealedKeyIds(service: Service): Promise<string[]> {
  const db = service.database.db;
  const customers = await db.selectFrom('platform_customers').select(['authority_credentials', 'authority_api_credentials']).execute();
  const endpoints = await db.selectFrom('webhook_endpoints').select(['secret', 'previous_secret']).execute();
  const answers = await db.selectFrom('idempotency_keys').select('response_body').where('response_body', 'like', 'sealed:%').execute();
  return [
    ...customers.flatMap((row) => [row.authority_credentials, row.authority_api_credentials]),
    ...endpoints.flatMap((row) => [row.secret, row.previous_secret]),
    ...answers.map((row) => row.response_body!.slice('sealed:'.length)),
  ]
    .filter((value): value is string => value !== null)
    .map(keyIdOf);
}

/** Runs the killable re-sealing child until it is inside its second batch, then kills it with SIGKILL. */
async function killMidway(scratch: Scratch, keys: Record<string, string>): Promise<string> {
  const child = spawn(process.execPath, [CHILD], {
    env: { PATH: process.env.PATH ?? '', ...envFor(scratch, keys, 'http://127.0.0.1:9'), RESEAL_BATCH: String(CHILD_BATCH) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.includes('inside')) resolve();
    });
    child.on('close', (code) => reject(new Error(`the re-sealing child ended (${code}) before its second batch: ${stdout} ${stderr}`)));
  });
  child.kill('SIGKILL');
  await closed;
  return stdout;
}

async function webhookSignatureVerifies(service: Service, apiKey: string, receiver: WebhookReceiver, endpoint: { id: string; secret: string; path: string }): Promise<void> {
  const { id: endpointId, secret, path: hookPath } = endpoint;
  const sent = await injectRequest(service, 'POST', `/api/v1/webhook-endpoints/${endpointId}/test`, { key: apiKey });
  assert.equal(sent.status, 202, sent.text);
  // A test event goes to its endpoint alone (the endpoints subscribe to an event this test never makes, so no backlog
  // of IRM events is delivered ahead of it).
  const ofThis = (request: ReceivedRequest) => request.url === hookPath && request.headers['webhook-id'] === sent.body.id;
  const delivery = (await receiver.waitFor((requests) => requests.some(ofThis), 60_000, 'the test delivery')).find(ofThis);
  const event = new Webhook(secret).verify(delivery!.body, {
    'webhook-id': delivery!.headers['webhook-id']!,
    'webhook-timestamp': delivery!.headers['webhook-timestamp']!,
    'webhook-signature': delivery!.headers['webhook-signature']!,
  });
  assert.ok(event, 'the delivery is signed with the secret the endpoint was created with');
}

async function credentialsWork(service: Service, apiKey: string, customerId: string): Promise<void> {
  const refreshed = await injectRequest(service, 'POST', '/api/v1/irm/refresh', { key: apiKey, query: { platformCustomerId: customerId, limit: 1 }, body: {} });
  assert.equal(refreshed.status, 200, `the stored API credential set still signs in to the sandbox: ${refreshed.text}`);
}

async function rotation(backend: Backend): Promise<void> {
  const scratch = await scratchDatabase(backend);
  const sandbox = await startTestSandbox(scratch);
  const receiver = await WebhookReceiver.start();
  const a = randomBytes(32).toString('base64');
  const b = randomBytes(32).toString('base64');
  const onlyA = { ENCRYPTION_KEY: a };
  const ringBA = { ENCRYPTION_KEYS: `next:${b},default:${a}` };
  const onlyB = { ENCRYPTION_KEYS: `next:${b}` };
  try {
    // Under key A alone: a verified customer, endpoints (their creation answers kept sealed for Idempotency-Key replays).
    const first = await start(scratch, onlyA, sandbox.url, false);
    const { apiKey } = await createPlatform(first.database.db, 'Rotation', SYSTEM_SOURCE);
    const customerId = await verifiedCustomer({ request: (m, u, o = {}) => injectRequest(first, m, u, { key: apiKey, ...o }) }, `rotation-${backend}@example.com`);
    const endpoints: { id: string; secret: string; idempotencyKey: string; path: string }[] = [];
    for (let index = 0; index < ENDPOINTS; index++) {
      const idempotencyKey = `endpoint-${index}`;
      const created = await injectRequest(first, 'POST', '/api/v1/webhook-endpoints', {
        key: apiKey,
        headers: { 'idempotency-key': idempotencyKey },
        body: { url: receiver.url(`/hooks/${index}`), enabledEvents: ['bulk_upload.completed'] },
      });
      assert.equal(created.status, 201, created.text);
      endpoints.push({ id: created.body.id, secret: created.body.secret, idempotencyKey, path: `/hooks/${index}` });
    }
    const underA = await sealedKeyIds(first);
    assert.equal(underA.length, 2 + 2 * ENDPOINTS, 'two credential values, and a secret and a kept answer per endpoint');
    assert.ok(underA.every((id) => id === 'default'), 'ENCRYPTION_KEY alone seals under the key id default');
    await first.close();

    // Ring B,A without the job: new seals are under B, the old values still open.
    const rotated = await start(scratch, ringBA, sandbox.url, false);
    const late = await injectRequest(rotated, 'POST', '/api/v1/webhook-endpoints', { key: apiKey, body: { url: receiver.url('/hooks/late'), enabledEvents: ['bulk_upload.completed'] } });
    assert.equal(late.status, 201, late.text);
    const lateRow = await rotated.database.db.selectFrom('webhook_endpoints').select('secret').where('id', '=', late.body.id).executeTakeFirstOrThrow();
    assert.equal(keyIdOf(lateRow.secret), 'next', 'a new value is sealed with the current key');
    await credentialsWork(rotated, apiKey, customerId);
    assert.deepEqual(await countsOf(rotated), { next: 1, default: underA.length });
    await rotated.close();

    // A re-sealing run killed with SIGKILL inside its second batch: the first batch stays done, the second rolls back.
    const output = await killMidway(scratch, ringBA);
    // Batches walk one column at a time: a customer's two values, then the endpoint secrets in batches of CHILD_BATCH.
    const committed = Number([...output.matchAll(/committed (\d+)\n/g)].at(-1)?.[1] ?? 0);
    assert.ok(committed >= 1 && committed < underA.length, `some values were re-sealed before the kill: ${output}`);
    const afterKill = await start(scratch, ringBA, sandbox.url, false);
    const midway = await countsOf(afterKill);
    assert.deepEqual(midway, { next: 1 + committed, default: underA.length - committed }, 'exactly the committed batches moved; the one under way rolled back');
    await afterKill.close();

    // Dropping A now is refused, naming the key id and how many values still use it.
    await assert.rejects(start(scratch, onlyB, sandbox.url, false), (error: unknown) => {
      assert.ok(error instanceof ConfigError, String(error));
      assert.match(error.message, new RegExp(`key id default \\(${underA.length - committed} sealed values\\)`));
      assert.ok(!error.message.includes(a) && !error.message.includes(b), 'no key in the message');
      return true;
    });

    // Ring B,A with the job: it goes on where the killed run stopped, until nothing is left under A.
    const resumed = await start(scratch, ringBA, sandbox.url, true);
    try {
      const deadline = Date.now() + 120_000;
      while ((await countsOf(resumed)).default !== 0) {
        assert.ok(Date.now() < deadline, `values left under the key default after 120 s: ${JSON.stringify(await countsOf(resumed))}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      assert.deepEqual(await countsOf(resumed), { next: 2 + 2 * ENDPOINTS + 1, default: 0 });
      assert.ok((await sealedKeyIds(resumed)).every((id) => id === 'next'), 'no value left under A');
      // A retry of a creation made under A, while A is still in the ring: the same request (its fingerprint was made
      // with A), answered from the kept answer re-sealed under B.
      const replay = await injectRequest(resumed, 'POST', '/api/v1/webhook-endpoints', {
        key: apiKey,
        headers: { 'idempotency-key': endpoints[1]!.idempotencyKey },
        body: { url: receiver.url(endpoints[1]!.path), enabledEvents: ['bulk_upload.completed'] },
      });
      assert.equal(replay.status, 201, replay.text);
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      assert.equal(replay.body.secret, endpoints[1]!.secret, 'the kept answer, re-sealed, replays the same secret');
    } finally {
      await resumed.close();
    }

    // B alone: starts, and every secret still works.
    const final = await start(scratch, onlyB, sandbox.url, true);
    try {
      const vault = new CredentialsVault(loadKeyRing(loadConfig(envFor(scratch, onlyB, sandbox.url))));
      await credentialsWork(final, apiKey, customerId);
      for (const endpoint of [endpoints[0]!, endpoints.at(-1)!]) await webhookSignatureVerifies(final, apiKey, receiver, endpoint);
      const answer = await final.database.db.selectFrom('idempotency_keys').select(['platform_id', 'response_body']).where('key', '=', endpoints[2]!.idempotencyKey).executeTakeFirstOrThrow();
      const kept = JSON.parse(vault.openAnswer(`${answer.platform_id}\u0000${endpoints[2]!.idempotencyKey}`, answer.response_body!.slice('sealed:'.length)));
      assert.equal(kept.secret, endpoints[2]!.secret, 'a kept answer opens under B alone');
      const row = await final.database.db.selectFrom('platform_customers').select('authority_credentials').where('id', '=', customerId).executeTakeFirstOrThrow();
      assert.equal(vault.open(customerId, row.authority_credentials!).username, 'demo.exporter', 'the portal login opens under B');
    } finally {
      await final.close();
    }
  } finally {
    await receiver.close();
    await sandbox.close();
    await scratch.drop();
  }
}

describe('the encryption key is rotated with the service running', { concurrency: true }, () => {
  for (const backend of backends()) {
    test(`data sealed under A, ring B,A, a re-sealing killed midway and resumed, then B alone [${backend}]`, () => rotation(backend));
  }
});
