import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { loadConfig } from '../../src/config.ts';
import { createService, type Service } from '../../src/service.ts';
import { readMigrations } from '../../src/store/migrate.ts';
import { revokeApiKey } from '../../src/store/platforms.ts';
import { NO_AUTHORITY } from '../support/gateway.ts';
import { backends, expectProblem, scratchDatabase, type Backend, type TestResponse } from '../support/harness.ts';

const CLI = path.join(import.meta.dirname, '../../src/cli/main.ts');
const API_KEY = /^ebrc_test_[1-9A-HJ-NP-Za-km-z]{22,}$/;

type Run = { code: number | null; stdout: string; stderr: string };

/** Runs the operator's CLI as the operator would: a separate process on the same database. */
function cli(env: Record<string, string>, ...args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The one JSON object a `--json` command prints, after checking it printed exactly one line. */
function json(run: Run): any {
  assert.equal(run.code, 0, `exit ${run.code}: ${run.stderr}${run.stdout}`);
  const lines = run.stdout.split('\n').filter((line) => line.length > 0);
  assert.equal(lines.length, 1, `expected one line of JSON, got: ${run.stdout}`);
  return JSON.parse(lines[0]!);
}

async function call(service: Service, apiKey: string, url = '/api/v1/platform-customers'): Promise<TestResponse> {
  const response = await service.app.inject({ method: 'GET', url, headers: { 'x-api-key': apiKey } });
  return { status: response.statusCode, headers: response.headers, body: response.json(), text: response.body };
}

function serviceConfig(env: Record<string, string>, cacheSeconds: number) {
  // These services only authenticate API keys: they never call the authority.
  return loadConfig({ ...env, AUTHORITY_URL: NO_AUTHORITY, API_KEY_CACHE_SECONDS: String(cacheSeconds), RUN_POLLER: 'false', LOG_LEVEL: 'silent' });
}

for (const backend of backends()) {
  describe(`cli [${backend}]`, () => {
    let scratch: Awaited<ReturnType<typeof scratchDatabase>>;
    let env: Record<string, string>;
    let platformId: string;
    let firstKey: { keyId: string; apiKey: string };
    let secondKey: { keyId: string; apiKey: string };

    before(async () => {
      scratch = await scratchDatabase(backend as Backend, { empty: true });
      env = { DATA_DIR: scratch.dataDir, ...(scratch.databaseUrl ? { DATABASE_URL: scratch.databaseUrl } : {}) };
    });
    after(async () => {
      await scratch.drop();
    });

    test('migrate applies every migration and says which', async () => {
      const result = json(await cli(env, 'migrate', '--json'));
      assert.deepEqual(result, { applied: readMigrations().map((m) => m.name) });
      assert.ok(result.applied.length >= 1);
    });

    test('create-platform --json prints one object with the new platform and its key', async () => {
      const result = json(await cli(env, 'create-platform', '--name', 'Acme Pay', '--json'));
      assert.equal(result.platform.name, 'Acme Pay');
      assert.match(result.platform.id, /^[0-9a-f-]{36}$/);
      assert.match(result.apiKey, API_KEY);
      assert.match(result.keyId, /^[0-9a-f-]{36}$/);
      platformId = result.platform.id;
      firstKey = { keyId: result.keyId, apiKey: result.apiKey };
    });

    test('issue-key gives the platform another, different key; list-keys shows both without the keys themselves', async () => {
      const issued = json(await cli(env, 'issue-key', '--platform', platformId, '--json'));
      assert.match(issued.apiKey, API_KEY);
      assert.notEqual(issued.apiKey, firstKey.apiKey);
      assert.equal(issued.platformId, platformId);
      assert.ok(issued.apiKey.startsWith(issued.displayPrefix));
      secondKey = { keyId: issued.keyId, apiKey: issued.apiKey };

      const listed = await cli(env, 'list-keys', '--platform', platformId, '--json');
      const { keys } = json(listed);
      for (const secret of [firstKey.apiKey, secondKey.apiKey]) {
        assert.ok(!listed.stdout.includes(secret), 'list-keys must never print a key');
        // Not even the random part beyond the display prefix.
        assert.ok(!listed.stdout.includes(secret.slice(-12)));
      }
      assert.deepEqual(keys.map((k: { id: string }) => k.id).sort(), [firstKey.keyId, secondKey.keyId].sort());
      for (const key of keys) {
        const apiKey = key.id === firstKey.keyId ? firstKey.apiKey : secondKey.apiKey;
        assert.ok(apiKey.startsWith(key.displayPrefix), `${key.displayPrefix} is not a prefix of the key`);
        assert.ok(key.displayPrefix.length < apiKey.length - 16, 'the display prefix gives away little of the key');
        assert.equal(key.revokedAt, null);
        assert.equal(key.platformId, platformId);
      }
    });

    test('revoke-key marks the key revoked', async () => {
      const result = json(await cli(env, 'revoke-key', '--key', secondKey.keyId, '--json'));
      assert.equal(result.key.id, secondKey.keyId);
      assert.ok(!Number.isNaN(Date.parse(result.key.revokedAt)));
      assert.equal(result.alreadyRevoked, false);
    });

    test('revoking a revoked key says it was already revoked, and when; nothing changes', async () => {
      const first = json(await cli(env, 'list-keys', '--platform', platformId, '--json')).keys.find((k: { id: string }) => k.id === secondKey.keyId);
      const again = json(await cli(env, 'revoke-key', '--key', secondKey.keyId, '--json'));
      assert.equal(again.alreadyRevoked, true);
      assert.equal(again.key.revokedAt, first.revokedAt, 'the first revocation time stays');
      const text = await cli(env, 'revoke-key', '--key', secondKey.keyId);
      assert.equal(text.code, 0, text.stderr);
      assert.equal(text.stdout.trim(), `Key ${secondKey.keyId} (${first.displayPrefix}…) was already revoked at ${first.revokedAt}; nothing changed.`);
    });

    // Backend-independent; run once, where a CLI start is cheap.
    test('an unknown platform is an error (exit 1), not a usage problem', { skip: backend !== backends().at(-1) }, async () => {
      const missing = '00000000-0000-4000-8000-000000000000';
      const issue = await cli(env, 'issue-key', '--platform', missing);
      assert.equal(issue.code, 1);
      assert.match(issue.stderr, new RegExp(`No platform ${missing}`));
      assert.doesNotMatch(issue.stderr, /Usage:/);
      assert.doesNotMatch(issue.stdout, /ebrc_test_/);
    });

    test('the service accepts the CLI’s key, refuses the revoked one, and stored only hashes and prefixes', async () => {
      const service = await createService({ config: serviceConfig(env, 1), logger: false });
      try {
        const accepted = await call(service, firstKey.apiKey);
        assert.equal(accepted.status, 200);
        assert.deepEqual(accepted.body.items, []);
        assert.equal(accepted.body.meta.totalItems, 0);
        expectProblem(await call(service, secondKey.apiKey), 401, 'api_key_invalid');

        const rows = (await sql<Record<string, unknown>>`select * from api_keys order by created_at`.execute(service.database.db)).rows;
        assert.equal(rows.length, 2);
        for (const { apiKey, keyId } of [firstKey, secondKey]) {
          const row = rows.find((r) => r.id === keyId)!;
          assert.equal(row.key_hash, createHash('sha256').update(apiKey).digest('hex'));
          assert.ok(apiKey.startsWith(String(row.display_prefix)));
          const stored = JSON.stringify(row);
          assert.ok(!stored.includes(apiKey), 'the key itself is not stored');
          assert.ok(!stored.includes(apiKey.slice(-12)), 'nor its random tail');
        }

        // With the cache on, a key revoked meanwhile keeps working until its cache entry expires (1 s here), then stops.
        const priming = Date.now();
        assert.equal((await call(service, firstKey.apiKey)).status, 200);
        const primed = Date.now(); // the cache entry expires by primed + 1 s
        await revokeApiKey(service.database.db, firstKey.keyId);
        const soonAfter = await call(service, firstKey.apiKey);
        // (Only meaningful while the cache entry is surely still fresh; a stalled machine may take longer.)
        if (Date.now() - priming < 800) assert.equal(soonAfter.status, 200, 'cached for up to API_KEY_CACHE_SECONDS');
        await sleep(Math.max(0, primed + 1_100 - Date.now()));
        expectProblem(await call(service, firstKey.apiKey), 401, 'api_key_invalid');
      } finally {
        await service.close();
      }
    });

    if (backend === 'postgres') {
      test('on PostgreSQL a key revoked by the CLI while the service runs is refused at once with API_KEY_CACHE_SECONDS=0', async () => {
        const created = json(await cli(env, 'create-platform', '--name', 'Live revoke', '--json'));
        const service = await createService({ config: serviceConfig(env, 0), logger: false });
        try {
          assert.equal((await call(service, created.apiKey)).status, 200);
          json(await cli(env, 'revoke-key', '--key', created.keyId, '--json'));
          expectProblem(await call(service, created.apiKey), 401, 'api_key_invalid');
        } finally {
          await service.close();
        }
      });
    }
  });
}

describe('cli usage errors', { concurrency: true }, () => {
  // Usage is checked before the database is opened: no data folder appears, and it works while the service runs.
  const dataDir = path.join(os.tmpdir(), `ebrc-cli-usage-${process.pid}`);
  const env = { DATA_DIR: dataDir };
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  const cases: { args: string[]; message: RegExp }[] = [
    { args: [], message: /Usage:/ },
    { args: ['frobnicate'], message: /Unknown command "frobnicate"/ },
    { args: ['create-platform'], message: /--name is required/ },
    { args: ['issue-key', '--platform', 'acme'], message: /--platform must be an id/ },
    { args: ['list-keys'], message: /--platform is required/ },
    { args: ['revoke-key'], message: /--key is required/ },
    { args: ['migrate', '--force'], message: /Unknown option '--force'/ },
  ];
  for (const { args, message } of cases) {
    test(`"${args.join(' ')}" exits 2 and says what is wrong`, async () => {
      const run = await cli(env, ...args);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr + run.stdout, message);
      assert.equal(fs.existsSync(dataDir), false, 'a usage error must not open the database');
    });
  }

  test('with --json a usage error is one JSON object with the message', async () => {
    const run = await cli(env, 'create-platform', '--json');
    assert.equal(run.code, 2);
    assert.deepEqual(JSON.parse(run.stdout), { error: '--name is required' });
  });

  test('--help prints the usage and succeeds', async () => {
    const run = await cli(env, '--help');
    assert.equal(run.code, 0);
    assert.match(run.stdout, /create-platform --name/);
    assert.match(run.stdout, /revoke-key --key/);
  });
});

describe('cli while the service holds the embedded database', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-cli-held-'));
  const MAIN = path.join(import.meta.dirname, '../../src/main.ts');
  const service = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', RUN_POLLER: 'false', AUTHORITY_URL: NO_AUTHORITY, DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  service.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  service.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<void>((resolve) => service.on('close', () => resolve()));
  before(async () => {
    const deadline = Date.now() + 90_000;
    while (!output.includes('ebrc-gateway is listening')) {
      if (service.exitCode !== null || Date.now() > deadline) throw new Error(`the service did not start: ${output}`);
      await sleep(100);
    }
  });
  after(async () => {
    service.kill('SIGTERM');
    await exited;
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('a command says the service holds DATA_DIR (folder and pid) and what to do: stop it, or PostgreSQL', async () => {
    const run = await cli({ DATA_DIR: dataDir }, 'list-platforms');
    assert.equal(run.code, 1, run.stdout);
    assert.ok(run.stderr.includes(`the embedded database in ${dataDir} (DATA_DIR) is held by the running service (pid ${service.pid})`), run.stderr);
    assert.ok(run.stderr.includes(`kill -TERM ${service.pid}`), run.stderr);
    assert.match(run.stderr, /run `npm run cli -- list-platforms` again/);
    assert.match(run.stderr, /DATABASE_URL/);
    assert.match(run.stderr, /DATA_DIR to another folder/);
    assert.doesNotMatch(run.stderr, /\n\s+at /, 'a sentence, not a stack trace');
  });

  test('with --json the same message is one JSON object; a key command adds when keys take effect', async () => {
    const run = await cli({ DATA_DIR: dataDir }, 'create-platform', '--name', "Acme's Pay", '--json');
    assert.equal(run.code, 1);
    const { error } = JSON.parse(run.stdout) as { error: string };
    assert.ok(error.includes(`held by the running service (pid ${service.pid})`), error);
    assert.ok(error.includes(`npm run cli -- create-platform --name 'Acme'\\''s Pay' --json`), error);
    assert.match(error, /A key issued or revoked while the service is stopped takes effect when it starts again/);
  });
});
