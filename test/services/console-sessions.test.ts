import assert from 'node:assert/strict';
import { SYSTEM_SOURCE } from '../../src/services/audit.ts';
import { after, before, describe, test } from 'node:test';
import { createConsoleUser, setConsoleUserDisabled } from '../../src/services/console-users.ts';
import { ConsoleSessions, FREE_FAILURES, FREE_FAILURES_PER_CLIENT, retryDelaySeconds } from '../../src/services/console-sessions.ts';
import { createPlatform } from '../../src/services/platforms.ts';
import { insertSession, purgeExpiredSessions } from '../../src/store/console-sessions.ts';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { migrate } from '../../src/store/migrate.ts';
import { backends, scratchDatabase } from '../support/harness.ts';

const PASSWORD = 'a long enough password';

test('the wait grows from 30 s, doubling, to at most 15 minutes, after the free failures', () => {
  assert.deepEqual(
    [0, 4, 5, 6, 7, 8, 9, 10, 11, 50].map((failures) => retryDelaySeconds(failures)),
    [0, 0, 30, 60, 120, 240, 480, 900, 900, 900],
  );
  assert.equal(FREE_FAILURES, 5);
});

for (const backend of backends()) {
  describe(`console sessions [${backend}]`, () => {
    let database: Database;
    let drop: () => Promise<void>;
    let platformId: string;
    let clock = new Date('2026-11-25T10:00:00Z');
    const now = () => clock;
    const later = (seconds: number) => {
      clock = new Date(clock.getTime() + seconds * 1000);
    };
    let sessions: ConsoleSessions;
    let serial = 0;
    /** A new user of the platform, with an e-mail of its own. */
    const newUser = async () => {
      serial += 1;
      const email = `user${serial}@platform.example`;
      const user = await createConsoleUser(database.db, platformId, { email, password: PASSWORD }, SYSTEM_SOURCE);
      return { ...user, email };
    };

    before(async () => {
      const scratch = await scratchDatabase(backend);
      drop = scratch.drop;
      database = await openDatabase({ dataDir: scratch.dataDir, databaseUrl: scratch.databaseUrl });
      await migrate(database);
      platformId = (await createPlatform(database.db, 'Console platform', SYSTEM_SOURCE)).platform.id;
      sessions = new ConsoleSessions({ db: database.db, sessionHours: 12, now });
    });
    after(async () => {
      await database?.close();
      await drop?.();
    });

    test('a right password opens a session of 12 hours; only the token hash is stored; sign-out ends it', async () => {
      const user = await newUser();
      const result = await sessions.signIn(`  ${user.email.toUpperCase()} `, PASSWORD, '10.0.0.1');
      assert.equal(result.outcome, 'signed_in');
      assert.ok(result.outcome === 'signed_in');
      assert.match(result.token, /^[A-Za-z0-9_-]{43}$/);
      assert.equal(result.session.platformId, platformId);
      assert.equal(result.session.platformName, 'Console platform');
      assert.equal(result.session.expiresAt.getTime() - clock.getTime(), 12 * 3_600_000);
      const stored = await database.db.selectFrom('console_sessions').selectAll().where('user_id', '=', user.id).execute();
      assert.equal(stored.length, 1);
      assert.equal(Buffer.from(stored[0]!.token_hash).length, 32);
      assert.ok(!Buffer.from(stored[0]!.token_hash).toString('base64url').includes(result.token));

      assert.equal((await sessions.resolve(result.token))?.userId, user.id);
      const other = `${result.token.slice(0, -1)}${result.token.endsWith('A') ? 'B' : 'A'}`;
      assert.equal(await sessions.resolve(other), null);
      assert.equal(await sessions.resolve('short'), null);
      await sessions.signOut(result.token);
      assert.equal(await sessions.resolve(result.token), null);
    });

    test("housekeeping deletes sessions past their expiry, of users who never came back, and keeps live ones", async () => {
      const user = await newUser();
      const expired = Buffer.alloc(32, 1);
      const live = Buffer.alloc(32, 2);
      await insertSession(database.db, { tokenHash: expired, userId: user.id, expiresAt: new Date(Date.now() - 1000), secondFactorPassed: true, at: new Date() });
      await insertSession(database.db, { tokenHash: live, userId: user.id, expiresAt: new Date(Date.now() + 3_600_000), secondFactorPassed: true, at: new Date() });
      assert.ok((await purgeExpiredSessions(database.db)) >= 1);
      const left = await database.db.selectFrom('console_sessions').select('token_hash').where('user_id', '=', user.id).execute();
      assert.deepEqual(left.map((row) => Buffer.from(row.token_hash).toString('hex')), [live.toString('hex')]);
    });

    test('a session ends at its expiry (and is deleted), and at once when its user is disabled', async () => {
      const user = await newUser();
      const first = await sessions.signIn(user.email, PASSWORD, '10.0.0.2');
      assert.ok(first.outcome === 'signed_in');
      later(12 * 3600 - 1);
      assert.notEqual(await sessions.resolve(first.token), null);
      later(1);
      assert.equal(await sessions.resolve(first.token), null);
      assert.equal((await database.db.selectFrom('console_sessions').selectAll().where('user_id', '=', user.id).execute()).length, 0);

      const second = await sessions.signIn(user.email, PASSWORD, '10.0.0.2');
      assert.ok(second.outcome === 'signed_in');
      await setConsoleUserDisabled(database.db, user.id, true, SYSTEM_SOURCE);
      assert.equal(await sessions.resolve(second.token), null);
      // The right password of a disabled user says so; a wrong one is refused like any other.
      assert.equal((await sessions.signIn(user.email, PASSWORD, '10.0.0.2')).outcome, 'disabled');
      assert.equal((await sessions.signIn(user.email, 'wrong', '10.0.0.2')).outcome, 'refused');
    });

    test("failures per e-mail and client: five free, then that client waits, longer each time; the user's own client never does", async () => {
      const user = await newUser();
      const attacker = '10.1.0.66';
      for (let attempt = 1; attempt <= FREE_FAILURES; attempt++) {
        assert.equal((await sessions.signIn(user.email, `wrong ${attempt}`, attacker)).outcome, 'refused');
      }
      assert.deepEqual(await sessions.signIn(user.email, 'guess', attacker), { outcome: 'slowed', retryAfterSeconds: 30 });
      later(10);
      assert.deepEqual(await sessions.signIn(user.email, PASSWORD, attacker), { outcome: 'slowed', retryAfterSeconds: 20 });
      later(20);
      assert.equal((await sessions.signIn(user.email, 'wrong 6', attacker)).outcome, 'refused');
      assert.deepEqual(await sessions.signIn(user.email, 'guess', attacker), { outcome: 'slowed', retryAfterSeconds: 60 });

      // Meanwhile the user, from their own client, signs in at once with the right password, and is told.
      const signedIn = await sessions.signIn(user.email, PASSWORD, '10.1.1.1');
      assert.equal(signedIn.outcome, 'signed_in');
      assert.equal(signedIn.outcome === 'signed_in' && signedIn.failedAttemptsSince, FREE_FAILURES + 1);
      const row = await database.db.selectFrom('console_users').select(['failed_sign_ins', 'last_failed_sign_in_at']).where('id', '=', user.id).executeTakeFirstOrThrow();
      assert.equal(row.failed_sign_ins, 0);
      assert.equal(row.last_failed_sign_in_at, null);
      const again = await sessions.signIn(user.email, PASSWORD, '10.1.1.1');
      assert.equal(again.outcome === 'signed_in' && again.failedAttemptsSince, 0);

      // The attacker's client is still slowed; its failures are forgotten 24 h after the last.
      assert.equal((await sessions.signIn(user.email, 'guess', attacker)).outcome, 'slowed');
      later(24 * 3600);
      assert.equal((await sessions.signIn(user.email, 'wrong 7', attacker)).outcome, 'refused');
      later(24 * 3600);
    });

    test('concurrent wrong passwords from one client are each counted: no more than the free ones get past the limit', async () => {
      const user = await newUser();
      const results = await Promise.all(Array.from({ length: 12 }, (_, index) => sessions.signIn(user.email, `wrong ${index}`, '10.2.0.1')));
      const checked = results.filter((result) => result.outcome === 'refused').length;
      assert.ok(checked <= FREE_FAILURES, `${checked} passwords were checked`);
      assert.ok(results.every((result) => result.outcome === 'refused' || result.outcome === 'slowed'));
      later(24 * 3600);
    });

    test('an unknown e-mail is slowed the same way, so that nothing tells it from a known one', async () => {
      for (let attempt = 1; attempt <= FREE_FAILURES; attempt++) {
        assert.equal((await sessions.signIn('nobody@platform.example', `guess ${attempt}`, '10.3.1.1')).outcome, 'refused');
      }
      assert.deepEqual(await sessions.signIn('NOBODY@platform.example', 'guess', '10.3.1.1'), { outcome: 'slowed', retryAfterSeconds: 30 });
      later(24 * 3600);
    });

    test('failures per client: twenty free, whatever the e-mails; a right password takes its own attempt back', async () => {
      const user = await newUser();
      for (let attempt = 1; attempt <= FREE_FAILURES_PER_CLIENT; attempt++) {
        assert.equal((await sessions.signIn(`spray${attempt}@platform.example`, 'guess', '10.4.0.1')).outcome, 'refused');
      }
      assert.deepEqual(await sessions.signIn(user.email, PASSWORD, '10.4.0.1'), { outcome: 'slowed', retryAfterSeconds: 30 });
      // Another client is not slowed.
      assert.equal((await sessions.signIn(user.email, PASSWORD, '10.4.0.2')).outcome, 'signed_in');
      later(24 * 3600);
    });
  });
}
