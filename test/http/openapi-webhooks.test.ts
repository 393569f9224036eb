import assert from 'node:assert/strict';
import { SYSTEM_SOURCE } from '../../src/services/audit.ts';
import { after, before, describe, test } from 'node:test';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { loadConfig } from '../../src/config.ts';
import { EVENT_TYPES } from '../../src/domain/events.ts';
import { StatusSchema } from '../../src/schemas/genebrc-requests.ts';
import { createService, type Service } from '../../src/service.ts';
import { createPlatform } from '../../src/services/platforms.ts';
import { injectRequest, scratchDatabase } from '../support/harness.ts';

/** The OpenAPI document does not depend on the database: one embedded service, with no background work, serves it. */
describe('the OpenAPI webhooks section', () => {
  let service: Service;
  let drop: () => Promise<void>;
  let apiKey: string;
  let doc: any;

  before(async () => {
    const scratch = await scratchDatabase('embedded');
    drop = scratch.drop;
    service = await createService({
      config: loadConfig({
        DATA_DIR: scratch.dataDir,
        // The authority is never called; nothing is delivered (the test event stays in the outbox).
        AUTHORITY_URL: 'http://127.0.0.1:9',
        RUN_POLLER: 'false',
        RUN_WEBHOOKS: 'false',
        WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
        LOG_LEVEL: 'silent',
      }),
      logger: false,
    });
    apiKey = (await createPlatform(service.database.db, 'Webhook docs', SYSTEM_SOURCE)).apiKey;
    const response = await injectRequest(service, 'GET', '/openapi.json');
    assert.equal(response.status, 200);
    doc = response.body;
  });

  after(async () => {
    await service?.close();
    await drop?.();
  });

  /** The node a local reference points at (#/a/b), or undefined. */
  function resolve(ref: string): any {
    assert.match(ref, /^#\//, `${ref} is not a local reference`);
    return ref
      .slice(2)
      .split('/')
      .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
      .reduce((node: any, part) => node?.[part], doc);
  }

  function bodySchema(type: string): any {
    return doc.webhooks[type].post.requestBody.content['application/json'].schema;
  }

  test('lists exactly the event catalogue, one POST per event type', () => {
    assert.match(doc.openapi, /^3\.1\./);
    assert.ok(doc.webhooks, `no webhooks section; the document has ${Object.keys(doc).join(', ')}`);
    assert.deepEqual(Object.keys(doc.webhooks), [...EVENT_TYPES]);
    for (const type of EVENT_TYPES) {
      assert.deepEqual(Object.keys(doc.webhooks[type]), ['post'], type);
      assert.ok(doc.webhooks[type].post.summary, `${type} has no summary`);
      assert.ok(doc.webhooks[type].post.description, `${type} has no description`);
    }
  });

  test('each POST carries the event envelope with its own type, the three Standard Webhooks headers and a 2xx answer', () => {
    for (const type of EVENT_TYPES) {
      const operation = doc.webhooks[type].post;
      assert.equal(operation.requestBody.required, true, type);
      const schema = bodySchema(type);
      assert.equal(schema.type, 'object', type);
      assert.deepEqual([...schema.required].sort(), ['data', 'id', 'platformCustomerId', 'timestamp', 'type'], type);
      assert.deepEqual(Object.keys(schema.properties).sort(), ['data', 'id', 'platformCustomerId', 'timestamp', 'type'], type);
      assert.deepEqual(schema.properties.type.enum, [type]);
      assert.equal(schema.properties.timestamp.format, 'date-time', type);
      const headers = Object.fromEntries(operation.parameters.map((parameter: any) => [parameter.name, parameter]));
      assert.deepEqual(Object.keys(headers).sort(), ['webhook-id', 'webhook-signature', 'webhook-timestamp'], type);
      for (const header of Object.values<any>(headers)) {
        assert.equal(header.in, 'header', `${type} ${header.name}`);
        assert.equal(header.required, true, `${type} ${header.name}`);
        assert.equal(header.schema.type, 'string', `${type} ${header.name}`);
        assert.ok(header.description, `${type} ${header.name} is not described`);
      }
      assert.deepEqual(Object.keys(operation.responses), ['2XX'], type);
      assert.match(operation.responses['2XX'].description, /^Received/);
    }
  });

  test("each event's data is the right shape", () => {
    const dataOf = (type: string) => bodySchema(type).properties.data;
    // genebrc.request.*: the status operation's answer, the very schema POST /genebrc/status answers with.
    const statusAnswer = doc.paths['/api/v1/genebrc/status'].post.responses['200'].content['application/json'].schema;
    for (const type of EVENT_TYPES.filter((name) => name.startsWith('genebrc.request.'))) {
      const data = resolve(dataOf(type).$ref);
      assert.ok(data, `${type}: ${dataOf(type).$ref} does not resolve`);
      const { description: _ignored, ...shape } = data;
      assert.deepEqual(shape, statusAnswer, type);
      assert.deepEqual(Object.keys(data.properties), Object.keys(StatusSchema.properties), type);
    }
    assert.equal(dataOf('platform_customer.verified').$ref, '#/components/schemas/PlatformCustomer');
    assert.equal(dataOf('platform_customer.credentials_invalid').$ref, '#/components/schemas/PlatformCustomer');
    assert.equal(dataOf('irm.received').$ref, '#/components/schemas/Irm');
    assert.equal(dataOf('ebrc.generated').$ref, '#/components/schemas/Ebrc');
    // bulk_upload.completed: the upload as GET /genebrc/uploads/{id} answers it.
    assert.equal(dataOf('bulk_upload.completed').$ref, '#/components/schemas/BulkUpload');
    assert.equal(doc.paths['/api/v1/genebrc/uploads/{id}'].get.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/BulkUpload');
    assert.deepEqual(Object.keys(dataOf('webhook.test').properties).sort(), ['endpointId', 'message', 'url']);
    // Every event but the test concerns a customer.
    for (const type of EVENT_TYPES) {
      const customer = bodySchema(type).properties.platformCustomerId;
      assert.equal(customer.type, type === 'webhook.test' ? 'null' : 'string', type);
    }
  });

  test('every event body has an example, of its own type, that its schema takes', () => {
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addSchema({ ...doc, $id: 'openapi.json' });
    for (const type of EVENT_TYPES) {
      const media = doc.webhooks[type].post.requestBody.content['application/json'];
      const examples = Object.values(media.examples ?? {}) as { summary?: string; value: any }[];
      assert.equal(examples.length, 1, `${type} has one example`);
      const [example] = examples;
      assert.ok(example!.summary, `${type}: the example has a summary`);
      assert.equal(example!.value.type, type);
      assert.match(example!.value.id, /^evt_[A-Za-z0-9]{32}$/);
      const validate = ajv.getSchema(`openapi.json#/webhooks/${type}/post/requestBody/content/application~1json/schema`);
      assert.ok(validate);
      assert.ok(validate(example!.value), `${type}: ${JSON.stringify(validate.errors)}`);
      // And no other type's schema takes it.
      const other = EVENT_TYPES.find((candidate) => candidate !== type)!;
      assert.equal(ajv.getSchema(`openapi.json#/webhooks/${other}/post/requestBody/content/application~1json/schema`)?.(example!.value), false);
    }
  });

  test('every $ref in the document resolves, in the webhooks section as elsewhere', () => {
    const refs = new Set<string>();
    JSON.stringify(doc, (key, value) => {
      if (key === '$ref') refs.add(value as string);
      return value;
    });
    assert.ok([...refs].some((ref) => ref === '#/components/schemas/Irm'), 'the webhooks section refers to the shared schemas');
    for (const ref of refs) assert.ok(resolve(ref), `unresolved ${ref}`);
  });

  test('the webhook.test event the API sends matches its documented body', async () => {
    const created = await injectRequest(service, 'POST', '/api/v1/webhook-endpoints', {
      key: apiKey,
      body: { url: 'http://127.0.0.1:9/hooks', enabledEvents: ['*'] },
    });
    assert.equal(created.status, 201, created.text);
    const sent = await injectRequest(service, 'POST', `/api/v1/webhook-endpoints/${created.body.id}/test`, { key: apiKey });
    assert.equal(sent.status, 202, sent.text);
    // The document is the root, so that the section's #/components/… references resolve as they do in it.
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addSchema({ ...doc, $id: 'openapi.json' });
    const validate = ajv.getSchema('openapi.json#/webhooks/webhook.test/post/requestBody/content/application~1json/schema');
    assert.ok(validate);
    assert.ok(validate(sent.body), JSON.stringify(validate.errors));
    const stored = await injectRequest(service, 'GET', `/api/v1/events/${sent.body.id}`, { key: apiKey });
    assert.equal(stored.status, 200, stored.text);
    assert.ok(validate(stored.body), JSON.stringify(validate.errors));
    // Another type's body does not take it.
    const other = ajv.getSchema('openapi.json#/webhooks/irm.received/post/requestBody/content/application~1json/schema');
    assert.equal(other?.(sent.body), false);
  });
});
