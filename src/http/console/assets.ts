import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * The console's static files (src/http/console/assets/): hand-written CSS and a little plain JavaScript, read once at
 * start and served from memory. Their links carry a digest of their content (`?v=`), so a browser may keep them for
 * a long time and still gets a changed file at once.
 */

const DIRECTORY = path.join(import.meta.dirname, 'assets');

const TYPES: Record<string, string> = {
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};

export type Asset = { body: Buffer; type: string; version: string };

export const ASSETS: ReadonlyMap<string, Asset> = new Map(
  fs
    .readdirSync(DIRECTORY)
    .filter((name) => TYPES[path.extname(name)] !== undefined)
    .map((name) => {
      const body = fs.readFileSync(path.join(DIRECTORY, name));
      const asset: Asset = { body, type: TYPES[path.extname(name)]!, version: createHash('sha256').update(body).digest('hex').slice(0, 12) };
      return [name, asset];
    }),
);

/** The link to an asset, with its version. */
export function assetHref(name: string): string {
  const asset = ASSETS.get(name);
  if (asset === undefined) throw new Error(`no console asset ${name} in ${DIRECTORY}`);
  return `/console/assets/${name}?v=${asset.version}`;
}
