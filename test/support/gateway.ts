import { randomBytes } from 'node:crypto';
import { SYSTEM_SOURCE } from '../../src/services/audit.ts';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { demoKeyFileOf } from '../../src/service-file.ts';
import { createPlatform } from '../../src/services/platforms.ts';
import { openDatabase } from '../../src/store/database.ts';
import type { TestResponse } from './harness.ts';
import { sleep } from './workflow.ts';

/** `node src/main.ts` as a child process, as an operator starts it: for tests that kill and restart the service. */

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** An API key as the first start prints it. */
export const API_KEY = /ebrc_test_[1-9A-HJ-NP-Za-km-z]+/;

export type Running = { child: ChildProcess; output: () => string; exited: Promise<unknown> };

/**
 * AUTHORITY_URL for a service that never calls the authority: nothing listens on port 9 (discard), so a call would
 * fail at once. Without an AUTHORITY_URL, `src/main.ts` starts (or reuses) the sandbox program on SANDBOX_PORT
 * (3100 by default) and leaves it running: a test that needs no authority passes this instead.
 */
export const NO_AUTHORITY = 'http://127.0.0.1:9';

/**
 * `node src/main.ts` with only the environment given. Nothing is added: with no AUTHORITY_URL in `env` it starts the
 * sandbox program beside it (see NO_AUTHORITY), which outlives it and is the caller's to stop.
 */
/**
 * The environment of a gateway started on a scratch database against a sandbox in the test's process: any port, the
 * poller every second, logs at info; on PostgreSQL, a fresh ENCRYPTION_KEY (there is no data folder to keep one in).
 */
export function gatewayEnv(
  scratch: { dataDir: string; databaseUrl?: string | undefined },
  sandboxUrl: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    DATA_DIR: scratch.dataDir,
    PORT: '0',
    HOST: '127.0.0.1',
    AUTHORITY_URL: sandboxUrl,
    POLL_INTERVAL_SECONDS: '1',
    LOG_LEVEL: 'info',
    ...extra,
    ...(scratch.databaseUrl ? { DATABASE_URL: scratch.databaseUrl, ENCRYPTION_KEY: randomBytes(32).toString('base64') } : {}),
  };
}

export function startGateway(env: Record<string, string>): Running {
  const child = spawn(process.execPath, ['src/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output, exited: once(child, 'exit') };
}

/** Waits for the "listening" log line (PORT=0: the system picks the port, so no other test can take it) and /ready. */
export async function waitUntilReady(gateway: Running, timeoutMs = 90_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let base: string | undefined;
  while (Date.now() < deadline) {
    if (gateway.child.exitCode !== null) assert.fail(`the gateway exited with ${gateway.child.exitCode}: ${gateway.output()}`);
    const listening = /"port":(\d+).*"msg":"ebrc-gateway is listening"/.exec(gateway.output());
    if (listening) base = `http://127.0.0.1:${listening[1]}`;
    if (base) {
      try {
        if ((await fetch(`${base}/ready`, { signal: AbortSignal.timeout(5_000) })).ok) return base;
      } catch {
        // not answering yet
      }
    }
    await sleep(100);
  }
  assert.fail(`the gateway did not become ready: ${gateway.output()}`);
}

/** SIGTERM, then SIGKILL if it has not exited within 15 s. */
export async function stopGateway(gateway: Running | undefined): Promise<void> {
  if (!gateway || gateway.child.exitCode !== null || gateway.child.signalCode !== null) return;
  gateway.child.kill('SIGTERM');
  const timer = setTimeout(() => gateway.child.kill('SIGKILL'), 15_000);
  await gateway.exited;
  clearTimeout(timer);
}

/** SIGKILL, as a crash would: nothing is flushed, nothing is closed. */
export async function killGateway(gateway: Running): Promise<void> {
  if (gateway.child.exitCode !== null || gateway.child.signalCode !== null) return;
  gateway.child.kill('SIGKILL');
  await gateway.exited;
}

/**
 * An API key for a started gateway: the demo platform's, printed by the first start on an empty embedded folder,
 * or on PostgreSQL (where no demo platform is made) a new platform's.
 */
export async function gatewayApiKey(
  gateway: Running,
  scratch: { dataDir: string; databaseUrl?: string },
  platformName: string,
): Promise<string> {
  if (!scratch.databaseUrl) {
    // Not in a terminal: the first start writes the demo key to its file, never to the output.
    assert.doesNotMatch(gateway.output(), API_KEY, 'the demo key is not in the output');
    const written = API_KEY.exec(fs.readFileSync(demoKeyFileOf(scratch.dataDir), 'utf8'));
    assert.ok(written, 'the demo key file holds the key');
    return written[0];
  }
  const database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir });
  try {
    return (await createPlatform(database.db, platformName, SYSTEM_SOURCE)).apiKey;
  } finally {
    await database.close();
  }
}

export type RequestOptions = { body?: unknown; query?: Record<string, string | number>; headers?: Record<string, string> };

/** The harness's `request`, over real HTTP; each call gives up after `timeoutMs`. */
export function httpClient(base: string, apiKey: string, timeoutMs = 30_000) {
  return {
    async request(method: string, url: string, options: RequestOptions = {}): Promise<TestResponse> {
      const target = new URL(url, base);
      for (const [key, value] of Object.entries(options.query ?? {})) target.searchParams.set(key, String(value));
      const response = await fetch(target, {
        method,
        headers: { 'x-api-key': apiKey, ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}), ...options.headers },
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await response.text();
      let body: unknown;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = undefined;
      }
      return { status: response.status, headers: Object.fromEntries(response.headers), body, text };
    },
  };
}
