// A process that begins a guarded run of one job and is killed in the middle of it (argv: data folder, database URL
// or '', 'die' or 'report'); with 'report' it prints what the guard decided instead. For test/jobs/poison-jobs.test.ts.
import { pino } from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { runGuarded } from '../../src/jobs/poison.ts';
import { openDatabase } from '../../src/store/database.ts';
import { migrate } from '../../src/store/migrate.ts';

const [dataDir, databaseUrl, mode] = process.argv.slice(2);
const database = await openDatabase({ dataDir: dataDir!, databaseUrl: databaseUrl || undefined });
await migrate(database);
const outcome = await runGuarded(
  { db: database.db, queue: 'test-queue', key: 'job-1', log: pino({ level: 'silent' }) as unknown as FastifyBaseLogger },
  async () => {
    if (mode === 'die') process.kill(process.pid, 'SIGKILL');
    return 'ran';
  },
  async (reason) => `set aside: ${reason}`,
);
process.stdout.write(`${outcome}\n`);
await database.close();
