import assert from 'node:assert/strict';
import { SYSTEM_SOURCE } from '../../src/services/audit.ts';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { pino } from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { loadConfig } from '../../src/config.ts';
import { MAX_UNFINISHED_RUNS, runGuarded } from '../../src/jobs/poison.ts';
import { createService, type Service } from '../../src/service.ts';
import { createPlatform } from '../../src/services/platforms.ts';
import { beginRun } from '../../src/store/job-runs.ts';
import { backends, injectRequest, scratchDatabase, startTestSandbox } from '../support/harness.ts';
import { sleep } from '../support/workflow.ts';
import { SPREADSHEET_COLUMNS } from '../../src/domain/spreadsheet-columns.ts';

const run = promisify(execFile);
const CHILD = path.join(import.meta.dirname, 'poison-child.ts');
const silent = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;

/** Runs the child; whether it was killed, and what it printed. */
async function child(args: string[]): Promise<{ killed: boolean; output: string }> {
  try {
    const { stdout } = await run(process.execPath, [CHILD, ...args], { timeout: 120_000 });
    return { killed: false, output: stdout.trim() };
  } catch (error) {
    const failure = error as { signal?: string; stdout?: string };
    if (failure.signal !== 'SIGKILL') throw error;
    return { killed: true, output: failure.stdout ?? '' };
  }
}

for (const backend of backends()) {
  describe(`poison jobs [${backend}]`, () => {
    test(`a job whose process is killed mid-run ${MAX_UNFINISHED_RUNS} times is set aside with a reason, not run again`, async () => {
      const scratch = await scratchDatabase(backend);
      try {
        const args = (mode: string) => [scratch.dataDir, scratch.databaseUrl ?? '', mode];
        for (let death = 1; death <= MAX_UNFINISHED_RUNS; death++) assert.equal((await child(args('die'))).killed, true);
        const after = await child(args('report'));
        assert.equal(after.killed, false);
        assert.match(after.output, /^set aside: its work was cut off 3 times in a row/);
      } finally {
        await scratch.drop();
      }
    });

    test('runs that end, even by throwing, are never counted against the job', async () => {
      const scratch = await scratchDatabase(backend);
      const { openDatabase } = await import('../../src/store/database.ts');
      const { migrate } = await import('../../src/store/migrate.ts');
      const database = await openDatabase({ dataDir: scratch.dataDir, databaseUrl: scratch.databaseUrl });
      try {
        await migrate(database);
        const options = { db: database.db, queue: 'q', key: 'k', log: silent };
        for (let attempt = 0; attempt < MAX_UNFINISHED_RUNS * 2; attempt++) {
          await assert.rejects(runGuarded(options, async () => { throw new Error('the authority is down'); }, async () => 'set aside'));
        }
        assert.equal(await runGuarded(options, async () => 'ran', async () => 'set aside'), 'ran');
      } finally {
        await database.close();
        await scratch.drop();
      }
    });

    test('an upload whose work was cut off three times is rejected with processing_stopped when the service starts', async () => {
      const scratch = await scratchDatabase(backend);
      const sandbox = await startTestSandbox(scratch);
      const env = (runPoller: boolean) =>
        loadConfig({
          DATA_DIR: scratch.dataDir,
          ...(scratch.databaseUrl === undefined ? {} : { DATABASE_URL: scratch.databaseUrl }),
          AUTHORITY_URL: sandbox.url,
          RUN_POLLER: String(runPoller),
          POLL_INTERVAL_SECONDS: '1',
          LOG_LEVEL: 'silent',
        });
      let service: Service | undefined;
      try {
        service = await createService({ config: env(false), logger: false });
        const { apiKey } = await createPlatform(service.database.db, 'Poison platform', SYSTEM_SOURCE);
        const ask = (s: Service, method: string, url: string, body?: unknown) => injectRequest(s, method, url, { key: apiKey, ...(body === undefined ? {} : { body }) });
        const customer = await ask(service, 'POST', '/api/v1/platform-customers/', { name: 'P', email: 'poison@example.com', companyName: 'Poison Exports' });
        assert.equal(customer.status, 201, customer.text);
        const checked = await ask(service, 'POST', `/api/v1/platform-customers/${customer.body.id}/check-authority-credentials`, { authorityUsername: 'demo.exporter', authorityPassword: 'Sandbox@123' });
        assert.equal(checked.status, 200, checked.text);
        const form = new FormData();
        form.append('platformCustomerId', customer.body.id);
        form.append('uploadType', '101');
        form.append('decalarationFlag', 'Y');
        form.append('file', new Blob([`${SPREADSHEET_COLUMNS.join(',')}\n`]), 'lines.csv');
        const accepted = await ask(service, 'POST', '/api/v1/genebrc/uploads', form);
        assert.equal(accepted.status, 202, accepted.text);
        // Three runs of its job that began and never ended: what three processes killed while working on it leave.
        for (let run = 0; run < MAX_UNFINISHED_RUNS; run++) await beginRun(service.database.db, 'bulk-upload', accepted.body.id);
        await service.close();
        service = undefined;

        service = await createService({ config: env(true), logger: false });
        const deadline = Date.now() + 60_000;
        let upload: any;
        do {
          await sleep(200);
          upload = (await ask(service, 'GET', `/api/v1/genebrc/uploads/${accepted.body.id}`)).body;
        } while (upload.status === 'validating' && Date.now() < deadline);
        assert.equal(upload.status, 'rejected');
        assert.deepEqual(upload.errors.map((error: any) => error.code), ['processing_stopped']);
        assert.match(upload.errors[0].message, /cut off 3 times in a row/);
      } finally {
        await service?.close();
        await sandbox.close();
        await scratch.drop();
      }
    });
  });
}
