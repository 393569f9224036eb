import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { gatewayApiKey, gatewayEnv, ROOT, startGateway, stopGateway, waitUntilReady, type Running } from '../support/gateway.ts';
import { scratchDatabase, startTestSandbox } from '../support/harness.ts';
import { fencedBlocks, SHELL_LANGUAGES, ShellSession, type BlockRun, type FencedBlock } from '../support/markdown-shell.ts';
import { sleep } from '../support/workflow.ts';

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
  { block: '/reconcile"', shows: [/"status": "running"/, /"trigger": "request"/] },
  { block: '/sandbox/bank/irms"', shows: [/"irmAvailableAmt":"6000\.00"/, /"ormAmountFCC":"400\.00"/] },
];

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
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: work,
      LANG: 'C.UTF-8',
      PORT: port,
      SANDBOX_PORT: sandboxPort,
      // A reader who set DATA_DIR for the service has it in the shell too: the admin examples read its token file.
      DATA_DIR: scratch.dataDir,
    });
    const ran: string[] = [];
    const skipped: string[] = [];
    for (const { blocks } of documents()) {
      for (const block of blocks) {
        if (!SHELL_LANGUAGES.has(block.language)) continue;
        if (block.skip) {
          skipped.push(`${where(block)} (${block.skip})`);
          continue;
        }
        // The reader pastes the key the service printed.
        const code = block.code.replaceAll(KEY_PLACEHOLDER, key);
        const eventually = PROMISES.some((promise) => promise.eventually && block.code.includes(promise.block));
        const deadline = Date.now() + EVENTUALLY_MS;
        let run = await session.run(code);
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
    t.diagnostic(`ran ${ran.length} blocks: ${ran.join(', ')}`);
    t.diagnostic(`skipped ${skipped.length}: ${skipped.join('; ')}`);
  } finally {
    session?.close();
    await stopGateway(gateway);
    await sandbox.close();
    await scratch.drop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}
