import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { openDatabase } from '../../src/store/database.ts';
import { insertMail } from '../../src/store/mail.ts';
import { migrate } from '../../src/store/migrate.ts';
import { backends, scratchDatabase } from '../support/harness.ts';
import { TestSmtp } from '../support/smtp.ts';

const run = promisify(execFile);
const CHILD = path.join(import.meta.dirname, 'mail-child.ts');

const smtp = await TestSmtp.start();
after(async () => smtp.close());

/** Runs the sender; whether it was killed, and what it printed. */
async function child(args: string[]): Promise<{ killed: boolean; output: string }> {
  try {
    const { stdout } = await run(process.execPath, [CHILD, ...args], { timeout: 180_000 });
    return { killed: false, output: stdout.trim() };
  } catch (error) {
    const failure = error as { signal?: string; stdout?: string; stderr?: string };
    if (failure.signal !== 'SIGKILL') throw error;
    return { killed: true, output: failure.stdout ?? '' };
  }
}

for (const backend of backends()) {
  describe(`e-mail through a kill [${backend}]`, () => {
    test('a sender killed between the SMTP success and its record sends the message again after the restart: one duplicate, with the same Message-ID, and never a third', async () => {
      const scratch = await scratchDatabase(backend);
      try {
        const id = randomUUID();
        const to = `kill-${backend}-${id.slice(0, 8)}@kill.example`;
        const database = await openDatabase({ dataDir: scratch.dataDir, databaseUrl: scratch.databaseUrl });
        try {
          await migrate(database);
          await insertMail(database.db, [{ id, platformId: null, userId: null, to, kind: 'notification', subject: 'Killed mid-send', text: 'body\n', html: '<p>body</p>', sealed: false }]);
        } finally {
          await database.close();
        }
        const args = (mode: string) => [scratch.dataDir, scratch.databaseUrl ?? '', smtp.url(), mode];

        assert.equal((await child(args('die-after-send'))).killed, true, 'the sender died after the SMTP server took the message');
        assert.equal(smtp.to(to).length, 1);

        const restarted = await child(args('run'));
        assert.equal(restarted.killed, false);
        assert.deepEqual(JSON.parse(restarted.output), [{ id, status: 'sent', attempts: 1 }]);
        const copies = smtp.to(to);
        assert.equal(copies.length, 2, 'sent again once after the restart: the one duplicate the kill allows');
        assert.equal(copies[0]!.messageId, `<${id}@kill.example>`);
        assert.equal(copies[1]!.messageId, copies[0]!.messageId, 'the duplicate carries the same Message-ID');

        const again = await child(args('run'));
        assert.deepEqual(JSON.parse(again.output), [{ id, status: 'sent', attempts: 1 }]);
        assert.equal(smtp.to(to).length, 2, 'a message recorded as sent is never sent again');
      } finally {
        await scratch.drop();
      }
    });
  });
}
