/**
 * The GenEBRC request lifecycle (src/services/genebrc/lifecycle.ts), the one writer of a request's status, driven for
 * real against the database: requests opened as a push opens them (amounts reserved, then stored SUBMITTING in the
 * same transaction), moved by the lifecycle directly and through the service's RequestProgress. Every move is compared
 * with a snapshot of the customer's requests, lines, IRMs and of every event before it: an allowed move writes its
 * status, its line outcomes and releases, and its events, and nothing else; a refused one changes nothing at all.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { test } from 'node:test';
import type { LineResult } from '../../src/authority/authority.ts';
import { formatCents, parseMoney, sumCents, type Cents } from '../../src/domain/money.ts';
import { lineToWire, normaliseLines } from '../../src/domain/push-line.ts';
import type { ErrorDetail } from '../../src/domain/push-rules.ts';
import { RequestLifecycle, type RequestToStore } from '../../src/services/genebrc/lifecycle.ts';
import type { VerifiedCustomer } from '../../src/services/context.ts';
import { EventOutbox } from '../../src/services/outbox.ts';
import { findLocalEbrc } from '../../src/store/ebrcs.ts';
import * as requestStore from '../../src/store/requests.ts';
import { describeEachBackend, type Harness } from '../support/harness.ts';
import { assertEventsMatchChanges } from '../support/invariants.ts';
import { cents, firstRefresh, lineFor, pushBody, usableIrms, verifiedCustomer } from '../support/workflow.ts';

const DEMO_IEC = '0599001001';

type Row = Record<string, any>;

type Snapshot = {
  requests: Map<string, Row>;
  lines: Map<string, Row>;
  irms: Map<string, Row>;
  events: Row[];
};

type Opened = { id: string; requestId: string; lines: { serialNo: number; irm: any; amount: Cents }[] };

/** A line result as the authority reports it. */
function generated(serialNo: number, ebrcNumber: string, ebrcDate = '2025-06-30'): LineResult {
  return { serialNo, status: 'GENERATED', ebrcNumber, ebrcDate, errorDetails: [] };
}

function failed(serialNo: number, code = 'ERR40'): LineResult {
  return { serialNo, status: 'FAILED', ebrcNumber: null, ebrcDate: null, errorDetails: [{ serialNo, field: 'billNo', code, message: `line ${serialNo} failed at processing` }] };
}

let ebrcSequence = 0;
/** A fresh eBRC number, in the authority's shape (EBRC and 18 digits), never drawn by the sandbox (it starts at 1). */
function ebrcNumber(): string {
  ebrcSequence += 1;
  return `EBRC${String(990_000_000_000_000_000n + BigInt(process.pid) * 1_000_000n + BigInt(ebrcSequence)).padStart(18, '0')}`;
}

const NO_SCHEDULER = { scheduleAdvance: async () => undefined };

describeEachBackend('the GenEBRC request lifecycle', (h: Harness) => {
  let setup: Promise<{ customerId: string; irms: any[]; lifecycle: RequestLifecycle }> | undefined;
  let nextIrm = 0;

  const ready = () =>
    (setup ??= (async () => {
      const customerId = await verifiedCustomer(h, 'lifecycle@example.com');
      await firstRefresh(h, customerId);
      const irms = (await usableIrms(h, customerId, 60)).filter((irm) => irm.irmAvailableAmt >= 100);
      assert.ok(irms.length >= 40, `only ${irms.length} IRMs with 100 available`);
      return { customerId, irms, lifecycle: new RequestLifecycle(h.database.db, new EventOutbox(), NO_SCHEDULER) };
    })());

  /** IRMs no other test has touched. */
  async function freshIrms(count: number): Promise<any[]> {
    const { irms } = await ready();
    const taken = irms.slice(nextIrm, nextIrm + count);
    nextIrm += count;
    assert.equal(taken.length, count, 'enough fresh IRMs');
    return taken;
  }

  /**
   * Opens a request as a push does: reserves each IRM's total in the transaction that stores the request SUBMITTING
   * (RequestLifecycle.open). `spec` is one line per entry: the IRM and the amount it maps.
   */
  async function openRequest(spec: { irm: any; amount: string; extra?: Record<string, unknown> }[]): Promise<Opened> {
    const { customerId, lifecycle } = await ready();
    const raw = spec.map(({ irm, amount, extra }, index) => lineFor(irm, index + 1, Number(amount), extra));
    const { lines, problems } = normaliseLines(raw, '101');
    assert.deepEqual(problems, []);
    const request: RequestToStore = {
      id: randomUUID(),
      requestId: `EBRCGWLC${randomBytes(9).toString('hex').toUpperCase()}`,
      platformId: h.platformA.id,
      customerId,
      iecNumber: DEMO_IEC,
      recordResCount: lines.length,
      uploadType: '101',
      declarationFlag: 'Y',
    };
    const perIrm = new Map<string, { irmId: string; amounts: Cents[] }>();
    for (const [index, line] of lines.entries()) {
      const irmId = spec[index]!.irm.id as string;
      const entry = perIrm.get(irmId) ?? { irmId, amounts: [] };
      entry.amounts.push(line.mappedIRMAmountFCC);
      perIrm.set(irmId, entry);
    }
    await h.database.db.transaction().execute(async (tx) => {
      const current = await tx.selectFrom('irms').select(['id', 'irm_available_amt']).where('id', 'in', [...perIrm.keys()]).execute();
      const available = new Map(current.map((row) => [row.id, row.irm_available_amt]));
      const reservations = [...perIrm.values()].map(({ irmId, amounts }) => ({ irmId, expectedAvailable: available.get(irmId)!, amount: formatCents(sumCents(amounts)) }));
      const reserved = await requestStore.reserveIrmAmounts(tx, reservations);
      assert.equal(reserved.size, reservations.length, 'every IRM reserved');
      await lifecycle.open(
        tx,
        request,
        lines.map((line, index) => ({
          lineIndex: index,
          serialNo: line.serialNo,
          irmId: spec[index]!.irm.id,
          irmNumber: line.irmNumber,
          sbCumInvoiceNumber: line.sbCumInvoiceNumber,
          mappedAmount: formatCents(line.mappedIRMAmountFCC),
          reserved: true,
          payload: lineToWire(line),
          status: 'PENDING',
          errorDetails: [],
        })),
      );
    });
    return { id: request.id, requestId: request.requestId, lines: lines.map((line, index) => ({ serialNo: line.serialNo, irm: spec[index]!.irm, amount: line.mappedIRMAmountFCC })) };
  }

  async function snapshot(): Promise<Snapshot> {
    const { customerId } = await ready();
    const db = h.database.db;
    const requests = await db.selectFrom('genebrc_requests').selectAll().where('platform_customer_id', '=', customerId).execute();
    const lines = await db
      .selectFrom('genebrc_request_lines')
      .innerJoin('genebrc_requests', 'genebrc_requests.id', 'genebrc_request_lines.request_id')
      .selectAll('genebrc_request_lines')
      .where('genebrc_requests.platform_customer_id', '=', customerId)
      .execute();
    const irms = await db.selectFrom('irms').selectAll().where('platform_customer_id', '=', customerId).execute();
    // Every event of the database: the relay, which runs beside the test, leaves their rows as written.
    const events = await db.selectFrom('events').selectAll().orderBy('seq').execute();
    return {
      requests: new Map(requests.map((row) => [row.id, row])),
      lines: new Map(lines.map((row) => [`${row.request_id}/${row.serial_no}`, row])),
      irms: new Map(irms.map((row) => [row.id, row])),
      events,
    };
  }

  /** What changed between two snapshots: the rows whose values differ (by key), and the events added or gone. */
  function changes(before: Snapshot, after: Snapshot) {
    const differing = (a: Map<string, Row>, b: Map<string, Row>) =>
      [...new Set([...a.keys(), ...b.keys()])].filter((k) => {
        try {
          assert.deepEqual(a.get(k), b.get(k));
          return false;
        } catch {
          return true;
        }
      }).sort();
    const beforeIds = new Set(before.events.map((event) => event.id));
    const afterIds = new Set(after.events.map((event) => event.id));
    return {
      requests: differing(before.requests, after.requests),
      lines: differing(before.lines, after.lines),
      irms: differing(before.irms, after.irms),
      newEvents: after.events.filter((event) => !beforeIds.has(event.id)),
      goneEvents: before.events.filter((event) => !afterIds.has(event.id)).map((event) => event.id),
      changedEvents: before.events.filter((event) => {
        const later = after.events.find((candidate) => candidate.id === event.id);
        if (!later) return false;
        try {
          assert.deepEqual(later, event);
          return false;
        } catch {
          return true;
        }
      }).map((event) => event.id),
    };
  }

  /** Asserts that nothing at all changed between the snapshots. */
  function assertUnchanged(before: Snapshot, after: Snapshot, what: string): void {
    const changed = changes(before, after);
    assert.deepEqual(
      { ...changed, newEvents: changed.newEvents.map((event) => event.type) },
      { requests: [], lines: [], irms: [], newEvents: [], goneEvents: [], changedEvents: [] },
      `${what} changes nothing`,
    );
  }

  /** Asserts that only the request, exactly these of its lines and exactly these IRMs changed, and returns the new events. */
  function assertOnly(before: Snapshot, after: Snapshot, expected: { request: string; lines: number[]; irms: string[] }): Row[] {
    const changed = changes(before, after);
    assert.deepEqual(changed.requests, [expected.request], 'only the request moved');
    assert.deepEqual(changed.lines, expected.lines.map((serialNo) => `${expected.request}/${serialNo}`).sort(), 'only these lines changed');
    assert.deepEqual(changed.irms, [...expected.irms].sort(), 'only these IRMs changed');
    assert.deepEqual(changed.goneEvents, [], 'no event is removed');
    assert.deepEqual(changed.changedEvents, [], 'no event is rewritten');
    return changed.newEvents;
  }

  /** The status operation's answer for the request now (POST /api/v1/genebrc/status). */
  async function statusAnswer(requestId: string): Promise<any> {
    const { customerId } = await ready();
    const answer = await h.request('POST', '/api/v1/genebrc/status', { body: { platformCustomerId: customerId, requestId } });
    assert.equal(answer.status, 200, answer.text);
    return answer.body;
  }

  /** The request's event: its type, its owner, its data the status answer now (and the view the lifecycle returned). */
  async function assertRequestEvent(event: Row, type: string, opened: Opened, view: unknown): Promise<void> {
    const { customerId } = await ready();
    assert.equal(event.type, type);
    assert.match(event.id, /^evt_[A-Za-z0-9_-]{32}$/);
    assert.equal(event.platform_id, h.platformA.id);
    assert.equal(event.platform_customer_id, customerId, 'platformCustomerId is set');
    assert.equal(event.endpoint_id, null);
    assert.ok(event.created_at instanceof Date && Math.abs(Date.now() - event.created_at.getTime()) < 60_000);
    assert.equal(event.data.requestId, opened.requestId);
    assert.deepEqual(event.data, view, 'the data is the view the move returned');
    assert.deepEqual(event.data, await statusAnswer(opened.requestId), 'the data is what the status operation answers');
  }

  /** The request's status counts (kept by triggers) agree with its requests. */
  async function assertStatusCounts(): Promise<void> {
    const { customerId } = await ready();
    const kept = await h.database.db.selectFrom('genebrc_request_status_counts').select(['status', 'requests']).where('platform_customer_id', '=', customerId).execute();
    const actual = await h.database.db
      .selectFrom('genebrc_requests')
      .select((eb) => ['status', eb.fn.countAll<number>().as('requests')])
      .where('platform_customer_id', '=', customerId)
      .groupBy('status')
      .execute();
    const asObject = (rows: { status: string; requests: number | string }[]) =>
      Object.fromEntries(rows.filter((row) => Number(row.requests) !== 0).map((row) => [row.status, Number(row.requests)]));
    assert.deepEqual(asObject(kept), asObject(actual), 'the kept status counts');
  }

  const irmOf = (snap: Snapshot, irm: any) => snap.irms.get(irm.id)!;
  const available = (snap: Snapshot, irm: any) => cents(irmOf(snap, irm).irm_available_amt);
  const utilised = (snap: Snapshot, irm: any) => cents(irmOf(snap, irm).irm_utilized_amt);

  test('open: SUBMITTING, its amounts reserved, and no event until the authority has answered', async () => {
    const [a, b] = await freshIrms(2);
    const before = await snapshot();
    const opened = await openRequest([{ irm: a, amount: '10.25' }, { irm: b, amount: '5.50' }, { irm: a, amount: '1.00' }]);
    const after = await snapshot();
    const changed = changes(before, after);
    assert.deepEqual(changed.newEvents, [], 'no event for a request not yet answered');
    assert.deepEqual(changed.requests, [opened.id]);
    assert.deepEqual(changed.irms, [a.id, b.id].sort());
    const row = after.requests.get(opened.id)!;
    assert.equal(row.status, 'SUBMITTING');
    assert.equal(row.authority_ack_id, null);
    assert.equal(row.processed_at, null);
    assert.deepEqual(row.error_details, []);
    for (const line of opened.lines) {
      const stored = after.lines.get(`${opened.id}/${line.serialNo}`)!;
      assert.equal(stored.status, 'PENDING');
      assert.equal(stored.reserved, true);
    }
    assert.equal(available(before, a) - available(after, a), 1125n);
    assert.equal(utilised(after, b) - utilised(before, b), 550n);
    // Shown PENDING, without an ack id: the status call leaves a young SUBMITTING request to its push.
    const shown = await statusAnswer(opened.requestId);
    assert.equal(shown.status, 'PENDING');
    assert.equal(shown.authorityAckId, null);
    assertUnchanged(after, await snapshot(), 'asking the status of a SUBMITTING request');
    await assertStatusCounts();
  });

  test('acknowledge: SUBMITTING → PENDING with the ack id and one genebrc.request.acknowledged, nothing else', async () => {
    const { lifecycle } = await ready();
    const [a, b] = await freshIrms(2);
    const opened = await openRequest([{ irm: a, amount: '20.00' }, { irm: b, amount: '3.33' }]);
    const before = await snapshot();
    const view = await lifecycle.acknowledge(opened.id, 'ACK-LIFECYCLE-1');
    assert.ok(view);
    const after = await snapshot();
    const events = assertOnly(before, after, { request: opened.id, lines: [], irms: [] });
    const row = after.requests.get(opened.id)!;
    const was = before.requests.get(opened.id)!;
    assert.deepEqual({ ...row, updated_at: null }, { ...was, status: 'PENDING', authority_ack_id: 'ACK-LIFECYCLE-1', updated_at: null }, 'status and ack id only');
    assert.equal(row.processed_at, null);
    assert.equal(events.length, 1);
    await assertRequestEvent(events[0]!, 'genebrc.request.acknowledged', opened, view);
    assert.equal(view.status, 'PENDING');
    assert.equal(view.authorityAckId, 'ACK-LIFECYCLE-1');
    assert.deepEqual(view.ebrcBulkGenStatusList.map((line) => line.status), ['PENDING', 'PENDING']);
    // The status call asked the authority, which does not know this request: nothing moved.
    assertUnchanged(after, await snapshot(), 'asking the status of a PENDING request the authority does not know');
    await assertStatusCounts();
  });

  test('fail: SUBMITTING → FAILED, every line FAILED, every reserved amount released, one genebrc.request.failed', async () => {
    const { lifecycle } = await ready();
    const [a, b] = await freshIrms(2);
    const pristine = await snapshot();
    const opened = await openRequest([{ irm: a, amount: '11.11' }, { irm: b, amount: '22.22' }, { irm: a, amount: '0.01' }]);
    const before = await snapshot();
    const errors: ErrorDetail[] = [{ serialNo: null, field: 'requestId', code: 'ERR09', message: 'refused by the authority' }];
    const view = await lifecycle.fail(opened.id, errors);
    assert.ok(view);
    const after = await snapshot();
    const events = assertOnly(before, after, { request: opened.id, lines: [1, 2, 3], irms: [a.id, b.id] });
    const row = after.requests.get(opened.id)!;
    assert.equal(row.status, 'FAILED');
    assert.deepEqual(row.error_details, errors);
    assert.ok(row.processed_at instanceof Date);
    assert.equal(row.authority_ack_id, null);
    for (const serialNo of [1, 2, 3]) {
      const line = after.lines.get(`${opened.id}/${serialNo}`)!;
      assert.deepEqual(
        { ...line, status: null, reserved: null },
        { ...before.lines.get(`${opened.id}/${serialNo}`)!, status: null, reserved: null },
        `line ${serialNo}: only its status and reservation`,
      );
      assert.equal(line.status, 'FAILED');
      assert.equal(line.reserved, false);
    }
    for (const irm of [a, b]) {
      assert.equal(available(after, irm), available(pristine, irm), `IRM ${irm.irmNumber}: every reserved amount is back`);
      assert.equal(utilised(after, irm), utilised(pristine, irm));
    }
    assert.equal(events.length, 1);
    await assertRequestEvent(events[0]!, 'genebrc.request.failed', opened, view);
    assert.equal(view.status, 'FAILED');
    assert.equal(view.recordFailCount, 3);
    assert.deepEqual(view.errorDetails, errors);
    await assertStatusCounts();
  });

  test('refuse: stored FAILED at once, nothing reserved, one genebrc.request.failed', async () => {
    const { lifecycle, customerId } = await ready();
    const [a] = await freshIrms(1);
    const before = await snapshot();
    const request: RequestToStore = {
      id: randomUUID(),
      requestId: `EBRCGWLC${randomBytes(9).toString('hex').toUpperCase()}`,
      platformId: h.platformA.id,
      customerId,
      iecNumber: DEMO_IEC,
      recordResCount: 1,
      uploadType: '101',
      declarationFlag: 'Y',
    };
    const errors: ErrorDetail[] = [{ serialNo: 1, field: 'mappedIRMAmountFCC', code: 'ERR23', message: 'more than available' }];
    const { lines } = normaliseLines([lineFor(a, 1, 5)], '101');
    await lifecycle.refuse(
      request,
      [{ lineIndex: 0, serialNo: 1, irmId: a.id, irmNumber: a.irmNumber, sbCumInvoiceNumber: '1001', mappedAmount: '5.00', reserved: false, payload: lineToWire(lines[0]!), status: 'FAILED', errorDetails: errors }],
      errors,
    );
    const after = await snapshot();
    const changed = changes(before, after);
    assert.deepEqual(changed.requests, [request.id]);
    assert.deepEqual(changed.irms, [], 'nothing reserved');
    assert.equal(after.requests.get(request.id)!.status, 'FAILED');
    assert.ok(after.requests.get(request.id)!.processed_at instanceof Date);
    assert.equal(changed.newEvents.length, 1);
    const event = changed.newEvents[0]!;
    const answer = await statusAnswer(request.requestId);
    await assertRequestEvent(event, 'genebrc.request.failed', { id: request.id, requestId: request.requestId, lines: [] }, answer);
    assert.deepEqual(answer.errorDetails, errors);
    assert.deepEqual(answer.ebrcBulkGenStatusList.map((line: any) => [line.status, line.errorDetails.map((e: any) => e.code)]), [['FAILED', ['ERR23']]]);
  });

  test('finish PENDING → PARTIALLY_PROCESSED: outcomes stored, exactly the FAILED lines released, one event and one ebrc.generated per eBRC', async () => {
    const { lifecycle } = await ready();
    const [a, b, c] = await freshIrms(3);
    const pristine = await snapshot();
    const opened = await openRequest([
      { irm: a, amount: '12.34' },
      { irm: b, amount: '7.00' },
      { irm: a, amount: '1.11' },
      { irm: c, amount: '2.50' },
    ]);
    assert.ok(await lifecycle.acknowledge(opened.id, 'ACK-LIFECYCLE-PARTIAL'));
    const before = await snapshot();
    const numbers = [ebrcNumber(), ebrcNumber()];
    const results = [generated(1, numbers[0]!), failed(2), failed(3, 'ERR41'), generated(4, numbers[1]!, '2025-07-01')];
    const view = await lifecycle.finish(opened.id, results);
    assert.ok(view);
    const after = await snapshot();
    const events = assertOnly(before, after, { request: opened.id, lines: [1, 2, 3, 4], irms: [a.id, b.id] });

    const row = after.requests.get(opened.id)!;
    assert.equal(row.status, 'PARTIALLY_PROCESSED');
    assert.ok(row.processed_at instanceof Date);
    assert.equal(row.authority_ack_id, 'ACK-LIFECYCLE-PARTIAL');
    for (const result of results) {
      const line = after.lines.get(`${opened.id}/${result.serialNo}`)!;
      assert.equal(line.status, result.status);
      assert.equal(line.ebrc_number, result.ebrcNumber);
      assert.equal(line.ebrc_date, result.ebrcDate);
      assert.deepEqual(line.error_details, result.errorDetails);
      assert.equal(line.reserved, false, `line ${result.serialNo} holds no reservation any more`);
    }
    // a: 12.34 generated stays utilised, 1.11 failed comes back; b: all back; c: generated, untouched.
    assert.equal(utilised(after, a) - utilised(pristine, a), 1234n);
    assert.equal(available(after, a) - available(before, a), 111n);
    assert.equal(available(after, b), available(pristine, b));
    assert.equal(utilised(after, b), utilised(pristine, b));
    assert.equal(utilised(after, c) - utilised(pristine, c), 250n);
    assert.deepEqual(irmOf(after, c), irmOf(before, c), 'the IRM of a generated line only is not touched');

    assert.deepEqual(events.map((event) => event.type), ['genebrc.request.partially_processed', 'ebrc.generated', 'ebrc.generated']);
    await assertRequestEvent(events[0]!, 'genebrc.request.partially_processed', opened, view);
    assert.equal(view.recordProCount, 2);
    assert.equal(view.recordFailCount, 2);
    const expectedEbrc = (serialNo: number, ebrc: string, ebrcDate: string, irm: any, amount: number) => ({
      ebrcNumber: ebrc,
      ebrcDate,
      irmNumber: irm.irmNumber,
      sbCumInvoiceNumber: String(1000 + serialNo),
      sbCumInvoiceDate: irm.irmIssueDate,
      realisedValueFCC: amount,
      currency: irm.remittanceFCC,
      iecCode: DEMO_IEC,
      requestId: opened.requestId,
      source: 'this_service',
      status: 'generated',
    });
    assert.deepEqual(events[1]!.data, expectedEbrc(1, numbers[0]!, '2025-06-30', a, 12.34));
    assert.deepEqual(events[2]!.data, expectedEbrc(4, numbers[1]!, '2025-07-01', c, 2.5));
    for (const event of events.slice(1)) {
      assert.equal(event.platform_customer_id, events[0]!.platform_customer_id);
      assert.equal(event.platform_id, h.platformA.id);
    }
    assert.equal(new Set(events.map((event) => event.id)).size, 3);
    await assertStatusCounts();
  });

  test("a finished request's eBRCs join the register in line order as its stored lines read them: the IRM's currency, the mapped amount, the invoice's date", async () => {
    const { customerId, lifecycle } = await ready();
    const [a, b] = await freshIrms(2);
    // An invoice in another currency than its IRM's, on another day, of more than its mapped amount. Amounts whose
    // double times 100 falls just below the cents (0.29, 4.35), and one the register and a certificate show with its
    // trailing zero (12.30).
    const invoice = { sbCumInvoiceFCC: a.remittanceFCC === 'EUR' ? 'GBP' : 'EUR', sbCumInvoiceDate: '03012025', sbCumInvoiceValueinFCC: 99.99 };
    const opened = await openRequest([
      { irm: a, amount: '0.29', extra: invoice },
      { irm: a, amount: '4.35' },
      { irm: b, amount: '12.30', extra: invoice },
    ]);
    assert.ok(await lifecycle.acknowledge(opened.id, 'ACK-LIFECYCLE-REGISTER'));
    // Numbered against line order, so that the events' order shows the lines' and not the numbers'.
    const [earlier, later] = [ebrcNumber(), ebrcNumber()];
    const before = await snapshot();
    assert.ok(await lifecycle.finish(opened.id, [generated(1, later), failed(2), generated(3, earlier, '2025-07-02')]));
    const events = assertOnly(before, await snapshot(), { request: opened.id, lines: [1, 2, 3], irms: [a.id] });
    assert.deepEqual(events.map((event) => [event.type, event.data.ebrcNumber ?? null]), [
      ['genebrc.request.partially_processed', null],
      ['ebrc.generated', later],
      ['ebrc.generated', earlier],
    ]);

    const registered = await h.database.db.selectFrom('ebrcs').selectAll().where('platform_customer_id', '=', customerId).where('request_id', '=', opened.requestId).orderBy('ebrc_number', 'desc').execute();
    assert.deepEqual(
      registered.map((row) => [row.ebrc_number, row.ebrc_date, row.irm_number, row.sb_cum_invoice_number, row.sb_cum_invoice_date, row.realised_value_fcc, row.currency, row.iec_code, row.source]),
      [
        [later, '2025-06-30', a.irmNumber, '1001', '2025-01-03', '0.29', a.remittanceFCC, DEMO_IEC, 'this_service'],
        [earlier, '2025-07-02', b.irmNumber, '1003', '2025-01-03', '12.30', b.remittanceFCC, DEMO_IEC, 'this_service'],
      ],
      'the failed line registers nothing',
    );
    assert.deepEqual(events.slice(1).map((event) => event.data.realisedValueFCC), [0.29, 12.3]);
    // An eBRC's certificate reads the same line by its number: its amount as text, with its cents.
    for (const [number, amount] of [[later, '0.29'], [earlier, '12.30']] as const) {
      const local = await findLocalEbrc(h.database.db, customerId, number);
      assert.ok(local);
      assert.deepEqual([local.mapped_amount, local.currency, local.sb_cum_invoice_date], [amount, registered.find((row) => row.ebrc_number === number)!.currency, '03012025']);
    }
  });

  test('finish → PROCESSED keeps every amount utilised; finish → ERRORED releases every one and writes no ebrc.generated', async () => {
    const { lifecycle } = await ready();
    const [a, b, c] = await freshIrms(3);
    const pristine = await snapshot();
    const processed = await openRequest([{ irm: a, amount: '4.00' }, { irm: a, amount: '6.00' }]);
    const errored = await openRequest([{ irm: b, amount: '8.88' }, { irm: c, amount: '9.99' }]);
    assert.ok(await lifecycle.acknowledge(processed.id, 'ACK-LIFECYCLE-P'));
    assert.ok(await lifecycle.acknowledge(errored.id, 'ACK-LIFECYCLE-E'));

    let before = await snapshot();
    const processedView = await lifecycle.finish(processed.id, [generated(1, ebrcNumber()), generated(2, ebrcNumber())]);
    assert.ok(processedView);
    let after = await snapshot();
    let events = assertOnly(before, after, { request: processed.id, lines: [1, 2], irms: [] });
    assert.deepEqual(events.map((event) => event.type), ['genebrc.request.processed', 'ebrc.generated', 'ebrc.generated']);
    await assertRequestEvent(events[0]!, 'genebrc.request.processed', processed, processedView);
    assert.equal(utilised(after, a) - utilised(pristine, a), 1000n, 'both amounts stay utilised');
    assert.deepEqual(events.slice(1).map((event) => event.data.requestId), [processed.requestId, processed.requestId]);

    before = after;
    const erroredView = await lifecycle.finish(errored.id, [failed(1), failed(2)]);
    assert.ok(erroredView);
    after = await snapshot();
    events = assertOnly(before, after, { request: errored.id, lines: [1, 2], irms: [b.id, c.id] });
    assert.deepEqual(events.map((event) => event.type), ['genebrc.request.errored'], 'no eBRC, no ebrc.generated');
    await assertRequestEvent(events[0]!, 'genebrc.request.errored', errored, erroredView);
    for (const irm of [b, c]) {
      assert.equal(available(after, irm), available(pristine, irm), `IRM ${irm.irmNumber} is whole again`);
      assert.equal(utilised(after, irm), utilised(pristine, irm));
    }
    assert.equal(erroredView.recordProCount, 0);
    assert.equal(erroredView.recordFailCount, 2);
    await assertStatusCounts();
  });

  test('refused moves return null and change nothing: no status, no line, no amount, no event', async () => {
    const { lifecycle } = await ready();
    const [a, b, c] = await freshIrms(3);
    const submitting = await openRequest([{ irm: a, amount: '1.50' }]);
    const pending = await openRequest([{ irm: b, amount: '2.50' }]);
    assert.ok(await lifecycle.acknowledge(pending.id, 'ACK-LIFECYCLE-REFUSALS'));
    const failedRequest = await openRequest([{ irm: c, amount: '3.50' }]);
    assert.ok(await lifecycle.fail(failedRequest.id, [{ serialNo: null, field: null, code: 'ERR09', message: 'refused' }]));
    const finished = await openRequest([{ irm: c, amount: '4.50' }]);
    assert.ok(await lifecycle.acknowledge(finished.id, 'ACK-LIFECYCLE-FINAL'));
    assert.ok(await lifecycle.finish(finished.id, [generated(1, ebrcNumber())]));

    const someErrors: ErrorDetail[] = [{ serialNo: null, field: null, code: 'authority_not_received', message: 'never received' }];
    const refusals: [string, () => Promise<unknown>][] = [
      ['finish a SUBMITTING request', () => lifecycle.finish(submitting.id, [generated(1, ebrcNumber())])],
      ['finish a SUBMITTING request as ERRORED', () => lifecycle.finish(submitting.id, [failed(1)])],
      ['acknowledge a PENDING request again', () => lifecycle.acknowledge(pending.id, 'ACK-OTHER')],
      ['fail a PENDING request', () => lifecycle.fail(pending.id, someErrors)],
      ['acknowledge a FAILED request', () => lifecycle.acknowledge(failedRequest.id, 'ACK-LATE')],
      ['fail a FAILED request again', () => lifecycle.fail(failedRequest.id, someErrors)],
      ['finish a FAILED request', () => lifecycle.finish(failedRequest.id, [generated(1, ebrcNumber())])],
      ['finish a PROCESSED request again', () => lifecycle.finish(finished.id, [generated(1, ebrcNumber())])],
      ['finish a PROCESSED request as ERRORED', () => lifecycle.finish(finished.id, [failed(1)])],
      ['acknowledge a PROCESSED request', () => lifecycle.acknowledge(finished.id, 'ACK-LATE')],
      ['fail a PROCESSED request', () => lifecycle.fail(finished.id, someErrors)],
      ['acknowledge an unknown request', () => lifecycle.acknowledge(randomUUID(), 'ACK-NOBODY')],
      ['fail an unknown request', () => lifecycle.fail(randomUUID(), someErrors)],
      ['finish an unknown request', () => lifecycle.finish(randomUUID(), [failed(1)])],
    ];
    for (const [what, move] of refusals) {
      const before = await snapshot();
      assert.equal(await move(), null, `${what}: the compare-and-set returns null`);
      assertUnchanged(before, await snapshot(), what);
    }

    // Results with a line still PENDING have no final status: finish throws before anything is written.
    const before = await snapshot();
    await assert.rejects(lifecycle.finish(pending.id, [generated(1, ebrcNumber()), { ...failed(2), status: 'PENDING' }]), /PENDING/);
    await assert.rejects(lifecycle.finish(pending.id, []), /without lines/);
    assertUnchanged(before, await snapshot(), 'a finish with PENDING lines');
    assert.equal((await statusAnswer(pending.requestId)).status, 'PENDING');
    await assertStatusCounts();
  });

  test('concurrent finishes of one request: one moves it, with one set of events and one release', async () => {
    const { lifecycle } = await ready();
    const [a, b] = await freshIrms(2);
    const pristine = await snapshot();
    const opened = await openRequest([{ irm: a, amount: '30.00' }, { irm: b, amount: '40.00' }]);
    assert.ok(await lifecycle.acknowledge(opened.id, 'ACK-LIFECYCLE-RACE'));
    const before = await snapshot();
    const numbers = [ebrcNumber(), ebrcNumber(), ebrcNumber(), ebrcNumber(), ebrcNumber()];
    // Five processes finish it at once, with answers that even disagree: one wins, whole.
    const outcomes = await Promise.all([
      lifecycle.finish(opened.id, [generated(1, numbers[0]!), failed(2)]),
      lifecycle.finish(opened.id, [generated(1, numbers[1]!), failed(2)]),
      lifecycle.finish(opened.id, [generated(1, numbers[2]!), generated(2, numbers[3]!)]),
      lifecycle.finish(opened.id, [failed(1), failed(2)]),
      lifecycle.finish(opened.id, [generated(1, numbers[4]!), failed(2)]),
    ]);
    const winners = outcomes.filter((outcome) => outcome !== null);
    assert.equal(winners.length, 1, 'exactly one finish moved it');
    const view = winners[0]!;
    const after = await snapshot();
    const events = assertOnly(before, after, { request: opened.id, lines: [1, 2], irms: view.status === 'PROCESSED' ? [] : view.status === 'ERRORED' ? [a.id, b.id] : [b.id] });
    const requestEvents = events.filter((event) => event.type.startsWith('genebrc.request.'));
    assert.equal(requestEvents.length, 1, 'one request event');
    await assertRequestEvent(requestEvents[0]!, `genebrc.request.${view.status.toLowerCase()}`, opened, view);
    const ebrcEvents = events.filter((event) => event.type === 'ebrc.generated');
    assert.equal(ebrcEvents.length, view.recordProCount, 'one ebrc.generated per eBRC of the winner');
    assert.deepEqual(
      ebrcEvents.map((event) => event.data.ebrcNumber).sort(),
      view.ebrcBulkGenStatusList.filter((line) => line.status === 'GENERATED').map((line) => line.ebrcNumber).sort(),
    );
    // The release happened once: the IRMs are as the winner's outcome says, never released twice.
    const generatedSerials = new Set(view.ebrcBulkGenStatusList.filter((line) => line.status === 'GENERATED').map((line) => line.serialNo));
    for (const [serialNo, irm, amount] of [[1, a, 3000n], [2, b, 4000n]] as const) {
      const expectedUtilised = generatedSerials.has(serialNo) ? amount : 0n;
      assert.equal(utilised(after, irm) - utilised(pristine, irm), expectedUtilised, `IRM of line ${serialNo}`);
      assert.equal(available(after, irm) + utilised(after, irm), available(pristine, irm) + utilised(pristine, irm));
    }
    await assertStatusCounts();
  });

  test('concurrent acknowledge and fail of one SUBMITTING request: one of them, with its one event', async () => {
    const { lifecycle } = await ready();
    for (let round = 0; round < 3; round++) {
      const [a] = await freshIrms(1);
      const pristine = await snapshot();
      const opened = await openRequest([{ irm: a, amount: '5.00' }]);
      const before = await snapshot();
      const [acked, failedView, ackedAgain] = await Promise.all([
        lifecycle.acknowledge(opened.id, `ACK-RACE-${round}`),
        lifecycle.fail(opened.id, [{ serialNo: null, field: null, code: 'ERR09', message: 'refused' }]),
        lifecycle.acknowledge(opened.id, `ACK-RACE-${round}-B`),
      ]);
      const winners = [acked, failedView, ackedAgain].filter((view) => view !== null);
      assert.equal(winners.length, 1, 'one move');
      const after = await snapshot();
      const newEvents = changes(before, after).newEvents;
      assert.equal(newEvents.length, 1, 'one event');
      const view = winners[0]!;
      assert.equal(newEvents[0]!.type, view.status === 'PENDING' ? 'genebrc.request.acknowledged' : 'genebrc.request.failed');
      assert.deepEqual(newEvents[0]!.data, view);
      assert.equal(after.requests.get(opened.id)!.status, view.status);
      if (view.status === 'FAILED') assert.equal(available(after, a), available(pristine, a), 'released once');
      else assert.equal(available(pristine, a) - available(after, a), 500n, 'still reserved');
    }
    await assertStatusCounts();
  });

  test('through the service: reconcile fails a request the authority never received, releasing it, with its event', async () => {
    const { customerId } = await ready();
    const [a, b] = await freshIrms(2);
    const pristine = await snapshot();
    const opened = await openRequest([{ irm: a, amount: '13.00' }, { irm: b, amount: '14.00' }]);
    const customer = (await h.database.db.selectFrom('platform_customers').selectAll().where('id', '=', customerId).executeTakeFirstOrThrow()) as VerifiedCustomer;

    // Younger than the grace time, advance leaves a SUBMITTING request to its push.
    let before = await snapshot();
    assert.equal(await h.service.progress.advance(opened.id), 'SUBMITTING');
    assertUnchanged(before, await snapshot(), 'advancing a young SUBMITTING request');

    before = await snapshot();
    const reconciled = await h.service.progress.reconcile(opened.id, customer);
    assert.ok(reconciled);
    assert.equal(reconciled.answered, false);
    assert.equal(reconciled.ack.ackStatus, 'Failed');
    const after = await snapshot();
    const events = assertOnly(before, after, { request: opened.id, lines: [1, 2], irms: [a.id, b.id] });
    assert.equal(events.length, 1);
    const answer = await statusAnswer(opened.requestId);
    await assertRequestEvent(events[0]!, 'genebrc.request.failed', opened, answer);
    assert.deepEqual(answer.errorDetails.map((detail: any) => detail.code), ['authority_not_received']);
    for (const irm of [a, b]) assert.equal(available(after, irm), available(pristine, irm));

    // Once settled, reconcile and advance leave it be.
    before = await snapshot();
    assert.equal(await h.service.progress.reconcile(opened.id, customer), undefined);
    assert.equal(await h.service.progress.advance(opened.id), 'FAILED');
    assertUnchanged(before, await snapshot(), 'reconciling a FAILED request');
  });

  test('through the service: a real push, then concurrent advances move it once, with one set of events', async () => {
    const { customerId } = await ready();
    const [a, b, c] = await freshIrms(3);
    const before = await snapshot();
    const ack = await h.request('POST', '/api/v1/genebrc/push-irm', {
      body: pushBody(customerId, [lineFor(a, 1, 21.5), lineFor(b, 2, 3.75, { billNo: 'SANDBOX-FAIL' }), lineFor(c, 3, 8)]),
    });
    assert.equal(ack.status, 200, ack.text);
    assert.equal(ack.body.ackStatus, 'Validated', ack.text);
    const middle = await snapshot();
    const pushed = changes(before, middle);
    assert.equal(pushed.requests.length, 1);
    const id = pushed.requests[0]!;
    assert.equal(middle.requests.get(id)!.status, 'PENDING');
    assert.deepEqual(pushed.newEvents.map((event) => event.type), ['genebrc.request.acknowledged']);
    const acknowledged = pushed.newEvents[0]!;
    assert.equal(acknowledged.platform_customer_id, customerId);
    assert.equal(acknowledged.data.status, 'PENDING');
    assert.equal(acknowledged.data.authorityAckId, ack.body.authorityAckId);
    assert.equal(acknowledged.data.processedAt, null);
    assert.deepEqual(acknowledged.data.ebrcBulkGenStatusList.map((line: any) => line.status), ['PENDING', 'PENDING', 'PENDING']);

    const statuses = await Promise.all(Array.from({ length: 4 }, () => h.service.progress.advance(id)));
    assert.deepEqual(statuses, Array(4).fill('PARTIALLY_PROCESSED'), 'every caller sees where it ended');
    const after = await snapshot();
    const events = assertOnly(middle, after, { request: id, lines: [1, 2, 3], irms: [b.id] });
    assert.deepEqual(events.map((event) => event.type), ['genebrc.request.partially_processed', 'ebrc.generated', 'ebrc.generated']);
    const answer = await statusAnswer(ack.body.requestId);
    assert.deepEqual(events[0]!.data, answer, 'the event data is the status answer');
    assert.equal(events[0]!.platform_customer_id, customerId);
    assert.deepEqual(
      events.slice(1).map((event) => event.data.ebrcNumber),
      answer.ebrcBulkGenStatusList.filter((line: any) => line.status === 'GENERATED').map((line: any) => line.ebrcNumber),
    );
    assert.equal(cents(irmOf(after, b).irm_available_amt), cents(irmOf(before, b).irm_available_amt), 'the failed line released');
    assert.equal(utilised(after, a) - utilised(before, a), parseMoney(21.5));

    // Asked again, a final request does not move.
    const settled = await snapshot();
    assert.equal(await h.service.progress.advance(id), 'PARTIALLY_PROCESSED');
    assert.deepEqual(await statusAnswer(ack.body.requestId), answer);
    assertUnchanged(settled, await snapshot(), 'advancing a final request');
    await assertStatusCounts();
  });

  test(
    'a finish whose results leave a line out never makes it final with that line PENDING and its amount reserved',
    async () => {
      const { lifecycle } = await ready();
      const [a, b] = await freshIrms(2);
      const opened = await openRequest([{ irm: a, amount: '5.00' }, { irm: b, amount: '6.00' }]);
      assert.ok(await lifecycle.acknowledge(opened.id, 'ACK-LIFECYCLE-SHORT'));
      const before = await snapshot();
      const outcome = await lifecycle.finish(opened.id, [generated(1, ebrcNumber())]).then(
        (view) => ({ view }),
        (error: unknown) => ({ error }),
      );
      const after = await snapshot();
      if ('error' in outcome) {
        assertUnchanged(before, after, 'a refused finish');
        return;
      }
      const lines = [1, 2].map((serialNo) => after.lines.get(`${opened.id}/${serialNo}`)!);
      assert.deepEqual(lines.map((line) => [line.status, line.reserved]).filter(([status]) => status === 'PENDING'), [], 'no PENDING line in a final request');
      assert.deepEqual(lines.filter((line) => line.reserved).map((line) => line.serial_no), [], 'no reservation left in a final request');
    },
  );

  test('no change without its event: every request of the run has exactly the events of its moves', async () => {
    await ready();
    const figures = await assertEventsMatchChanges(h.database);
    assert.ok(figures.requests >= 15, JSON.stringify(figures));
    // Seven eBRCs whatever the race of concurrent finishes, whose winner adds none, one or two.
    assert.ok(figures.ebrcEvents >= 7, JSON.stringify(figures));
  });
});
