import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import { sql } from 'kysely';
import type { PgBoss } from 'pg-boss';
import pino from 'pino';
import { Registry } from 'prom-client';
import { MailDelivery } from '../../src/jobs/mail-delivery.ts';
import { RequestPoller } from '../../src/jobs/request-poller.ts';
import { createDeliveryMetrics, WebhookDelivery } from '../../src/jobs/webhook-delivery.ts';
import type { MailTransport } from '../../src/mail/transport.ts';
import type { CredentialsVault } from '../../src/services/credentials-vault.ts';
import { insertCustomer } from '../../src/store/customers.ts';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { migrate } from '../../src/store/migrate.ts';
import { insertPlatform } from '../../src/store/platforms.ts';
import { backends, scratchDatabase } from '../support/harness.ts';

/**
 * The recovery sweeps (a job for every open request, and for every pending message, that has none) read a batch at a
 * time. Each sweep goes on after the last one's batch, so that a backlog larger than a batch, whose oldest entries have
 * their jobs, does not hide a newer entry that lost its own. The boss is a stand-in that records what it is asked to
 * queue; the rows are real, several of them created in the same microsecond.
 */
const log = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;

for (const backend of backends()) {
  describe(`Recovery sweeps [${backend}]`, () => {
    async function withDatabase(work: (database: Database, platformId: string) => Promise<void>): Promise<void> {
      const scratch = await scratchDatabase(backend);
      const database = await openDatabase({ databaseUrl: scratch.databaseUrl, dataDir: scratch.dataDir });
      try {
        await migrate(database);
        const platformId = randomUUID();
        await insertPlatform(database.db, { id: platformId, name: 'Sweeps' });
        await work(database, platformId);
      } finally {
        await database.close();
        await scratch.drop();
      }
    }

    test('the poller reaches every open request, a batch per sweep, then starts again from the oldest', async () => {
      await withDatabase(async (database, platformId) => {
        const customerId = randomUUID();
        await insertCustomer(database.db, { id: customerId, platformId, name: 'Sweep', email: 'sweep@example.com', type: 'customer', companyName: 'Co', address: null });
        // Seven open requests (three of them in one microsecond), and a final one the sweep must never reach.
        const open = await sql<{ id: string }>`
          insert into genebrc_requests (id, platform_id, platform_customer_id, request_id, iec_number, record_res_count, upload_type,
            declaration_flag, status, created_at)
          select gen_random_uuid(), ${platformId}::uuid, ${customerId}::uuid, 'EBRCGWSWEEP' || g, '0599001001', 1, '101', 'Y',
            case when g % 2 = 0 then 'PENDING' else 'SUBMITTING' end,
            timestamptz '2026-11-01 00:00:00.123456Z' + least(g, 3) * interval '1 microsecond'
          from generate_series(1, 7) g
          returning id`.execute(database.db);
        await sql`
          insert into genebrc_requests (id, platform_id, platform_customer_id, request_id, iec_number, record_res_count, upload_type,
            declaration_flag, status, created_at)
          values (gen_random_uuid(), ${platformId}::uuid, ${customerId}::uuid, 'EBRCGWSWEEPDONE', '0599001001', 1, '101', 'Y', 'PROCESSED',
            timestamptz '2026-11-01 00:00:00.123459Z')`.execute(database.db);
        const queued: string[][] = [];
        const boss = {
          async send(_queue: string, data: { requestId: string }) {
            queued.at(-1)!.push(data.requestId);
            return null;
          },
        } as unknown as PgBoss;
        const poller = new RequestPoller({ boss, database, pollIntervalSeconds: 1, jobExpireSeconds: 60, log, metrics: new Registry(), recoveryBatch: 3 });
        for (let sweep = 0; sweep < 4; sweep += 1) {
          queued.push([]);
          await poller.recover();
        }
        assert.deepEqual(queued.map((batch) => batch.length), [3, 3, 1, 3], 'three, three, the last one, then the oldest again');
        const firstRound = queued.slice(0, 3).flat();
        assert.deepEqual([...firstRound].sort(), open.rows.map((row) => row.id).sort(), 'every open request once, none final');
        assert.deepEqual(queued[3], queued[0]);
      });
    });

    test('the mail sweep reaches every pending message, a batch per sweep, then starts again from the oldest', async () => {
      await withDatabase(async (database, platformId) => {
        const pending = await sql<{ id: string }>`
          insert into mail_outbox (id, platform_id, to_address, kind, subject, text_body, html_body, status, created_at)
          select gen_random_uuid(), ${platformId}::uuid, 'ops@example.com', 'notification', 'Sweep ' || g, 'text', '<p>html</p>', 'pending',
            timestamptz '2026-11-01 00:00:00.5Z' + least(g, 4) * interval '1 microsecond'
          from generate_series(1, 5) g
          returning id`.execute(database.db);
        await sql`
          insert into mail_outbox (id, platform_id, to_address, kind, subject, text_body, html_body, status, created_at)
          values (gen_random_uuid(), ${platformId}::uuid, 'ops@example.com', 'notification', 'Sent', 'text', '<p>html</p>', 'sent',
            timestamptz '2026-11-01 00:00:00.5Z')`.execute(database.db);
        const queued: string[][] = [];
        const boss = {
          async insert(_queue: string, jobs: { data: { mailId: string } }[]) {
            queued.push(jobs.map((job) => job.data.mailId));
          },
        } as unknown as PgBoss;
        const transport: MailTransport = { send: async () => assert.fail('the sweep sends nothing itself') } as unknown as MailTransport;
        const delivery = new MailDelivery({ boss, database, transport, from: 'gateway@example.com', log, maxAttempts: 3, retryDelaySeconds: 1, recoveryBatch: 2 });
        for (let sweep = 0; sweep < 4; sweep += 1) await delivery.recover();
        assert.deepEqual(queued.map((batch) => batch.length), [2, 2, 1, 2]);
        assert.deepEqual(queued.slice(0, 3).flat().sort(), pending.rows.map((row) => row.id).sort());
        assert.deepEqual(queued[3], queued[0]);
      });
    });

    test('the webhook sweep reaches every due pending attempt, a batch per sweep, then starts again from the longest due', async () => {
      await withDatabase(async (database, platformId) => {
        const endpointId = randomUUID();
        await sql`
          insert into webhook_endpoints (id, platform_id, url, enabled_events, status, secret)
          values (${endpointId}::uuid, ${platformId}::uuid, 'https://hooks.example.com/', '["*"]', 'enabled', 'sealed')`.execute(database.db);
        await sql`
          insert into events (id, platform_id, type, data) values ('evt_sweep', ${platformId}::uuid, 'webhook.test', '{}')`.execute(database.db);
        // Five attempts due an hour ago (four of them in one microsecond), one due in a minute, one delivered.
        const due = await sql<{ id: string }>`
          insert into webhook_attempts (id, endpoint_id, event_id, attempt, retry, status, next_attempt_at)
          select gen_random_uuid(), ${endpointId}::uuid, 'evt_sweep', 1, 0, 'pending',
            date_trunc('second', now()) - interval '1 hour' + least(g, 2) * interval '1 microsecond'
          from generate_series(1, 5) g
          returning id`.execute(database.db);
        await sql`
          insert into webhook_attempts (id, endpoint_id, event_id, attempt, retry, status, next_attempt_at) values
            (gen_random_uuid(), ${endpointId}::uuid, 'evt_sweep', 1, 0, 'pending', now() + interval '1 minute'),
            (gen_random_uuid(), ${endpointId}::uuid, 'evt_sweep', 1, 0, 'succeeded', null)`.execute(database.db);
        const queued: string[][] = [];
        const boss = {
          async insert(_queue: string, jobs: { data: { attemptId: string } }[]) {
            queued.push(jobs.map((job) => job.data.attemptId));
          },
        } as unknown as PgBoss;
        const delivery = new WebhookDelivery({
          boss,
          database,
          vault: {} as CredentialsVault,
          log,
          metrics: createDeliveryMetrics(new Registry()),
          retrySchedule: [1],
          timeoutMs: 1_000,
          allowPrivateUrls: false,
          disableAfterMs: 60_000,
          concurrency: 4,
          recoveryBatch: 2,
        });
        for (let sweep = 0; sweep < 4; sweep += 1) await delivery.recover();
        assert.deepEqual(queued.map((batch) => batch.length), [2, 2, 1, 2]);
        assert.deepEqual(queued.slice(0, 3).flat().sort(), due.rows.map((row) => row.id).sort());
        assert.deepEqual(queued[3], queued[0]);
      });
    });
  });
}
