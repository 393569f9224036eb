/**
 * A fresh clone installs cleanly with the machine's own npm (whatever Node.js runs it): no EBADENGINE warnings
 * for packages only the pinned Node.js runs, and package-lock.json left byte for byte as committed.
 * It needs the npm registry; with none reachable it is skipped, saying so.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';

const ROOT = path.join(import.meta.dirname, '..');

/** PATH without any node_modules/.bin: what a shell on the machine has before the project is installed. */
function systemPath(): string {
  return (process.env.PATH ?? '')
    .split(path.delimiter)
    .filter((dir) => dir !== '' && !dir.split(path.sep).includes('node_modules'))
    .join(path.delimiter);
}

/** The first npm on that PATH (as `which -a npm` lists them), or undefined. */
function systemNpm(searchPath: string): string | undefined {
  for (const dir of searchPath.split(path.delimiter)) {
    const candidate = path.join(dir, 'npm');
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** The environment of a fresh shell: no npm_* variables from an `npm test` around this run, no Node.js test context. */
function shellEnv(searchPath: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(name) || name.startsWith('NODE_')) continue;
    env[name] = value;
  }
  env.PATH = searchPath;
  return env;
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs, killSignal: 'SIGKILL' });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

/** The workspace folders package.json names ("packages/sdk", or "packages/*" expanded). */
function workspaceDirs(manifest: { workspaces?: string[] | { packages?: string[] } }): string[] {
  const patterns = Array.isArray(manifest.workspaces) ? manifest.workspaces : (manifest.workspaces?.packages ?? []);
  const dirs: string[] = [];
  for (const pattern of patterns) {
    if (pattern.endsWith('/*')) {
      const parent = pattern.slice(0, -2);
      for (const entry of fs.readdirSync(path.join(ROOT, parent), { withFileTypes: true })) {
        if (entry.isDirectory()) dirs.push(path.join(parent, entry.name));
      }
    } else {
      dirs.push(pattern);
    }
  }
  return dirs.filter((dir) => fs.existsSync(path.join(ROOT, dir, 'package.json')));
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-install-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

test('npm install with the system npm on a fresh copy: no EBADENGINE, package-lock.json unchanged', async (t) => {
  const searchPath = systemPath();
  const npm = systemNpm(searchPath);
  if (npm === undefined) {
    t.skip('no npm outside node_modules on PATH');
    return;
  }
  const env = shellEnv(searchPath);

  const manifestText = fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8');
  const lock = fs.readFileSync(path.join(ROOT, 'package-lock.json'));
  fs.writeFileSync(path.join(tmp, 'package.json'), manifestText);
  fs.writeFileSync(path.join(tmp, 'package-lock.json'), lock);
  assert.ok(fs.existsSync(path.join(ROOT, '.npmrc')), 'the project has an .npmrc');
  fs.copyFileSync(path.join(ROOT, '.npmrc'), path.join(tmp, '.npmrc'));
  for (const dir of workspaceDirs(JSON.parse(manifestText) as { workspaces?: string[] })) {
    fs.mkdirSync(path.join(tmp, dir), { recursive: true });
    fs.copyFileSync(path.join(ROOT, dir, 'package.json'), path.join(tmp, dir, 'package.json'));
  }

  const ping = await run(npm, ['ping'], tmp, env, 30_000);
  if (ping.code !== 0) {
    t.skip(`the npm registry is unreachable (npm ping exited ${ping.code}): ${ping.output.trim().slice(0, 300)}`);
    return;
  }
  const nodeOfNpm = await run('node', ['--version'], tmp, env, 30_000);
  t.diagnostic(`${npm} runs on Node.js ${nodeOfNpm.output.trim()}; the project pins ${process.version}`);

  const install = await run(npm, ['install', '--ignore-scripts', '--no-audit', '--no-fund'], tmp, env, 240_000);
  assert.equal(install.code, 0, `npm install failed:\n${install.output}`);
  assert.doesNotMatch(install.output, /EBADENGINE/, `npm install warned about engines:\n${install.output}`);
  const lockAfter = fs.readFileSync(path.join(tmp, 'package-lock.json'));
  assert.ok(lockAfter.equals(lock), `npm install rewrote package-lock.json:\n${install.output}`);
});
