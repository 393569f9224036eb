/** Storage and helpers for the sandbox program's tests: they run it as its own program, beside no service. */
import { pino } from 'pino';
import { parseCredentialSet } from '../../src/authority/protocol/credentials.ts';
import type { CredentialSet } from '../../src/authority/protocol/credentials.ts';
import type { SandboxConfig } from '../../sandbox/config.ts';
import { readSandboxConfig } from '../../sandbox/config.ts';
import type { SandboxProgram } from '../../sandbox/program.ts';
import { startSandbox } from '../../sandbox/program.ts';

export const PASSWORD = 'Sandbox@123';

/** The program's defaults on the scratch storage, on a free port, quiet, with the given changes. */
export function sandboxConfig(storage: { dataDir: string; databaseUrl?: string | undefined }, changes: Partial<SandboxConfig> = {}): SandboxConfig {
  return {
    ...readSandboxConfig({ SANDBOX_PORT: '0', SANDBOX_DATA_DIR: storage.dataDir, SANDBOX_LOG_LEVEL: 'silent' }),
    databaseUrl: storage.databaseUrl,
    ...changes,
  };
}

export function startQuietSandbox(config: SandboxConfig, now?: () => Date): Promise<SandboxProgram> {
  return startSandbox(config, { logger: pino({ level: 'silent' }), ...(now === undefined ? {} : { now }) });
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text), headers: response.headers };
}

/** The account's credential set, downloaded as an exporter would, and read as the service reads it. */
export async function issueCredentials(baseUrl: string, username: string, envelopeProfile?: string): Promise<CredentialSet> {
  const answer = await postJson(`${baseUrl}/sandbox/issueApiCredentials`, { username, password: PASSWORD, envelopeProfile });
  if (answer.status !== 200) throw new Error(`issueApiCredentials answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  const parsed = parseCredentialSet(answer.body, 'spec-sha256');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return parsed.credentials;
}
