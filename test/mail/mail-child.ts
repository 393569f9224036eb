// A process that sends the mail outbox (argv: data folder, database URL or '', SMTP URL, mode). Mode 'die-after-send'
// kills itself with SIGKILL right after the SMTP server accepted a message, before the send is recorded; mode 'run'
// sends until no message is pending, then prints each message's state and exits. For test/mail/mail-kill.test.ts.
import { KeyRing } from '../../src/services/server-key.ts';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import { createBoss } from '../../src/jobs/boss.ts';
import { MailDelivery } from '../../src/jobs/mail-delivery.ts';
import { smtpTransport, type MailTransport } from '../../src/mail/transport.ts';
import { CredentialsVault } from '../../src/services/credentials-vault.ts';
import { MailOutbox } from '../../src/services/mail/outbox.ts';
import { openDatabase } from '../../src/store/database.ts';
import { migrate } from '../../src/store/migrate.ts';

const [dataDir, databaseUrl, smtpUrl, mode] = process.argv.slice(2);
const log = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;
const database = await openDatabase({ dataDir: dataDir!, databaseUrl: databaseUrl || undefined });
await migrate(database);
const smtp = smtpTransport(smtpUrl!);
const transport: MailTransport = {
  async send(envelope) {
    const sent = await smtp.send(envelope);
    if (mode === 'die-after-send') process.kill(process.pid, 'SIGKILL');
    return sent;
  },
  close: () => smtp.close(),
};
const boss = createBoss(database, log);
await boss.start();
const delivery = new MailDelivery({ boss, database, transport, from: 'ebrc-gateway <gateway@kill.example>', log, maxAttempts: 5, retryDelaySeconds: 1 });
await delivery.start();
await delivery.work(new MailOutbox({ scheduler: delivery, vault: new CredentialsVault(KeyRing.of(randomBytes(32))), publicUrl: 'https://gateway.example' }));
const deadline = Date.now() + 120_000;
while (Date.now() < deadline) {
  const pending = await database.db.selectFrom('mail_outbox').select('id').where('status', '=', 'pending').execute();
  if (pending.length === 0) break;
  await sleep(100);
}
const rows = await database.db.selectFrom('mail_outbox').select(['id', 'status', 'attempts']).execute();
process.stdout.write(`${JSON.stringify(rows)}\n`);
await delivery.stop();
await boss.stop({ graceful: false });
await database.close();
