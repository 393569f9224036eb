import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.ts';

test('defaults: port 3000 on 127.0.0.1, embedded database in ./data, 50/s with a burst of 100', () => {
  const config = loadConfig({});
  assert.equal(config.port, 3000);
  assert.equal(config.host, '127.0.0.1');
  assert.equal(config.dataDir, path.resolve('data'));
  assert.equal(config.databaseUrl, undefined);
  assert.equal(config.encryptionKeys, undefined);
  assert.equal(config.logLevel, 'info');
  assert.equal(config.rateLimitPerSecond, 50);
  assert.equal(config.rateLimitBurst, 100);
  assert.equal(config.irmRefreshIntervalSeconds, 30);
  assert.equal(config.runPoller, true);
  assert.ok(config.sandboxProcessingDelayMs > 0, 'the sandbox processes after a delay by default');
  assert.ok(config.apiKeyCacheSeconds > 0 && config.apiKeyCacheSeconds <= 60);
  assert.equal(config.authorityMode, 'sandbox');
  assert.equal(config.authorityUrl, undefined, 'no AUTHORITY_URL: npm start starts the sandbox program beside');
  assert.equal(config.sandboxPort, 3100);
  assert.equal(config.databaseStatementTimeoutMs, 30_000);
  assert.equal(config.databaseWaitSeconds, 0, 'a start waits for the database for ever by default');
});

test('empty variables count as unset', () => {
  const config = loadConfig({
    PORT: '',
    DATABASE_URL: '',
    DATA_DIR: '',
    RATE_LIMIT_BURST: '',
    ENCRYPTION_KEY: '',
    RUN_POLLER: '',
    AUTHORITY_MODE: '',
    AUTHORITY_URL: '',
    AUTHORITY_TOKEN_URL: '',
    AUTHORITY_EGRESS_IP: '',
    SANDBOX_PORT: '',
    ADMIN_TOKEN: '',
    CONSOLE_SESSION_HOURS: '',
  });
  assert.deepEqual(config, loadConfig({}));
});

test('every variable is read', () => {
  const key = Buffer.alloc(32, 7).toString('base64');
  const config = loadConfig({
    PORT: '8080',
    HOST: '0.0.0.0',
    DATA_DIR: '/var/lib/ebrc',
    DATABASE_URL: 'postgresql://app@db:5432/ebrc',
    DATABASE_STATEMENT_TIMEOUT_MS: '5000',
    DATABASE_WAIT_SECONDS: '60',
    ENCRYPTION_KEY: key,
    LOG_LEVEL: 'debug',
    RATE_LIMIT_PER_SECOND: '5',
    RATE_LIMIT_BURST: '10',
    API_KEY_CACHE_SECONDS: '0',
    AUDIT_RETENTION_DAYS: '400',
    AUTHORITY_TIMEOUT_MS: '2500',
    IRM_REFRESH_INTERVAL_SECONDS: '0',
    SANDBOX_PROCESSING_DELAY_MS: '0',
    POLL_INTERVAL_SECONDS: '7',
    RECONCILE_INTERVAL_SECONDS: '3600',
    RECONCILE_CONCURRENCY: '4',
    RUN_POLLER: 'false',
    HOUSEKEEPING_INTERVAL_SECONDS: '90',
    AUTHORITY_ENVELOPE_PROFILE: 'java-pbkdf2',
    AUTHORITY_MODE: 'dgft',
    AUTHORITY_URL: 'https://apiebrc.dgft.gov.in/ebrc/',
    AUTHORITY_TOKEN_URL: 'https://apiebrc.dgft.gov.in',
    AUTHORITY_EGRESS_IP: '203.0.113.7',
    SANDBOX_PORT: '3200',
    WEBHOOK_RETRY_SCHEDULE: '1, 60,3600',
    WEBHOOK_TIMEOUT_MS: '5000',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    WEBHOOK_DISABLE_AFTER_SECONDS: '3600',
    WEBHOOK_CONCURRENCY: '16',
    RUN_WEBHOOKS: 'false',
    EVENT_RETENTION_DAYS: '90',
    ADMIN_TOKEN: 'adm_0123456789abcdefghijklmnopqrstuv',
    CONSOLE_SESSION_HOURS: '8',
    MIGRATE_ON_START: 'false',
    SHUTDOWN_TIMEOUT_SECONDS: '50',
    TRUST_PROXY: '10.0.0.0/8',
    METRICS_TOKEN: 'metrics_0123456789abcdefghijklmnopqrstuv',
    SMTP_URL: 'smtps://user:secret@mail.example.com:465',
    MAIL_FROM: 'Payments Co <ebrc@payments.example>',
    PUBLIC_URL: 'https://ebrc.payments.example/',
    MAIL_MAX_ATTEMPTS: '4',
    MAIL_RETRY_DELAY_SECONDS: '10',
  });
  assert.deepEqual(config, {
    port: 8080,
    host: '0.0.0.0',
    dataDir: '/var/lib/ebrc',
    databaseUrl: 'postgresql://app@db:5432/ebrc',
    databaseStatementTimeoutMs: 5000,
    databaseWaitSeconds: 60,
    encryptionKeys: [{ id: 'default', key: Buffer.from(key, 'base64') }],
    logLevel: 'debug',
    rateLimitPerSecond: 5,
    rateLimitBurst: 10,
    apiKeyCacheSeconds: 0,
    auditRetentionDays: 400,
    authorityTimeoutMs: 2500,
    irmRefreshIntervalSeconds: 0,
    sandboxProcessingDelayMs: 0,
    pollIntervalSeconds: 7,
    reconcileIntervalSeconds: 3600,
    reconcileConcurrency: 4,
    runPoller: false,
    housekeepingIntervalSeconds: 90,
    authorityEnvelopeProfile: 'java-pbkdf2',
    authorityMode: 'dgft',
    authorityUrl: 'https://apiebrc.dgft.gov.in/ebrc',
    authorityTokenUrl: 'https://apiebrc.dgft.gov.in',
    authorityEgressIp: '203.0.113.7',
    sandboxPort: 3200,
    webhookRetrySchedule: [1, 60, 3600],
    webhookTimeoutMs: 5000,
    webhookAllowPrivateUrls: true,
    webhookDisableAfterSeconds: 3600,
    webhookConcurrency: 16,
    runWebhooks: false,
    eventRetentionDays: 90,
    consoleSessionHours: 8,
    adminToken: 'adm_0123456789abcdefghijklmnopqrstuv',
    migrateOnStart: false,
    shutdownTimeoutSeconds: 50,
    trustProxy: ['10.0.0.0/8'],
    metricsToken: 'metrics_0123456789abcdefghijklmnopqrstuv',
    smtpUrl: 'smtps://user:secret@mail.example.com:465',
    mailFrom: 'Payments Co <ebrc@payments.example>',
    publicUrl: 'https://ebrc.payments.example',
    mailMaxAttempts: 4,
    mailRetryDelaySeconds: 10,
  });
  assert.equal(loadConfig({ PORT: '4000' }).publicUrl, 'http://localhost:4000', 'links point at this service by default');
  assert.equal(loadConfig({}).smtpUrl, undefined, '.eml files by default');
  assert.throws(() => loadConfig({ SMTP_URL: 'https://mail.example.com' }), /SMTP_URL must be an smtps:\/\/ or smtp:\/\/ URL/);
  assert.deepEqual(loadConfig({}).webhookRetrySchedule, [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000], "the contract's schedule by default");
  assert.equal(loadConfig({ DATA_DIR: 'relative/folder' }).dataDir, path.resolve('relative/folder'));
  assert.equal(loadConfig({ RUN_POLLER: '1' }).runPoller, true);
  assert.equal(loadConfig({ RUN_POLLER: '0' }).runPoller, false);
  assert.equal(loadConfig({ DATABASE_URL: 'postgres://x@y/z' }).databaseUrl, 'postgres://x@y/z');
  assert.equal(loadConfig({ AUTHORITY_URL: 'http://127.0.0.1:3100' }).authorityUrl, 'http://127.0.0.1:3100', 'sandbox mode takes an AUTHORITY_URL too');
  assert.equal(loadConfig({ AUTHORITY_EGRESS_IP: '2001:db8::1' }).authorityEgressIp, '2001:db8::1');
});

const BAD_VALUES: Record<string, string[]> = {
  PORT: ['abc', '-1', '65536', '80.5', '3000 '],
  DATABASE_URL: ['mysql://x', 'localhost:5432/ebrc'],
  DATABASE_STATEMENT_TIMEOUT_MS: ['0', '99', 'long', '3600001'],
  DATABASE_WAIT_SECONDS: ['-1', 'forever', '1.5'],
  ENCRYPTION_KEY: ['too-short', Buffer.alloc(16).toString('base64')],
  LOG_LEVEL: ['verbose', 'INFO'],
  RATE_LIMIT_PER_SECOND: ['0', 'fast', '1e3'],
  RATE_LIMIT_BURST: ['-1', '0', '2.5'],
  API_KEY_CACHE_SECONDS: ['61', 'x'],
  AUTHORITY_TIMEOUT_MS: ['0'],
  IRM_REFRESH_INTERVAL_SECONDS: ['-5'],
  SANDBOX_PROCESSING_DELAY_MS: ['soon'],
  POLL_INTERVAL_SECONDS: ['0'],
  RUN_POLLER: ['yes', 'TRUE'],
  HOUSEKEEPING_INTERVAL_SECONDS: ['0', '86401', 'hourly'],
  AUTHORITY_ENVELOPE_PROFILE: ['spec', 'JAVA-PBKDF2'],
  AUTHORITY_MODE: ['real', 'DGFT', 'production'],
  AUTHORITY_URL: ['ftp://apiebrc.dgft.gov.in', 'apiebrc.dgft.gov.in/ebrc', 'localhost:3100', 'not a url'],
  AUTHORITY_TOKEN_URL: ['file:///etc/passwd', 'token-host'],
  AUTHORITY_EGRESS_IP: ['egress.example.com', '203.0.113', '203.0.113.7/32'],
  SANDBOX_PORT: ['0', '65536', '-1', 'x'],
  WEBHOOK_RETRY_SCHEDULE: ['5,,300', '5;300', '-5', '1.5', '5,604801', Array.from({ length: 21 }, () => '1').join(',')],
  WEBHOOK_TIMEOUT_MS: ['99', '60001', 'slow'],
  WEBHOOK_ALLOW_PRIVATE_URLS: ['yes', 'TRUE'],
  WEBHOOK_DISABLE_AFTER_SECONDS: ['0', 'five days'],
  WEBHOOK_CONCURRENCY: ['0', '1001'],
  RUN_WEBHOOKS: ['no'],
  EVENT_RETENTION_DAYS: ['29', '0', 'month'],
  CONSOLE_SESSION_HOURS: ['0', '721', '12h'],
  ADMIN_TOKEN: ['short', 'has a space in it but is long enough to pass', 'x'.repeat(513), `tab\t${'x'.repeat(40)}`],
};

for (const [name, values] of Object.entries(BAD_VALUES)) {
  test(`a bad ${name} stops the start with a message naming it`, () => {
    for (const value of values) {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError, `${name}=${value}: expected a ConfigError, got ${String(error)}`);
          assert.match(error.message, new RegExp(`\\b${name}\\b`), `${name}=${value}: ${error.message}`);
          return true;
        },
        `${name}=${JSON.stringify(value)} was accepted`,
      );
    }
  });
}

test('AUTHORITY_MODE=dgft without AUTHORITY_URL stops the start with a message naming both', () => {
  for (const env of [{ AUTHORITY_MODE: 'dgft' }, { AUTHORITY_MODE: 'dgft', AUTHORITY_URL: '' }, { AUTHORITY_MODE: 'dgft', AUTHORITY_TOKEN_URL: 'https://x' }]) {
    assert.throws(
      () => loadConfig(env),
      (error: unknown) => error instanceof ConfigError && /\bAUTHORITY_URL\b/.test(error.message) && /\bAUTHORITY_MODE\b/.test(error.message),
      JSON.stringify(env),
    );
  }
  assert.equal(loadConfig({ AUTHORITY_MODE: 'dgft', AUTHORITY_URL: 'https://a.example' }).authorityUrl, 'https://a.example');
});

test('the message of a bad number quotes the value and the allowed range', () => {
  assert.throws(() => loadConfig({ RATE_LIMIT_BURST: '-1' }), /RATE_LIMIT_BURST must be a whole number from 1 to [\d_,]+, got "-1"/);
  assert.throws(() => loadConfig({ SHUTDOWN_TIMEOUT_SECONDS: '0' }), /SHUTDOWN_TIMEOUT_SECONDS must be a whole number from 1 to 3600, got "0"/);
  assert.throws(() => loadConfig({ MIGRATE_ON_START: 'no' }), /MIGRATE_ON_START must be true or false, got "no"/);
});

test('the message of a bad DATABASE_URL does not repeat it (it may hold a password)', () => {
  assert.throws(
    () => loadConfig({ DATABASE_URL: 'mysql://root:s3cret-pw@db/ebrc' }),
    (error: unknown) => error instanceof ConfigError && /DATABASE_URL/.test(error.message) && !error.message.includes('s3cret-pw'),
  );
});

test('the message of a bad ADMIN_TOKEN does not repeat it', () => {
  assert.throws(
    () => loadConfig({ ADMIN_TOKEN: 'my-admin-secret' }),
    (error: unknown) => error instanceof ConfigError && /ADMIN_TOKEN/.test(error.message) && !error.message.includes('my-admin-secret'),
  );
});

test('the message of a bad ENCRYPTION_KEY does not repeat it', () => {
  assert.throws(
    () => loadConfig({ ENCRYPTION_KEY: 'my-secret-key-material' }),
    (error: unknown) => error instanceof ConfigError && /ENCRYPTION_KEY/.test(error.message) && !error.message.includes('my-secret-key-material'),
  );
});
