import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeEachBackend } from '../support/harness.ts';

const TOKEN = 'metrics-token-0123456789abcdefghijklmnop';

describeEachBackend(
  '/metrics is for loopback clients, or the METRICS_TOKEN',
  (h) => {
    const metrics = (remoteAddress: string, authorization?: string) =>
      h.service.app.inject({ method: 'GET', url: '/metrics', remoteAddress, ...(authorization === undefined ? {} : { headers: { authorization } }) });

    test('loopback reads it; any other client gets 404 without the token, and the metrics with it', async () => {
      assert.equal((await metrics('127.0.0.1')).statusCode, 200);
      assert.equal((await metrics('::1')).statusCode, 200);
      const outsider = await metrics('203.0.113.5');
      assert.equal(outsider.statusCode, 404);
      assert.doesNotMatch(outsider.body, /http_requests_total/);
      assert.equal((await metrics('203.0.113.5', 'Bearer wrong-token-wrong-token-wrong-token')).statusCode, 404);
      const scraper = await metrics('203.0.113.5', `Bearer ${TOKEN}`);
      assert.equal(scraper.statusCode, 200);
      assert.match(scraper.body, /http_requests_total/);
    });
  },
  { env: { METRICS_TOKEN: TOKEN } },
);
