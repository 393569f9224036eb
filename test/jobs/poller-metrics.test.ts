import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import { Kysely, PostgresDialect } from 'kysely';
import type { PgBoss } from 'pg-boss';
import pino from 'pino';
import { Registry } from 'prom-client';
import { RequestPoller } from '../../src/jobs/request-poller.ts';
import type { Database } from '../../src/store/database.ts';
import type { Schema } from '../../src/store/schema.ts';

/**
 * The open-request gauges when the database cannot be read: they keep the last read, the age growing, rather than
 * falling to the 0 that means "none open" (docs/decisions.md, "The poller"). The database is a stand-in pool whose
 * answers the test sets: the gauges' one statement returns a row, or the connection is refused.
 */
test('the open-request gauges keep the last read, the age growing, while the database cannot be read', async () => {
  const oldest = new Date(Date.now() - 120_000);
  let refused = false;
  const pool = {
    async connect() {
      if (refused) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      return { query: async () => ({ command: 'SELECT', rowCount: 1, rows: [{ open: 3, oldest }] }), release() {} };
    },
    async end() {},
  };
  const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool: pool as never }) });
  const warnings: any[] = [];
  const log = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line)) }) as unknown as FastifyBaseLogger;
  const metrics = new Registry();
  new RequestPoller({ boss: {} as PgBoss, database: { db } as Database, pollIntervalSeconds: 1, jobExpireSeconds: 60, log, metrics });
  const read = async (name: string) => (await metrics.getSingleMetric(name)!.get()).values[0]?.value;

  assert.equal(await read('genebrc_open_requests'), 3);
  const firstAge = (await read('genebrc_oldest_open_request_age_seconds'))!;
  assert.ok(firstAge >= 120 && firstAge < 125, `age ${firstAge}`);

  refused = true;
  // The summary is read at most once a second.
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  assert.equal(await read('genebrc_open_requests'), 3, 'the last read, not 0');
  const laterAge = (await read('genebrc_oldest_open_request_age_seconds'))!;
  assert.ok(laterAge >= firstAge + 1, `the age grows on: ${firstAge} then ${laterAge}`);
  assert.ok(warnings.some((line) => line.msg.startsWith('could not read the open requests')), JSON.stringify(warnings));
  // /metrics answers in full all the while.
  assert.match(await metrics.metrics(), /^genebrc_open_requests 3$/m);
  await db.destroy();
});
