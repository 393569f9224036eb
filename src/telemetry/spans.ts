/**
 * Spans of our own (an authority call, a webhook delivery) without a dependency on OpenTelemetry: with tracing off
 * (no OTEL_EXPORTER_OTLP_ENDPOINT) `inSpan` only runs the work, and no SDK is loaded; with it on,
 * src/telemetry/tracing.ts puts a runner here that makes each a span of the trace it runs in.
 */
export type SpanAttributes = Record<string, string | number | boolean>;

/** Adds attributes to the span once the work knows them (an answer's status, say). */
export type Annotate = (attributes: SpanAttributes) => void;

export type SpanRunner = <T>(name: string, attributes: SpanAttributes, work: (annotate: Annotate) => Promise<T>) => Promise<T>;

let runner: SpanRunner | undefined;

const ignore: Annotate = () => undefined;

export function inSpan<T>(name: string, attributes: SpanAttributes, work: (annotate: Annotate) => Promise<T>): Promise<T> {
  return runner === undefined ? work(ignore) : runner(name, attributes, work);
}

export function setSpanRunner(next: SpanRunner): void {
  runner = next;
}
