// First: with OTEL_EXPORTER_OTLP_ENDPOINT set, tracing must be in place before node:http, Fastify and pg are loaded.
import { flushTracing } from './telemetry/tracing.ts';
import { SYSTEM_SOURCE } from './services/audit.ts';
import fs from 'node:fs';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { SandboxBesideError, sandboxBeside, stopSandbox, type SandboxBeside } from './sandbox-beside.ts';
import { createService } from './service.ts';
import { demoKeyFileOf, localUrlOf, removeServiceFile, writeServiceFile } from './service-file.ts';
import { adminTokenSource } from './services/admin-token.ts';
import { createPlatform } from './services/platforms.ts';
import { anyPlatformExists } from './store/platforms.ts';
import { DataDirLockedError } from './store/data-dir-lock.ts';
import { DatabaseUnreachableError } from './store/database.ts';
import { SchemaMismatchError } from './store/migrate.ts';

async function main(): Promise<void> {
  const loaded = loadConfig();
  // Sandbox mode with no AUTHORITY_URL: reuse the sandbox program on SANDBOX_PORT, or start it beside (it outlives us).
  const sandbox = await sandboxBeside(loaded);
  const config = sandbox === undefined ? loaded : { ...loaded, authorityUrl: sandbox.url };
  try {
    await serve(config, sandbox);
  } catch (error) {
    // Not stopped: another service starting at the same time may be using it already.
    if (sandbox?.how === 'started') {
      process.stderr.write(`ebrc-gateway: the sandbox authority started at ${sandbox.url} (pid ${sandbox.pid}) keeps running; SIGTERM it to stop it.\n`);
    }
    throw error;
  }
}

async function serve(config: Config, sandbox: SandboxBeside | undefined): Promise<void> {
  const service = await createService({ config });
  const log = service.app.log;
  if (sandbox !== undefined) {
    const { how, url, pid, logFile, stopsWithService } = sandbox;
    const after = stopsWithService
      ? 'it stops with the service (SIGTERM, SIGINT), and outlives only a kill'
      : `it keeps running when the service stops (stop it with kill ${pid ?? '<its pid>'})`;
    // Nested: pino's own `pid` is the service's.
    log.info(
      { sandbox: how === 'started' ? { how, url, pid, logFile, stopsWithService } : { how, url, pid, stopsWithService } },
      how === 'started'
        ? `using the sandbox authority at ${url}: started it beside the service (pid ${pid}, log ${logFile}); ${after}`
        : `using the sandbox authority at ${url}: reused the one already running there (pid ${pid ?? 'unknown'}); ${after}`,
    );
    sandbox.onExit((code, signal) => log.warn({ sandbox: { url, pid, code, signal, logFile } }, 'the sandbox authority started beside the service has exited'));
  }

  if (service.database.kind === 'embedded' && !(await anyPlatformExists(service.database.db))) {
    const { platform, apiKey } = await createPlatform(service.database.db, 'Demo platform', SYSTEM_SOURCE);
    // The key is stored hashed and cannot be shown again. Printed to a terminal; never into a log stream (a collector
    // would keep it): without a terminal it goes to a file only the owner can read, which the log names.
    if (process.stdout.isTTY) {
      process.stdout.write(`\nCreated the demo platform ${platform.id}.\nIts API key (shown once; keep it):\n\n  ${apiKey}\n\n`);
    } else {
      const file = demoKeyFileOf(config.dataDir);
      fs.writeFileSync(file, `${apiKey}\n`, { mode: 0o600 });
      log.info({ platform: platform.id, file }, `created the demo platform; its API key is in ${file} (readable by its owner only): keep it elsewhere and delete the file`);
    }
  }

  let stopping = false;
  let serviceFileWritten = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    // From now on the CLI opens the database itself once it is free, rather than calling this service.
    if (serviceFileWritten) removeServiceFile(config.dataDir);
    service
      .close()
      .then(async () => {
        // After the service, whose last calls to the authority may still be in flight until it closes.
        if (sandbox?.stopsWithService && sandbox.pid !== undefined) {
          const stopped = await stopSandbox(sandbox.pid);
          if (stopped) log.info({ sandbox: { pid: sandbox.pid } }, 'stopped the sandbox authority');
          else log.warn({ sandbox: { pid: sandbox.pid } }, `the sandbox authority (pid ${sandbox.pid}) did not stop within 15 s of its SIGTERM`);
        }
      })
      .then(flushTracing)
      .then(
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
  // Where the admin API's token is: the path of its file, never the token.
  const admin = adminTokenSource(config);
  if (admin.kind === 'file') log.info({ adminTokenFile: admin.file }, `the admin API (/admin/v1) takes the token in ${admin.file}`);
  else if (admin.kind === 'env') log.info('the admin API (/admin/v1) takes the token in ADMIN_TOKEN');
  else log.info('the admin API (/admin/v1) is off: set ADMIN_TOKEN to turn it on');
  // While this process holds the embedded database, the CLI goes through the admin API: tell it where that is.
  if (service.database.kind === 'embedded' && typeof address === 'object' && address !== null && !stopping) {
    writeServiceFile(config.dataDir, { url: localUrlOf(address), pid: process.pid, adminTokenFile: admin.kind === 'file' ? admin.file : null });
    serviceFileWritten = true;
  }
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof DataDirLockedError || error instanceof SandboxBesideError || error instanceof DatabaseUnreachableError || error instanceof SchemaMismatchError) {
    process.stderr.write(`ebrc-gateway: ${error.message}\n`);
  } else {
    process.stderr.write(`ebrc-gateway failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  }
  process.exit(1);
});
