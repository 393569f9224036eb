import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import type { PrettyStream } from 'pino-pretty';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Registry } from 'prom-client';
import type { Api, Deps } from './deps.ts';
import { AppError } from '../errors.ts';
import { loadAdminToken } from '../services/admin-token.ts';
import { ApiKeyAuthenticator } from '../services/platforms.ts';
import { collectAuditedRoutes } from './audit-source.ts';
import { registerErrorHandling } from './error-handler.ts';
import { SECRET_FIELD_NAMES } from './secret-fields.ts';
import { sendProblem } from './problem.ts';
import { registerAdminAuthentication } from './plugins/admin-authentication.ts';
import { registerAuthentication } from './plugins/authentication.ts';
import { Drain, registerDrain } from './plugins/drain.ts';
import { registerIdempotency } from './plugins/idempotency.ts';
import { OFF_THREAD_JSON_BYTES, parseJsonOffThread } from './json-off-thread.ts';
import { createMetricsRegistry, registerMetrics } from './plugins/metrics.ts';
import { registerOpenApi } from './plugins/openapi.ts';
import { registerRateLimit } from './plugins/rate-limit.ts';
import { adminRoutes } from './routes/admin/index.ts';
import { listAuditLogRoute } from './routes/audit-log/list.ts';
import { listRequestsRoute } from './routes/genebrc/list.ts';
import { pushIrmRoute } from './routes/genebrc/push-irm.ts';
import { statusRoute } from './routes/genebrc/status.ts';
import { uploadRoutes } from './routes/genebrc/uploads/index.ts';
import { ebrcRoutes } from './routes/ebrcs/index.ts';
import { eventRoutes } from './routes/events/index.ts';
import { healthRoutes } from './routes/health.ts';
import { homeRoutes } from './routes/home.ts';
import { irmRefreshRoute } from './routes/irm/refresh.ts';
import { platformCustomerRoutes } from './routes/platform-customers/index.ts';
import { reportRoutes } from './routes/reports/index.ts';
import { webhookEndpointRoutes } from './routes/webhook-endpoints/index.ts';
import { hasUnstorableText, jsonTextMayHoldUnstorableText, unstorableText } from '../services/unstorable-text.ts';
import { compileRequestValidator } from '../services/validation.ts';
import { EbrcSchema } from '../schemas/ebrcs.ts';
import { EventSchema } from '../schemas/events.ts';
import { IrmSchema } from '../schemas/irms.ts';
import { PlatformCustomerSchema } from '../schemas/platform-customers.ts';
import { ProblemSchema } from '../schemas/problems.ts';
import { ReconciliationSchema } from '../schemas/reconciliations.ts';
import { BulkUploadSchema } from '../schemas/uploads.ts';
import { WebhookEndpointSchema } from '../schemas/webhook-endpoints.ts';
import { registerConsole } from './console/plugin.ts';

const BODY_LIMIT = 5 * 1024 * 1024;
/** Longer than any id the API takes (IdParams: 100); longer ones are refused by the router. */
const MAX_PATH_PARAMETER_LENGTH = 200;
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const ROUTER_OPTIONS = { ignoreTrailingSlash: true, maxParamLength: MAX_PATH_PARAMETER_LENGTH };
/** The schemas the routes name by $ref, in the order the OpenAPI document lists them under components. */
const SHARED_SCHEMAS = [ProblemSchema, PlatformCustomerSchema, IrmSchema, EbrcSchema, WebhookEndpointSchema, EventSchema, BulkUploadSchema, ReconciliationSchema];

/** Log redaction: no API key, password or authority secret may reach a log line. */
export const REDACTED_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  ...SECRET_FIELD_NAMES.map((name) => (/^[A-Za-z_]\w*$/.test(name) ? `*.${name}` : `*["${name}"]`)),
];

export type AppOptions = Deps & { logger?: FastifyBaseLogger | boolean; metrics?: Registry; drain?: Drain };

/**
 * Where the log goes: JSON lines (one object per line, for a collector), or, when stdout is a terminal, the same
 * entries as readable lines through pino-pretty (a time, the level, the message, then the fields). Redaction applies
 * before either. Synchronous, so that the last lines before an exit are written. Loaded on a terminal only: a service
 * writing JSON carries none of it.
 */
async function logStream(): Promise<{ stream?: PrettyStream }> {
  if (!process.stdout.isTTY) return {};
  const { default: pretty } = await import('pino-pretty');
  return {
    stream: pretty({
      colorize: true,
      sync: true,
      translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l',
      // One line per entry; a request's method, path and status in its message rather than as nested objects.
      singleLine: true,
      messageFormat: '{msg}{if req.method} {req.method} {req.url}{end}{if res.statusCode} {res.statusCode}{end}',
      ignore: 'pid,hostname,req,res',
    }),
  };
}

/** The nearest `hops` proxies are trusted, as Fastify does for a number (its types take only the function). */
const trustHops = (hops: number) => (_address: string, hop: number): boolean => hop < hops;

/** Builds the HTTP app: plugins in a fixed order, then the routes. */
export async function buildApp(options: AppOptions): Promise<Api> {
  const { config, database } = options;
  // Fastify 5 takes a ready logger only as `loggerInstance`; `logger` is for a configuration or a boolean.
  const logging =
    options.logger === undefined
      ? { logger: { level: config.logLevel, redact: REDACTED_PATHS, ...(await logStream()) } }
      : typeof options.logger === 'boolean'
        ? { logger: options.logger }
        : { loggerInstance: options.logger };
  const app = Fastify({
    ...logging,
    bodyLimit: BODY_LIMIT,
    // While closing, new requests are refused by the drain's hook (a problem document), not Fastify's own 503.
    return503OnClosing: false,
    routerOptions: ROUTER_OPTIONS,
    // Behind a TLS-terminating proxy: request.protocol (the console's Secure cookies) and request.ip (the sign-in
    // throttle, the logs) come from its X-Forwarded-* headers, for the proxies TRUST_PROXY names only.
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
    requestIdHeader: false,
    genReqId: (request) => {
      const incoming = request.headers['x-request-id'];
      return typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    // What the router refuses before any route or hook runs (a path segment that is not valid percent-encoding or
    // longer than the router takes) is a problem document like every other error, not Fastify's own JSON.
    frameworkErrors: (error, request, reply) => {
      reply.header('x-request-id', request.id);
      if (error.code === 'FST_ERR_BAD_URL' || error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
        const message = `A path segment is not valid: malformed percent-encoding, or longer than ${MAX_PATH_PARAMETER_LENGTH} characters.`;
        return sendProblem(request, reply, 'validation_failed', message, { errors: [{ path: '', code: 'invalid_path', message }] });
      }
      request.log.error({ err: error }, 'unhandled error');
      return sendProblem(request, reply, 'internal_error', 'Something went wrong on our side; the request id identifies it for support.');
    },
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as Api;

  // JSON is the only body this API takes; anything else is a 415. JSON text is UTF-8 (RFC 8259): read as text, bytes
  // that are not would silently become U+FFFD, so the body is read as bytes and checked first, then parsed by Fastify's
  // own parser (which refuses __proto__ and constructor.prototype keys).
  app.removeContentTypeParser(['text/plain', 'application/json']);
  // Bodies known to be storable (their text has no `\u` escape, or the worker walked them): the hook below skips them.
  const storableBodies = new WeakSet<object>();
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    if (!isUtf8(body)) {
      return done(
        new AppError('validation_failed', 'The body is not valid UTF-8; send JSON text in UTF-8.', {
          errors: [{ path: '', code: 'invalid_encoding', message: 'The body is not valid UTF-8.' }],
        }),
        undefined,
      );
    }
    const text = body.toString('utf8');
    if (body.length >= OFF_THREAD_JSON_BYTES) {
      // Large bodies are parsed (and refused when absurd) in a worker thread: no request waits behind them.
      void parseJsonOffThread(text).then((outcome) => {
        if ('value' in outcome) {
          if (outcome.storable && typeof outcome.value === 'object' && outcome.value !== null) storableBodies.add(outcome.value);
          return done(null, outcome.value);
        }
        const failure = outcome.failure;
        done(
          failure.kind === 'syntax'
            ? Object.assign(new Error(`Body is not valid JSON but content-type is set to 'application/json': ${failure.message}`), { statusCode: 400, code: 'FST_ERR_CTP_INVALID_JSON_BODY' })
            : new AppError('validation_failed', failure.message, { errors: [{ path: '', code: failure.code, message: failure.message }] }),
          undefined,
        );
      });
      return;
    }
    if (jsonTextMayHoldUnstorableText(text)) return parseJson(request, text, done);
    parseJson(request, text, (error, value) => {
      if (typeof value === 'object' && value !== null) storableBodies.add(value);
      done(error, value);
    });
  });
  collectAuditedRoutes(app);
  app.setValidatorCompiler(({ schema, httpPart }) => compileRequestValidator(schema, httpPart));
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
  // The hooks every request runs are synchronous (callback style): an async hook costs a promise and a turn of the
  // event loop per request, a measurable share of a one-row lookup (docs/performance.md).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  registerDrain(app, options.drain ?? new Drain());
  registerErrorHandling(app, ROUTER_OPTIONS, database.availability);
  // After the schemas, before any route (and its Idempotency-Key) stores anything: text that cannot be stored as sent.
  app.addHook('preHandler', (request, _reply, done) => {
    const body = request.body;
    const bodyStorable = (typeof body === 'object' && body !== null && storableBodies.has(body)) || !hasUnstorableText(body);
    if (bodyStorable && !hasUnstorableText(request.params) && !hasUnstorableText(request.query)) return done();
    const errors = [...unstorableText(request.params), ...unstorableText(request.query), ...unstorableText(request.body)];
    const detail = errors.length === 1 ? `The request has an invalid field: ${errors[0]!.message}` : `The request has ${errors.length} invalid fields; see errors.`;
    done(new AppError('validation_failed', detail, { errors }));
  });
  await registerOpenApi(app);
  registerMetrics(app, options.metrics ?? createMetricsRegistry(), config.metricsToken);
  healthRoutes(app, options);
  homeRoutes(app);

  const authenticator = new ApiKeyAuthenticator(database.db, config.apiKeyCacheSeconds * 1000, {
    onWriteError: (error) => app.log.warn({ err: error }, 'could not record when API keys were last used; will try again'),
  });
  // Writes the keys' last uses gathered so far, before the database closes.
  app.addHook('onClose', async () => authenticator.close());
  await app.register(
    async (api) => {
      const scoped = api as unknown as Api;
      registerAuthentication(scoped, authenticator);
      registerRateLimit(scoped, { perSecond: config.rateLimitPerSecond, burst: config.rateLimitBurst });
      registerIdempotency(scoped, { db: database.db, ring: options.context.keyRing, vault: options.context.vault, availability: database.availability });
      platformCustomerRoutes(scoped, options);
      irmRefreshRoute(scoped, options);
      pushIrmRoute(scoped, options);
      statusRoute(scoped, options);
      listRequestsRoute(scoped, options);
      await uploadRoutes(scoped, options);
      ebrcRoutes(scoped, options);
      reportRoutes(scoped, options);
      webhookEndpointRoutes(scoped, options);
      eventRoutes(scoped, options);
      listAuditLogRoute(scoped, options);
    },
    { prefix: '/api/v1' },
  );
  // The operator's admin API (contract 10): a scope of its own, behind the admin token (ADMIN_TOKEN, or the file the
  // embedded default makes in DATA_DIR; off without either), with no API key, rate limit or Idempotency-Key.
  const adminToken = loadAdminToken(config);
  await app.register(
    async (admin) => {
      const scoped = admin as unknown as Api;
      registerAdminAuthentication(scoped, adminToken);
      adminRoutes(scoped, options, authenticator);
    },
    { prefix: '/admin/v1' },
  );
  // The web console (contract 10): its own scope, with sessions and CSRF tokens instead of the API key, no rate limit
  // or Idempotency-Key, HTML pages and errors, and none of it in the OpenAPI document (src/http/console/).
  // It is given this process's API key authenticator: a key revoked in the console is refused from its next request.
  await app.register(async (scope) => registerConsole(scope as unknown as Api, { ...options, apiKeyAuthenticator: authenticator }), { prefix: '/console' });
  return app;
}
