import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../../errors.ts';
import { adminTokenMatches } from '../../services/admin-token.ts';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

const METRICS_EXAMPLE = `# HELP http_requests_total HTTP requests answered
# TYPE http_requests_total counter
http_requests_total{method="POST",route="/api/v1/genebrc/push-irm",status="200"} 42
# HELP http_request_duration_seconds Time to answer HTTP requests
# TYPE http_request_duration_seconds histogram
http_request_duration_seconds_bucket{le="0.05",method="POST",route="/api/v1/genebrc/push-irm",status="200"} 40
http_request_duration_seconds_bucket{le="+Inf",method="POST",route="/api/v1/genebrc/push-irm",status="200"} 42
http_request_duration_seconds_sum{method="POST",route="/api/v1/genebrc/push-irm",status="200"} 1.234
http_request_duration_seconds_count{method="POST",route="/api/v1/genebrc/push-irm",status="200"} 42
`;

/** GET /metrics as the OpenAPI document shows it: Prometheus text, no API key. */
const METRICS_SCHEMA = {
  tags: ['Operations'],
  operationId: 'getMetrics',
  summary: 'Metrics in the Prometheus text format',
  description:
    'Request counts and latency by method, route and status (`http_requests_total`, `http_request_duration_seconds`), ' +
    "webhook delivery and outbox metrics, and the process's default metrics (memory, event loop, GC). No API key. " +
    'Answered to clients on loopback only (404 to any other), unless METRICS_TOKEN is set: then also to any client ' +
    'that sends it as `Authorization: Bearer <token>`.',
  response: {
    200: {
      description: 'The metrics, in the Prometheus text exposition format 0.0.4',
      content: { 'text/plain': { schema: { type: 'string' }, example: METRICS_EXAMPLE } },
    },
  },
};

const LOOPBACK = /^(127\.|::1$|::ffff:127\.)/;

/** Whether /metrics may be answered: a loopback client, or the METRICS_TOKEN as a bearer token (constant time). */
function mayReadMetrics(request: FastifyRequest, token: string | undefined): boolean {
  if (LOOPBACK.test(request.ip)) return true;
  const presented = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
  return token !== undefined && presented !== undefined && adminTokenMatches(presented, token);
}

/**
 * Request counts and latency by route and status, and GET /metrics in Prometheus text: for loopback clients, or with
 * `metricsToken` as a bearer token (the metrics name routes, counts and timings an outsider should not see).
 */
export function registerMetrics(app: FastifyInstance, registry: Registry, metricsToken: string | undefined): void {
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests answered', labelNames, registers: [registry] });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer HTTP requests',
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });

  // The series of each method, route and status, bound once: no labels object to hash per request.
  const series = new Map<string, { answered: { inc(): void }; timed: { observe(seconds: number): void } }>();
  app.addHook('onResponse', (request, reply, done) => {
    // Unmatched URLs share one label so that scanners cannot blow up the label set.
    const route = request.routeOptions.url ?? 'unmatched';
    const key = `${request.method} ${reply.statusCode} ${route}`;
    let bound = series.get(key);
    if (bound === undefined) {
      const labels = { method: request.method, route, status: String(reply.statusCode) };
      bound = { answered: requests.labels(labels), timed: duration.labels(labels) };
      series.set(key, bound);
    }
    bound.answered.inc();
    bound.timed.observe(reply.elapsedTime / 1000);
    done();
  });

  app.get('/metrics', { schema: METRICS_SCHEMA }, async (request, reply) => {
    if (!mayReadMetrics(request, metricsToken)) {
      throw new AppError('not_found', 'Route GET /metrics not found: it answers loopback clients only, or a bearer METRICS_TOKEN.');
    }
    return reply.type(registry.contentType).send(await registry.metrics());
  });
}
