/**
 * `npm run sandbox`: the sandbox authority alone, configured by SANDBOX_* variables (config.ts). It stops cleanly
 * on SIGTERM or SIGINT: held calls are dropped, the storage is closed and the data folder's lock released.
 */
import { pino } from 'pino';
import { SandboxConfigError, readSandboxConfig } from './config.ts';
import { startSandbox } from './program.ts';
import { DataDirLockedError } from './store/data-dir-lock.ts';

async function main(): Promise<void> {
  const config = readSandboxConfig(process.env);
  const logger = pino({ name: 'authority-sandbox', level: config.logLevel });
  const program = await startSandbox(config, { logger });
  logger.info(
    {
      url: program.url,
      // Never the database URL: it may hold a password.
      storage: config.databaseUrl === undefined ? { embedded: config.dataDir } : 'postgres (schema authority_sandbox)',
      processingDelayMs: config.processingDelayMs,
      envelopeProfile: config.envelopeProfile,
    },
    'the sandbox authority is listening',
  );

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    program.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((error: unknown) => {
  if (error instanceof SandboxConfigError || error instanceof DataDirLockedError) {
    process.stderr.write(`authority-sandbox: ${error.message}\n`);
  } else {
    process.stderr.write(`authority-sandbox failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  }
  process.exit(1);
});
