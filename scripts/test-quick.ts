/**
 * `npm run test:quick`: the everyday subset of `npm test`. The embedded database only (TEST_DATABASE_URL=skip), and
 * neither the console's browser tests (test/console) nor the reliability suite's kills, faults and scale-out
 * (test/reliability). Arguments after `--` go to node's test runner (`npm run test:quick -- --test-only`).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.join(import.meta.dirname, '..');

/** The folders under test/ that the quick run leaves out: a browser, or minutes of kills and faults. */
export const LEFT_OUT = ['test/console/', 'test/reliability/'];

/** The test files of the quick run, relative to the project's root, sorted. */
export function quickTestFiles(): string[] {
  return fs
    .globSync('test/**/*.test.ts', { cwd: ROOT })
    .map((file) => file.split(path.sep).join('/'))
    .filter((file) => !LEFT_OUT.some((folder) => file.startsWith(folder)))
    .sort();
}

if (import.meta.main) {
  const result = spawnSync(
    process.execPath,
    ['--test', '--test-concurrency=2', '--test-timeout=300000', ...process.argv.slice(2), ...quickTestFiles()],
    { cwd: ROOT, stdio: 'inherit', env: { ...process.env, TEST_DATABASE_URL: 'skip' } },
  );
  process.exit(result.status ?? 1);
}
