import type { FastifyBaseLogger } from 'fastify';
import type { Authority } from './authority/authority.ts';
import { withDeadline } from './authority/deadline.ts';
import { createDgftAuthority } from './authority/dgft/dgft-authority.ts';
import { createDgftClient } from './authority/dgft/dgft-client.ts';
import { createSandboxCredentialIssuer } from './authority/sandbox-issuer.ts';
import { ConfigError, type Config } from './config.ts';
import { buildApp, type Api } from './http/app.ts';
import { Housekeeping } from './jobs/housekeeping.ts';
import { RequestPoller } from './jobs/request-poller.ts';
import type { ServiceContext } from './services/context.ts';
import { CredentialsVault } from './services/credentials-vault.ts';
import { checkInstallationKey } from './services/installation-key.ts';
import { keyFileOf, loadServerKey } from './services/server-key.ts';
import { GenebrcService } from './services/genebrc.ts';
import { IrmPuller } from './services/irms.ts';
import { RequestList } from './services/request-list.ts';
import { openDatabase, type Database } from './store/database.ts';
import { releaseAbandonedClaims } from './store/idempotency.ts';
import { migrate } from './store/migrate.ts';

const DEADLINE_BACKSTOP_MARGIN_MS = 250;

export type Service = {
  app: Api;
  database: Database;
  genebrc: GenebrcService;
  poller: RequestPoller;
  housekeeping: Housekeeping;
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
  let poller: RequestPoller | undefined;
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
    const serverKey = loadServerKey(config);
    const vault = new CredentialsVault(serverKey.credentialsKey);
    await checkInstallationKey(database.db, serverKey, vault, { keyFile: config.encryptionKey ? undefined : keyFileOf(config.dataDir) });
    const context: ServiceContext = {
      config,
      db: database.db,
      // A backstop behind the client's own deadline, a little later so that the client's more precise failure
      // (unavailable after retries, say) is the one reported.
      authority: withDeadline(authority, config.authorityTimeoutMs + DEADLINE_BACKSTOP_MARGIN_MS),
      sandboxCredentials: config.authorityMode === 'sandbox'
        ? createSandboxCredentialIssuer({ baseUrl: authorityUrl, defaultProfile: config.authorityEnvelopeProfile, timeoutMs: config.authorityTimeoutMs })
        : null,
      serverKey,
      vault,
    };
    const irmPuller = new IrmPuller(context);
    let app: Api | undefined;
    poller = new RequestPoller({
      database,
      pollIntervalSeconds: config.pollIntervalSeconds,
      // A job makes at most two authority calls (reconcile, then status), each within the deadline.
      jobExpireSeconds: Math.ceil((2 * config.authorityTimeoutMs) / 1000) + 30,
      log: logOf(() => app),
    });
    const genebrc = new GenebrcService(context, irmPuller, poller);
    app = await buildApp({
      config,
      database,
      context,
      irmPuller,
      genebrc,
      requestList: new RequestList(database.db),
      ...(options.logger !== undefined ? { logger: options.logger } : {}),
    });
    await poller.start();
    if (config.runPoller) {
      const log = app.log;
      await poller.work(async (id) => {
        try {
          const status = await genebrc.advance(id);
          return status === 'PENDING' || status === 'SUBMITTING';
        } catch (error) {
          log.warn({ err: error, request: id }, 'could not advance a request; will retry');
          return true;
        }
      });
    }
    const housekeeping = new Housekeeping({ db: database.db, intervalSeconds: config.housekeepingIntervalSeconds, log: app.log });
    housekeeping.start();
    const started = { app, poller, housekeeping };
    let closing: Promise<void> | undefined;
    return {
      app,
      database,
      genebrc,
      poller,
      housekeeping,
      close() {
        closing ??= (async () => {
          try {
            await started.app.close();
            await started.poller.stop();
            await started.housekeeping.stop();
          } finally {
            await database.close();
          }
        })();
        return closing;
      },
    };
  } catch (error) {
    await poller?.stop().catch(() => undefined);
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
