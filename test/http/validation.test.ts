import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import type { AppError, FieldError } from '../../src/errors.ts';
import { EbrcListQuery } from '../../src/schemas/ebrcs.ts';
import { EventListQuery } from '../../src/schemas/events.ts';
import { PushBodySchema, RequestListQuery } from '../../src/schemas/genebrc-requests.ts';
import { IrmRefreshQuery } from '../../src/schemas/irms.ts';
import { CustomerListQuery } from '../../src/schemas/platform-customers.ts';
import { hasUnstorableText, jsonTextMayHoldUnstorableText, unstorableText } from '../../src/services/unstorable-text.ts';
import { compileRequestValidator } from '../../src/services/validation.ts';
import { OFF_THREAD_JSON_BYTES } from '../../src/http/json-off-thread.ts';
import { backends, expectProblem, injectRaw, startHarness } from '../support/harness.ts';

/** Text PostgreSQL cannot keep as sent: NUL, or a surrogate without its pair. */
const unstorable = fc.constantFrom('\u0000', 'a\u0000b', '\uD800', 'x\uDC00', '\uDFFF\uD800');
const text = fc.oneof(fc.string({ unit: 'binary' }), unstorable);
const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, text, fc.integer(), fc.boolean(), fc.constant(null), tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 5 }),
  object: fc.dictionary(fc.string(), tie('value'), { maxKeys: 5 }),
})).value;

describe('text the database cannot keep', () => {
  test('the quick check every request runs agrees with the full report, for any JSON value', () => {
    fc.assert(
      fc.property(json, (value) => {
        assert.equal(hasUnstorableText(value), unstorableText(value, '', Number.POSITIVE_INFINITY).length > 0);
      }),
      { numRuns: 2_000 },
    );
  });

  test('JSON text that the check of its text passes holds no unstorable text once parsed, for any JSON value', () => {
    let passed = 0;
    fc.assert(
      fc.property(json, (value) => {
        const text = JSON.stringify(value);
        if (jsonTextMayHoldUnstorableText(text)) return;
        passed++;
        assert.equal(hasUnstorableText(JSON.parse(text)), false, text);
      }),
      { numRuns: 2_000 },
    );
    assert.ok(passed > 100, `the text check passed ${passed} values: most JSON has no \\u escape`);
    // Any escape may be one, and text that is not well formed (never decoded from UTF-8) is walked.
    assert.equal(jsonTextMayHoldUnstorableText('{"a":"\\u0041"}'), true);
    assert.equal(jsonTextMayHoldUnstorableText('{"a":"\uD800"}'), true);
    assert.equal(jsonTextMayHoldUnstorableText('{"a":"Zürich ₹ 中文 😀"}'), false);
  });

  test('a body nested 100,000 levels deep is checked without overflowing the stack', () => {
    let clean: unknown = 'text';
    let dirty: unknown = 'te\u0000xt';
    for (let depth = 0; depth < 100_000; depth++) {
      clean = [clean];
      dirty = { inner: dirty };
    }
    assert.equal(hasUnstorableText(clean), false);
    assert.equal(hasUnstorableText(dirty), true);
  });

  test('the report names each bad field by its JSON pointer', () => {
    const found = unstorableText({ lines: [{ billNo: 'B\u0000' }, { 'a/b': '\uD800' }] }, '/body');
    assert.deepEqual(found.map((problem) => [problem.path, problem.code]), [
      ['/body/lines/0/billNo', 'invalid_character'],
      ['/body/lines/1/a~1b', 'invalid_character'],
    ]);
  });
});

describe('messages that name the expected form', () => {
  const fieldErrors = (schema: object, part: string, data: unknown) => {
    const verdict = compileRequestValidator(schema, part)(data);
    assert.notEqual(verdict, true, 'the data is refused');
    return (verdict as { error: AppError }).error.errors ?? [];
  };
  const line = {
    serialNo: 1,
    uploadType: 101,
    branchSlNo: 0,
    irmIfscCode: 'HDFC0000240',
    irmAdCode: '0510002',
    irmNumber: 'HDFCIR0599001001001807',
    irmDt: '2026-11-24',
    irmFCC: 'EUR',
    irmPurposeCode: 'P0102',
    irmRemitAmtFCC: 42575.67,
    sbCumInvoiceNumber: '1001',
    sbCumInvoiceDate: '2026-11-24',
    portCode: 'INDEL4',
    billNo: 'B1',
    sbCumInvoiceFCC: 'EUR',
    sbCumInvoiceValueinFCC: 1,
    mappedIRMAmountFCC: 1,
    isVostro: 'N',
  };
  const push = (changes: Record<string, unknown>) => ({
    platformCustomerId: '9abc98c4-0391-4bdb-8c21-7fe9cd15d4fe',
    recordResCount: 1,
    uploadType: '101',
    decalarationFlag: 'Y',
    ebrcBulkGenDtos: [{ ...line, ...changes }],
  });

  test('the push example line itself passes (so the cases below fail for their one field)', () => {
    assert.equal(compileRequestValidator(PushBodySchema, 'body')(push({})), true);
  });

  for (const field of ['mappedIRMAmountFCC', 'irmRemitAmtFCC', 'freightValDeduct']) {
    for (const value of [Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      test(`${field} of ${value > 0 ? '' : '-'}1e999 (JSON.parse reads it as ${value}): out of range, and what an amount is`, () => {
        const errors = fieldErrors(PushBodySchema, 'body', push({ [field]: value }));
        assert.deepEqual(errors, [
          {
            path: `/ebrcBulkGenDtos/0/${field}`,
            code: 'out_of_range',
            message:
              `${field} is out of range: the number sent is too large to read (it reads as ${value > 0 ? 'infinity' : '-infinity'}); ` +
              'an amount is a JSON number, never negative, with at most two decimals, within number(16,2): up to 99999999999999.99.',
          },
        ]);
        assert.doesNotMatch(errors[0]!.message, /must be a number/, 'it was a number as sent');
      });
    }
  }

  test('a count of 1e999 is out of range too, with the range of that field', () => {
    const [error] = fieldErrors(PushBodySchema, 'body', { ...push({}), recordResCount: Number.POSITIVE_INFINITY });
    assert.equal(error!.code, 'out_of_range');
    assert.match(error!.message, /^recordResCount is out of range: the number sent is too large to read \(it reads as infinity\); it must be a whole number /);
  });

  test('a query number of 1e400 (coerced to infinity) is out of range, naming the limits', () => {
    const [error] = fieldErrors(CustomerListQuery, 'querystring', { page: '1e400' });
    assert.equal(error!.path, '/page');
    assert.equal(error!.code, 'out_of_range');
    assert.match(error!.message, /^Query parameter page is out of range: .* it must be a whole number from 1 to \d+\.$/);
  });

  const dateFilters: [string, object, Record<string, string>][] = [
    ['IRMs (POST /irm/refresh)', IrmRefreshQuery, { platformCustomerId: 'c' }],
    ['GenEBRC requests (GET /genebrc)', RequestListQuery, { platformCustomerId: 'c' }],
    ['eBRCs (GET /platform-customers/{id}/ebrcs)', EbrcListQuery, {}],
    ['events (GET /events)', EventListQuery, {}],
  ];
  for (const [name, schema, base] of dateFilters) {
    for (const filter of ['fromDate', 'toDate']) {
      test(`${name}: a ${filter} not as YYYY-MM-DD says the format`, () => {
        // 0000-01-01 is an RFC 3339 date, in no calendar PostgreSQL keeps: it never reaches the database.
        for (const sent of ['15-09-2025', '2025/09/15', '2025-13-01', '2025-02-30', 'yesterday', '0000-01-01']) {
          assert.deepEqual(fieldErrors(schema, 'querystring', { ...base, [filter]: sent }), [
            { path: `/${filter}`, code: 'invalid_format', message: `Query parameter ${filter} must be a date as YYYY-MM-DD (for example 2025-09-15).` },
          ], sent);
        }
        assert.equal(compileRequestValidator(schema, 'querystring')({ ...base, [filter]: '2025-09-15' }), true);
      });
    }
  }

  test('other formats name their form too: uuid, email, date-time', () => {
    const check = compileRequestValidator(
      { type: 'object', properties: { id: { type: 'string', format: 'uuid' }, email: { type: 'string', format: 'email' }, at: { type: 'string', format: 'date-time' } } },
      'body',
    );
    const verdict = check({ id: 'x', email: 'x', at: 'x' }) as { error: AppError };
    const messages = (verdict.error.errors ?? []).map((e) => e.message).sort();
    assert.deepEqual(messages, [
      'at must be a date and time as YYYY-MM-DDTHH:MM:SSZ (RFC 3339, for example 2025-09-15T10:30:00Z).',
      'email must be an email address (name@example.com).',
      'id must be an id (a UUID such as 0f8fad5b-d9cb-469f-a165-70867728950e).',
    ]);
    const yearZero = check({ id: '0f8fad5b-d9cb-469f-a165-70867728950e', email: 'a@example.com', at: '0000-01-01T00:00:00Z' }) as { error: AppError };
    assert.deepEqual(yearZero.error.errors?.map((e) => e.path), ['/at'], 'the year 0000 is no date PostgreSQL keeps');
    assert.equal(check({ id: '0f8fad5b-d9cb-469f-a165-70867728950e', email: 'a@example.com', at: '0001-01-01T00:00:00Z' }), true);
  });
});

describe('the same messages over HTTP', () => {
  let h: Awaited<ReturnType<typeof startHarness>>;
  before(async () => {
    h = await startHarness(backends()[0]!);
  });
  after(async () => {
    await h?.stop();
  });
  const raw = (method: string, url: string, payload?: string) => injectRaw(h.service, method, url, { key: h.platformA.apiKey, ...(payload ? { payload } : {}) });

  test('a push with an amount of 1e999 as sent (JSON text): 400 out_of_range naming what an amount is', async () => {
    const body = JSON.stringify({
      platformCustomerId: '9abc98c4-0391-4bdb-8c21-7fe9cd15d4fe',
      recordResCount: 1,
      uploadType: '101',
      decalarationFlag: 'Y',
      ebrcBulkGenDtos: [{ serialNo: 1, uploadType: 101, branchSlNo: 0, irmIfscCode: 'HDFC0000240', irmAdCode: '0510002', irmNumber: 'HDFCIR0599001001001807', irmDt: '2026-11-24', irmFCC: 'EUR', irmPurposeCode: 'P0102', irmRemitAmtFCC: 42575.67, sbCumInvoiceNumber: '1001', sbCumInvoiceDate: '2026-11-24', portCode: 'INDEL4', billNo: 'B1', sbCumInvoiceFCC: 'EUR', sbCumInvoiceValueinFCC: 1, mappedIRMAmountFCC: 1, isVostro: 'N' }],
    }).replace('"mappedIRMAmountFCC":1', '"mappedIRMAmountFCC":1e999');
    const problem = expectProblem(await raw('POST', '/api/v1/genebrc/push-irm', body), 400, 'validation_failed');
    assert.deepEqual(problem.errors.map((e: FieldError) => [e.path, e.code]), [['/ebrcBulkGenDtos/0/mappedIRMAmountFCC', 'out_of_range']]);
    assert.match(problem.detail, /mappedIRMAmountFCC is out of range: .*at most two decimals/);
  });

  test('a body large enough to be parsed off the event loop is checked for unstorable text too (the worker checks it)', async () => {
    const line = { serialNo: 1, uploadType: 101, branchSlNo: 0, irmIfscCode: 'HDFC0000240', irmAdCode: '0510002', irmNumber: 'HDFCIR0599001001001807', irmDt: '2026-11-24', irmFCC: 'EUR', irmPurposeCode: 'P0102', irmRemitAmtFCC: 42575.67, sbCumInvoiceNumber: '1001', sbCumInvoiceDate: '2026-11-24', portCode: 'INDEL4', billNo: 'B1', sbCumInvoiceFCC: 'EUR', sbCumInvoiceValueinFCC: 1, mappedIRMAmountFCC: 1, isVostro: 'N' };
    const lines = Array.from({ length: 999 }, (_, index) => ({ ...line, serialNo: index + 1 }));
    const body = (bad: string) => {
      const text = JSON.stringify({ platformCustomerId: '9abc98c4-0391-4bdb-8c21-7fe9cd15d4fe', recordResCount: 999, uploadType: '101', decalarationFlag: 'Y', ebrcBulkGenDtos: lines });
      const at = text.lastIndexOf('"billNo":"B1"');
      return `${text.slice(0, at)}"billNo":"B1${bad}"${text.slice(at + '"billNo":"B1"'.length)}`;
    };
    for (const bad of ['\\u0000', '\\udc00']) {
      const sent = body(bad);
      assert.ok(sent.length > OFF_THREAD_JSON_BYTES, 'parsed by the worker');
      const problem = expectProblem(await raw('POST', '/api/v1/genebrc/push-irm', sent), 400, 'validation_failed');
      assert.deepEqual(problem.errors.map((e: FieldError) => [e.path, e.code]), [['/ebrcBulkGenDtos/998/billNo', 'invalid_character']], bad);
    }
  });

  test('every date filter: 400 naming YYYY-MM-DD', async () => {
    const customer = '9abc98c4-0391-4bdb-8c21-7fe9cd15d4fe';
    const urls: [string, string][] = [
      ['POST', `/api/v1/irm/refresh?platformCustomerId=${customer}&fromDate=15-09-2025`],
      ['GET', `/api/v1/genebrc?platformCustomerId=${customer}&toDate=2025-13-01`],
      ['GET', `/api/v1/platform-customers/${customer}/ebrcs?fromDate=2025/09/15`],
      ['GET', '/api/v1/events?toDate=yesterday'],
      ['GET', `/api/v1/genebrc?platformCustomerId=${customer}&fromDate=0000-12-31`],
    ];
    for (const [method, url] of urls) {
      const problem = expectProblem(await raw(method, url, method === 'POST' ? '{}' : undefined), 400, 'validation_failed');
      assert.match(problem.detail, /Query parameter (fromDate|toDate) must be a date as YYYY-MM-DD \(for example 2025-09-15\)\./, `${method} ${url}: ${problem.detail}`);
    }
  });
});
