import type { FastifyBaseLogger } from 'fastify';
import type { Authority } from './authority/authority.ts';
import { withDeadline } from './authority/deadline.ts';
import { createAuthorityCallHistogram, withTiming } from './authority/timing.ts';
import { createDgftAuthority } from './authority/dgft/dgft-authority.ts';
import { createDgftClient } from './authority/dgft/dgft-client.ts';
import { createSandboxCredentialIssuer } from './authority/sandbox-issuer.ts';
import { ConfigError, type Config } from './config.ts';
import { buildApp } from './http/app.ts';
import type { Api } from './http/deps.ts';
import { createMetricsRegistry } from './http/plugins/metrics.ts';
import { createBoss } from './jobs/boss.ts';
import { EventRelay } from './jobs/event-relay.ts';
import { BulkUploadJobs } from './jobs/bulk-upload.ts';
import { Housekeeping } from './jobs/housekeeping.ts';
import { RequestPoller } from './jobs/request-poller.ts';
import { createDeliveryMetrics, WebhookDelivery } from './jobs/webhook-delivery.ts';
import type { ServiceContext } from './services/context.ts';
import { BulkUploads } from './services/bulk-uploads.ts';
import { CredentialsVault } from './services/credentials-vault.ts';
import { checkInstallationKey } from './services/installation-key.ts';
import { keyFileOf, loadServerKey } from './services/server-key.ts';
import { RequestLifecycle } from './services/genebrc/lifecycle.ts';
import { RequestList } from './services/genebrc/list.ts';
import { RequestProgress } from './services/genebrc/progress.ts';
import { PushService } from './services/genebrc/push.ts';
import { IrmPuller } from './services/irms.ts';
import { Reconciliations } from './services/reconciliations.ts';
import { ReconcileSchedule } from './jobs/reconcile-schedule.ts';
import { EventOutbox } from './services/outbox.ts';
import { openDatabase, type Database } from './store/database.ts';
import { releaseAbandonedClaims } from './store/idempotency.ts';
import { migrate } from './store/migrate.ts';

const DEADLINE_BACKSTOP_MARGIN_MS = 250;

export type Service = {
  app: Api;
  database: Database;
  progress: RequestProgress;
  poller: RequestPoller;
  relay: EventRelay;
  delivery: WebhookDelivery;
  housekeeping: Housekeeping;
  /** Scheduled reconciliations (ticking only in processes that run the poller). */
  reconcileSchedule: ReconcileSchedule;
  reconciliations: Reconciliations;
  /** Stops taking requests, finishes those in flight, stops background work, closes the database. */
  close(): Promise<void>;
};

export type ServiceOptions = {
  config: Config;
  logger?: FastifyBaseLogger | boolean;
  /** Wraps the authority adapter (tests inject faults here). */
  authority?: (adapter: Authority) => Authority;
};

/** Opens the database, applies migrations, builds the app and starts the poller; does not listen. */
export async function createService(options: ServiceOptions): Promise<Service> {
  const { config } = options;
  const authorityUrl = config.authorityUrl;
  if (authorityUrl === undefined) {
    throw new ConfigError('AUTHORITY_URL is not set: the service reaches the authority (or the sandbox program) only over its wire protocol');
  }
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  let app: Api | undefined;
  const log = logOf(() => app);
  const boss = createBoss(database, log);
  let bossStarted = false;
  try {
    await migrate(database);
    // Keys a dead process held with nothing committed: on the embedded database they are free at once, not after a lease.
    if (database.kind === 'embedded') await releaseAbandonedClaims(database.db);
    const adapter = createDgftAuthority(createDgftClient({
      baseUrl: authorityUrl,
      tokenBaseUrl: config.authorityTokenUrl,
      egressIp: config.authorityEgressIp,
      // One slow attempt may use the whole deadline; quick failures (5xx, 429, a reset) are retried within it.
      retry: { deadlineMs: config.authorityTimeoutMs, attemptTimeoutMs: config.authorityTimeoutMs },
    }));
    const authority = options.authority ? options.authority(adapter) : adapter;
    const metrics = createMetricsRegistry();
    const serverKey = loadServerKey(config);
    const vault = new CredentialsVault(serverKey.credentialsKey);
    await checkInstallationKey(database.db, serverKey, vault, { keyFile: config.encryptionKey ? undefined : keyFileOf(config.dataDir) });
    const outbox = new EventOutbox();
    const context: ServiceContext = {
      config,
      db: database.db,
      // A backstop behind the client's own deadline, a little later so that the client's more precise failure
      // (unavailable after retries, say) is the one reported.
      authority: withDeadline(withTiming(authority, createAuthorityCallHistogram(metrics)), config.authorityTimeoutMs + DEADLINE_BACKSTOP_MARGIN_MS),
      sandboxCredentials: config.authorityMode === 'sandbox'
        ? createSandboxCredentialIssuer({ baseUrl: authorityUrl, defaultProfile: config.authorityEnvelopeProfile, timeoutMs: config.authorityTimeoutMs })
        : null,
      serverKey,
      vault,
      outbox,
    };
    const deliveryMetrics = createDeliveryMetrics(metrics);
    const poller = new RequestPoller({
      boss,
      database,
      pollIntervalSeconds: config.pollIntervalSeconds,
      // A job makes at most two authority calls (reconcile, then status), each within the deadline.
      jobExpireSeconds: Math.ceil((2 * config.authorityTimeoutMs) / 1000) + 30,
      log,
    });
    const delivery = new WebhookDelivery({
      boss,
      database,
      vault,
      log,
      metrics: deliveryMetrics,
      retrySchedule: config.webhookRetrySchedule,
      timeoutMs: config.webhookTimeoutMs,
      allowPrivateUrls: config.webhookAllowPrivateUrls,
      disableAfterMs: config.webhookDisableAfterSeconds * 1000,
      concurrency: config.webhookConcurrency,
    });
    const relay = new EventRelay({ db: database.db, outbox, delivery, log, lag: deliveryMetrics.outboxLag });
    const irmPuller = new IrmPuller(context, log);
    const lifecycle = new RequestLifecycle(database.db, outbox, poller);
    const progress = new RequestProgress(context, lifecycle);
    const push = new PushService(context, irmPuller, lifecycle, progress);
    const uploadJobs = new BulkUploadJobs({ boss, database, log });
    const uploads = new BulkUploads(context, push, uploadJobs);
    const reconciliations = new Reconciliations(context, irmPuller, log);
    app = await buildApp({
      config,
      database,
      context,
      irmPuller,
      push,
      progress,
      requestList: new RequestList(database.db),
      outbox,
      deliveries: delivery,
      uploads,
      reconciliations,
      metrics,
      ...(options.logger !== undefined ? { logger: options.logger } : {}),
    });
    await boss.start();
    bossStarted = true;
    await poller.start();
    await delivery.start();
    await uploadJobs.start();
    if (config.runPoller) {
      const appLog = app.log;
      await poller.work(async (id) => {
        try {
          const status = await progress.advance(id);
          return status === 'PENDING' || status === 'SUBMITTING';
        } catch (error) {
          appLog.warn({ err: error, request: id }, 'could not advance a request; will retry');
          return true;
        }
      });
    }
    if (config.runPoller) await uploadJobs.work((uploadId) => uploads.run(uploadId));
    if (config.runWebhooks) {
      relay.start();
      await delivery.work();
    }
    const housekeeping = new Housekeeping({ db: database.db, intervalSeconds: config.housekeepingIntervalSeconds, eventRetentionDays: config.eventRetentionDays, log: app.log });
    housekeeping.start();
    const schedule = new ReconcileSchedule({
      db: database.db,
      intervalSeconds: config.reconcileIntervalSeconds,
      concurrency: config.reconcileConcurrency,
      tickSeconds: 60,
      run: (due) => reconciliations.scheduled(due),
      log: app.log,
    });
    if (config.runPoller) schedule.start();
    const started = { app, poller, relay, delivery, housekeeping, schedule, reconciliations };
    let closing: Promise<void> | undefined;
    return {
      app,
      database,
      progress,
      poller,
      relay,
      delivery,
      housekeeping,
      reconcileSchedule: schedule,
      reconciliations,
      close() {
        closing ??= (async () => {
          try {
            await started.app.close();
            started.poller.stop();
            await started.relay.stop();
            await started.delivery.stop();
            await started.housekeeping.stop();
            await started.schedule.stop();
            await started.reconciliations.settled();
            await boss.stop({ graceful: true, timeout: 10_000 });
          } finally {
            await database.close();
          }
        })();
        return closing;
      },
    };
  } catch (error) {
    if (bossStarted) await boss.stop({ graceful: false }).catch(() => undefined);
    await app?.close().catch(() => undefined);
    await database.close();
    throw error;
  }
}

/** The app's logger once it exists (the poller is made before the app). */
function logOf(app: () => Api | undefined): FastifyBaseLogger {
  const forward = (level: 'error' | 'warn' | 'info' | 'debug') => (...args: unknown[]) => {
    const log = app()?.log as unknown as Record<string, (...a: unknown[]) => void> | undefined;
    log?.[level]?.(...args);
  };
  return { error: forward('error'), warn: forward('warn'), info: forward('info'), debug: forward('debug') } as unknown as FastifyBaseLogger;
}
