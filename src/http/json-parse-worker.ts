import { parentPort } from 'node:worker_threads';
import { hasUnstorableText, jsonTextMayHoldUnstorableText } from '../services/unstorable-text.ts';
import { checkParsedJson } from './json-limits.ts';

// A worker thread's entry (./json-off-thread.ts starts it): parses large JSON bodies so the event loop never does.
parentPort!.on('message', ({ id, text }: { id: number; text: string }) => {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    parentPort!.postMessage({ id, failure: { kind: 'syntax', message: (error as Error).message } });
    return;
  }
  const problem = checkParsedJson(value);
  if (problem !== null) parentPort!.postMessage({ id, failure: { kind: 'shape', ...problem } });
  // Whether its text can be stored as sent is checked here too, off the event loop (the check every request runs).
  else parentPort!.postMessage({ id, value, storable: !jsonTextMayHoldUnstorableText(text) || !hasUnstorableText(value) });
});
