import fs from 'node:fs';
import path from 'node:path';

/** The project's root folder. */
export const ROOT = path.resolve(import.meta.dirname, '../..');

const STATIC_IMPORT =
  /^(?:import|export)\s+(?:type\s+)?(?:\*\s+as\s+\w+|\*|\{[^}]*\}|\w+(?:\s*,\s*(?:\{[^}]*\}|\*\s+as\s+\w+))?)\s+from\s+'([^']+)'/gm;
const SIDE_EFFECT_IMPORT = /^import\s+'([^']+)'/gm;
const DYNAMIC_IMPORT = /\bimport\(\s*'([^']+)'\s*\)/g;

/** Every .ts file under a folder of the project, as paths relative to the root with forward slashes. */
export function sourceFiles(folder: string): string[] {
  const files: string[] = [];
  const walk = (relative: string) => {
    for (const entry of fs.readdirSync(path.join(ROOT, relative), { withFileTypes: true })) {
      const child = `${relative}/${entry.name}`;
      if (entry.isDirectory()) walk(child);
      else if (entry.name.endsWith('.ts')) files.push(child);
    }
  };
  walk(folder);
  return files.sort();
}

/** What a file imports: the specifiers of its static, side-effect and dynamic imports and its re-exports. */
export function specifiersOf(text: string): string[] {
  return [STATIC_IMPORT, SIDE_EFFECT_IMPORT, DYNAMIC_IMPORT].flatMap((pattern) => [...text.matchAll(pattern)].map((match) => match[1]!));
}

/** The project files a file imports (relative specifiers resolved against it); packages and node: modules left out. */
export function projectImportsOf(file: string): string[] {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  return specifiersOf(text)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)));
}

/** The import graph of the given files: each file and the project files it imports. */
export function importGraph(files: readonly string[]): Map<string, string[]> {
  return new Map(files.map((file) => [file, projectImportsOf(file)]));
}

/** The cycles of a graph (one per strongly connected component of more than one file, or a file importing itself). */
export function cyclesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  // Tarjan's algorithm, iterative so that a deep graph cannot overflow the stack.
  const index = new Map<string, number>();
  const lowLink = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let next = 0;
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: { node: string; edge: number }[] = [{ node: start, edge: 0 }];
    index.set(start, next);
    lowLink.set(start, next);
    next += 1;
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const edges = (graph.get(frame.node) ?? []).filter((target) => graph.has(target));
      if (frame.edge < edges.length) {
        const target = edges[frame.edge]!;
        frame.edge += 1;
        if (!index.has(target)) {
          index.set(target, next);
          lowLink.set(target, next);
          next += 1;
          stack.push(target);
          onStack.add(target);
          work.push({ node: target, edge: 0 });
        } else if (onStack.has(target)) {
          lowLink.set(frame.node, Math.min(lowLink.get(frame.node)!, index.get(target)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) lowLink.set(parent.node, Math.min(lowLink.get(parent.node)!, lowLink.get(frame.node)!));
      if (lowLink.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        const selfImport = (graph.get(frame.node) ?? []).includes(frame.node);
        if (component.length > 1 || selfImport) components.push(component.sort());
      }
    }
  }
  return components;
}
