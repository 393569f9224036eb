/**
 * The sandbox authority beside the benchmarked service: the separate program `npm run sandbox` (sandbox/main.ts) as a
 * child process, on storage of its own, reached by the service over the wire (AUTHORITY_URL), as in any deployment.
 */
import path from 'node:path';
import { parseCredentialSet, type CredentialSet } from '../../src/authority/protocol/credentials.ts';
import { startServer, type Server } from './processes.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const SANDBOX_MAIN = path.join(ROOT, 'sandbox', 'main.ts');

export const SANDBOX_PASSWORD = 'Sandbox@123';
/** application_name of the sandbox's PostgreSQL sessions, so that the CPU notes tell them from the service's. */
export const SANDBOX_APPLICATION_NAME = 'ebrc-bench-sandbox';

/** Its own folder for the embedded database, or a PostgreSQL database where it keeps the schema authority_sandbox. */
export type SandboxStorage = { dataDir: string } | { databaseUrl: string };

/** How long the sandbox takes to process an accepted push, in the benchmarks that push. */
export const SANDBOX_PROCESSING_DELAY_MS = 3_000;

/** The sandbox's settings besides its storage and port (SANDBOX_*), as the report shows them. */
export function sandboxSettings(processingDelayMs: number): Record<string, string> {
  return {
    SANDBOX_HOST: '127.0.0.1',
    SANDBOX_PROCESSING_DELAY_MS: String(processingDelayMs),
    // The real authority's limit is not what is measured: the service's own pace is.
    SANDBOX_RATE_LIMIT_PER_SECOND: '1000000',
    SANDBOX_RATE_LIMIT_BURST: '1000000',
    SANDBOX_ALLOWED_IPS: '',
    SANDBOX_LOG_LEVEL: 'warn',
  };
}

/** A PostgreSQL URL whose sessions carry SANDBOX_APPLICATION_NAME. */
export function sandboxDatabaseUrl(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  url.searchParams.set('application_name', SANDBOX_APPLICATION_NAME);
  return url.toString();
}

/** Starts the sandbox program and waits for its /health. */
export async function startSandboxProgram(options: {
  name: string;
  storage: SandboxStorage;
  port: number;
  processingDelayMs: number;
  logDir: string;
}): Promise<Server> {
  const storage = 'databaseUrl' in options.storage
    ? { SANDBOX_DATABASE_URL: sandboxDatabaseUrl(options.storage.databaseUrl), SANDBOX_DATA_DIR: '' }
    : { SANDBOX_DATABASE_URL: '', SANDBOX_DATA_DIR: options.storage.dataDir };
  return startServer({
    name: options.name,
    script: SANDBOX_MAIN,
    env: { ...sandboxSettings(options.processingDelayMs), ...storage, SANDBOX_PORT: String(options.port) },
    port: options.port,
    readyPath: '/health',
    logDir: options.logDir,
    // The first start on new storage generates the authority's and every account's RSA keys.
    startTimeoutMs: 120_000,
  });
}

/**
 * A test account's API credential set, from the sandbox's POST /sandbox/issueApiCredentials: what an exporter downloads
 * from the authority's portal, and what the service stores (sealed) for a customer after a credential check.
 */
export async function issueCredentialSet(baseUrl: string, username: string): Promise<CredentialSet> {
  const response = await fetch(`${baseUrl}/sandbox/issueApiCredentials`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ username, password: SANDBOX_PASSWORD }),
    signal: AbortSignal.timeout(30_000),
  });
  const body: unknown = await response.json().catch(() => undefined);
  if (response.status !== 200) throw new Error(`the sandbox refused to issue ${username}'s credential set (HTTP ${response.status}): ${JSON.stringify(body)}`);
  const parsed = parseCredentialSet(body, 'spec-sha256');
  if (!parsed.ok) throw new Error(`the sandbox's credential set for ${username} does not read: ${JSON.stringify(parsed.problems)}`);
  return parsed.credentials;
}
