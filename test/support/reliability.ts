import { randomInt } from 'node:crypto';

/**
 * The one knob of the reliability suite: RELIABILITY_SCALE=quick (the default, part of `npm test`) or long
 * (`npm run test:reliability`: more kills, more inputs, more concurrency).
 */
export type Scale = 'quick' | 'long';

export function reliabilityScale(): Scale {
  const raw = process.env.RELIABILITY_SCALE ?? 'quick';
  if (raw !== 'quick' && raw !== 'long') throw new Error(`RELIABILITY_SCALE must be quick or long, got "${raw}"`);
  return raw;
}

/** The quick figure or the long one, by the scale of this run. */
export function scaled<T>(quick: T, long: T): T {
  return reliabilityScale() === 'long' ? long : quick;
}

/** A small, fast, seedable generator (mulberry32): the same seed replays the same choices. */
export class Random {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** In [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** A bigint in [min, max] (small ranges only: the draw is a double). */
  bigint(min: bigint, max: bigint): bigint {
    return min + BigInt(Math.floor(this.next() * Number(max - min + 1n)));
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('nothing to pick from');
    return items[Math.floor(this.next() * items.length)]!;
  }
}

/**
 * The seed of a run: RELIABILITY_SEED when set (to replay a failure), else a new one. Every test prints the seed it
 * used, so that any run can be repeated exactly as far as the machine's timing allows.
 */
export function runSeed(): number {
  const raw = process.env.RELIABILITY_SEED;
  if (raw !== undefined && raw !== '') {
    if (!/^\d+$/.test(raw)) throw new Error(`RELIABILITY_SEED must be a whole number, got "${raw}"`);
    return Number(raw) >>> 0;
  }
  return randomInt(1, 2 ** 31);
}

type Diagnosing = { diagnostic(message: string): void };

/**
 * Prints a test's figures as test diagnostics, one `figure <name>: <value>` line each, so that a run's output can be
 * searched for them (docs/reliability.md quotes them).
 */
export function reportFigures(t: Diagnosing, title: string, figures: Record<string, number | string | boolean>): void {
  t.diagnostic(`figures of ${title} (RELIABILITY_SCALE=${reliabilityScale()})`);
  for (const [name, value] of Object.entries(figures)) t.diagnostic(`figure ${name}: ${value}`);
}

/** Runs `work` over `items` with at most `concurrency` at a time; returns the results in the items' order. */
export async function mapConcurrently<T, R>(items: readonly T[], concurrency: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane));
  return results;
}
