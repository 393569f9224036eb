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
