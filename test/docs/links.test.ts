import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../support/gateway.ts';

/**
 * README.md and docs/ stand alone, as a clone has them: no link or path leads outside the repository (a clone has no
 * ../shared), and every relative link resolves, to a file and, with a #fragment, to a heading of the Markdown it names.
 */

function documents(): string[] {
  const docs = fs.globSync('docs/**/*.md', { cwd: ROOT }).map((file) => file.split(path.sep).join('/'));
  return ['README.md', ...docs.sort()];
}

/** The Markdown without its fenced blocks (their text is code, not links), line numbers kept. */
function prose(markdown: string): string[] {
  let fence: string | undefined;
  return markdown.split('\n').map((line) => {
    const open = /^\s*(`{3,}|~{3,})/.exec(line);
    if (open && (fence === undefined || open[1]!.startsWith(fence))) {
      fence = fence === undefined ? open[1] : undefined;
      return '';
    }
    return fence === undefined ? line : '';
  });
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

function anchors(file: string): Set<string> {
  const found = new Set<string>();
  const counts = new Map<string, number>();
  for (const line of prose(fs.readFileSync(file, 'utf8'))) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1]!);
    const seen = counts.get(base) ?? 0;
    counts.set(base, seen + 1);
    found.add(seen === 0 ? base : `${base}-${seen}`);
  }
  return found;
}

type Link = { where: string; target: string };

function links(file: string): Link[] {
  const found: Link[] = [];
  for (const [index, line] of prose(fs.readFileSync(path.join(ROOT, file), 'utf8')).entries()) {
    const where = `${file}:${index + 1}`;
    for (const match of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) found.push({ where, target: match[1]! });
    for (const match of line.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/g)) found.push({ where, target: match[1]! });
    for (const match of line.matchAll(/\b(?:href|src)="([^"]+)"/g)) found.push({ where, target: match[1]! });
  }
  return found;
}

const EXTERNAL = /^(?:https?:|mailto:)/;

test('README.md and docs/ link only inside the repository, and every relative link resolves', () => {
  const problems: string[] = [];
  let checked = 0;
  for (const file of documents()) {
    for (const { where, target } of links(file)) {
      if (EXTERNAL.test(target)) continue;
      checked += 1;
      const [pathPart = '', fragment] = target.split('#');
      const resolved = pathPart === '' ? path.join(ROOT, file) : path.resolve(path.dirname(path.join(ROOT, file)), decodeURIComponent(pathPart));
      if (path.relative(ROOT, resolved).startsWith('..') || path.isAbsolute(pathPart)) {
        problems.push(`${where}: ${target} leads outside the repository`);
        continue;
      }
      if (!fs.existsSync(resolved)) {
        problems.push(`${where}: ${target} does not exist`);
        continue;
      }
      if (fragment !== undefined && resolved.endsWith('.md') && !anchors(resolved).has(fragment)) {
        problems.push(`${where}: ${target} names no heading of ${path.relative(ROOT, resolved)}`);
      }
    }
  }
  assert.deepEqual(problems, []);
  assert.ok(checked >= 20, `only ${checked} relative links found: is the link pattern still right?`);
});

test('no path in README.md or docs/, linked or written as code, climbs out of the repository (../shared and the like)', () => {
  const problems: string[] = [];
  for (const file of documents()) {
    for (const [index, line] of fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n').entries()) {
      for (const match of line.matchAll(/(?:^|[\s`(["'])((?:\.\.\/)+[\w.-][^\s`)"'\]]*)/g)) {
        const resolved = path.resolve(path.dirname(path.join(ROOT, file)), match[1]!);
        if (path.relative(ROOT, resolved).startsWith('..')) problems.push(`${file}:${index + 1}: ${match[1]}`);
      }
      if (/\/work\/shared\b/.test(line)) problems.push(`${file}:${index + 1}: /work/shared`);
    }
  }
  assert.deepEqual(problems, [], 'a clone has none of these: write the page in docs/ or keep the file in the repository');
});

test('the slug of a heading is GitHub\'s', () => {
  assert.equal(slug('Create the first console user'), 'create-the-first-console-user');
  assert.equal(slug('`/admin/v1`: the admin API'), 'adminv1-the-admin-api');
  assert.equal(slug('Push'), 'push');
});
