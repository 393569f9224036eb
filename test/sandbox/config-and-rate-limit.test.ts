import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SandboxConfigError, readAllowList, readSandboxConfig } from '../../sandbox/config.ts';
import { createRateLimiter } from '../../sandbox/rate-limit.ts';

describe('the sandbox program\'s settings', () => {
  test('defaults', () => {
    assert.deepEqual(readSandboxConfig({}), {
      host: '127.0.0.1',
      port: 3100,
      dataDir: './data-sandbox',
      databaseUrl: undefined,
      processingDelayMs: 3000,
      pushAnswerDelayMs: 0,
      allowedIps: null,
      rateLimitPerSecond: 50,
      rateLimitBurst: 100,
      envelopeProfile: 'spec-sha256',
      logLevel: 'info',
    });
  });

  test('wrong values are refused, naming the variable', () => {
    for (const [name, value] of [
      ['SANDBOX_PORT', '70000'],
      ['SANDBOX_PROCESSING_DELAY_MS', '-1'],
      ['SANDBOX_PUSH_ANSWER_DELAY_MS', '60001'],
      ['SANDBOX_RATE_LIMIT_PER_SECOND', '0'],
      ['SANDBOX_ENVELOPE_PROFILE', 'aes-cbc'],
      ['SANDBOX_DATABASE_URL', 'mysql://x'],
      ['SANDBOX_ALLOWED_IPS', '10.0.0.0/33'],
      ['SANDBOX_ALLOWED_IPS', 'localhost'],
    ] as const) {
      assert.throws(() => readSandboxConfig({ [name]: value }), (error: unknown) =>
        error instanceof SandboxConfigError && error.message.includes(name), `${name}=${value}`);
    }
  });

  test('the allow-list takes addresses and CIDR ranges, IPv4 and IPv6', () => {
    const allowed = readAllowList(' 10.20.30.40, 192.168.0.0/16 ,2001:db8::/32');
    assert.ok(allowed);
    assert.ok(allowed.check('10.20.30.40', 'ipv4'));
    assert.ok(allowed.check('192.168.7.9', 'ipv4'));
    assert.ok(allowed.check('2001:db8::1', 'ipv6'));
    assert.ok(!allowed.check('127.0.0.1', 'ipv4'));
    assert.equal(readAllowList(' , '), null);
  });
});

describe('the rate limit', () => {
  test('a bucket per client: the burst passes, then calls wait for the refill', () => {
    let clock = 0;
    const limiter = createRateLimiter({ ratePerSecond: 2, burst: 3, now: () => clock });
    assert.deepEqual([limiter.take('a'), limiter.take('a'), limiter.take('a')], [null, null, null]);
    assert.equal(limiter.take('a'), 1);
    assert.equal(limiter.take('b'), null, 'another client has its own bucket');
    clock += 500;
    assert.equal(limiter.take('a'), null);
    assert.equal(limiter.take('a'), 1);
    clock += 60_000;
    assert.deepEqual([limiter.take('a'), limiter.take('a'), limiter.take('a'), limiter.take('a')], [null, null, null, 1]);
  });

  test('Retry-After is the whole seconds until the next call passes', () => {
    let clock = 0;
    const limiter = createRateLimiter({ ratePerSecond: 0.25, burst: 1, now: () => clock });
    assert.equal(limiter.take('a'), null);
    assert.equal(limiter.take('a'), 4);
    clock += 3_000;
    assert.equal(limiter.take('a'), 1);
  });
});
