import { randomBytes } from 'node:crypto';
import { SYSTEM_SOURCE } from '../../src/services/audit.ts';
import { pino } from 'pino';
import type { Authority } from '../../src/authority/authority.ts';
import { loadConfig } from '../../src/config.ts';
import { createService, type Service } from '../../src/service.ts';
import { createPlatform } from '../../src/services/platforms.ts';
import type { SandboxProgram } from '../../sandbox/program.ts';
import { injectRequest, scratchDatabase, startTestSandbox, type InjectOptions, type TestResponse } from './harness.ts';

export type ServiceName = 'A' | 'B';

export type TwoServices = {
  services: Record<ServiceName, Service>;
  /** The one sandbox authority program both services talk to, over the wire protocol. */
  sandbox: SandboxProgram;
  /** A key of the one platform both serve. */
  apiKey: string;
  /** Warnings and errors either service logged, each line prefixed with its name. */
  problems: string[];
  /** Requests to one service with the platform's key, in the shape test/support/workflow.ts takes. */
  via(name: ServiceName): { request(method: string, url: string, options?: InjectOptions): Promise<TestResponse> };
  /** Closes both services (either may have been closed already) and the sandbox, and drops the database. */
  close(): Promise<void>;
};

/**
 * Two service instances (each its own pool, pg-boss and poller) on one scratch PostgreSQL database, as contract 8
 * allows, sharing the encryption key, and both talking to one sandbox authority program (its state in the same
 * scratch database, schema authority_sandbox). `watch` wraps each service's authority adapter, to count its calls.
 */
export async function startTwoServices(
  watch: (name: ServiceName, adapter: Authority) => Authority = (_name, adapter) => adapter,
): Promise<TwoServices> {
  const scratch = await scratchDatabase('postgres');
  let sandbox: SandboxProgram;
  try {
    sandbox = await startTestSandbox(scratch, { processingDelayMs: 300 });
  } catch (error) {
    await scratch.drop();
    throw error;
  }
  const problems: string[] = [];
  const env = {
    DATABASE_URL: scratch.databaseUrl!,
    DATA_DIR: scratch.dataDir,
    AUTHORITY_URL: sandbox.url,
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    RUN_POLLER: 'true',
    POLL_INTERVAL_SECONDS: '1',
    RATE_LIMIT_PER_SECOND: '100000',
    RATE_LIMIT_BURST: '100000',
    LOG_LEVEL: 'warn',
  };
  const start = (name: ServiceName): Promise<Service> =>
    createService({
      config: loadConfig(env),
      logger: pino({ level: 'warn' }, { write: (line: string) => void problems.push(`${name}: ${line}`) }),
      authority: (adapter) => watch(name, adapter),
    });
  const started: Service[] = [];
  // Service.close is idempotent: a test may close one service early.
  const closeAll = async (): Promise<void> => {
    try {
      for (const service of started) await service.close();
      await sandbox.close();
    } finally {
      await scratch.drop();
    }
  };
  try {
    started.push(await start('A'));
    started.push(await start('B'));
  } catch (error) {
    await closeAll();
    throw error;
  }
  const services = { A: started[0]!, B: started[1]! };
  const apiKey = (await createPlatform(services.A.database.db, 'Shared platform', SYSTEM_SOURCE)).apiKey;
  return {
    services,
    sandbox,
    apiKey,
    problems,
    via: (name) => ({ request: (method, url, options = {}) => injectRequest(services[name], method, url, { ...options, key: apiKey }) }),
    close: closeAll,
  };
}
