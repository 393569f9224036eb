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
import { openDatabase } from '../../src/store/database.ts';
import { readMigrations } from '../../src/store/migrate.ts';
import { revokeApiKey } from '../../src/store/platforms.ts';
import { NO_AUTHORITY } from '../support/gateway.ts';
import { backends, expectProblem, scratchDatabase, type Backend, type TestResponse } from '../support/harness.ts';
import { runProgram, type Run } from '../support/run.ts';

const CLI = path.join(import.meta.dirname, '../../src/cli/main.ts');
const API_KEY = /^ebrc_test_[1-9A-HJ-NP-Za-km-z]{22,}$/;

/** Runs the operator's CLI as the operator would: a separate process on the same database. */
function cli(env: Record<string, string>, ...args: string[]): Promise<Run> {
  return cliWithInput(env, undefined, ...args);
}

/** The CLI with `input` on its stdin (a password for --password-stdin). */
function cliWithInput(env: Record<string, string>, input: string | undefined, ...args: string[]): Promise<Run> {
  return runProgram(process.execPath, [CLI, ...args], env, input);
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
    let firstUser: { id: string; email: string };
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

    test('create-user takes the password on stdin and prints the user; list-users, disable-user, enable-user', async () => {
      const password = 'a long enough password';
      const created = json(await cliWithInput(env, `${password}\n`, 'create-user', '--platform', platformId, '--email', 'Ops@Acme-Pay.example', '--password-stdin', '--json'));
      assert.deepEqual(Object.keys(created.user).sort(), ['createdAt', 'disabled', 'email', 'id', 'platformId', 'role', 'twoFactor']);
      assert.equal(created.user.role, 'owner', "the platform's first user");
      assert.equal(created.user.email, 'Ops@Acme-Pay.example');
      assert.equal(created.user.platformId, platformId);
      assert.equal(created.user.disabled, false);
      const userId: string = created.user.id;

      const taken = await cliWithInput(env, password, 'create-user', '--platform', platformId, '--email', 'ops@acme-pay.EXAMPLE', '--password-stdin');
      assert.equal(taken.code, 1, taken.stdout);
      assert.match(taken.stderr, /A console user with the e-mail ops@acme-pay\.EXAMPLE already exists/);
      const short = await cliWithInput(env, 'too short\n', 'create-user', '--platform', platformId, '--email', 'other@acme-pay.example', '--password-stdin');
      assert.equal(short.code, 2, short.stderr);
      assert.match(short.stderr, /password must be at least 12 characters long/);

      const listed = json(await cli(env, 'list-users', '--platform', platformId, '--json'));
      assert.deepEqual(listed, { users: [created.user] });
      const disabled = json(await cli(env, 'disable-user', '--user', userId, '--json'));
      assert.deepEqual(disabled, { user: { ...created.user, disabled: true } });
      const enabled = await cli(env, 'enable-user', '--user', userId);
      assert.equal(enabled.code, 0, enabled.stderr);
      assert.equal(enabled.stdout.trim(), `Enabled console user ${userId} (Ops@Acme-Pay.example): it can sign in again.`);

      const missing = await cli(env, 'disable-user', '--user', '00000000-0000-4000-8000-000000000000');
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /No console user 00000000-0000-4000-8000-000000000000/);
      firstUser = created.user;
    });

    test('set-role, reset-two-factor and require-two-factor change what they name; create-user takes a role', async () => {
      const password = 'a long enough password';
      const userId: string = firstUser.id;
      // Roles and two factors (contract 14): a test of its own, each CLI start on the embedded database is seconds.
      const viewer = await cli(env, 'set-role', '--user', userId, '--role', 'viewer');
      assert.equal(viewer.code, 0, viewer.stderr);
      assert.equal(viewer.stdout.trim(), `Console user ${userId} (Ops@Acme-Pay.example) is now a viewer.`);
      const badRole = await cli(env, 'set-role', '--user', userId, '--role', 'admin');
      assert.equal(badRole.code, 2);
      assert.match(badRole.stderr, /--role must be one of owner, operator, viewer; got "admin"/);
      const second = json(await cliWithInput(env, `${password}\n`, 'create-user', '--platform', platformId, '--email', 'second@acme-pay.example', '--role', 'viewer', '--password-stdin', '--json'));
      assert.equal(second.user.role, 'viewer');
      const reset = json(await cli(env, 'reset-two-factor', '--user', userId, '--json'));
      assert.deepEqual(reset.user.twoFactor, { enrolled: false, enrolledAt: null });
      const required = json(await cli(env, 'require-two-factor', '--platform', platformId, '--json'));
      assert.equal(required.platform.requireTwoFactor, true);
      const off = await cli(env, 'require-two-factor', '--platform', platformId, '--off');
      assert.match(off.stdout, /no longer requires two-factor sign-in/);
      await cli(env, 'set-role', '--user', userId, '--role', 'owner');
      await cli(env, 'disable-user', '--user', second.user.id);
      const database = await openDatabase({ databaseUrl: env.DATABASE_URL, dataDir: env.DATA_DIR! });
      try {
        const stored = (await sql<{ password_hash: string }>`select password_hash from console_users`.execute(database.db)).rows;
        assert.equal(stored.length, 2);
        assert.ok(stored.every((row) => row.password_hash.startsWith('scrypt$')));
      } finally {
        await database.close();
      }
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

    test('list-keys shows when the service last saw each key used', async () => {
      const { keys } = json(await cli(env, 'list-keys', '--platform', platformId, '--json'));
      const used = keys.find((k: { id: string }) => k.id === firstKey.keyId);
      assert.ok(!Number.isNaN(Date.parse(used.lastUsedAt)), 'used by the service above (written when it stopped, at the latest)');
      assert.equal(keys.find((k: { id: string }) => k.id === secondKey.keyId).lastUsedAt, null, 'a refused key was not used');
      const text = await cli(env, 'list-keys', '--platform', platformId);
      assert.ok(text.stdout.includes(`last used ${used.lastUsedAt}`), text.stdout);
      assert.match(text.stdout, /last used never {2}revoked /);
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
    { args: ['create-user', '--platform', '00000000-0000-4000-8000-000000000000'], message: /--email is required/ },
    { args: ['create-user', '--platform', '00000000-0000-4000-8000-000000000000', '--email', 'nobody'], message: /--email must be an e-mail address/ },
    { args: ['create-user', '--email', 'a@b.example'], message: /--platform is required/ },
    { args: ['create-user', '--platform', '00000000-0000-4000-8000-000000000000', '--email', 'a@b.example'], message: /--password-stdin/ },
    { args: ['disable-user'], message: /--user is required/ },
    { args: ['enable-user', '--user', 'bob'], message: /--user must be an id/ },
    { args: ['list-users'], message: /--platform is required/ },
  ];
  for (const { args, message } of cases) {
    test(`"${args.join(' ')}" exits 2 and says what is wrong`, async () => {
      const run = await cli(env, ...args);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr + run.stdout, message);
      assert.equal(fs.existsSync(dataDir), false, 'a usage error must not open the database');
    });
  }

  test('a usage error is short: the mistake first, then only its command\'s usage line, not the whole usage text', async () => {
    const short = await cliWithInput(env, 'too short\n', 'create-user', '--platform', '00000000-0000-4000-8000-000000000000', '--email', 'a@b.example', '--password-stdin');
    assert.equal(short.code, 2, short.stderr);
    assert.deepEqual(short.stderr.trimEnd().split('\n'), [
      'the password must be at least 12 characters long.',
      'Usage: npm run cli -- create-user --platform <platformId> --email <email> [--role owner|operator|viewer] [--password-stdin]',
      '`npm run cli -- --help` lists every command and its options.',
    ]);
    const option = await cli(env, 'list-keys', '--force');
    assert.equal(option.code, 2);
    assert.match(option.stderr, /^Unknown option '--force'.*\nUsage: npm run cli -- list-keys --platform <platformId>\n/);
    const unknown = await cli(env, 'frobnicate');
    assert.match(unknown.stderr, /^Unknown command "frobnicate"\nCommands: migrate, create-platform, list-platforms, issue-key, .*enable-user, set-role, reset-two-factor, require-two-factor, backup, restore, encryption-status, audit-verify\.\n/);
    for (const run of [short, option, unknown]) assert.ok(run.stderr.split('\n').length <= 4, run.stderr);
  });

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

describe('cli while another process holds the embedded database', () => {
  // A data folder whose lock names a live process that is not the service (this test's own), and no service.json.
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-cli-held-'));
  before(() => fs.writeFileSync(path.join(dataDir, 'ebrc-gateway.lock'), `${process.pid}\n`));
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  test('a command says who holds DATA_DIR (folder and pid) and what to do: stop it, or PostgreSQL', async () => {
    const run = await cli({ DATA_DIR: dataDir }, 'list-platforms');
    assert.equal(run.code, 1, run.stdout);
    assert.ok(run.stderr.includes(`the embedded database in ${dataDir} (DATA_DIR) is held by another process (pid ${process.pid})`), run.stderr);
    assert.ok(run.stderr.includes(`kill -TERM ${process.pid}`), run.stderr);
    assert.match(run.stderr, /run `npm run cli -- list-platforms` again/);
    assert.match(run.stderr, /DATABASE_URL/);
    assert.match(run.stderr, /DATA_DIR to another folder/);
    assert.doesNotMatch(run.stderr, /\n\s+at /, 'a sentence, not a stack trace');
  });

  test('with --json the same message is one JSON object; a key command adds when keys take effect', async () => {
    const run = await cli({ DATA_DIR: dataDir }, 'create-platform', '--name', "Acme's Pay", '--json');
    assert.equal(run.code, 1);
    const { error } = JSON.parse(run.stdout) as { error: string };
    assert.ok(error.includes(`held by another process (pid ${process.pid})`), error);
    assert.ok(error.includes(`npm run cli -- create-platform --name 'Acme'\\''s Pay' --json`), error);
    assert.match(error, /A key issued or revoked while the service is stopped takes effect when it starts again/);
  });

  test('a service.json left by a service that is gone is not followed', async () => {
    fs.writeFileSync(path.join(dataDir, 'service.json'), JSON.stringify({ url: 'http://127.0.0.1:9', pid: 2 ** 22 + 1, adminTokenFile: null }));
    try {
      const run = await cli({ DATA_DIR: dataDir }, 'list-platforms');
      assert.equal(run.code, 1);
      assert.match(run.stderr, /is held by another process/);
    } finally {
      fs.rmSync(path.join(dataDir, 'service.json'));
    }
  });
});

/** The shape of a JSON value: its keys and their types, recursively (an array by its first item). */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return [value.length === 0 ? 'empty' : shape(value[0])];
  // A nullable field (lastUsedAt, revokedAt) is a string when set.
  if (value === null) return 'string';
  if (typeof value === 'object') return Object.fromEntries(Object.entries(value as object).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, shape(v)]));
  return typeof value;
}

describe('cli while the service runs on the embedded database: every command goes through its admin API', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-cli-admin-'));
  const env = { DATA_DIR: dataDir };
  const MAIN = path.join(import.meta.dirname, '../../src/main.ts');
  let service: ReturnType<typeof spawn>;
  let output = '';
  let exited: Promise<void>;
  let base: string;

  async function startService(): Promise<void> {
    output = '';
    service = spawn(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', RUN_POLLER: 'false', AUTHORITY_URL: NO_AUTHORITY, DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    service.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    service.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    exited = new Promise<void>((resolve) => service.on('close', () => resolve()));
    const deadline = Date.now() + 90_000;
    while (!output.includes('ebrc-gateway is listening') || !fs.existsSync(path.join(dataDir, 'service.json'))) {
      if (service.exitCode !== null || Date.now() > deadline) throw new Error(`the service did not start: ${output}`);
      await sleep(100);
    }
    base = JSON.parse(fs.readFileSync(path.join(dataDir, 'service.json'), 'utf8')).url;
  }
  async function stopService(): Promise<void> {
    if (service.exitCode !== null || service.signalCode !== null) return;
    service.kill('SIGTERM');
    await exited;
  }
  const apiCall = (apiKey: string) => fetch(`${base}/api/v1/platform-customers`, { headers: { 'x-api-key': apiKey } });

  before(startService);
  after(async () => {
    await stopService();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** What each command printed through the admin API, to compare with the same commands on the database. */
  const remote: Record<string, any> = {};
  let platformId: string;
  let keys: { keyId: string; apiKey: string }[] = [];
  let userId: string;

  test('migrate says the running service applied the migrations', async () => {
    const result = json(await cli(env, 'migrate', '--json'));
    assert.deepEqual(result, { applied: [] });
    const text = await cli(env, 'migrate');
    assert.equal(text.code, 0, text.stderr);
    assert.equal(text.stdout.trim(), `Nothing to apply: the running service (pid ${service.pid}) applied every migration when it started.`);
  });

  test('create-platform, issue-key: keys the running service takes at once', async () => {
    remote.createPlatform = json(await cli(env, 'create-platform', '--name', 'Held Pay', '--json'));
    assert.equal(remote.createPlatform.platform.name, 'Held Pay');
    assert.match(remote.createPlatform.apiKey, API_KEY);
    assert.match(remote.createPlatform.keyId, /^[0-9a-f-]{36}$/);
    platformId = remote.createPlatform.platform.id;
    remote.issueKey = json(await cli(env, 'issue-key', '--platform', platformId, '--json'));
    assert.equal(remote.issueKey.platformId, platformId);
    assert.ok(remote.issueKey.apiKey.startsWith(remote.issueKey.displayPrefix));
    keys = [
      { keyId: remote.createPlatform.keyId, apiKey: remote.createPlatform.apiKey },
      { keyId: remote.issueKey.keyId, apiKey: remote.issueKey.apiKey },
    ];
    for (const { apiKey } of keys) assert.equal((await apiCall(apiKey)).status, 200);

    const text = await cli(env, 'issue-key', '--platform', platformId);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`^Issued key [0-9a-f-]{36} for platform ${platformId}\\.\\nAPI key \\(shown once\\):\\n\\n  ebrc_test_\\w+\\n`));
  });

  test('list-platforms and list-keys (with the keys\' last use, never the keys)', async () => {
    const { platforms } = json(await cli(env, 'list-platforms', '--json'));
    assert.deepEqual(platforms.map((p: { name: string }) => p.name), ['Held Pay', 'Demo platform'], 'newest first');
    assert.deepEqual(platforms[0], remote.createPlatform.platform);
    // The service writes a key's last use within a second or so.
    let listed: any;
    for (let waited = 0; waited < 10_000; waited += 200) {
      listed = json(await cli(env, 'list-keys', '--platform', platformId, '--json'));
      if (listed.keys.filter((k: { lastUsedAt: string | null }) => k.lastUsedAt !== null).length === 2) break;
      await sleep(200);
    }
    assert.equal(listed.keys.length, 3);
    for (const key of listed.keys) {
      assert.deepEqual(Object.keys(key), ['id', 'platformId', 'displayPrefix', 'createdAt', 'lastUsedAt', 'revokedAt']);
      assert.equal(key.platformId, platformId);
    }
    assert.equal(listed.keys.filter((k: { lastUsedAt: string | null }) => k.lastUsedAt !== null).length, 2, JSON.stringify(listed));
    const text = await cli(env, 'list-keys', '--platform', platformId);
    for (const { apiKey } of keys) assert.ok(!text.stdout.includes(apiKey.slice(-12)), 'never the key');
  });

  test('revoke-key: the running service refuses the key from its very next request; again says when', async () => {
    const [, second] = keys;
    assert.equal((await apiCall(second!.apiKey)).status, 200, 'cached by the service now');
    remote.revokeKey = json(await cli(env, 'revoke-key', '--key', second!.keyId, '--json'));
    assert.equal(remote.revokeKey.alreadyRevoked, false);
    assert.equal(remote.revokeKey.key.id, second!.keyId);
    assert.equal((await apiCall(second!.apiKey)).status, 401, 'refused at once, not after API_KEY_CACHE_SECONDS');
    remote.revokeAgain = json(await cli(env, 'revoke-key', '--key', second!.keyId, '--json'));
    assert.equal(remote.revokeAgain.alreadyRevoked, true);
    assert.equal(remote.revokeAgain.key.revokedAt, remote.revokeKey.key.revokedAt);
    const text = await cli(env, 'revoke-key', '--key', second!.keyId);
    assert.equal(text.stdout.trim(), `Key ${second!.keyId} (${remote.revokeKey.key.displayPrefix}…) was already revoked at ${remote.revokeKey.key.revokedAt}; nothing changed.`);
  });

  test('create-user, list-users, disable-user, enable-user', async () => {
    remote.createUser = json(await cliWithInput(env, 'a long enough password\n', 'create-user', '--platform', platformId, '--email', 'ops@held-pay.example', '--password-stdin', '--json'));
    userId = remote.createUser.user.id;
    assert.deepEqual(remote.createUser.user, {
      id: userId,
      email: 'ops@held-pay.example',
      platformId,
      role: 'owner',
      disabled: false,
      twoFactor: { enrolled: false, enrolledAt: null },
      createdAt: remote.createUser.user.createdAt,
    });
    const taken = await cliWithInput(env, 'a long enough password', 'create-user', '--platform', platformId, '--email', 'OPS@held-pay.example', '--password-stdin');
    assert.equal(taken.code, 1);
    assert.match(taken.stderr, /A console user with the e-mail OPS@held-pay\.example already exists/);
    remote.disableUser = json(await cli(env, 'disable-user', '--user', userId, '--json'));
    assert.equal(remote.disableUser.user.disabled, true);
    remote.enableUser = json(await cli(env, 'enable-user', '--user', userId, '--json'));
    assert.equal(remote.enableUser.user.disabled, false);
    remote.setRole = json(await cli(env, 'set-role', '--user', userId, '--role', 'operator', '--json'));
    assert.equal(remote.setRole.user.role, 'operator');
    remote.resetTwoFactor = json(await cli(env, 'reset-two-factor', '--user', userId, '--json'));
    remote.requireTwoFactor = json(await cli(env, 'require-two-factor', '--platform', platformId, '--off', '--json'));
    assert.equal(remote.requireTwoFactor.platform.requireTwoFactor, false);
    remote.enableUser = json(await cli(env, 'set-role', '--user', userId, '--role', 'owner', '--json'));
    assert.deepEqual(json(await cli(env, 'list-users', '--platform', platformId, '--json')), { users: [remote.enableUser.user] });
  });

  test('unknown ids are errors (exit 1) worded as on the database', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    for (const [args, message] of [
      [['issue-key', '--platform', missing], `No platform ${missing}`],
      [['list-keys', '--platform', missing], `No platform ${missing}`],
      [['list-users', '--platform', missing], `No platform ${missing}`],
      [['revoke-key', '--key', missing], `No key ${missing}`],
      [['disable-user', '--user', missing], `No console user ${missing}`],
    ] as const) {
      const run = await cli(env, ...args);
      assert.equal(run.code, 1, run.stdout);
      assert.equal(run.stderr.trim(), message);
    }
  });

  test('a wrong ADMIN_TOKEN is refused, and the CLI says so', async () => {
    const run = await cli({ ...env, ADMIN_TOKEN: 'x'.repeat(40) }, 'list-platforms');
    assert.equal(run.code, 1);
    assert.match(run.stderr, /refused the admin token \(admin_token_invalid\)/);
    assert.ok(!run.stderr.includes('x'.repeat(40)), 'the token is not repeated');
  });

  // A dozen CLI starts on the embedded database, each seconds on a loaded machine: more than the suite's 5 minutes.
  test('every command prints the same on the database once the service has stopped', { timeout: 900_000 }, async () => {
    const reads: string[][] = [
      ['list-platforms'],
      ['list-keys', '--platform', platformId],
      ['list-users', '--platform', platformId],
      ['revoke-key', '--key', keys[1]!.keyId],
    ];
    const through: Run[] = [];
    for (const args of reads) for (const format of [[], ['--json']]) through.push(await cli(env, ...args, ...format));
    await stopService();
    assert.equal(fs.existsSync(path.join(dataDir, 'service.json')), false, 'service.json went with the service');
    let index = 0;
    for (const args of reads) {
      for (const format of [[], ['--json']]) {
        const direct = await cli(env, ...args, ...format);
        assert.equal(direct.code, 0, direct.stderr);
        assert.equal(direct.stdout, through[index]!.stdout, `${args.join(' ')} ${format.join(' ')}`);
        index++;
      }
    }
    // The commands that change things print the same shapes.
    const direct: Record<string, any> = {};
    direct.createPlatform = json(await cli(env, 'create-platform', '--name', 'Direct Pay', '--json'));
    direct.issueKey = json(await cli(env, 'issue-key', '--platform', direct.createPlatform.platform.id, '--json'));
    direct.revokeKey = json(await cli(env, 'revoke-key', '--key', direct.issueKey.keyId, '--json'));
    direct.revokeAgain = json(await cli(env, 'revoke-key', '--key', direct.issueKey.keyId, '--json'));
    direct.createUser = json(await cliWithInput(env, 'another long password', 'create-user', '--platform', direct.createPlatform.platform.id, '--email', 'ops@direct-pay.example', '--password-stdin', '--json'));
    direct.disableUser = json(await cli(env, 'disable-user', '--user', direct.createUser.user.id, '--json'));
    direct.enableUser = json(await cli(env, 'enable-user', '--user', direct.createUser.user.id, '--json'));
    direct.setRole = json(await cli(env, 'set-role', '--user', direct.createUser.user.id, '--role', 'operator', '--json'));
    direct.resetTwoFactor = json(await cli(env, 'reset-two-factor', '--user', direct.createUser.user.id, '--json'));
    direct.requireTwoFactor = json(await cli(env, 'require-two-factor', '--platform', direct.createPlatform.platform.id, '--off', '--json'));
    assert.deepEqual(Object.keys(direct).sort(), Object.keys(remote).sort());
    for (const name of Object.keys(remote)) assert.deepEqual(shape(direct[name]), shape(remote[name]), name);
    assert.deepEqual(json(await cli(env, 'migrate', '--json')), { applied: [] });
  });
});
