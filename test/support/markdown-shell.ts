import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * The fenced code blocks of a Markdown file, and a bash session that runs shell blocks one after the other, so that
 * what one block sets (`CUSTOMER=$(…)`, `export API=…`) is there for the next, as in a reader's terminal.
 *
 * A block preceded (on the last non-blank line before its fence) by `<!-- readme-test: skip (reason) -->` is not run.
 */

export type FencedBlock = {
  /** The Markdown file, relative to the project's root. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The fence's language (`sh`, `text`, `js`, …), '' when it names none. */
  language: string;
  /** The block's text, without the fences and without the indentation of its fence (blocks inside list items). */
  code: string;
  /** Why the block is not run, when a readme-test marker says so. */
  skip?: string;
  /** A readme-test marker before the block that is not a skip marker: an error in the document. */
  unknownMarker?: string;
};

export const SHELL_LANGUAGES = new Set(['sh', 'bash', 'shell', 'console']);

const FENCE = /^(\s*)(`{3,}|~{3,})(.*)$/;
const MARKER = /^\s*<!--\s*readme-test:\s*(.*?)\s*-->\s*$/;
const SKIP = /^skip\s*\((.+)\)$/;

export function fencedBlocks(markdown: string, file: string): FencedBlock[] {
  const lines = markdown.split('\n');
  const blocks: FencedBlock[] = [];
  for (let index = 0; index < lines.length; index++) {
    const open = FENCE.exec(lines[index]!);
    if (!open) continue;
    const [, indent, fence, info] = open as unknown as [string, string, string, string];
    const body: string[] = [];
    let end = index + 1;
    for (; end < lines.length; end++) {
      const text = lines[end]!;
      const close = FENCE.exec(text);
      if (close && close[2]![0] === fence[0] && close[2]!.length >= fence.length && close[3]!.trim() === '') break;
      body.push(text.startsWith(indent) ? text.slice(indent.length) : text.trimStart());
    }
    const block: FencedBlock = { file, line: index + 1, language: info.trim().split(/\s+/)[0] ?? '', code: body.join('\n') };
    let previous = index - 1;
    while (previous >= 0 && lines[previous]!.trim() === '') previous--;
    const marker = previous >= 0 ? MARKER.exec(lines[previous]!) : null;
    if (marker) {
      const skip = SKIP.exec(marker[1]!);
      if (skip) block.skip = skip[1]!;
      else block.unknownMarker = marker[1]!;
    }
    blocks.push(block);
    index = end;
  }
  return blocks;
}

/** `NAME=value command …`: an assignment for that one command only, which the shell does not keep. */
const COMMAND_PREFIX = /^\s*(?:[A-Za-z_][A-Za-z0-9_]*=(?:\$[A-Za-z_]\w*|\$\{[^}]*\}|[^\s"'$(]*)\s+)+[a-z]/;

/** Names assigned at the start of a line of a block (`NAME=…`, `export NAME=…`): the values a block captures. */
export function assignedNames(code: string): string[] {
  const names = new Set<string>();
  for (const line of code.split('\n')) {
    if (COMMAND_PREFIX.test(line)) continue;
    const match = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=/.exec(line);
    if (match) names.add(match[1]!);
  }
  return [...names];
}

export type BlockRun = { exitCode: number | null; stdout: string; stderr: string; values: Record<string, string> };

/**
 * One `bash` process, `set -euo pipefail`, in `cwd` with only `env`. Each block is written to a file and sourced in
 * the session itself (not a subshell), its output captured apart; the values it assigned are read back afterwards.
 * A failing command ends the session, as `set -e` does in a terminal script: the run reports the exit code.
 */
export class ShellSession {
  readonly #child: ChildProcess;
  readonly #cwd: string;
  #control = '';
  #count = 0;
  #exit: number | null | undefined;
  #waiting: (() => void) | undefined;

  constructor(cwd: string, env: Record<string, string>) {
    this.#cwd = cwd;
    this.#child = spawn('bash', ['--noprofile', '--norc'], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.#child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      this.#control += chunk;
      this.#waiting?.();
    });
    this.#child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.#control += chunk));
    this.#child.on('exit', (code, signal) => {
      this.#exit = code ?? (signal ? 128 : null);
      this.#waiting?.();
    });
    this.#child.stdin!.on('error', () => undefined);
    this.#child.stdin!.write('set -euo pipefail\n');
  }

  /** Runs `code` in the session; gives up (and ends the session) after `timeoutMs`. */
  async run(code: string, timeoutMs = 60_000): Promise<BlockRun> {
    const n = ++this.#count;
    const script = path.join(this.#cwd, `.block-${n}.sh`);
    const out = path.join(this.#cwd, `.block-${n}.out`);
    const err = path.join(this.#cwd, `.block-${n}.err`);
    const values = path.join(this.#cwd, `.block-${n}.values`);
    const names = assignedNames(code);
    fs.writeFileSync(script, `${code}\n`);
    for (const file of [out, err, values]) fs.rmSync(file, { force: true });
    const done = `__block_${n}_done__`;
    const dump = names.map((name) => `printf '%s\\0%s\\0' ${name} "\${${name}-}"`).join('; ');
    this.#child.stdin!.write(`source ${script} >${out} 2>${err}\n{ ${dump || ':'}; } >${values}\necho ${done}\n`);
    const deadline = Date.now() + timeoutMs;
    while (!this.#control.includes(done) && this.#exit === undefined && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        this.#waiting = resolve;
        setTimeout(resolve, 200);
      });
    }
    this.#waiting = undefined;
    const read = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '');
    const finished = this.#control.includes(done);
    if (!finished && this.#exit === undefined) this.close();
    const parts = read(values).split('\0');
    const captured: Record<string, string> = {};
    for (let i = 0; i + 1 < parts.length; i += 2) captured[parts[i]!] = parts[i + 1]!;
    return {
      exitCode: finished ? 0 : (this.#exit ?? -1),
      stdout: read(out),
      // A session that ended or hung: what bash itself said too (its own errors, outside the block's redirections).
      stderr: read(err) + (finished ? '' : this.#control.replace(/^__block_\d+_done__\n/gm, '')),
      values: captured,
    };
  }

  close(): void {
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill('SIGKILL');
  }
}
