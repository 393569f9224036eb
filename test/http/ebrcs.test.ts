import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { test } from 'node:test';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import type { Authority, AuthorityEbrc, UnreadableEbrc } from '../../src/authority/authority.ts';
import { describeEachBackend, expectProblem, type Harness } from '../support/harness.ts';
import { firstRefresh, lineFor, pushBody, usableIrms, verifiedCustomer } from '../support/workflow.ts';

const DEMO_IEC = '0599001001';
const NOT_THE_AUTHORITYS_PRINT = "This is not the authority's own print";

/** An eBRC of the demo account that the authority reports but that was never generated through the service. */
const MADE_ELSEWHERE: AuthorityEbrc = {
  ebrcNumber: 'EBRC202501150000900001',
  ebrcDate: '2025-01-15',
  irmNumber: 'IRMNOTSTOREDHERE0001',
  sbCumInvoiceNumber: '7654321',
  sbCumInvoiceDate: '2025-01-10',
  realisedValueFCC: '1234567.89',
  currency: 'EUR',
  iecCode: DEMO_IEC,
  status: 'GENERATED',
};

/** An eBRC of the demo account's answers that the adapter could not read (its date is not a date). */
const UNREADABLE: UnreadableEbrc = { index: 0, ebrcNumber: 'EBRC202501150000900003', reason: 'eBRCRespList[0].ebrcDate is "15/01/2025", not a ddMMyyyy date.' };

/** The service's warnings, to find the unreadable eBRC's. */
const warnings: string[] = [];
const warningLog = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) }) as unknown as FastifyBaseLogger;

/**
 * The adapter to the sandbox, whose fetchEbrcs also reports MADE_ELSEWHERE for the demo IEC, whatever the other
 * filters: an authority that filters less than asked, so the service's own filtering shows too. Its answers for the
 * demo IEC also hold an eBRC that does not read (UNREADABLE): the others are stored all the same.
 */
function sandboxWithAnEbrcMadeElsewhere(adapter: Authority): Authority {
  return {
    ...adapter,
    async fetchEbrcs(credentials, query, options) {
      const reported = await adapter.fetchEbrcs(credentials, query, options);
      return query.iecCode === DEMO_IEC ? { ebrcs: [...reported.ebrcs, MADE_ELSEWHERE], unreadable: [...reported.unreadable, UNREADABLE] } : reported;
    },
  };
}

/**
 * The sandbox's clock: it processes a push a minute after receiving it, and the test moves its clock on past that
 * minute once it has seen that nothing is generated before.
 */
const PROCESSING_DELAY_MS = 60_000;
const sandboxClock = { offsetMs: 0 };

type Pushed = { customerId: string; requestId: string; irms: any[]; ebrcNumbers: string[]; day: string };

const ebrcsUrl = (customerId: string) => `/api/v1/platform-customers/${customerId}/ebrcs`;
const certificateUrl = (customerId: string, ebrcNumber: string) => `${ebrcsUrl(customerId)}/${ebrcNumber}/certificate.pdf`;

/** The PDF as bytes (the harness reads bodies as text). */
async function fetchPdf(h: Harness, url: string, apiKey = h.platformA.apiKey) {
  const response = await h.service.app.inject({ method: 'GET', url, headers: { 'x-api-key': apiKey } });
  return { status: response.statusCode, headers: response.headers, bytes: response.rawPayload };
}

/**
 * The text drawn on the PDF's pages: its content streams inflated, the hex strings of their TJ operators decoded
 * (the built-in fonts encode text as WinAnsi, which is Latin-1 for what is drawn here). The document's metadata is
 * not read, so only what is on the page counts.
 */
function pageText(pdf: Buffer): string {
  const lines: string[] = [];
  for (const [, stream = ''] of pdf.toString('latin1').matchAll(/stream\r?\n([\s\S]*?)\r?\nendstream/g)) {
    const content = zlib.inflateSync(Buffer.from(stream, 'latin1')).toString('latin1');
    for (const [, operands = ''] of content.matchAll(/\[(.*?)\]\s*TJ/g)) {
      lines.push([...operands.matchAll(/<([0-9a-f]*)>/gi)].map(([, hex = '']) => Buffer.from(hex, 'hex').toString('latin1')).join(''));
    }
  }
  return lines.join(' ').replace(/\s+/g, ' ');
}

describeEachBackend(
  'eBRCs',
  (h) => {
    // One push for the demo account, made once per backend and shared by the tests that read its eBRCs.
    let pushed: Promise<Pushed> | undefined;
    const pushedOnce = (): Promise<Pushed> => (pushed ??= pushAndProcess());

    async function pushAndProcess(): Promise<Pushed> {
      const customerId = await verifiedCustomer(h, 'ebrcs@example.com');
      await firstRefresh(h, customerId);
      const irms = await usableIrms(h, customerId, 4);
      const [a, b, c, d] = irms;

      const before = await h.request('GET', ebrcsUrl(customerId));
      assert.equal(before.status, 200, before.text);
      assert.deepEqual(before.body.data.map((ebrc: any) => ebrc.ebrcNumber), [MADE_ELSEWHERE.ebrcNumber], 'only the one made elsewhere yet');

      const ack = await h.request('POST', '/api/v1/genebrc/push-irm', {
        body: pushBody(customerId, [
          lineFor(a, 1, 100.25),
          lineFor(b, 2, 12.5),
          lineFor(c, 3, 7.05),
          lineFor(d, 4, 3, { billNo: 'SANDBOX-FAIL' }),
        ]),
      });
      assert.equal(ack.body?.ackStatus, 'Validated', ack.text);
      const pending = await h.request('GET', ebrcsUrl(customerId));
      assert.equal(pending.body.meta.total, 1, 'nothing generated before processing');
      sandboxClock.offsetMs += PROCESSING_DELAY_MS + 1_000;

      const status = await h.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: customerId, requestId: ack.body.requestId } });
      assert.equal(status.body.status, 'PARTIALLY_PROCESSED', status.text);
      const generated = status.body.ebrcBulkGenStatusList.filter((line: any) => line.status === 'GENERATED');
      assert.equal(generated.length, 3);
      return {
        customerId,
        requestId: ack.body.requestId,
        irms,
        ebrcNumbers: generated.map((line: any) => line.ebrcNumber),
        day: generated[0].ebrcDate,
      };
    }

    test('eBRCs generated by a push appear with their requestId after processing, merged with one made elsewhere', async () => {
      const { customerId, requestId, irms, ebrcNumbers, day } = await pushedOnce();
      const [a, b, c] = irms;
      const listed = await h.request('GET', ebrcsUrl(customerId));
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual(listed.body.meta, { total: 4, page: 1, limit: 10, totalPages: 1 });
      // Newest ebrcDate first, then by number; each eBRC once although the authority reports the local ones too.
      assert.deepEqual(listed.body.data.map((ebrc: any) => ebrc.ebrcNumber), [...[...ebrcNumbers].sort(), MADE_ELSEWHERE.ebrcNumber]);
      // The eBRC the authority sent but that cannot be stored is left out, with a warning that names it and why.
      const warned = warnings.map((line) => JSON.parse(line)).filter((line) => line.ebrcNumber === UNREADABLE.ebrcNumber && line.platformCustomerId === customerId);
      assert.ok(warned.length > 0, warnings.join('\n'));
      assert.equal(warned[0].reason, UNREADABLE.reason);
      assert.match(warned[0].msg, /cannot be stored; kept the others/);

      const byNumber = new Map(listed.body.data.map((ebrc: any) => [ebrc.ebrcNumber, ebrc]));
      assert.deepEqual(byNumber.get(ebrcNumbers[0]), {
        ebrcNumber: ebrcNumbers[0],
        ebrcDate: day,
        irmNumber: a.irmNumber,
        sbCumInvoiceNumber: '1001',
        sbCumInvoiceDate: a.irmIssueDate,
        realisedValueFCC: 100.25,
        currency: a.remittanceFCC,
        iecCode: DEMO_IEC,
        requestId,
        source: 'this_service',
        status: 'generated',
      });
      assert.equal((byNumber.get(ebrcNumbers[1]) as any).realisedValueFCC, 12.5);
      assert.equal((byNumber.get(ebrcNumbers[1]) as any).irmNumber, b.irmNumber);
      assert.equal((byNumber.get(ebrcNumbers[2]) as any).realisedValueFCC, 7.05);
      assert.equal((byNumber.get(ebrcNumbers[2]) as any).irmNumber, c.irmNumber);
      assert.deepEqual(byNumber.get(MADE_ELSEWHERE.ebrcNumber), { ...MADE_ELSEWHERE, realisedValueFCC: 1234567.89, requestId: null, source: 'elsewhere', status: 'generated' });
    });

    test('filters on ebrcDate, IRM and invoice, and pages with the IRMs’ envelope', async () => {
      const { customerId, irms, ebrcNumbers, day } = await pushedOnce();
      const numbers = async (query: Record<string, string | number>) => {
        const answer = await h.request('GET', ebrcsUrl(customerId), { query });
        assert.equal(answer.status, 200, answer.text);
        return answer.body.data.map((ebrc: any) => ebrc.ebrcNumber);
      };
      const local = [...ebrcNumbers].sort();
      assert.deepEqual(await numbers({ fromDate: day }), local);
      assert.deepEqual(await numbers({ fromDate: day, toDate: day }), local);
      assert.deepEqual(await numbers({ toDate: MADE_ELSEWHERE.ebrcDate }), [MADE_ELSEWHERE.ebrcNumber]);
      assert.deepEqual(await numbers({ fromDate: '2025-01-16', toDate: '2025-01-31' }), []);
      assert.deepEqual(await numbers({ irmNumber: irms[1].irmNumber }), [ebrcNumbers[1]]);
      assert.deepEqual(await numbers({ irmNumber: MADE_ELSEWHERE.irmNumber }), [MADE_ELSEWHERE.ebrcNumber]);
      assert.deepEqual(await numbers({ sbCumInvoiceNumber: '1003' }), [ebrcNumbers[2]]);
      assert.deepEqual(await numbers({ sbCumInvoiceNumber: '1004' }), [], 'the failed line made no eBRC');
      assert.deepEqual(await numbers({ irmNumber: irms[0].irmNumber, sbCumInvoiceNumber: '1002' }), []);

      const first = await h.request('GET', ebrcsUrl(customerId), { query: { limit: 3 } });
      assert.deepEqual(first.body.meta, { total: 4, page: 1, limit: 3, totalPages: 2 });
      assert.deepEqual(first.body.data.map((ebrc: any) => ebrc.ebrcNumber), local);
      const second = await h.request('GET', ebrcsUrl(customerId), { query: { limit: 3, page: 2 } });
      assert.deepEqual(second.body.meta, { total: 4, page: 2, limit: 3, totalPages: 2 });
      assert.deepEqual(second.body.data.map((ebrc: any) => ebrc.ebrcNumber), [MADE_ELSEWHERE.ebrcNumber]);
      const past = await h.request('GET', ebrcsUrl(customerId), { query: { limit: 3, page: 3 } });
      assert.deepEqual(past.body, { data: [], meta: { total: 4, page: 3, limit: 3, totalPages: 2 } });
    });

    test('the certificate is a PDF that says it is not the authority’s own print', async () => {
      const { customerId, requestId, irms, ebrcNumbers } = await pushedOnce();
      const local = await fetchPdf(h, certificateUrl(customerId, ebrcNumbers[0]!));
      assert.equal(local.status, 200);
      assert.equal(local.headers['content-type'], 'application/pdf');
      assert.equal(local.headers['content-disposition'], `inline; filename="${ebrcNumbers[0]}.pdf"`);
      assert.equal(local.bytes.subarray(0, 5).toString('latin1'), '%PDF-');
      const text = pageText(local.bytes);
      assert.ok(text.includes(ebrcNumbers[0]!), text);
      assert.ok(text.startsWith(`NOT THE AUTHORITY'S OWN PRINT ${NOT_THE_AUTHORITYS_PRINT}`), text);
      assert.ok(text.lastIndexOf(NOT_THE_AUTHORITYS_PRINT) > text.indexOf('Mapped IRM amount'), 'and again in the footer');
      assert.ok(text.includes(requestId), 'the request that made it');
      assert.ok(text.includes(irms[0].remitterName), "the IRM's remitter");
      assert.ok(text.includes(irms[0].purposeOfRemittance), "the IRM's purpose code");
      assert.ok(text.includes(`${irms[0].remittanceFCC} 100.25`), 'money with its currency');
      assert.ok(text.includes('Demo Exports'), "the exporter's company");
      assert.ok(text.includes(DEMO_IEC));

      const elsewhere = await fetchPdf(h, certificateUrl(customerId, MADE_ELSEWHERE.ebrcNumber));
      assert.equal(elsewhere.status, 200);
      const elsewhereText = pageText(elsewhere.bytes);
      assert.ok(elsewhereText.includes('EUR 1,234,567.89'), elsewhereText);
      assert.ok(elsewhereText.includes('15 Jan 2025 (2025-01-15)'), 'a readable date');
      assert.ok(elsewhereText.includes('it was not generated through ebrc-gateway'), elsewhereText);
      assert.ok(elsewhereText.includes(`IRM ${MADE_ELSEWHERE.irmNumber} is not stored in ebrc-gateway`), elsewhereText);

      expectProblem(await h.request('GET', certificateUrl(customerId, 'EBRC202501150000900002')), 404, 'not_found');
    });

    test('security: another platform’s customer is 404; the same IEC under another platform shows no requestId of ours, but that the eBRC was made here', async () => {
      const { customerId, ebrcNumbers } = await pushedOnce();
      const other = { key: h.platformB.apiKey };
      expectProblem(await h.request('GET', ebrcsUrl(customerId), other), 404, 'not_found');
      expectProblem(await h.request('GET', certificateUrl(customerId, ebrcNumbers[0]!), other), 404, 'not_found');
      expectProblem(await h.request('GET', ebrcsUrl(customerId), { key: null }), 401, 'api_key_missing');

      // Platform B's own customer holds the same exporter's credentials: the authority reports the IEC's eBRCs to it,
      // but which requests of platform A made them stays A's.
      const created = await h.request('POST', '/api/v1/platform-customers/', { ...other, body: { name: 'Same exporter', email: 'same@example.com', companyName: 'Same' } });
      const checked = await h.request('POST', `/api/v1/platform-customers/${created.body.id}/check-authority-credentials`, {
        ...other,
        body: { authorityUsername: 'demo.exporter', authorityPassword: 'Sandbox@123' },
      });
      assert.equal(checked.status, 200, checked.text);
      const seen = await h.request('GET', ebrcsUrl(created.body.id), other);
      assert.equal(seen.body.meta.total, 4);
      assert.ok(seen.body.data.every((ebrc: any) => ebrc.requestId === null), seen.text);
      assert.deepEqual(
        seen.body.data.map((ebrc: any) => ebrc.source),
        ['this_service', 'this_service', 'this_service', 'elsewhere'],
        'made through this service, whichever customer pushed it',
      );
      const pdf = await fetchPdf(h, certificateUrl(created.body.id, ebrcNumbers[0]!), h.platformB.apiKey);
      assert.equal(pdf.status, 200);
      const text = pageText(pdf.bytes);
      assert.ok(text.includes("generated through ebrc-gateway, by another customer's request"), text);
      assert.ok(!text.includes('not generated through ebrc-gateway'), text);
    });

    test('malformed queries are 400; an unverified or unknown customer is 409 or 404', async () => {
      const created = await h.request('POST', '/api/v1/platform-customers/', { body: { name: 'U', email: 'unverified-ebrcs@example.com', companyName: 'U' } });
      expectProblem(await h.request('GET', ebrcsUrl(created.body.id)), 409, 'customer_not_verified');
      expectProblem(await h.request('GET', certificateUrl(created.body.id, MADE_ELSEWHERE.ebrcNumber)), 409, 'customer_not_verified');
      expectProblem(await h.request('GET', ebrcsUrl('00000000-0000-4000-8000-000000000000')), 404, 'not_found');

      const { customerId } = await pushedOnce();
      const bad = async (query: Record<string, string | number>, path: string) => {
        const problem = expectProblem(await h.request('GET', ebrcsUrl(customerId), { query }), 400, 'validation_failed');
        assert.ok(problem.errors.some((error: any) => error.path === path), JSON.stringify(problem));
      };
      await bad({ fromDate: '2025-02-30' }, '/fromDate');
      await bad({ toDate: '15-01-2025' }, '/toDate');
      await bad({ fromDate: '2025-02-02', toDate: '2025-01-01' }, '/fromDate');
      await bad({ limit: 0 }, '/limit');
      await bad({ limit: 101 }, '/limit');
      await bad({ page: 0 }, '/page');
      await bad({ ebrcDate: '2025-01-01' }, '/ebrcDate');
    });

    test('the authority down or slow: 502 or 504, for the list and the certificate', async () => {
      const down = await verifiedCustomer(h, 'ebrcs-down@example.com', 'outage.exporter');
      expectProblem(await h.request('GET', ebrcsUrl(down)), 502, 'authority_unavailable');
      expectProblem(await h.request('GET', certificateUrl(down, MADE_ELSEWHERE.ebrcNumber)), 502, 'authority_unavailable');
      const slow = await verifiedCustomer(h, 'ebrcs-slow@example.com', 'slow.exporter');
      expectProblem(await h.request('GET', ebrcsUrl(slow)), 504, 'authority_timeout');
      expectProblem(await h.request('GET', certificateUrl(slow, MADE_ELSEWHERE.ebrcNumber)), 504, 'authority_timeout');
    });
  },
  // A short deadline for the slow authority; the first IRM pull of the demo account is retried within it (firstRefresh).
  {
    authority: sandboxWithAnEbrcMadeElsewhere,
    logger: warningLog,
    env: { AUTHORITY_TIMEOUT_MS: '2000' },
    sandbox: { processingDelayMs: PROCESSING_DELAY_MS },
    sandboxNow: () => new Date(Date.now() + sandboxClock.offsetMs),
  },
);
