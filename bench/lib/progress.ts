/** Progress bars and log lines on stderr, so that stdout stays free for the report path. */

const WIDTH = 28;

const startedAt = performance.now();

/** A line on stderr, stamped with the time since the benchmark started. */
export function log(message: string): void {
  const seconds = Math.floor((performance.now() - startedAt) / 1000);
  const stamp = `${String(Math.floor(seconds / 60)).padStart(2, '0')}:${String(seconds % 60).padStart(2, '0')}`;
  const leading = /^\n*/.exec(message)?.[0] ?? '';
  process.stderr.write(`${leading}[${stamp}] ${message.slice(leading.length)}\n`);
}

export function formatCount(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

/**
 * One bar per step: redrawn in place on a terminal; on a pipe (CI, a log file) a line at every
 * quarter, so that logs stay short.
 */
export class ProgressBar {
  readonly #label: string;
  readonly #total: number;
  readonly #startedAt = performance.now();
  readonly #tty = process.stderr.isTTY === true;
  #done = 0;
  #lastQuarter = -1;

  constructor(label: string, total: number) {
    this.#label = label.padEnd(22);
    this.#total = Math.max(1, total);
    this.#draw();
  }

  advance(count: number): void {
    this.#done = Math.min(this.#total, this.#done + count);
    this.#draw();
  }

  /** Closes the bar; returns the step's duration in seconds. */
  finish(): number {
    this.#done = this.#total;
    this.#draw(true);
    return this.seconds();
  }

  seconds(): number {
    return (performance.now() - this.#startedAt) / 1000;
  }

  #draw(final = false): void {
    const share = this.#done / this.#total;
    const filled = Math.round(share * WIDTH);
    const line =
      `${this.#label} [${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${String(Math.floor(share * 100)).padStart(3)}% ` +
      `${formatCount(this.#done)}/${formatCount(this.#total)} ${this.seconds().toFixed(1)}s`;
    if (this.#tty) {
      process.stderr.write(`\r${line}${final ? '\n' : ''}`);
      return;
    }
    const quarter = Math.floor(share * 4);
    if (final || quarter > this.#lastQuarter) {
      this.#lastQuarter = quarter;
      process.stderr.write(`${line}\n`);
    }
  }
}
