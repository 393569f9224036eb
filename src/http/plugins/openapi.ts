import swagger, { type OpenAPIV3_2 } from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { EVENT_TYPES, type EventType } from '../../domain/events.ts';
import { ERROR_TABLE } from '../../errors.ts';
import { EVENT_TYPE_EXAMPLES } from '../../schemas/events.ts';
import { StatusSchema } from '../../schemas/genebrc-requests.ts';

const ERROR_CODES_TEXT = Object.entries(ERROR_TABLE)
  .map(([code, { status, title }]) => `| ${status} | \`${code}\` | ${title} |`)
  .join('\n');

const RETRIES_TEXT = '5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h';

const DESCRIPTION = `Register exporters ("platform customers"), validate their credentials at the trade authority, pull
their IRMs and generate eBRCs for them. Every operation under /api/v1 needs the \`x-api-key\` header; the operator's
admin API under /admin/v1 needs \`Authorization: Bearer <admin token>\` instead (and takes no Idempotency-Key).

Errors are RFC 9457 problem documents (\`application/problem+json\`) with a stable \`code\`:

| status | code | meaning |
|---|---|---|
${ERROR_CODES_TEXT}

Every response carries \`x-request-id\`. Every POST takes an optional \`Idempotency-Key\` header (up to 255
characters, kept 24 h): a retry with the same key and body replays the first answer with \`Idempotent-Replayed: true\`.
Rate limits per API key are announced in the \`RateLimit-Policy\` and \`RateLimit\` headers.

**Webhooks.** Every change you would otherwise poll for is an event (\`GET /api/v1/events\`, kept at least 30 days).
Register a URL with \`POST /api/v1/webhook-endpoints\` and the events of the types it subscribes to are POSTed to it
as JSON (the \`webhooks\` section lists each type and its body), signed by the Standard Webhooks scheme
(standardwebhooks.com): \`webhook-id\` (the event id), \`webhook-timestamp\` (Unix seconds of the attempt) and
\`webhook-signature\` (\`v1,\` + base64 HMAC-SHA256 of \`{webhook-id}.{webhook-timestamp}.{body}\`, keyed with the
base64-decoded part of the endpoint's \`whsec_\` secret after the prefix; verify it with any Standard Webhooks library).
Any 2xx within 15 s is success; anything else (a redirect included: none is followed), a timeout or a refused
connection is retried after ${RETRIES_TEXT} (by default), and an endpoint whose every delivery has failed for 5 days
is disabled. Delivery is at least once, in no promised order: de-duplicate on \`webhook-id\`, which is the same on
every attempt.`;

/**
 * The section is written as plain JSON: openapi-types types a 3.1 request body's schema as a 3.0 schema object (no
 * `null` type, among others), so it is handed to @fastify/swagger with one cast; test/http/openapi-webhooks.test.ts
 * checks what it holds.
 */
type Schema = Record<string, unknown>;
type Parameter = { name: string; in: 'header'; required: boolean; description: string; schema: Schema; example: string };
type Webhooks = Record<string, { post: Record<string, unknown> }>;
type OpenApiSchema = NonNullable<NonNullable<OpenAPIV3_2.Document['components']>['schemas']>[string];

/** What one event type carries as `data`, and what it means (contract 9). */
type CatalogueEntry = { summary: string; description: string; data: Schema };

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

/** The status operation's answer, as the genebrc.request.* events carry it (StatusSchema has no $id of its own). */
const STATUS_COMPONENT = 'GenEbrcRequestStatus';

/** What an *.updated event's `changes` holds: each changed field, its value before and now. */
const CHANGES = {
  type: 'array',
  items: {
    type: 'object',
    required: ['field', 'from', 'to'],
    properties: { field: { type: 'string' }, from: { description: 'The value before (null for a new entry)' }, to: { description: 'The value now' } },
  },
};

const requestEvent = (summary: string, when: string): CatalogueEntry => ({
  summary,
  description: `${when} \`data\` is the request as \`POST /api/v1/genebrc/status\` answers it.`,
  data: ref(STATUS_COMPONENT),
});

/** The catalogue: every event type, keyed so that a type added to EVENT_TYPES without an entry fails the type check. */
const CATALOGUE: Readonly<Record<EventType, CatalogueEntry>> = {
  'genebrc.request.acknowledged': requestEvent(
    'A GenEBRC request was accepted',
    'The authority acknowledged a push (`ackStatus: "Validated"`): the request is `PENDING` with its `authorityAckId`.',
  ),
  'genebrc.request.failed': requestEvent(
    'A GenEBRC request failed at acknowledgement',
    'A push was refused, by the rules checked before sending or by the authority, or the authority never received it ' +
      '(`authority_not_received`): the request is `FAILED`, nothing was generated and its amounts are back on their IRMs.',
  ),
  'genebrc.request.processed': requestEvent(
    'A GenEBRC request was processed',
    'The authority processed the request and every line is `GENERATED` (one `ebrc.generated` event per eBRC comes with it).',
  ),
  'genebrc.request.partially_processed': requestEvent(
    'A GenEBRC request was partially processed',
    'The authority processed the request: some lines are `GENERATED`, the others `FAILED` with their amounts released ' +
      '(one `ebrc.generated` event per eBRC comes with it).',
  ),
  'genebrc.request.errored': requestEvent(
    'A GenEBRC request errored',
    'The authority processed the request and every line `FAILED`; their amounts are back on their IRMs.',
  ),
  'platform_customer.verified': {
    summary: 'A customer became verified',
    description:
      "A credential check succeeded for a customer that was `unverified` or `invalid` (a check of an already valid customer " +
      'sends none). `data` is the customer.',
    data: ref('PlatformCustomer'),
  },
  'platform_customer.credentials_invalid': {
    summary: "A customer's credentials were refused",
    description:
      'The authority refused the stored credentials as invalid or expired: the customer is now `authorityCredentialsStatus: ' +
      '"invalid"`, and refresh, push and eBRCs answer 409 `customer_not_verified` until a check succeeds. `data` is the customer.',
    data: ref('PlatformCustomer'),
  },
  'irm.received': {
    summary: 'An IRM was seen for the first time',
    description: 'A pull from the authority stored an IRM this customer did not have. Its later changes send `irm.updated`. `data` is the IRM.',
    data: ref('Irm'),
  },
  'irm.updated': {
    summary: 'An IRM changed at the authority',
    description:
      'A pull found an IRM changed by something other than this service\'s own requests: an eBRC made on the portal or through ' +
      'another platform, a failed line given back, an amendment (A) or a cancellation (C, `irmStatus: "cancelled"`) by the bank. ' +
      '`data` is the IRM as it is now, with `changes`: each changed field with its value before (`from`) and now (`to`).',
    data: {
      allOf: [
        ref('Irm'),
        {
          type: 'object',
          required: ['changes'],
          properties: { changes: CHANGES },
        },
      ],
    },
  },
  'ebrc.generated': {
    summary: 'An eBRC was generated',
    description:
      "One per eBRC a request generated, committed with the request's `genebrc.request.processed` or " +
      '`genebrc.request.partially_processed` event. `data` is the eBRC as the eBRC list shows it.',
    data: ref('Ebrc'),
  },
  'ebrc.updated': {
    summary: 'An eBRC changed at the authority, or was found there',
    description:
      "The eBRC register follows the authority's fetchEBRCDetails: an eBRC the customer's register did not hold (made on the " +
      'portal, by another platform, or by another customer\'s request here: `changes` is `[{field: "status", from: null, to}]`), ' +
      'or one whose values changed (a cancellation on the portal or by the bank: `status` to `cancelled`). `data` is the ' +
      'eBRC as the eBRC list shows it, with `changes: [{field, from, to}]`.',
    data: {
      allOf: [
        ref('Ebrc'),
        {
          type: 'object',
          required: ['changes'],
          properties: { changes: CHANGES },
        },
      ],
    },
  },
  'bulk_upload.completed': {
    summary: 'A spreadsheet upload finished',
    description:
      'A spreadsheet upload reached its final status: `completed` (every push sent; some may be Failed, their rule failures in ' +
      '`errors` by row) or `rejected` (malformed rows; nothing pushed). `data` is the upload as GET /api/v1/genebrc/uploads/{id} shows it.',
    data: ref('BulkUpload'),
  },
  'reconciliation.completed': {
    summary: 'A reconciliation run finished',
    description:
      "A customer's reconciliation (on the schedule or on request) finished: `completed` with what it changed, or `failed` with " +
      'the reason (the authority down, the credentials refused). `data` is the run as `GET /api/v1/platform-customers/{id}/reconciliations` lists it.',
    data: ref('Reconciliation'),
  },
  'webhook.test': {
    summary: 'A test event',
    description:
      'Sent by `POST /api/v1/webhook-endpoints/{id}/test`, signed and retried as any event, to check that an endpoint ' +
      'receives and verifies deliveries. `platformCustomerId` is null.',
    data: {
      type: 'object',
      required: ['endpointId', 'url', 'message'],
      properties: {
        endpointId: { type: 'string', format: 'uuid', description: 'The endpoint it was sent to' },
        url: { type: 'string', description: "The endpoint's URL" },
        message: { type: 'string', description: 'A sentence saying that this is a test' },
      },
    },
  },
};

/** The Standard Webhooks headers of every delivery attempt. */
const WEBHOOK_HEADERS: Parameter[] = [
  {
    name: 'webhook-id',
    in: 'header',
    required: true,
    description:
      "The event's `id`: the same on every attempt and redelivery of the event, so de-duplicate on it (delivery is at least once).",
    schema: { type: 'string' },
    example: 'evt_3q9c0f2kXbYp1nV7uLr8TzQmWd4sHa6e',
  },
  {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    description:
      'When this attempt was sent, in Unix seconds (each attempt has its own). Refuse a message far from your clock ' +
      '(Standard Webhooks libraries allow 5 minutes) so that a captured one cannot be replayed later.',
    schema: { type: 'string', pattern: '^[0-9]+$' },
    example: '1764547200',
  },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    description:
      '`v1,` + the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` (the body as received, byte for byte), ' +
      "keyed with the base64-decoded part of the endpoint's secret after `whsec_`. For 24 h after a rotation two " +
      'signatures are sent, space-separated (the new secret\'s first): accept the message when any of them matches.',
    schema: { type: 'string' },
    example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
  },
];

/** The body of a delivery: the event envelope (as GET /api/v1/events/{id} shows it), with this type's `data`. */
function envelope(type: EventType, data: Schema): Schema {
  return {
    type: 'object',
    required: ['id', 'type', 'timestamp', 'platformCustomerId', 'data'],
    properties: {
      id: { type: 'string', description: '"evt_" and random characters; also the `webhook-id` header' },
      type: { type: 'string', enum: [type] },
      timestamp: { type: 'string', format: 'date-time', description: 'When the change it reports was made (ISO 8601, UTC)' },
      platformCustomerId:
        type === 'webhook.test'
          ? { type: 'null', description: 'A test event concerns no customer' }
          : { type: 'string', format: 'uuid', description: 'The customer it concerns' },
      data,
    },
  };
}

/** The example delivery of an event type: its envelope around EVENT_TYPE_EXAMPLES' data. */
function eventExample(type: EventType): { summary: string; value: Record<string, unknown> } {
  const { summary, timestamp, platformCustomerId, data } = EVENT_TYPE_EXAMPLES[type];
  // A fixed id per type, "evt_" and 32 characters as the service makes them.
  const id = `evt_${type.replace(/[^a-z]/g, '').padEnd(32, 'x').slice(0, 32)}`;
  return { summary, value: { id, type, timestamp, platformCustomerId, data } };
}

/** A webhook's operation id: `genebrc.request.processed` is `onGenebrcRequestProcessed`. */
function webhookOperationId(type: EventType): string {
  return `on${type.split(/[._]/).map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join('')}`;
}

/** The OpenAPI 3.1 `webhooks`: one operation per event type, the POST this service sends to an endpoint. */
export function webhooksSection(): Webhooks {
  const section: Webhooks = {};
  for (const type of EVENT_TYPES) {
    const entry = CATALOGUE[type];
    const recipients =
      type === 'webhook.test'
        ? 'Delivered only to the endpoint tested, whatever it subscribes to'
        : `Delivered to every enabled endpoint subscribed to \`${type}\` or to \`*\``;
    section[type] = {
      post: {
        tags: ['Webhooks'],
        operationId: `${webhookOperationId(type)}`,
        summary: entry.summary,
        description: `${entry.description}\n\n${recipients}, signed with the headers below.`,
        // Sent by this service, signed with the endpoint's secret (the headers below): no API key.
        security: [],
        parameters: WEBHOOK_HEADERS,
        requestBody: {
          required: true,
          description: `The \`${type}\` event`,
          content: { 'application/json': { schema: envelope(type, entry.data), examples: { [type]: eventExample(type) } } },
        },
        responses: {
          '2XX': {
            description:
              'Received. Anything else (a redirect included: none is followed), no answer within 15 s or a refused ' +
              `connection is a failed attempt, retried after ${RETRIES_TEXT} (by default).`,
          },
        },
      },
    };
  }
  return section;
}

type QueryObject = { properties?: Record<string, { default?: unknown }>; required?: string[] };

/**
 * The route's schema as the document shows it: a query parameter with a default (page, limit) is optional there, as
 * it is on the wire (the validator fills the default in), while the handler's TypeScript type keeps it present.
 */
export function documentedSchema<T extends { querystring?: unknown } | undefined>(schema: T): T {
  const query = schema?.querystring as QueryObject | undefined;
  if (query?.required === undefined || query.properties === undefined) return schema;
  const properties = query.properties;
  const required = query.required.filter((name) => properties[name]?.default === undefined);
  if (required.length === query.required.length) return schema;
  return { ...schema, querystring: { ...query, required } };
}

type RouteResponses = Record<string, { $ref?: unknown; 'x-examples'?: unknown }>;
type DocumentOperation = { responses?: Record<string, { content?: Record<string, { examples?: unknown; example?: unknown }> }> };

/**
 * The named examples of answers that are a reference to a shared schema (a customer, an endpoint, an event), which
 * @fastify/swagger drops as it resolves the reference: gathered route by route, then written into the document.
 */
class ReferenceExamples {
  private readonly pending: { path: string; methods: string[]; status: string; examples: unknown }[] = [];

  collect(url: string, method: string | string[], response: unknown): void {
    for (const [status, schema] of Object.entries((response ?? {}) as RouteResponses)) {
      if (schema?.$ref === undefined || schema['x-examples'] === undefined) continue;
      const path = url.replace(/:(\w+)/g, '{$1}');
      this.pending.push({ path, methods: [method].flat().map((name) => name.toLowerCase()), status, examples: schema['x-examples'] });
    }
  }

  apply(document: { paths?: Record<string, Record<string, DocumentOperation> | undefined> }): void {
    for (const { path, methods, status, examples } of this.pending) {
      for (const method of methods) {
        const media = document.paths?.[path]?.[method]?.responses?.[status]?.content?.['application/json'];
        if (media !== undefined && media.examples === undefined && media.example === undefined) media.examples = examples;
      }
    }
  }
}

/** OpenAPI 3.1 from the route schemas, at /openapi.json, and an interactive reference at /docs. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  const referenceExamples = new ReferenceExamples();
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'ebrc-gateway', version: '1.0.0', description: DESCRIPTION, license: { name: 'UNLICENSED', identifier: 'LicenseRef-UNLICENSED' } },
      servers: [
        {
          url: 'http://localhost:{port}',
          description: 'This service, on the port it listens on (PORT, 3000 unless set)',
          variables: { port: { default: '3000', description: 'The PORT the service was started with' } },
        },
      ],
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
          adminToken: {
            type: 'http',
            scheme: 'bearer',
            description:
              "The operator's admin token, for /admin/v1: ADMIN_TOKEN, or on the embedded default the token the service " +
              'makes once in DATA_DIR/admin-token (it logs the path at start). Without either, /admin/v1 answers 404.',
          },
        },
        // A TypeBox schema is JSON Schema; @fastify/swagger converts it as it converts the routes' schemas.
        schemas: { [STATUS_COMPONENT]: { ...StatusSchema, description: 'A GenEBRC request as the status operation answers it' } as OpenApiSchema },
      },
      // @fastify/swagger 9 copies `webhooks` into the document as given (its $refs are written resolved).
      webhooks: webhooksSection() as OpenAPIV3_2.Document['webhooks'],
      tags: [
        { name: 'Platform customers', description: 'Exporters registered by your platform' },
        { name: 'IRMs', description: 'Inward remittances pulled from the authority' },
        { name: 'eBRC generation', description: 'Push lines, follow their status' },
        { name: 'Spreadsheet upload', description: 'Upload a filled-in template: its rows checked, split into pushes and pushed in the background' },
        { name: 'eBRCs', description: "A customer's eBRCs, and each one's PDF summary" },
        { name: 'Reports', description: "What an exporter's accountant files: the eBRC register and the IRM utilisation report (CSV, XLSX, json)" },
        { name: 'Webhooks', description: 'Endpoints your events are delivered to (Standard Webhooks), their secrets and delivery logs' },
        { name: 'Events', description: 'Every change you would otherwise poll for, kept at least 30 days' },
        { name: 'Audit log', description: 'Who changed what and when: append-only, hash-chained entries of every change and sign-in' },
        { name: 'Operations', description: 'Health, readiness and metrics' },
        { name: 'Admin', description: "The operator's admin API (/admin/v1, bearer admin token): platforms, their API keys and console users" },
      ],
    },
    transform: ({ schema, url, route }) => {
      referenceExamples.collect(url, route.method, (schema as { response?: unknown } | undefined)?.response);
      return { schema: documentedSchema(schema), url };
    },
    transformObject: (documentObject) => {
      const document = 'openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject;
      referenceExamples.apply(document as Parameters<ReferenceExamples['apply']>[0]);
      return document;
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  // The docs page loads only its own scripts and styles (their hashes, from @fastify/swagger-ui) and may not be framed
  // (clickjacking). upgrade-insecure-requests is left out: the service is often reached over plain http on loopback.
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: true,
    transformStaticCSP: (header: string) =>
      header.replace("frame-ancestors 'self'", "frame-ancestors 'none'").replace(/\s*upgrade-insecure-requests;/, '').replace(/ validator\.swagger\.io/, ''),
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
