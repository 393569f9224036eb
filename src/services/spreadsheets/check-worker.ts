import { parentPort, workerData } from 'node:worker_threads';
import { checkSpreadsheet, type CheckRequest } from './check.ts';

// A worker thread's entry (./worker.ts starts it): checks one uploaded file and posts the outcome.
const request = workerData as CheckRequest;
parentPort!.postMessage(await checkSpreadsheet(request));
