import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import type { Authority } from '../../src/authority/authority.ts';
import { createSandboxAuthority } from '../../src/authority/sandbox/sandbox-authority.ts';
import { loadConfig } from '../../src/config.ts';
import { createService, type Service } from '../../src/service.ts';
import { createPlatform } from '../../src/services/platforms.ts';
import { injectRequest, scratchDatabase, type InjectOptions, type TestResponse } from './harness.ts';

export type ServiceName = 'A' | 'B';

export type TwoServices = {
  services: Record<ServiceName, Service>;
  /** A key of the one platform both serve. */
  apiKey: string;
  /** Warnings and errors either service logged, each line prefixed with its name. */
  problems: string[];
  /** Requests to one service with the platform's key, in the shape test/support/workflow.ts takes. */
  via(name: ServiceName): { request(method: string, url: string, options?: InjectOptions): Promise<TestResponse> };
  /** Closes both services (either may have been closed already) and drops the database. */
  close(): Promise<void>;
};

/**
 * Two service instances (each its own pool, pg-boss and poller) on one scratch PostgreSQL database, as contract 8
 * allows, sharing the encryption key. `watch` wraps the sandbox authority each service talks to, to count its calls.
 */
export async function startTwoServices(
  watch: (name: ServiceName, sandbox: Authority) => Authority = (_name, sandbox) => sandbox,
): Promise<TwoServices> {
  const scratch = await scratchDatabase('postgres');
  const problems: string[] = [];
  const env = {
    DATABASE_URL: scratch.databaseUrl!,
    DATA_DIR: scratch.dataDir,
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
      authority: (database) => watch(name, createSandboxAuthority({ database, processingDelayMs: 300 })),
    });
  const started: Service[] = [];
  // Service.close is idempotent: a test may close one service early.
  const closeAll = async (): Promise<void> => {
    for (const service of started) await service.close();
    await scratch.drop();
  };
  try {
    started.push(await start('A'));
    started.push(await start('B'));
  } catch (error) {
    await closeAll();
    throw error;
  }
  const services = { A: started[0]!, B: started[1]! };
  const apiKey = (await createPlatform(services.A.database.db, 'Shared platform')).apiKey;
  return {
    services,
    apiKey,
    problems,
    via: (name) => ({ request: (method, url, options = {}) => injectRequest(services[name], method, url, { ...options, key: apiKey }) }),
    close: closeAll,
  };
}
