import autocannon, { type AutocannonRequest } from 'autocannon';

export type LoadOptions = {
  url: string;
  connections: number;
  seconds: number;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Dynamic requests (a different id or body per request). */
  requests?: AutocannonRequest[];
  timeoutSeconds?: number;
};

export type Measured = {
  /** 2xx answers per second over the measured time. */
  rps: number;
  /** Latency of the 2xx answers, in milliseconds (exact, not autocannon's whole-millisecond histogram). */
  p50: number;
  p99: number;
  max: number;
  mean: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  seconds: number;
  statusCodes: Record<string, number>;
  /** autocannon's own figures, kept in the JSON results for comparison. */
  autocannon: { requestsAverage: number; latencyP50: number; latencyP99: number };
};

function percentile(sorted: Float64Array, share: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(share * sorted.length) - 1));
  return sorted[index]!;
}

/**
 * Drives one endpoint with autocannon for a fixed time and connection count. Throughput and the
 * request counts come from autocannon; the latency percentiles are computed from every answer's
 * own time (autocannon's histogram rounds to whole milliseconds, too coarse for sub-millisecond
 * reference figures).
 */
export async function load(options: LoadOptions): Promise<Measured> {
  const latencies: number[] = [];
  const instance = autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.seconds,
    timeout: options.timeoutSeconds ?? 30,
    ...(options.method !== undefined ? { method: options.method } : {}),
    ...(options.headers !== undefined ? { headers: options.headers } : {}),
    ...(options.body !== undefined ? { body: options.body } : {}),
    ...(options.requests !== undefined ? { requests: options.requests } : {}),
  });
  instance.on('response', (_client: unknown, status: number, _bytes: number, responseTime: number) => {
    if (status >= 200 && status < 300) latencies.push(responseTime);
  });
  const result = await instance;
  const sorted = Float64Array.from(latencies).sort();
  const statusCodes = Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, { count }]) => [code, count]));
  const seconds = result.duration > 0 ? result.duration : options.seconds;
  return {
    rps: sorted.length / seconds,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    max: sorted.length === 0 ? Number.NaN : sorted[sorted.length - 1]!,
    mean: sorted.length === 0 ? Number.NaN : sorted.reduce((sum, value) => sum + value, 0) / sorted.length,
    ok: sorted.length,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    seconds,
    statusCodes,
    autocannon: { requestsAverage: result.requests.average, latencyP50: result.latency.p50, latencyP99: result.latency.p99 },
  };
}
