/** Storage and helpers for the sandbox program's tests: they run it as its own program, beside no service. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { parseCredentialSet } from '../../src/authority/protocol/credentials.ts';
import type { CredentialSet } from '../../src/authority/protocol/credentials.ts';
import type { SandboxConfig } from '../../sandbox/config.ts';
import { readSandboxConfig } from '../../sandbox/config.ts';
import type { SandboxProgram } from '../../sandbox/program.ts';
import { startSandbox } from '../../sandbox/program.ts';

export type Backend = 'embedded' | 'postgres';

export const PASSWORD = 'Sandbox@123';

const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';

/** TEST_DATABASE_URL (default the machine's PostgreSQL); `skip` tests on the embedded database only. */
function postgresServerUrl(): string | undefined {
  const url = process.env.TEST_DATABASE_URL ?? DEFAULT_POSTGRES_URL;
  return url === 'skip' ? undefined : url;
}

export function backends(): Backend[] {
  return postgresServerUrl() === undefined ? ['embedded'] : ['embedded', 'postgres'];
}

export type ScratchStorage = { dataDir: string; databaseUrl: string | undefined; drop(): Promise<void> };

/** An empty temporary data folder, or a new PostgreSQL database, dropped afterwards. */
export async function scratchStorage(backend: Backend): Promise<ScratchStorage> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'authority-sandbox-test-'));
  const removeFolder = () => fs.rmSync(dataDir, { recursive: true, force: true });
  if (backend === 'embedded') return { dataDir, databaseUrl: undefined, drop: async () => removeFolder() };
  const serverUrl = postgresServerUrl()!;
  const name = `authority_sandbox_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: serverUrl });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin(`create database ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    dataDir,
    databaseUrl: url.toString(),
    async drop() {
      await admin(`drop database if exists ${name} with (force)`);
      removeFolder();
    },
  };
}

/** The program's defaults on the scratch storage, on a free port, quiet, with the given changes. */
export function sandboxConfig(storage: ScratchStorage, changes: Partial<SandboxConfig> = {}): SandboxConfig {
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
