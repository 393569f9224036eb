import { createRequire } from 'node:module';
import { setSpanRunner } from './spans.ts';

/**
 * OpenTelemetry tracing, on when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set: spans of
 * the HTTP server, of Fastify's request lifecycle (with the request id), of every PostgreSQL statement, and ours of
 * each authority call and webhook delivery, exported over OTLP/HTTP (JSON) to that endpoint. Off, no SDK,
 * instrumentation or exporter is loaded (only @opentelemetry/api, the no-op facade pg-boss and prom-client load anyway).
 *
 * This module is the first import of src/main.ts and starts the SDK as it is evaluated, synchronously (require), so
 * that it is in place before node:http, Fastify and pg are loaded: the instrumentations patch them as they load.
 */

type Sdk = { shutdown(): Promise<void> };

export function tracingEnabled(env: Record<string, string | undefined> = process.env): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) && env.OTEL_SDK_DISABLED !== 'true';
}

function startTracing(): Sdk {
  const require = createRequire(import.meta.url);
  const api: typeof import('@opentelemetry/api') = require('@opentelemetry/api');
  const { NodeSDK }: typeof import('@opentelemetry/sdk-node') = require('@opentelemetry/sdk-node');
  const { OTLPTraceExporter }: typeof import('@opentelemetry/exporter-trace-otlp-http') = require('@opentelemetry/exporter-trace-otlp-http');
  const { HttpInstrumentation }: typeof import('@opentelemetry/instrumentation-http') = require('@opentelemetry/instrumentation-http');
  const { PgInstrumentation }: typeof import('@opentelemetry/instrumentation-pg') = require('@opentelemetry/instrumentation-pg');
  const { FastifyOtelInstrumentation }: typeof import('@fastify/otel') = require('@fastify/otel');
  const sdk = new NodeSDK({
    serviceName: process.env.OTEL_SERVICE_NAME || 'ebrc-gateway',
    traceExporter: new OTLPTraceExporter(),
    instrumentations: [
      // Fastify's spans carry the route; the HTTP server span is the trace's root, named by the method.
      new HttpInstrumentation(),
      new FastifyOtelInstrumentation({
        registerOnInitialization: true,
        requestHook: (span, request) => span.setAttribute('ebrc.request_id', request.id),
      }),
      new PgInstrumentation(),
    ],
  });
  sdk.start();
  const tracer = api.trace.getTracer('ebrc-gateway');
  setSpanRunner((name, attributes, work) =>
    tracer.startActiveSpan(name, { kind: api.SpanKind.CLIENT, attributes }, async (span) => {
      try {
        return await work((attributes) => span.setAttributes(attributes));
      } catch (error) {
        span.recordException(error as Error);
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: (error as Error).message });
        throw error;
      } finally {
        span.end();
      }
    }),
  );
  return sdk;
}

const sdk: Sdk | undefined = tracingEnabled() ? startTracing() : undefined;

/** Sends the spans still buffered (at a clean stop); nothing when tracing is off. */
export async function flushTracing(): Promise<void> {
  // A collector that is down must not turn a clean stop into a failed one.
  await sdk?.shutdown().catch(() => undefined);
}
