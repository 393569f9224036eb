import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { cyclesOf, importGraph, ROOT, sourceFiles, specifiersOf } from './support/import-graph.ts';

/**
 * The shape of the code (docs/architecture.md): imports point down, http → services → store / authority → domain, with
 * the API's schemas in a layer of their own below the services, and the jobs implementing ports the services define.
 * Every file of src/ and sandbox/ belongs to one layer; a layer imports only the layers listed for it here.
 */
const LAYERS: readonly { layer: string; files: RegExp; mayImport: readonly string[] }[] = [
  { layer: 'domain', files: /^src\/domain\//, mayImport: [] },
  { layer: 'protocol', files: /^src\/authority\/protocol\//, mayImport: ['domain'] },
  { layer: 'telemetry', files: /^src\/telemetry\//, mayImport: [] },
  { layer: 'owner-only-folder', files: /^src\/owner-only-folder\.ts$/, mayImport: [] },
  { layer: 'config', files: /^src\/config\.ts$/, mayImport: ['protocol', 'domain'] },
  { layer: 'authority', files: /^src\/authority\//, mayImport: ['protocol', 'domain', 'telemetry', 'config'] },
  // The mail transport (SMTP, or .eml files) is infrastructure beside the authority adapter: the mail job uses it.
  { layer: 'mail', files: /^src\/mail\//, mayImport: ['domain'] },
  { layer: 'errors', files: /^src\/errors\.ts$/, mayImport: ['authority', 'protocol', 'domain'] },
  // The schemas need the error table for the problem schema's codes, and nothing else of ours but the domain.
  { layer: 'schemas', files: /^src\/schemas\//, mayImport: ['domain', 'errors'] },
  { layer: 'store', files: /^src\/store\//, mayImport: ['authority', 'protocol', 'domain', 'telemetry', 'config', 'errors'] },
  {
    layer: 'services',
    files: /^src\/services\//,
    mayImport: ['schemas', 'store', 'authority', 'protocol', 'domain', 'telemetry', 'config', 'errors'],
  },
  {
    layer: 'jobs',
    files: /^src\/jobs\//,
    mayImport: ['mail', 'services', 'schemas', 'store', 'authority', 'protocol', 'domain', 'telemetry', 'config', 'errors'],
  },
  {
    layer: 'http',
    files: /^src\/http\//,
    mayImport: ['services', 'schemas', 'store', 'authority', 'protocol', 'domain', 'telemetry', 'config', 'errors'],
  },
  // What builds and starts the whole: it may import any layer, and no layer imports it.
  {
    layer: 'entry',
    files: /^src\/(service|main|service-file|sandbox-beside)\.ts$|^src\/cli\//,
    mayImport: ['http', 'jobs', 'mail', 'services', 'schemas', 'store', 'authority', 'protocol', 'domain', 'telemetry', 'config', 'errors', 'owner-only-folder'],
  },
  // The sandbox stands in for the real authority: it shares the wire protocol and the domain's rules, nothing else.
  { layer: 'sandbox', files: /^sandbox\//, mayImport: ['protocol', 'domain', 'owner-only-folder'] },
];

/** The npm packages a layer may import (node: built-ins aside); a layer not named here may import any. */
const PACKAGES: Readonly<Record<string, readonly string[]>> = {
  domain: [],
  protocol: [],
  schemas: ['typebox'],
};

function layerOf(file: string): string | undefined {
  return LAYERS.find(({ files }) => files.test(file))?.layer;
}

const FILES = [...sourceFiles('src'), ...sourceFiles('sandbox')];
const GRAPH = importGraph(FILES);

test('every file of src/ and sandbox/ belongs to a layer', () => {
  assert.deepEqual(
    FILES.filter((file) => layerOf(file) === undefined),
    [],
    'add a new folder or top-level file to LAYERS in test/architecture.test.ts',
  );
});

test('every relative import names a file that exists', () => {
  const missing = [...GRAPH].flatMap(([file, targets]) =>
    targets.filter((target) => !fs.existsSync(path.join(ROOT, target))).map((target) => `${file} imports ${target}`),
  );
  assert.deepEqual(missing, []);
});

test('imports point down: each layer imports only itself and the layers below it', () => {
  const upward = [...GRAPH].flatMap(([file, targets]) => {
    const from = layerOf(file)!;
    const allowed = new Set([from, ...LAYERS.find(({ layer }) => layer === from)!.mayImport]);
    return targets
      .filter((target) => !allowed.has(layerOf(target) ?? 'outside src/ and sandbox/'))
      .map((target) => `${file} (${from}) imports ${target} (${layerOf(target) ?? 'outside src/ and sandbox/'})`);
  });
  assert.deepEqual(upward, []);
});

test('the domain, the wire protocol and the schemas import no package but their own few', () => {
  const strays = FILES.flatMap((file) => {
    const allowed = PACKAGES[layerOf(file)!];
    if (allowed === undefined) return [];
    return specifiersOf(fs.readFileSync(path.join(ROOT, file), 'utf8'))
      .filter((specifier) => !specifier.startsWith('.') && !specifier.startsWith('node:') && !allowed.includes(specifier))
      .map((specifier) => `${file} imports ${specifier}`);
  });
  assert.deepEqual(strays, []);
});

test('no import cycle among the files of src/ and sandbox/ (type-only imports included)', () => {
  assert.deepEqual(cyclesOf(GRAPH), []);
});

test('the import reader finds every form of import, and the cycle finder every cycle', () => {
  const text = [
    "import fs from 'node:fs';",
    "import type { A,",
    "  B } from './a.ts';",
    "import C, { type D } from '../c.ts';",
    "import * as e from './e.ts';",
    "export { f } from './f.ts';",
    "export type { G } from './g.ts';",
    "import './side-effect.ts';",
    "const h = await import('./h.ts');",
    "// an import in a comment: from './not-this.ts'",
    "const text = 'import x from \"./nor-this.ts\"';",
  ].join('\n');
  assert.deepEqual(specifiersOf(text).sort(), ['../c.ts', './a.ts', './e.ts', './f.ts', './g.ts', './h.ts', './side-effect.ts', 'node:fs']);
  const graph = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a', 'd']],
    ['d', []],
    ['e', ['e']],
    ['f', ['d']],
  ]);
  assert.deepEqual(cyclesOf(graph), [['a', 'b', 'c'], ['e']]);
});
