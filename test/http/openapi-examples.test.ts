import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { EXAMPLE_CUSTOMER_ID, EXAMPLE_EBRC_NUMBER, EXAMPLE_EVENT_ID, EXAMPLE_REQUEST_ID, EXAMPLE_WEBHOOK_ENDPOINT_ID } from '../../src/schemas/common.ts';
import { describeEachBackend, type Harness, type TestResponse } from '../support/harness.ts';
import { firstRefresh, usableIrms, verifiedCustomer } from '../support/workflow.ts';

/**
 * Contract 12: the OpenAPI document names every operation and gives an example for every body and answer, and its
 * examples work. Every request example is sent to a live service (the ids it names replaced by ones that service made)
 * and must get the status its document shows for it, with a body that its response schema accepts; every answer
 * example must match its own schema.
 *
 * A request example and the answer it gets share a name (pushIrm's `validated` is answered by the 200's `validated`);
 * an example with no namesake answer expects the operation's success status.
 */

const METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const;

/** The order examples are sent in, so that each finds what it needs (a request to ask about, an event to redeliver). */
const SEND_ORDER = [
  'getHealth',
  'getReadiness',
  'createPlatformCustomer',
  'listPlatformCustomers',
  'getPlatformCustomer',
  'checkAuthorityCredentials',
  'putAuthorityApiCredentials',
  'refreshIrms',
  'matchIrms',
  'getIrmTemplate',
  'pushIrm',
  'getGenebrcStatus',
  'listGenebrcRequests',
  'listEbrcs',
  'getEbrcCertificate',
  'getEbrcRegister',
  'getPlatformEbrcRegister',
  'getIrmUtilisationReport',
  'createUpload',
  'getUpload',
  'listUploads',
  'reconcilePlatformCustomer',
  'listReconciliations',
  'createWebhookEndpoint',
  'listWebhookEndpoints',
  'getWebhookEndpoint',
  'updateWebhookEndpoint',
  'rotateWebhookEndpointSecret',
  'testWebhookEndpoint',
  'listWebhookDeliveries',
  'listEvents',
  'getEvent',
  'redeliverWebhookEvent',
  'deleteWebhookEndpoint',
  'createPlatform',
  'listPlatforms',
  'getPlatform',
  'updatePlatform',
  'issueApiKey',
  'listApiKeys',
  'getApiKey',
  'revokeApiKey',
  'createConsoleUser',
  'listConsoleUsers',
  'updateConsoleUser',
  'backupEmbeddedDatabase',
  'getEncryptionStatus',
  'listAuditLog',
  'listAuditLogAdmin',
  'getMetrics',
];

/** The admin API's bearer token for this service (/admin/v1 examples). */
const ADMIN_TOKEN = 'openapi-examples-admin-token-0123456789abcdef';

type Operation = { path: string; method: (typeof METHODS)[number]; pointer: string; op: any };
type Example = { name: string; value: unknown };

const escapePointer = (part: string) => part.replaceAll('~', '~0').replaceAll('/', '~1');

function operationsOf(doc: any): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const method of METHODS) {
      if (item[method]) operations.push({ path, method, pointer: `/paths/${escapePointer(path)}/${method}`, op: item[method] });
    }
  }
  return operations;
}

/** A media object's examples, named (`example` alone is named "example"). */
function examplesOf(media: any): Example[] {
  if (media.examples) return Object.entries<any>(media.examples).map(([name, example]) => ({ name, value: example.value }));
  if (media.example !== undefined) return [{ name: 'example', value: media.example }];
  return [];
}

function deepReplace(value: unknown, replacements: Map<string, string>): unknown {
  if (typeof value === 'string') return replacements.get(value) ?? value;
  if (Array.isArray(value)) return value.map((item) => deepReplace(item, replacements));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, deepReplace(item, replacements)]));
  }
  return value;
}

describeEachBackend(
  'the OpenAPI examples',
  (h: Harness) => {
    let doc: any;
    let operations: Operation[];
    let ajv: Ajv;
    const validators = new Map<string, ValidateFunction>();

    /** The validator of the schema at a JSON pointer into the document. */
    function validatorAt(pointer: string): ValidateFunction {
      let validate = validators.get(pointer);
      if (!validate) {
        validate = ajv.compile({ $ref: `openapi.json#${pointer}` });
        validators.set(pointer, validate);
      }
      return validate;
    }

    before(async () => {
      const response = await h.request('GET', '/openapi.json', { key: null });
      assert.equal(response.status, 200);
      doc = response.body;
      operations = operationsOf(doc);
      ajv = new Ajv({ strict: false, allErrors: true });
      (addFormats as unknown as (ajv: Ajv) => Ajv)(ajv);
      ajv.addFormat('binary', true);
      ajv.addSchema(doc, 'openapi.json');
    });

    test('every operation has a unique camelCase operationId, and every one is sent below', () => {
      const ids = operations.map(({ op, method, path }) => {
        assert.ok(op.operationId, `${method.toUpperCase()} ${path} has no operationId`);
        assert.match(op.operationId, /^[a-z][A-Za-z0-9]*$/, `${op.operationId} is not camelCase`);
        return op.operationId as string;
      });
      assert.equal(new Set(ids).size, ids.length, `duplicate operationIds: ${ids.filter((id, i) => ids.indexOf(id) !== i)}`);
      assert.deepEqual([...ids].sort(), [...SEND_ORDER].sort(), 'the operations are exactly those this test sends');
      const webhookIds = Object.values<any>(doc.webhooks).map((item) => item.post.operationId);
      assert.equal(new Set([...ids, ...webhookIds]).size, ids.length + webhookIds.length, 'webhook operationIds are unique too');
    });

    test('/metrics, /health and /ready are documented; every /api/v1 operation documents its 4xx answers', () => {
      for (const path of ['/metrics', '/health', '/ready']) assert.ok(doc.paths[path]?.get, `${path} is documented`);
      assert.ok(doc.paths['/metrics'].get.responses['200'].content['text/plain']);
      for (const { op, path } of operations.filter(({ path }) => path.startsWith('/api/v1/'))) {
        assert.ok(Object.keys(op.responses).some((status) => status.startsWith('4')), `${op.operationId} (${path}) has a 4xx answer`);
      }
    });

    test('page and limit are optional, with their defaults, in every operation', () => {
      let seen = 0;
      for (const { op } of operations) {
        for (const parameter of op.parameters ?? []) {
          if (parameter.in !== 'query' || !['page', 'limit'].includes(parameter.name)) continue;
          seen++;
          assert.notEqual(parameter.required, true, `${op.operationId}: ${parameter.name} is required`);
          assert.equal(parameter.schema.default, parameter.name === 'page' ? 1 : 10, `${op.operationId}: ${parameter.name}'s default`);
        }
      }
      assert.ok(seen >= 12, `page and limit were found ${seen} times`);
    });

    test('every request body and every 2xx and 4xx answer has an example', () => {
      for (const { op } of operations) {
        for (const [type, media] of Object.entries<any>(op.requestBody?.content ?? {})) {
          assert.ok(examplesOf(media).length > 0, `${op.operationId}: the ${type} request body has no example`);
        }
        for (const [status, response] of Object.entries<any>(op.responses)) {
          if (!/^[24]/.test(status)) continue;
          for (const [type, media] of Object.entries<any>(response.content ?? {})) {
            assert.ok(examplesOf(media).length > 0, `${op.operationId}: the ${status} ${type} answer has no example`);
          }
        }
      }
    });

    test('every example matches its own schema', () => {
      const failures: string[] = [];
      for (const { op, pointer } of operations) {
        const media: [string, string, any][] = [
          ...Object.entries<any>(op.requestBody?.content ?? {}).map(([type, m]): [string, string, any] => [`${pointer}/requestBody/content/${escapePointer(type)}`, `request ${type}`, m]),
          ...Object.entries<any>(op.responses).flatMap(([status, response]) =>
            Object.entries<any>(response.content ?? {}).map(([type, m]): [string, string, any] => [
              `${pointer}/responses/${status}/content/${escapePointer(type)}`,
              `${status} ${type}`,
              m,
            ]),
          ),
        ];
        for (const [mediaPointer, what, m] of media) {
          const validate = validatorAt(`${mediaPointer}/schema`);
          for (const example of examplesOf(m)) {
            if (!validate(example.value)) failures.push(`${op.operationId} ${what} example ${example.name}: ${ajv.errorsText(validate.errors)}`);
          }
        }
      }
      assert.deepEqual(failures, []);
    });

    test('every request example, sent to the service, gets the answer the document shows for it', async () => {
      // What the examples need: a verified customer with IRMs (demo.exporter, as the examples say).
      const customerId = await verifiedCustomer(h, 'examples@demo-exports.example');
      await firstRefresh(h, customerId);
      const ids = { newCustomer: '', requestId: '', ebrcNumber: '', endpointId: '', eventId: '', uploadId: '' };
      // The admin examples' platform, key and user, made by their create examples.
      const adminIds = { platformId: '', apiKeyId: '', userId: '' };
      const replacements = () =>
        new Map<string, string>(
          ([
            [EXAMPLE_CUSTOMER_ID, customerId],
            [EXAMPLE_REQUEST_ID, ids.requestId],
            [EXAMPLE_EBRC_NUMBER, ids.ebrcNumber],
            [EXAMPLE_WEBHOOK_ENDPOINT_ID, ids.endpointId],
            [EXAMPLE_EVENT_ID, ids.eventId],
          ] as [string, string][]).filter(([, live]) => live !== ''),
        );

      /** The example push, with the live data of its IRM if the sandbox still has it fresh, else of another one. */
      async function livePush(body: any): Promise<any> {
        const line = body.ebrcBulkGenDtos[0];
        const found = await h.request('POST', '/api/v1/irm/refresh', { query: { platformCustomerId: customerId, irmNumber: line.irmNumber }, body: {} });
        assert.equal(found.status, 200, found.text);
        let irm = found.body.data[0];
        let invoiceDate = line.sbCumInvoiceDate;
        if (irm === undefined || irm.irmStatus !== 'fresh' || irm.irmAvailableAmt < line.mappedIRMAmountFCC) {
          [irm] = await usableIrms(h, customerId, 1);
          invoiceDate = irm.irmIssueDate;
        }
        const amount = Math.min(line.mappedIRMAmountFCC, irm.irmAvailableAmt);
        const live = {
          ...line,
          irmIfscCode: irm.ifscCode,
          irmAdCode: irm.remittanceAdCode,
          irmNumber: irm.irmNumber,
          irmDt: irm.irmIssueDate,
          irmFCC: irm.remittanceFCC,
          irmPurposeCode: irm.purposeOfRemittance,
          irmRemitAmtFCC: irm.irmAvailableAmt,
          sbCumInvoiceDate: invoiceDate,
          sbCumInvoiceFCC: irm.remittanceFCC,
          sbCumInvoiceValueinFCC: amount,
          mappedIRMAmountFCC: amount,
        };
        return { ...body, ebrcBulkGenDtos: [live] };
      }

      /**
       * The example upload as the multipart form it stands for: its CSV's one row made live as the push example is
       * (another invoice number, so that it is not the pushed example's invoice again).
       */
      async function liveUploadForm(example: any): Promise<FormData> {
        const [header, row] = (example.file as string).trim().split('\r\n').map((line) => line.split(','));
        const line = Object.fromEntries(header!.map((column, i) => [column, row![i] === '' ? undefined : row![i]]));
        const amounts = { irmRemitAmtFCC: Number(line.irmRemitAmtFCC), sbCumInvoiceValueinFCC: Number(line.sbCumInvoiceValueinFCC), mappedIRMAmountFCC: Number(line.mappedIRMAmountFCC) };
        const live = (await livePush({ ebrcBulkGenDtos: [{ ...line, ...amounts }] })).ebrcBulkGenDtos[0];
        live.sbCumInvoiceNumber = String(Number(live.sbCumInvoiceNumber) + 1);
        const csv = [header!.join(','), header!.map((column) => live[column] ?? '').join(',')].join('\r\n') + '\r\n';
        const form = new FormData();
        for (const field of ['platformCustomerId', 'uploadType', 'decalarationFlag']) form.append(field, example[field]);
        form.append('file', new Blob([csv], { type: 'text/csv' }), 'irm-template-filled.csv');
        return form;
      }

      function pathOf(operation: Operation): string {
        return operation.path.replace(/\{(\w+)\}/g, (_whole, name: string) => {
          if (name === 'ebrcNumber') return ids.ebrcNumber;
          if (operation.path.startsWith('/api/v1/genebrc/uploads/')) return ids.uploadId;
          if (operation.path.startsWith('/api/v1/webhook-endpoints/')) return ids.endpointId;
          if (operation.path.startsWith('/api/v1/events/')) return ids.eventId;
          if (operation.path.startsWith('/admin/v1/platforms/')) return adminIds.platformId;
          if (operation.path.startsWith('/admin/v1/api-keys/')) return adminIds.apiKeyId;
          if (operation.path.startsWith('/admin/v1/users/')) return adminIds.userId;
          // The credential set example replaces a customer's set: it goes to the customer the create example made.
          return operation.op.operationId === 'putAuthorityApiCredentials' ? ids.newCustomer : customerId;
        });
      }

      const byId = new Map(operations.map((operation) => [operation.op.operationId as string, operation]));
      for (const operationId of SEND_ORDER) {
        const operation = byId.get(operationId);
        assert.ok(operation, `${operationId} is in the document`);
        const { op } = operation;
        const successStatus = Object.keys(op.responses).filter((status) => status.startsWith('2')).sort()[0]!;
        const bodyMedia = op.requestBody?.content?.['application/json'] ?? op.requestBody?.content?.['multipart/form-data'];
        const requests: (Example | undefined)[] = bodyMedia ? examplesOf(bodyMedia) : [undefined];
        const query: Record<string, string> = {};
        for (const parameter of op.parameters ?? []) {
          if (parameter.in === 'query' && parameter.required) {
            assert.equal(parameter.name, 'platformCustomerId', `${operationId}: a required query parameter this test can fill`);
            query[parameter.name] = customerId;
          }
        }
        for (const example of requests) {
          let body = example === undefined ? undefined : deepReplace(example.value, replacements());
          if (operationId === 'pushIrm') body = await livePush(body);
          if (operationId === 'createUpload') body = await liveUploadForm(body);
          const expected = Object.entries<any>(op.responses).find(([, response]) =>
            Object.values<any>(response.content ?? {}).some((media) => examplesOf(media).some(({ name }) => name === example?.name)),
          )?.[0] ?? (operationId === 'backupEmbeddedDatabase' && h.backend === 'postgres' ? '404' : successStatus);
          const url = pathOf(operation);
          const sent: TestResponse = await h.request(operation.method.toUpperCase(), url, {
            ...(Object.keys(query).length > 0 ? { query } : {}),
            ...(body === undefined ? {} : { body }),
            ...(url.startsWith('/api/v1/') ? {} : { key: null }),
            ...(url.startsWith('/admin/v1/') ? { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } } : {}),
          });
          const what = `${operationId} example ${example?.name ?? '(no body)'}`;
          assert.equal(String(sent.status), expected, `${what}: ${sent.text.slice(0, 1000)}`);
          const content = op.responses[expected].content as Record<string, unknown> | undefined;
          const type = String(sent.headers['content-type'] ?? '');
          // A report documents json beside CSV and XLSX: its default answer (CSV) is checked as the other files are.
          if (content?.['application/json'] && (Object.keys(content).length === 1 || type.startsWith('application/json'))) {
            assert.match(type, /^application\/json/, what);
            const validate = validatorAt(`${operation.pointer}/responses/${expected}/content/application~1json/schema`);
            assert.ok(validate(sent.body), `${what}: the answer does not match its schema: ${ajv.errorsText(validate.errors)}`);
          } else if (content) {
            const documented = Object.keys(content);
            assert.ok(documented.some((documentedType) => type.startsWith(documentedType)), `${what}: ${type} is not one of ${documented}`);
          }

          // What later examples need.
          if (operationId === 'createPlatformCustomer') ids.newCustomer = sent.body.id;
          if (operationId === 'pushIrm') {
            assert.equal(sent.body.ackStatus, 'Validated', `the push example is accepted: ${sent.text}`);
            ids.requestId = sent.body.requestId;
          }
          if (operationId === 'listEbrcs') {
            assert.ok(sent.body.data.length > 0, 'the pushed example generated an eBRC');
            ids.ebrcNumber = sent.body.data[0].ebrcNumber;
          }
          if (operationId === 'createWebhookEndpoint') ids.endpointId = sent.body.id;
          if (operationId === 'createUpload') ids.uploadId = sent.body.id;
          if (operationId === 'listEvents') ids.eventId = sent.body.items[0].id;
          if (operationId === 'createPlatform') adminIds.platformId = sent.body.platform.id;
          if (operationId === 'issueApiKey') adminIds.apiKeyId = sent.body.id;
          if (operationId === 'createConsoleUser') adminIds.userId = sent.body.id;
        }
      }
    });
  },
  { env: { WEBHOOK_ALLOW_PRIVATE_URLS: 'true', RUN_WEBHOOKS: 'false', ADMIN_TOKEN } },
);
