import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { gatewayApiKey, gatewayEnv, ROOT, startGateway, stopGateway, waitUntilReady, type Running } from '../support/gateway.ts';
import { scratchDatabase, startTestSandbox } from '../support/harness.ts';
import { fencedBlocks, SHELL_LANGUAGES, ShellSession, type BlockRun, type FencedBlock } from '../support/markdown-shell.ts';
import { sleep } from '../support/workflow.ts';
import { quickTestFiles } from '../../scripts/test-quick.ts';
import { BANNED_PURPOSE_CODES } from '../../src/domain/purpose-codes.ts';

/**
 * Every shell example of README.md and docs/*.md, run as pasted against a service started the way a user starts it
 * (`node src/main.ts`, on a scratch data folder, with the demo platform's key it prints), in one bash session so that
 * what a block sets is there for the next, with only `PORT` (and `SANDBOX_PORT`) set as a user who picked another
 * port would have them. The paste step (`export KEY=ebrc_test_paste_your_key_here`) gets the printed key, as a reader
 * pastes it. Blocks that cannot run here carry `<!-- readme-test: skip (reason) -->` before them.
 *
 * Each block must exit 0; a value it captures (`CUSTOMER=$(…)`) must be neither empty nor `null`; its output must
 * hold no problem document, no bare `null` and no HTTP status of 400 or more; and what the README promises for the
 * walk-through (a verified customer, a Validated push, a partially processed request, a delivery attempt) must show.
 * Run twice, on a port the system picks and on another free port: nothing may assume 3000.
 *
 * The shell is a newcomer's: its PATH has the system's Node (whatever installed the project, 20 on this machine) and
 * not the project's node_modules/.bin, so a block that needs Node 24 must go through an npm script. Blocks that run
 * npm run in the repository, as a reader's would; the others in a scratch folder, so that the files they write
 * (push.json, the template, the PDF) stay out of the repository.
 */

const KEY_PLACEHOLDER = 'ebrc_test_paste_your_key_here';

/** What the documents promise for some blocks, found by a piece of their text. */
type Promise_ = {
  /** A piece of the block's text that finds it. */
  block: string;
  /** Patterns its output (stdout and stderr) must match. */
  shows?: RegExp[];
  /** The block reads state that comes a moment later (the sandbox's processing, a delivery): run it again until it shows. */
  eventually?: boolean;
};

const PROMISES: Promise_[] = [
  { block: '/check-authority-credentials"', shows: [/"authorityCredentialsStatus": "valid"/, /"iecCode": "0599001001"/] },
  { block: '"$API/irm/refresh?platformCustomerId=$CUSTOMER&limit=5"', shows: [/"irmNumber"/] },
  { block: '"$API/genebrc/push-irm"', shows: [/"ackStatus":"Validated"/] },
  {
    block: '"$API/genebrc/status"',
    shows: [/"status": "PARTIALLY_PROCESSED"/, /"GENERATED"/, /"ERR40"/, /EBRC\d{4}/],
    eventually: true,
  },
  { block: 'status=PARTIALLY_PROCESSED', shows: [/^HTTP\/1\.1 200/m, /x-total-count: 1/i] },
  { block: '"$API/platform-customers?search=demo', shows: [/"Demo Exporter"/] },
  { block: 'certificate.pdf"', shows: [/"ebrcNumber": "EBRC/] },
  { block: '/irm/template?format=csv"', shows: [/^serialNo,uploadType,branchSlNo,irmIfscCode,irmAdCode,irmNumber,irmDt,/m] },
  { block: '-F file=@lines.csv', shows: [/"status":"validating"/] },
  { block: '"$API/genebrc/uploads/$UPLOAD"', shows: [/"status": "completed"/, /"rowsDone": 1\b/, /"ackStatus": "Validated"/, /"errors": \[\]/] },
  { block: '/irm/match"', shows: [/once legal suffixes, case and punctuation are ignored/, /less 20\.00 of bank charges/, /"unmatchedInvoices": \[\]/, /"ackStatus":"Validated"/] },
  { block: '"$API/webhook-endpoints" -H "x-api-key: $KEY" -H', shows: [/"secret": "whsec_/] },
  { block: '/deliveries"', shows: [/"eventType": "webhook\.test"/, /"status": "(failed|succeeded)"/], eventually: true },
  { block: '/redeliver"', shows: [/"eventId": "evt_/] },
  { block: 'type=ebrc.generated', shows: [/"type": "ebrc\.generated"/] },
  { block: '"$ADMIN/platforms?page=1&limit=10"', shows: [/"name": "Demo platform"/] },
  { block: '"$ADMIN/api-keys/$KEY_ID/revoke"', shows: [/"apiKey":"ebrc_test_/, /"revokedAt": "20/, /"lastUsedAt": null/] },
  { block: '"$ADMIN/platforms/$PLATFORM/users"', shows: [/"email": "ops@acme-payments\.example"/, /"disabled": false/] },
  { block: '"$ADMIN/users/$USER_ID"', shows: [/"disabled": true/] },
  { block: '/sandbox/issueApiCredentials', shows: [/"client_Id"/] },
  { block: 'npm run example:quickstart', shows: [/pushed \S+: Validated/, /request \S+: PROCESSED/, /line 1: GENERATED EBRC/] },
  { block: 'npm run test:file -- ', shows: [/\bpass [1-9]/, /\bfail 0\b/] },
  { block: '/reconcile"', shows: [/"status": "running"/, /"trigger": "request"/] },
  { block: '/sandbox/bank/irms"', shows: [/"irmAvailableAmt":"6000\.00"/, /"ormAmountFCC":"400\.00"/] },
];

/** A block that runs npm (after any `NAME=value` assignments): the reader runs it in the clone. */
const RUNS_NPM = /^\s*(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*npm\s/m;

/** A command that hands a .ts file to a bare `node`, which the system's Node 20 refuses (ERR_UNKNOWN_FILE_EXTENSION). */
const BARE_NODE_ON_TS = /(?:^|[\s`(;&|])(?:npx\s+)?node\s+(?:--?[\w-]+(?:=\S+)?\s+)*[^\s`]*\.ts\b/;

/** PATH without the project's node_modules/.bin folders: the system's Node and npm, as in a new clone's shell. */
function systemPath(): string {
  return (process.env.PATH ?? '/usr/bin:/bin')
    .split(path.delimiter)
    .filter((folder) => !folder.split(path.sep).includes('node_modules'))
    .join(path.delimiter);
}

const EVENTUALLY_MS = 60_000;

function documents(): { file: string; blocks: FencedBlock[] }[] {
  const files = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`)];
  return files.map((file) => ({ file, blocks: fencedBlocks(fs.readFileSync(path.join(ROOT, file), 'utf8'), file) }));
}

function where(block: FencedBlock): string {
  return `${block.file}:${block.line}`;
}

/** What is wrong with a block's run, or nothing. */
function problems(block: FencedBlock, run: BlockRun): string[] {
  const found: string[] = [];
  const output = `${run.stdout}\n${run.stderr}`;
  if (run.exitCode !== 0) found.push(`exited with ${run.exitCode}`);
  for (const [name, value] of Object.entries(run.values)) {
    if (value.trim() === '' || value.trim() === 'null') found.push(`${name} is ${JSON.stringify(value)}`);
  }
  if (/\/problems\//.test(output)) found.push('a problem document in the output');
  if (/^null$/m.test(output)) found.push('a bare null in the output');
  for (const status of output.matchAll(/^HTTP\/[\d.]+ (\d{3})/gm)) if (Number(status[1]) >= 400) found.push(`HTTP ${status[1]}`);
  for (const promise of PROMISES) {
    if (!block.code.includes(promise.block)) continue;
    for (const pattern of promise.shows ?? []) if (!pattern.test(output)) found.push(`its output does not show ${pattern}`);
  }
  return found;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('the README and docs examples, as pasted', () => {
  test('every fenced block names its language; every readme-test marker is a skip with a reason; one paste line', () => {
    for (const { blocks } of documents()) {
      for (const block of blocks) {
        assert.notEqual(block.language, '', `${where(block)}: a fence without a language (sh, text, js, json…)`);
        assert.equal(block.unknownMarker, undefined, `${where(block)}: unknown readme-test marker "${block.unknownMarker}"`);
      }
    }
    const runnable = documents().flatMap(({ blocks }) => blocks.filter((block) => SHELL_LANGUAGES.has(block.language) && !block.skip));
    assert.equal(runnable.filter((block) => block.code.includes(KEY_PLACEHOLDER)).length, 1, 'the key is pasted in exactly one runnable block');
    for (const promise of PROMISES) {
      assert.ok(
        runnable.some((block) => block.code.includes(promise.block)),
        `no runnable block has ${promise.block}: the README changed, update PROMISES`,
      );
    }
  });

  test('no command in README.md or docs hands a .ts file to a bare node: npm scripts or node_modules/.bin/node', () => {
    const found: string[] = [];
    for (const { file, blocks } of documents()) {
      const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
      // Inline code in the prose, and every line of the shell blocks.
      for (const [index, line] of text.split('\n').entries()) {
        for (const code of line.matchAll(/`([^`]+)`/g)) if (BARE_NODE_ON_TS.test(code[1]!)) found.push(`${file}:${index + 1}: ${code[1]}`);
      }
      for (const block of blocks.filter((b) => SHELL_LANGUAGES.has(b.language))) {
        for (const line of block.code.split('\n')) if (BARE_NODE_ON_TS.test(line.replace(/#.*$/, ''))) found.push(`${where(block)}: ${line.trim()}`);
      }
    }
    assert.deepEqual(found, [], 'these run only on the project\'s Node 24: give an npm script, or node_modules/.bin/node');
  });

  test('the documents\' npm scripts exist in package.json', () => {
    const scriptsOf = (folder: string): string[] =>
      Object.keys(JSON.parse(fs.readFileSync(path.join(ROOT, folder, 'package.json'), 'utf8')).scripts as Record<string, string>);
    // `npm run build -w @ebrc-gateway/sdk`: a script of the SDK's workspace.
    const workspaces: Record<string, string> = { '@ebrc-gateway/sdk': 'packages/sdk' };
    const missing: string[] = [];
    for (const { file } of documents()) {
      for (const match of fs.readFileSync(path.join(ROOT, file), 'utf8').matchAll(/\bnpm run ([\w:-]+)(?:\s+-w\s+(\S+?)`?(?:\s|$))?/g)) {
        const folder = match[2] === undefined ? '.' : workspaces[match[2]];
        if (folder === undefined || !scriptsOf(folder).includes(match[1]!)) missing.push(`${match[0].trim()} (${file})`);
      }
    }
    assert.deepEqual(missing, [], 'npm scripts the documents name that package.json does not have');
  });

  test('every example picks usable IRMs by the one purpose-code rule: all but P0101 and P0108 (docs/interface.md)', () => {
    const examples = [
      ...documents().flatMap(({ blocks }) => blocks.filter((block) => SHELL_LANGUAGES.has(block.language) && !block.skip).map((block) => ({ where: where(block), code: block.code }))),
      { where: 'packages/sdk/examples/quickstart.ts', code: fs.readFileSync(path.join(ROOT, 'packages/sdk/examples/quickstart.ts'), 'utf8') },
    ];
    const filtering = examples.filter(({ code }) => /P\d{4}/.test(code));
    assert.ok(filtering.length >= 3, 'the walk-through, the matching example and the SDK example filter IRMs');
    for (const { where: at, code } of filtering) {
      const named = [...new Set(code.match(/P\d{4}/g))].sort();
      assert.deepEqual(named, [...BANNED_PURPOSE_CODES].sort(), `${at} filters IRMs by other purpose codes`);
    }
    const interfaceDoc = fs.readFileSync(path.join(ROOT, 'docs/interface.md'), 'utf8');
    assert.match(interfaceDoc, /### Which IRMs a push can map[\s\S]*other than P0101 and P0108/);
  });

  test('npm run test:quick runs every test file but the browser tests and the reliability suite, embedded only', () => {
    const all = fs.globSync('test/**/*.test.ts', { cwd: ROOT }).sort();
    const quick = quickTestFiles();
    assert.ok(quick.includes('test/docs/readme-examples.test.ts') && quick.includes('test/http/workflow.test.ts'));
    assert.deepEqual(
      all.filter((file) => !quick.includes(file)).map((file) => file.split('/').slice(0, 2).join('/')).filter((v, i, a) => a.indexOf(v) === i),
      ['test/console', 'test/reliability'],
    );
    assert.match(fs.readFileSync(path.join(ROOT, 'scripts/test-quick.ts'), 'utf8'), /TEST_DATABASE_URL: 'skip'/);
  });

  for (const portChoice of ['system-picked', 'chosen'] as const) {
    test(`every runnable shell block runs, on a ${portChoice} port`, async (t) => {
      await runExamples(t, portChoice === 'system-picked' ? 0 : await freePort());
    });
  }
});

async function runExamples(t: TestContext, requestedPort: number): Promise<void> {
  const scratch = await scratchDatabase('embedded');
  const sandbox = await startTestSandbox(scratch, { processingDelayMs: 300 });
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-readme-'));
  let gateway: Running | undefined;
  let session: ShellSession | undefined;
  try {
    gateway = startGateway(gatewayEnv(scratch, sandbox.url, { PORT: String(requestedPort), WEBHOOK_ALLOW_PRIVATE_URLS: 'true' }));
    const base = await waitUntilReady(gateway);
    const port = new URL(base).port;
    if (requestedPort !== 0) assert.equal(port, String(requestedPort));
    assert.notEqual(port, '3000');
    const key = await gatewayApiKey(gateway, scratch, 'README platform');
    const sandboxPort = new URL(sandbox.url).port;
    t.diagnostic(`service on port ${port}, sandbox on ${sandboxPort}`);

    session = new ShellSession(work, {
      PATH: systemPath(),
      HOME: work,
      LANG: 'C.UTF-8',
      PORT: port,
      SANDBOX_PORT: sandboxPort,
      // A reader who set DATA_DIR for the service has it in the shell too: the admin examples read its token file.
      DATA_DIR: scratch.dataDir,
    });
    const nodeVersion = await session.run('node --version');
    t.diagnostic(`the shell's node: ${nodeVersion.stdout.trim() || nodeVersion.stderr.trim()} (the project's: ${process.version})`);
    const ran: string[] = [];
    const skipped: string[] = [];
    for (const { blocks } of documents()) {
      for (const block of blocks) {
        if (!SHELL_LANGUAGES.has(block.language)) continue;
        if (block.skip) {
          skipped.push(`${where(block)} (${block.skip})`);
          continue;
        }
        // The reader pastes the key the service printed, and runs npm in the clone.
        const pasted = block.code.replaceAll(KEY_PLACEHOLDER, key);
        const code = RUNS_NPM.test(pasted) ? `pushd ${JSON.stringify(ROOT)} >/dev/null\n${pasted}\npopd >/dev/null` : pasted;
        const eventually = PROMISES.some((promise) => promise.eventually && block.code.includes(promise.block));
        const deadline = Date.now() + EVENTUALLY_MS;
        let run = await session.run(code, RUNS_NPM.test(pasted) ? 180_000 : undefined);
        let found = problems(block, run);
        while (eventually && found.length > 0 && run.exitCode === 0 && Date.now() < deadline) {
          await sleep(500);
          run = await session.run(code);
          found = problems(block, run);
        }
        assert.deepEqual(
          found,
          [],
          `${where(block)}: the block\n${block.code}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}\n--- service log (tail)\n${gateway.output().slice(-3000)}`,
        );
        ran.push(where(block));
        // README_EXAMPLES_VERBOSE=1 shows what each block printed, as a reader would see it.
        if (process.env.README_EXAMPLES_VERBOSE) t.diagnostic(`${where(block)}\n${run.stdout}${run.stderr}`);
      }
    }
    // The eBRC's PDF, downloaded by the README's last walk-through step.
    const pdfs = fs.readdirSync(work).filter((name) => name.endsWith('.pdf'));
    assert.equal(pdfs.length, 1, `one certificate downloaded: ${pdfs.join(', ')}`);
    assert.equal(fs.readFileSync(path.join(work, pdfs[0]!)).subarray(0, 5).toString(), '%PDF-');
    // A reader pastes them in the repository's root: .gitignore covers every file they write there.
    const written = fs.readdirSync(work).filter((name) => !name.startsWith('.block-') && name !== '.npm');
    assert.ok(written.includes('push.json') && written.includes('irm-template.csv'), written.join(', '));
    const ignored = spawnSync('git', ['check-ignore', '--no-index', '--stdin'], { cwd: ROOT, input: written.join('\n'), encoding: 'utf8' });
    assert.deepEqual(ignored.stdout.split('\n').filter(Boolean).sort(), [...written].sort(), 'files the examples write that .gitignore does not cover');
    t.diagnostic(`ran ${ran.length} blocks: ${ran.join(', ')}`);
    t.diagnostic(`skipped ${skipped.length}: ${skipped.join('; ')}`);

    // Step 1 pasted again, as a reader does: the 409 shows, and the block stops rather than go on with no customer.
    // Last, because the failing block ends the session (set -e).
    const createCustomer = documents()[0]!.blocks.find((block) => block.code.includes('"$API/platform-customers/"'))!;
    const again = await session.run(createCustomer.code);
    assert.notEqual(again.exitCode, 0, 'the second run fails');
    assert.match(again.stderr, /"status":409/);
    assert.match(again.stderr, /"code":"customer_email_taken"/);
    assert.match(again.stderr, /no customer was created: see the answer above/);
  } finally {
    session?.close();
    await stopGateway(gateway);
    await sandbox.close();
    await scratch.drop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}
