/**
 * The sandbox authority as one running program: its storage (migrated, credential sets generated on the first
 * start), its HTTP server, and the background processing of accepted pushes once their delay has passed.
 */
import { isIP } from 'node:net';
import path from 'node:path';
import type { Logger } from 'pino';
import type { SandboxAuthority } from './authority.ts';
import { createSandboxAuthority, irmMaterialiser } from './authority.ts';
import type { SandboxConfig } from './config.ts';
import { createTokenStore, loadCredentialRegistry } from './credentials.ts';
import { createOutsideChanges } from './outside-changes.ts';
import { buildSandboxServer } from './server.ts';
import { openSandboxDatabase, type SandboxDatabase } from './store/database.ts';

export type SandboxProgram = {
  /** Where it listens, e.g. http://127.0.0.1:3100: the base URL of every operation. */
  url: string;
  port: number;
  /** Its storage, for reading what the authority holds (the tests' invariants); the program writes it alone. */
  database: SandboxDatabase;
  /** Stops listening and closes every connection, lets the work under way finish, closes the storage. */
  close(): Promise<void>;
};

const MIN_PROCESSING_INTERVAL_MS = 50;
const MAX_PROCESSING_INTERVAL_MS = 1_000;

export async function startSandbox(
  config: SandboxConfig,
  options: { logger: Logger; now?: () => Date },
): Promise<SandboxProgram> {
  const { logger } = options;
  const now = options.now ?? (() => new Date());
  const database = await openSandboxDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  try {
    const credentials = await loadCredentialRegistry(database.db, config.envelopeProfile);
    const authority = createSandboxAuthority({ db: database.db, processingDelayMs: config.processingDelayMs, now });
    const app = buildSandboxServer({
      db: database.db,
      authority,
      outside: createOutsideChanges({ db: database.db, now, materialiseIrms: irmMaterialiser(database.db) }),
      credentials,
      tokens: createTokenStore(database.db),
      allowedIps: config.allowedIps,
      rateLimitPerSecond: config.rateLimitPerSecond,
      rateLimitBurst: config.rateLimitBurst,
      pushAnswerDelayMs: config.pushAnswerDelayMs,
      dataDir: config.databaseUrl === undefined ? path.resolve(config.dataDir) : null,
      logger,
      now,
    });
    await app.listen({ host: config.host, port: config.port });
    const processing = processInBackground(authority, config.processingDelayMs, logger);
    const address = app.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : config.port;
    let closing: Promise<void> | null = null;
    return {
      url: `http://${isIP(config.host) === 6 ? `[${config.host}]` : config.host}:${port}`,
      port,
      database,
      close() {
        closing ??= (async () => {
          await app.close();
          await processing.stop();
          await database.close();
        })();
        return closing;
      },
    };
  } catch (error) {
    await database.close();
    throw error;
  }
}

/** Processes due pushes every so often, so they move on without anyone asking for their status. */
function processInBackground(authority: SandboxAuthority, processingDelayMs: number, logger: Logger): { stop(): Promise<void> } {
  const intervalMs = Math.min(MAX_PROCESSING_INTERVAL_MS, Math.max(MIN_PROCESSING_INTERVAL_MS, Math.floor(processingDelayMs / 2)));
  let running: Promise<void> | null = null;
  const timer = setInterval(() => {
    if (running !== null) return;
    running = authority
      .processDueRequests()
      .then(
        (processed) => {
          if (processed > 0) logger.info({ processed }, 'processed pushes whose delay had passed');
        },
        (error: unknown) => logger.error({ err: error }, 'processing pushes failed'),
      )
      .finally(() => {
        running = null;
      });
  }, intervalMs);
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
