import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

/**
 * How `npm start` (package.json) starts the service: the environment it sets (glibc's malloc settings) and Node's
 * flags, so that every benchmark measures the service as it is started.
 */
export function startScript(): { env: Record<string, string>; nodeFlags: string[] } {
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const words = manifest.scripts.start.split(/\s+/);
  const env = Object.fromEntries(
    words.filter((word) => /^[A-Z_][A-Z0-9_]*=/.test(word)).map((word) => [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]),
  );
  return { env, nodeFlags: words.filter((word) => word.startsWith('--')) };
}

/** The service's entry point: what startServer starts as `npm start` does. */
export const SERVICE_MAIN = path.join(ROOT, 'src', 'main.ts');

/**
 * The service's environment in the benchmarks that measure it against the sandbox (bench/run.ts, bench/profile-push.ts),
 * besides its storage, key and AUTHORITY_URL (the sandbox's, started for each backend).
 */
export const BENCH_SERVICE_ENV: Readonly<Record<string, string>> = {
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  RATE_LIMIT_PER_SECOND: '1000000',
  RATE_LIMIT_BURST: '1000000',
  // Seeded customers count as pulled now: a refresh within a day answers from the store.
  IRM_REFRESH_INTERVAL_SECONDS: '86400',
  POLL_INTERVAL_SECONDS: '2',
  // No scheduled reconciliation: at start it finds the seeded customers due and pulls their IRMs from the sandbox (the
  // big customer's count then differs from the seed's, and the pulls take the machine during the measurements).
  // Reconciliation has its own benchmark (bench/reconcile.ts).
  RECONCILE_INTERVAL_SECONDS: '0',
  AUTHORITY_MODE: 'sandbox',
  // The poller also works the uploads (src/service.ts); on by default, set so that the environment cannot turn it off.
  RUN_POLLER: 'true',
};
