import { Worker } from 'node:worker_threads';
import type { ParsedJsonProblem } from './json-limits.ts';

/** Bodies at least this large are parsed in a worker thread; smaller ones take well under a millisecond to parse. */
export const OFF_THREAD_JSON_BYTES = 256 * 1024;

/** `storable`: the value holds no text the database cannot keep as sent (../services/unstorable-text.ts). */
export type OffThreadOutcome = { value: unknown; storable: boolean } | { failure: { kind: 'syntax'; message: string } | ({ kind: 'shape' } & ParsedJsonProblem) };

let worker: Worker | undefined;
let nextId = 0;
const pending = new Map<number, (outcome: OffThreadOutcome) => void>();

function failAll(message: string): void {
  for (const settle of pending.values()) settle({ failure: { kind: 'syntax', message } });
  pending.clear();
  worker = undefined;
}

function theWorker(): Worker {
  if (worker !== undefined) return worker;
  const started = new Worker(new URL('./json-parse-worker.ts', import.meta.url), {
    // A body is at most 5 MiB: its parsed form fits many times over.
    resourceLimits: { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 32 },
  });
  started.on('message', ({ id, ...outcome }: { id: number } & OffThreadOutcome) => {
    const settle = pending.get(id);
    pending.delete(id);
    settle?.(outcome);
  });
  started.on('error', (error) => failAll(`the body could not be parsed (${error.message})`));
  // A value the event loop cannot take back (its clone failed): no request may be left waiting for it.
  started.on('messageerror', () => failAll('the body could not be parsed'));
  started.on('exit', () => {
    if (worker === started) failAll('the body could not be parsed');
  });
  // An idle parser does not keep the process alive.
  started.unref();
  worker = started;
  return started;
}

/**
 * Parses a large JSON body in a worker thread (one per process, started on first use), so that neither parsing it nor
 * refusing it holds the event loop: a body whose objects have too many fields is refused there and never copied back
 * (./json-limits.ts). Only the value of a body that passes comes back, as a structured clone.
 */
export function parseJsonOffThread(text: string): Promise<OffThreadOutcome> {
  return new Promise((resolve) => {
    const id = nextId++;
    pending.set(id, resolve);
    theWorker().postMessage({ id, text });
  });
}
