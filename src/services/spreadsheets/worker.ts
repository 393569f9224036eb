import { Worker } from 'node:worker_threads';
import type { CheckedUpload, CheckRequest } from './check.ts';

/**
 * What one file's check may use. Old-generation heap: a full 50,000-row sheet of every column peaks at about
 * 150 MiB in the worker; time: such a sheet takes a few seconds on a loaded machine.
 */
export type CheckLimits = { heapMb: number; timeoutMs: number };

export const CHECK_LIMITS: CheckLimits = { heapMb: 384, timeoutMs: 120_000 };

const fileProblem = (code: string, message: string): CheckedUpload => ({
  rowCount: 0,
  lineCount: 0,
  problems: [{ row: null, column: null, code, message }],
  pushes: [],
});

/**
 * Checks an uploaded file (./check.ts) in a worker thread of its own, with a heap limit and a deadline: whatever the
 * file makes the reader do, the service's own heap and event loop are untouched. A file that makes the worker pass
 * either limit, or fail in any other way, is answered with one file-wide problem (`file_too_complex`, or
 * `unreadable_file` with the reason), which rejects the upload; the service itself never sees the failure.
 */
export function checkInWorker(request: CheckRequest, limits: CheckLimits = CHECK_LIMITS): Promise<CheckedUpload> {
  return new Promise((resolve) => {
    const worker = new Worker(new URL('./check-worker.ts', import.meta.url), {
      workerData: request,
      resourceLimits: { maxOldGenerationSizeMb: limits.heapMb, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
    });
    let settled = false;
    const settle = (outcome: CheckedUpload): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      resolve(outcome);
      void worker.terminate();
    };
    const deadline = setTimeout(() => {
      settle(fileProblem('file_too_complex', `Reading and checking the file took longer than ${limits.timeoutMs / 1000} s; split it into smaller files.`));
    }, limits.timeoutMs);
    worker.on('message', (outcome: CheckedUpload) => settle(outcome));
    worker.on('error', (error: Error & { code?: string }) => {
      settle(
        error.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? fileProblem('file_too_complex', `Reading and checking the file needed more than ${limits.heapMb} MiB of memory; split it into smaller files, or save it again as CSV.`)
          : fileProblem('unreadable_file', `The file cannot be read: ${error.message}`),
      );
    });
    worker.on('exit', (code) => settle(fileProblem('unreadable_file', `The file cannot be read: its reader stopped (exit code ${code}).`)));
  });
}
