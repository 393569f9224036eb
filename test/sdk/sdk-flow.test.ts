import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import {
  createClient,
  EbrcApiError,
  listIrms,
  listItems,
  listRequests,
  verifyWebhook,
  waitForFinalStatus,
  WebhookVerificationError,
  type EbrcClient,
  type Irm,
} from '@ebrc-gateway/sdk';
import { WebhookReceiver } from '../support/webhook-receiver.ts';
import { lineFor } from '../support/workflow.ts';
import { liveService } from './live.ts';

const run = promisify(execFile);
const REFUSED_PURPOSES = ['P0101', 'P0108', 'P0802', 'P0806'];

let live: Awaited<ReturnType<typeof liveService>>;
let client: EbrcClient;
let receiver: WebhookReceiver;

before(async () => {
  live = await liveService();
  client = createClient({ baseUrl: live.baseUrl, apiKey: live.platformA.apiKey });
  receiver = await WebhookReceiver.start();
});
after(async () => {
  await receiver?.close();
  await live?.stop();
});

async function verifiedCustomer(email: string): Promise<string> {
  const { data: customer } = await client.POST('/api/v1/platform-customers/', { body: { name: 'SDK', email, companyName: 'SDK Exports' } });
  const { data: checked } = await client.POST('/api/v1/platform-customers/{id}/check-authority-credentials', {
    params: { path: { id: customer.id } },
    body: { authorityUsername: 'demo.exporter', authorityPassword: 'Sandbox@123' },
  });
  assert.equal(checked.id, customer.id);
  return customer.id;
}

async function usableIrms(customerId: string, count: number): Promise<Irm[]> {
  const irms: Irm[] = [];
  for await (const irm of listIrms(client, { platformCustomerId: customerId })) {
    if (irm.irmStatus === 'fresh' && irm.remittanceFCC !== 'INR' && !REFUSED_PURPOSES.includes(irm.purposeOfRemittance)) irms.push(irm);
    if (irms.length === count) break;
  }
  assert.equal(irms.length, count);
  return irms;
}

/** A line mapping the whole available amount of a fresh IRM (the invoice numbers of this file start at 5001). */
function line(irm: Irm, serialNo: number) {
  return { ...lineFor(irm, serialNo, irm.irmAvailableAmt, { sbCumInvoiceNumber: String(5000 + serialNo) }), isVostro: 'N' as const };
}

async function push(customerId: string, irms: Irm[]): Promise<string> {
  const { data: ack } = await client.POST('/api/v1/genebrc/push-irm', {
    body: { platformCustomerId: customerId, recordResCount: irms.length, uploadType: '101', decalarationFlag: 'Y', ebrcBulkGenDtos: irms.map((irm, i) => line(irm, i + 1)) },
  });
  assert.equal(ack.ackStatus, 'Validated', JSON.stringify(ack));
  return ack.requestId;
}

test('the complete flow over HTTP: customer, credentials, IRMs, push, final status with eBRC numbers; webhooks verify', async () => {
  // Only the event this test reads: with '*', its delivery waited behind one irm.received delivery per IRM of the
  // customer's pull, more than a slow machine delivers in the 30 s the test waits.
  const { data: endpoint } = await client.POST('/api/v1/webhook-endpoints', { body: { url: receiver.url('/flow'), enabledEvents: ['genebrc.request.processed'] } });
  const customerId = await verifiedCustomer('flow@example.com');
  const irms = await usableIrms(customerId, 2);
  const requestId = await push(customerId, irms);
  const final = await waitForFinalStatus(client, { platformCustomerId: customerId, requestId }, { timeoutMs: 60_000, intervalMs: 200 });
  assert.equal(final.status, 'PROCESSED');
  assert.equal(final.ebrcBulkGenStatusList.length, 2);
  for (const entry of final.ebrcBulkGenStatusList) assert.ok(entry.ebrcNumber, `line ${entry.serialNo} has an eBRC number`);

  // The service's real deliveries verify with the endpoint's secret; a tampered one does not.
  const [delivery] = await receiver.waitFor((requests) => requests.some((r) => r.url === '/flow' && r.body.includes('genebrc.request.processed')), 30_000);
  const processed = receiver.requests.find((r) => r.url === '/flow' && r.body.includes('genebrc.request.processed'))!;
  assert.ok(delivery);
  const event = verifyWebhook(processed.rawBody, processed.headers, endpoint.secret);
  assert.equal(event.type, 'genebrc.request.processed');
  assert.equal(event.id, processed.headers['webhook-id']);
  const tampered = processed.body.replace('PROCESSED', 'FAILED');
  assert.throws(() => verifyWebhook(tampered, processed.headers, endpoint.secret), (error: unknown) => {
    assert.ok(error instanceof WebhookVerificationError);
    assert.equal(error.reason, 'no_matching_signature');
    return true;
  });
  assert.throws(() => verifyWebhook(processed.body, processed.headers, 'whsec_' + Buffer.from('another secret').toString('base64')), WebhookVerificationError);
});

test('the README quickstart runs as written against the live service', async () => {
  const example = path.resolve(import.meta.dirname, '../../packages/sdk/examples/quickstart.ts');
  const { stdout } = await run(process.execPath, [example], {
    env: { ...process.env, EBRC_URL: live.baseUrl, EBRC_API_KEY: live.platformA.apiKey },
    timeout: 150_000,
  });
  assert.match(stdout, /pushed \S+: Validated/);
  assert.match(stdout, /request \S+: PROCESSED/);
  assert.match(stdout, /line 1: GENERATED \S+/);
});

test('listItems walks every page of the { items, meta } lists: customers, webhook endpoints, deliveries, events', async () => {
  const other = createClient({ baseUrl: live.baseUrl, apiKey: live.platformB.apiKey });
  const created: string[] = [];
  for (let i = 0; i < 5; i++) {
    const { data } = await other.POST('/api/v1/platform-customers/', { body: { name: `Pager ${i}`, email: `pager${i}@example.com`, companyName: 'Pager' } });
    created.push(data.id);
  }
  const customers = [];
  for await (const customer of listItems(other, '/api/v1/platform-customers', {}, { pageSize: 2 })) customers.push(customer.id);
  assert.deepEqual([...customers].sort(), [...created].sort());
  const searched = [];
  for await (const customer of listItems(other, '/api/v1/platform-customers', { query: { search: 'pager3' } }, { pageSize: 1 })) searched.push(customer.email);
  assert.deepEqual(searched, ['pager3@example.com']);

  const endpoints: string[] = [];
  for (let i = 0; i < 3; i++) {
    const { data } = await other.POST('/api/v1/webhook-endpoints', { body: { url: receiver.url(`/pager${i}`), enabledEvents: ['webhook.test'] } });
    endpoints.push(data.id);
  }
  const listed = [];
  for await (const endpoint of listItems(other, '/api/v1/webhook-endpoints', {}, { pageSize: 2 })) listed.push(endpoint.id);
  assert.deepEqual([...listed].sort(), [...endpoints].sort());

  const endpointId = endpoints[0]!;
  for (let i = 0; i < 3; i++) await other.POST('/api/v1/webhook-endpoints/{id}/test', { params: { path: { id: endpointId } }, body: {} });
  await receiver.waitFor((requests) => requests.filter((r) => r.url === '/pager0').length >= 3, 30_000, 'three test deliveries');
  let deliveries: unknown[] = [];
  for (let tries = 0; tries < 50; tries++) {
    deliveries = [];
    for await (const delivery of listItems(other, '/api/v1/webhook-endpoints/{id}/deliveries', { path: { id: endpointId } }, { pageSize: 2 })) deliveries.push(delivery);
    if (deliveries.length >= 3) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.equal(deliveries.length, 3);

  const { data: firstPage } = await other.GET('/api/v1/events', { params: { query: { page: 1, limit: 1 } } });
  const events = [];
  for await (const event of listItems(other, '/api/v1/events', {}, { pageSize: 2 })) events.push(event.id);
  assert.equal(events.length, firstPage.meta.totalItems);
  assert.ok(events.length >= 3);
  assert.equal(new Set(events).size, events.length);
});

test('listIrms walks { data, meta: { total } } and listRequests follows Link over a plain array', async () => {
  const customerId = await verifiedCustomer('pages@example.com');
  const { data: first } = await client.POST('/api/v1/irm/refresh', { params: { query: { platformCustomerId: customerId, page: 1, limit: 1 } }, body: {} });
  let count = 0;
  const seen = new Set<string>();
  for await (const irm of listIrms(client, { platformCustomerId: customerId }, { pageSize: 100 })) {
    count++;
    seen.add(irm.irmNumber);
  }
  assert.equal(count, first.meta.total);
  assert.equal(seen.size, count);

  const irms = await usableIrms(customerId, 3);
  const pushed = [];
  for (const irm of irms) pushed.push(await push(customerId, [irm]));
  const listed = [];
  for await (const record of listRequests(client, { platformCustomerId: customerId }, { pageSize: 2 })) listed.push(record.requestId);
  assert.deepEqual([...listed].sort(), [...pushed].sort());
  const { response } = await client.GET('/api/v1/genebrc', { params: { query: { platformCustomerId: customerId, page: 1, limit: 2 } } });
  assert.equal(response.headers.get('x-total-count'), '3');
});

test('a problem answer is thrown as EbrcApiError with code, status, requestId, errors and detail', async () => {
  const missing = '00000000-0000-4000-8000-000000000000';
  const notFound = await client.GET('/api/v1/platform-customers/{id}', { params: { path: { id: missing } } }).then(
    () => assert.fail('expected a 404'),
    (error: unknown) => error,
  );
  assert.ok(notFound instanceof EbrcApiError);
  assert.equal(notFound.status, 404);
  assert.equal(notFound.code, 'not_found');
  assert.ok(notFound.requestId);
  assert.equal(notFound.requestId, notFound.response.headers.get('x-request-id'));
  assert.ok(notFound.detail.length > 0);

  const invalid = await client.POST('/api/v1/platform-customers/', { body: { name: 'x', email: 'not an email', companyName: 'x' } }).then(
    () => assert.fail('expected a 400'),
    (error: unknown) => error,
  );
  assert.ok(invalid instanceof EbrcApiError);
  assert.equal(invalid.status, 400);
  assert.equal(invalid.code, 'validation_failed');
  assert.ok(invalid.errors.some((entry) => entry.path === '/email'), JSON.stringify(invalid.errors));

  const anonymous = createClient({ baseUrl: live.baseUrl, apiKey: 'wrong' });
  await assert.rejects(anonymous.GET('/api/v1/events', { params: { query: { page: 1, limit: 1 } } }), (error: unknown) => {
    assert.ok(error instanceof EbrcApiError);
    assert.equal(error.status, 401);
    assert.match(error.code, /^api_key_/);
    return true;
  });
});
