import { ConfigError, loadConfig } from './config.ts';
import { createService } from './service.ts';
import { createPlatform } from './services/platforms.ts';
import { anyPlatformExists } from './store/platforms.ts';
import { DataDirLockedError } from './store/data-dir-lock.ts';

async function main(): Promise<void> {
  const config = loadConfig();
  const service = await createService({ config });
  const log = service.app.log;

  if (service.database.kind === 'embedded' && !(await anyPlatformExists(service.database.db))) {
    const { platform, apiKey } = await createPlatform(service.database.db, 'Demo platform');
    // Printed once, to the terminal only: the key is stored hashed and cannot be shown again.
    process.stdout.write(
      `\nCreated the demo platform ${platform.id}.\nIts API key (shown once; keep it):\n\n  ${apiKey}\n\n`,
    );
  }

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    service.close().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  try {
    await service.app.listen({ port: config.port, host: config.host });
  } catch (error) {
    // A port in use, say: close the database (and free the data folder) before giving up.
    await service.close().catch(() => undefined);
    throw error;
  }
  // The port actually bound: with PORT=0 the system picks one.
  const address = service.app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  log.info(
    { database: service.database.kind, port, docs: `http://${config.host}:${port}/docs` },
    'ebrc-gateway is listening',
  );
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof DataDirLockedError) {
    process.stderr.write(`ebrc-gateway: ${error.message}\n`);
  } else {
    process.stderr.write(`ebrc-gateway failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  }
  process.exit(1);
});
