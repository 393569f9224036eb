import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import type { Authority } from './authority/authority.ts';
import { withDeadline } from './authority/deadline.ts';
import { createAuthorityCallHistogram, withTiming } from './authority/timing.ts';
import { createDgftAuthority } from './authority/dgft/dgft-authority.ts';
import { createDgftClient } from './authority/dgft/dgft-client.ts';
import { createSandboxCredentialIssuer } from './authority/sandbox-issuer.ts';
import { ConfigError, type Config } from './config.ts';
import { buildApp, REDACTED_PATHS } from './http/app.ts';
import { makeOwnerOnlyFolder } from './owner-only-folder.ts';
import type { Api } from './http/deps.ts';
import { Drain } from './http/plugins/drain.ts';
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
import { keyFileOf, loadKeyRing } from './services/server-key.ts';
import { KeyRotation } from './services/sealed-values.ts';
import { ResealJobs } from './jobs/reseal.ts';
import { RequestLifecycle } from './services/genebrc/lifecycle.ts';
import { RequestList } from './services/genebrc/list.ts';
import { RequestProgress } from './services/genebrc/progress.ts';
import { PushService } from './services/genebrc/push.ts';
import { IrmPuller } from './services/irms.ts';
import { Reconciliations } from './services/reconciliations.ts';
import { ReconcileSchedule } from './jobs/reconcile-schedule.ts';
import { runGuarded } from './jobs/poison.ts';
import { EventOutbox } from './services/outbox.ts';
import { MailDelivery } from './jobs/mail-delivery.ts';
import { emlFolderOf, emlTransport, smtpTransport } from './mail/transport.ts';
import { MailOutbox } from './services/mail/outbox.ts';
import { DatabaseAvailability } from './store/availability.ts';
import { openDatabase, type Database } from './store/database.ts';
import { releaseAbandonedClaims } from './store/idempotency.ts';
import { assertMigrated, migrate, MIGRATION_LOCK_WAITS } from './store/migrate.ts';

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
  /** The key ring's re-sealing and its counts (encryption-status). */
  keyRotation: KeyRotation;
  /** The mail outbox's sender (contract 15). */
  mail: MailDelivery;
  mailOutbox: MailOutbox;
  /**
   * A clean stop, bounded by SHUTDOWN_TIMEOUT_SECONDS: readiness 503 and new requests refused (503 `shutting_down`),
   * the requests in flight finished, the listener closed, the background work stopped (the jobs under way finished),
   * the database closed. What the deadline cuts off is picked up again at the next start, as after a kill.
   */
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
  // Owner-only before anything is written there: the embedded database, the keys, the admin token.
  const narrowed = makeOwnerOnlyFolder(config.dataDir);
  let app: Api | undefined;
  // Until the app (and its logger) exists, lines go to a logger of the same settings: the wait for the database.
  const startLog = options.logger === false ? undefined : typeof options.logger === 'object' ? options.logger : pino({ level: config.logLevel, redact: REDACTED_PATHS });
  const availability = new DatabaseAvailability();
  const log = logOf(() => app?.log ?? startLog, availability);
  availability.useLog(log);
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
    wait: { seconds: config.databaseWaitSeconds, onWaiting: (line, attempt) => log.warn({ attempt }, line) },
    availability,
  });
  // PGlite unpacks a new database's first files with modes of their own (0666), whatever the umask: narrowed again.
  if (database.kind === 'embedded') makeOwnerOnlyFolder(config.dataDir);
  const boss = createBoss(database, log);
  let bossStarted = false;
  try {
    if (config.migrateOnStart) {
      await migrate(database, undefined, {
        ...MIGRATION_LOCK_WAITS,
        onRetry: (attempt, reason) => log.warn({ attempt }, `migrating: ${reason}; rolled back, trying again`),
      });
    } else {
      await assertMigrated(database);
    }
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
    const keyRing = loadKeyRing(config);
    const vault = new CredentialsVault(keyRing);
    await checkInstallationKey(database.db, keyRing, vault, { keyFile: config.encryptionKeys ? undefined : keyFileOf(config.dataDir) });
    const mailDelivery = new MailDelivery({
      boss,
      database,
      transport: config.smtpUrl === undefined ? emlTransport(emlFolderOf(config.dataDir)) : smtpTransport(config.smtpUrl),
      from: config.mailFrom,
      log,
      maxAttempts: config.mailMaxAttempts,
      retryDelaySeconds: config.mailRetryDelaySeconds,
    });
    const mail = new MailOutbox({ scheduler: mailDelivery, vault, publicUrl: config.publicUrl });
    const outbox = new EventOutbox(mail);
    const context: ServiceContext = {
      config,
      db: database.db,
      // A backstop behind the client's own deadline, a little later so that the client's more precise failure
      // (unavailable after retries, say) is the one reported.
      authority: withDeadline(withTiming(authority, createAuthorityCallHistogram(metrics)), config.authorityTimeoutMs + DEADLINE_BACKSTOP_MARGIN_MS),
      sandboxCredentials: config.authorityMode === 'sandbox'
        ? createSandboxCredentialIssuer({ baseUrl: authorityUrl, defaultProfile: config.authorityEnvelopeProfile, timeoutMs: config.authorityTimeoutMs })
        : null,
      serverKey: keyRing.current,
      keyRing,
      vault,
      outbox,
      log,
    };
    const deliveryMetrics = createDeliveryMetrics(metrics);
    const poller = new RequestPoller({
      boss,
      database,
      pollIntervalSeconds: config.pollIntervalSeconds,
      // A job makes at most two authority calls (reconcile, then status), each within the deadline.
      jobExpireSeconds: Math.ceil((2 * config.authorityTimeoutMs) / 1000) + 30,
      log,
      metrics,
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
    const irmPuller = new IrmPuller(context);
    const lifecycle = new RequestLifecycle(database.db, outbox, poller);
    const progress = new RequestProgress(context, lifecycle);
    const push = new PushService(context, irmPuller, lifecycle, progress);
    const uploadJobs = new BulkUploadJobs({ boss, database, log });
    const uploads = new BulkUploads(context, push, uploadJobs);
    const resealJobs = new ResealJobs({ boss, database, log });
    const keyRotation = new KeyRotation({ db: database.db, vault, ringIds: keyRing.ids, scheduler: resealJobs, log });
    const drain = new Drain();
    const reconciliations = new Reconciliations(context, irmPuller, (job, run, setAside) => runGuarded({ db: database.db, log, ...job }, run, setAside), log);
    app = await buildApp({
      config,
      database,
      context,
      irmPuller,
      push,
      progress,
      requestList: new RequestList(database.db),
      outbox,
      mail,
      deliveries: delivery,
      uploads,
      reconciliations,
      metrics,
      drain,
      ...(options.logger !== undefined ? { logger: options.logger } : {}),
    });
    if (narrowed.length > 0) {
      app.log.warn({ dataDir: config.dataDir, narrowed: narrowed.length, examples: narrowed.slice(0, 5) }, 'the data folder had entries other users could read or write; they are owner-only now (0700/0600)');
    }
    await boss.start();
    bossStarted = true;
    await poller.start();
    await delivery.start();
    await uploadJobs.start();
    await resealJobs.start();
    await mailDelivery.start();
    if (config.runPoller) {
      await poller.work(async (id) => {
        const status = await progress.advance(id);
        return status === 'PENDING' || status === 'SUBMITTING';
      });
    }
    if (config.runPoller) await uploadJobs.work((uploadId) => uploads.run(uploadId), (uploadId, reason) => uploads.setAside(uploadId, reason));
    if (config.runPoller) await resealJobs.work(() => keyRotation.resealAll());
    await keyRotation.scheduleIfRotating();
    if (config.runWebhooks) {
      relay.start();
      await delivery.work();
      await mailDelivery.work(mail);
    }
    const housekeeping = new Housekeeping({ db: database.db, intervalSeconds: config.housekeepingIntervalSeconds, eventRetentionDays: config.eventRetentionDays, auditRetentionDays: config.auditRetentionDays, log });
    housekeeping.start();
    const schedule = new ReconcileSchedule({
      db: database.db,
      intervalSeconds: config.reconcileIntervalSeconds,
      concurrency: config.reconcileConcurrency,
      tickSeconds: 60,
      run: (due) => reconciliations.scheduled(due),
      log,
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
      keyRotation,
      mail: mailDelivery,
      mailOutbox: mail,
      close() {
        closing ??= (async () => {
          const deadline = Date.now() + config.shutdownTimeoutSeconds * 1000;
          try {
            drain.begin();
            if (!(await drain.settled(deadline))) {
              started.app.log.warn({ requests: drain.inFlight }, 'shutdown: SHUTDOWN_TIMEOUT_SECONDS passed with requests in flight; cutting them off');
              started.app.server.closeAllConnections();
            }
            await started.app.close();
            started.poller.stop();
            const stopped = await within(
              deadline,
              Promise.all([started.relay.stop(), started.delivery.stop(), mailDelivery.stop(), started.housekeeping.stop(), started.schedule.stop(), started.reconciliations.settled()]),
            );
            if (!stopped) started.app.log.warn('shutdown: SHUTDOWN_TIMEOUT_SECONDS passed with webhook deliveries or reconciliations in flight; they are picked up again after the restart');
            // The jobs under way (polls, uploads) finish within what is left of the deadline; pg-boss takes at least 1 s.
            await boss.stop({ graceful: true, timeout: deadline - Date.now() });
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

/** Waits for `work` until `deadline` (a time in ms): whether it finished in time. */
async function within(deadline: number, work: Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()))));
  try {
    return await Promise.race([work.then(() => true), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The logger of background work (jobs, relay, deliveries, housekeeping): the app's once it exists. A failure logged
 * with its `err` that is the database's (an outage) goes through `availability` instead: one line per message per
 * QUIET_MS, not one a second (contract 17).
 */
function logOf(target: () => FastifyBaseLogger | undefined, availability: DatabaseAvailability): FastifyBaseLogger {
  const forward = (level: 'error' | 'warn' | 'info' | 'debug') => (...args: unknown[]) => {
    const [fields, message] = args;
    if ((level === 'error' || level === 'warn') && typeof message === 'string' && typeof fields === 'object' && fields !== null && 'err' in fields) {
      const { err, ...rest } = fields as { err: unknown };
      if (availability.failed(message, err, { message, fields: rest })) return;
    }
    (target() as unknown as Record<string, (...a: unknown[]) => void> | undefined)?.[level]?.(...args);
  };
  return { error: forward('error'), warn: forward('warn'), info: forward('info'), debug: forward('debug') } as unknown as FastifyBaseLogger;
}
