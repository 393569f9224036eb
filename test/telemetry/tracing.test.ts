import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { gatewayApiKey, gatewayEnv, httpClient, ROOT, startGateway, stopGateway, waitUntilReady, type Running } from '../support/gateway.ts';
import { backends, scratchDatabase, startTestSandbox } from '../support/harness.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';
import { firstRefresh, lineFor, pushBody, sleep, usableIrms, verifiedCustomer } from '../support/workflow.ts';

/**
 * OpenTelemetry: `node src/main.ts` with OTEL_EXPORTER_OTLP_ENDPOINT sends the spans of a push (HTTP server, Fastify's
 * request with the request id, PostgreSQL statements, the authority call) and of its webhook delivery to an OTLP/HTTP
 * receiver in this process; without it, no SDK, instrumentation or exporter is loaded.
 */

type Attribute = { key: string; value: Record<string, unknown> };
type Span = { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes: Attribute[]; scope: string; service: string };

const SPAN_KIND_SERVER = 2;
const SPAN_KIND_CLIENT = 3;

/** An OTLP/HTTP receiver (JSON, as the exporter sends it): every span of every export, flattened. */
async function startOtlpReceiver(): Promise<{ url: string; spans: Span[]; paths: string[]; close(): Promise<void> }> {
  const spans: Span[] = [];
  const paths: string[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      paths.push(`${request.method} ${request.url} ${request.headers['content-type']}`);
      if (request.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        for (const resourceSpans of body.resourceSpans ?? []) {
          const service = resourceSpans.resource?.attributes?.find((a: Attribute) => a.key === 'service.name')?.value?.stringValue;
          for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
            for (const span of scopeSpans.spans ?? []) spans.push({ ...span, attributes: span.attributes ?? [], scope: scopeSpans.scope?.name, service });
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    paths,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function attribute(span: Span, key: string): unknown {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
}

async function waitFor<T>(what: string, find: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) assert.fail(`no ${what} within ${timeoutMs} ms`);
    await sleep(100);
  }
}

for (const backend of backends()) {
  describe(`tracing [${backend}]`, () => {
    test('the spans of one push and of its webhook delivery reach an OTLP receiver, with the request id', async () => {
      const receiver = await startOtlpReceiver();
      const hooks = await WebhookReceiver.start();
      const scratch = await scratchDatabase(backend);
      const sandbox = await startTestSandbox(scratch, { processingDelayMs: 0 });
      let gateway: Running | undefined;
      try {
        gateway = startGateway(
          gatewayEnv(scratch, sandbox.url, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100', WEBHOOK_ALLOW_PRIVATE_URLS: 'true' }),
        );
        const client = httpClient(await waitUntilReady(gateway), await gatewayApiKey(gateway, scratch, 'Tracing platform'));
        const customerId = await verifiedCustomer(client, `tracing-${backend}@example.com`);
        await firstRefresh(client, customerId);
        const [irm] = await usableIrms(client, customerId, 1);
        const endpoint = await client.request('POST', '/api/v1/webhook-endpoints', { body: { url: hooks.url(), enabledEvents: ['genebrc.request.acknowledged', 'genebrc.request.failed'] } });
        assert.equal(endpoint.status, 201, endpoint.text);

        const requestId = `trace-push-${backend}`;
        const pushed = await client.request('POST', '/api/v1/genebrc/push-irm', { body: pushBody(customerId, [lineFor(irm, 1, 1)]), headers: { 'x-request-id': requestId } });
        assert.equal(pushed.status, 200, pushed.text);

        const request = await waitFor('Fastify request span with the request id', () => receiver.spans.find((span) => attribute(span, 'ebrc.request_id') === requestId));
        assert.equal(request.scope, '@fastify/otel');
        assert.equal(attribute(request, 'http.route'), '/api/v1/genebrc/push-irm');
        assert.equal(request.service, 'ebrc-gateway');
        const trace = () => receiver.spans.filter((span) => span.traceId === request.traceId);
        const server = await waitFor('HTTP server span', () => trace().find((span) => span.scope === '@opentelemetry/instrumentation-http' && span.kind === SPAN_KIND_SERVER));
        assert.equal(attribute(server, 'http.request.method'), 'POST');
        const authority = await waitFor('authority push span', () => trace().find((span) => span.name === 'authority push'));
        assert.equal(authority.kind, SPAN_KIND_CLIENT);
        assert.equal(attribute(authority, 'ebrc.genebrc_request_id'), pushed.body.requestId);
        // The authority call is within the request: its parents lead to the server span.
        const byId = new Map(trace().map((span) => [span.spanId, span]));
        let parent = authority.parentSpanId ? byId.get(authority.parentSpanId) : undefined;
        while (parent && parent.spanId !== server.spanId) parent = parent.parentSpanId ? byId.get(parent.parentSpanId) : undefined;
        assert.ok(parent, 'the authority span descends from the HTTP server span');
        if (backend === 'postgres') {
          const statements = await waitFor('PostgreSQL spans', () => {
            const found = trace().filter((span) => span.scope === '@opentelemetry/instrumentation-pg');
            return found.length > 0 ? found : undefined;
          });
          assert.ok(statements.some((span) => String(attribute(span, 'db.query.text') ?? '').includes('genebrc_requests')), 'the push stores its request under the trace');
        }

        const delivery = await waitFor('webhook delivery span', () => receiver.spans.find((span) => span.name === 'webhook delivery'));
        assert.equal(delivery.kind, SPAN_KIND_CLIENT);
        assert.match(String(attribute(delivery, 'webhook.event_type')), /^genebrc\.request\./);
        assert.equal(attribute(delivery, 'webhook.endpoint_id'), endpoint.body.id);
        assert.equal(attribute(delivery, 'webhook.succeeded'), true);
        assert.ok(receiver.paths.every((path) => path.startsWith('POST /v1/traces application/json')), `only traces were sent: ${receiver.paths.join('; ')}`);
      } finally {
        await stopGateway(gateway);
        await sandbox.close();
        await hooks.close();
        await receiver.close();
        await scratch.drop();
      }
    });
  });
}

/** The modules a process loads while it imports the service, with or without OTEL_EXPORTER_OTLP_ENDPOINT. */
function loadedModules(env: Record<string, string>): Promise<string[]> {
  const script = `
    import { registerHooks } from 'node:module';
    const seen = [];
    registerHooks({ resolve(specifier, context, next) { const resolved = next(specifier, context); seen.push(resolved.url); return resolved; } });
    await import('./src/telemetry/tracing.ts');
    await import('./src/service.ts');
    process.stdout.write(JSON.stringify(seen), () => process.exit(0));`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.on('error', reject);
    child.on('close', () => resolve(JSON.parse(stdout)));
  });
}

describe('tracing off', () => {
  test('without OTEL_EXPORTER_OTLP_ENDPOINT neither the SDK nor an instrumentation or exporter is loaded (and with it, they are)', async () => {
    // @opentelemetry/api, the no-op facade, is loaded by pg-boss and prom-client whatever we do.
    const telemetry = (url: string) => /@opentelemetry\/(?!api\/)|@fastify\/otel/.test(url);
    const off = await loadedModules({});
    assert.ok(off.some((url) => url.includes('fastify')), 'the service was loaded');
    assert.deepEqual(off.filter(telemetry), []);
    const on = await loadedModules({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    assert.ok(on.some(telemetry), 'the check sees OpenTelemetry when it is loaded');
  });
});
