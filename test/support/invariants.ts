import assert from 'node:assert/strict';
import type { Database } from '../../src/store/database.ts';
import { cents } from './workflow.ts';

/**
 * The money invariants of the whole database, checked directly in its tables (ours and the sandbox authority's)
 * once nothing is open any more. The reliability tests run them after crashes, injected faults and races.
 */

/** A push the client saw acknowledged with `Validated`: it must be there, with all its lines, forever. */
export type AcknowledgedPush = {
  requestId: string;
  authorityAckId: string;
  lines: { serialNo: number; irmNumber: string; mappedCents: bigint }[];
};

export type LedgerFigures = {
  requests: number;
  byStatus: Record<string, number>;
  lines: number;
  generatedLines: number;
  irmsChecked: number;
  authorityRequests: number;
};

type Row = Record<string, any>;

async function rows(database: Database, text: string, values: unknown[] = []): Promise<Row[]> {
  const result = await database.executor.executeSql(text, values);
  return (Array.isArray(result) ? result.at(-1)?.rows ?? [] : result.rows) as Row[];
}

/** Requests not final yet (SUBMITTING or PENDING), across the database. */
export async function openRequestCount(database: Database): Promise<number> {
  const [row] = await rows(database, "select count(*)::int as n from genebrc_requests where status in ('SUBMITTING', 'PENDING')");
  return Number(row!.n);
}

/**
 * Asserts, with nothing open:
 * - every request is final and no line holds a reservation any more;
 * - every IRM adds up (available + utilised = amount, neither negative), and for every IRM a line names, its
 *   utilised amount is exactly the sum of its GENERATED lines (the IRMs the tests map are fresh when first used);
 * - eBRC numbers are unique, here and at the authority, and each GENERATED line carries the authority's number;
 * - the authority holds one copy of each request it accepted, each one of ours, with our ack id and outcome; a
 *   request we failed as never received is unknown there; its balances agree with ours;
 * - every acknowledged push is stored under its requestId with all its lines, and ended in a processed state.
 * With `exactEbrcSequence`, the authority drew exactly one eBRC number per generated line (no request processed
 * twice); a crash may leave gaps in the sequence (a rolled-back draw), so the crash test does not ask for it.
 */
export async function assertLedgerConsistent(
  database: Database,
  options: { acknowledged?: readonly AcknowledgedPush[]; exactEbrcSequence?: boolean } = {},
): Promise<LedgerFigures> {
  assert.equal(await openRequestCount(database), 0, 'no request is left open');

  const requests = await rows(database, 'select id, request_id, status, authority_ack_id, error_details from genebrc_requests');
  const byStatus: Record<string, number> = {};
  for (const request of requests) byStatus[request.status] = (byStatus[request.status] ?? 0) + 1;
  const requestById = new Map(requests.map((request) => [request.id as string, request]));
  const requestByRequestId = new Map(requests.map((request) => [request.request_id as string, request]));

  const lines = await rows(
    database,
    `select l.request_id as id, r.request_id, l.serial_no, l.irm_id, l.irm_number, l.mapped_amount::text as mapped, l.reserved, l.status,
            l.ebrc_number
       from genebrc_request_lines l join genebrc_requests r on r.id = l.request_id`,
  );
  const reserved = lines.filter((line) => line.reserved);
  assert.deepEqual(reserved.map((line) => `${line.request_id}/${line.serial_no}`), [], 'no reservation is left behind');
  for (const line of lines) {
    const request = requestById.get(line.id)!;
    if (request.status === 'FAILED') assert.equal(line.status, 'FAILED', `line ${line.request_id}/${line.serial_no} of a FAILED request`);
    assert.equal(line.status === 'GENERATED', line.ebrc_number !== null, `line ${line.request_id}/${line.serial_no}: an eBRC number exactly when GENERATED`);
  }
  const generated = lines.filter((line) => line.status === 'GENERATED');
  assert.equal(new Set(generated.map((line) => line.ebrc_number)).size, generated.length, 'every eBRC number is ours once');

  // Balances: every IRM adds up; an IRM that lines name is utilised by exactly its generated lines.
  const irms = await rows(
    database,
    'select id, irm_number, platform_customer_id, remittance_fcc_amount::text as amount, irm_available_amt::text as available, irm_utilized_amt::text as utilised from irms',
  );
  const generatedPerIrm = new Map<string, bigint>();
  for (const line of generated) generatedPerIrm.set(line.irm_id, (generatedPerIrm.get(line.irm_id) ?? 0n) + cents(line.mapped));
  const named = new Set(lines.map((line) => line.irm_id).filter((id) => id !== null));
  let irmsChecked = 0;
  for (const irm of irms) {
    const available = cents(irm.available);
    const utilised = cents(irm.utilised);
    assert.ok(available >= 0n && utilised >= 0n, `IRM ${irm.irm_number}: no negative balance`);
    assert.equal(available + utilised, cents(irm.amount), `IRM ${irm.irm_number}: utilised + available = amount`);
    if (named.has(irm.id)) {
      irmsChecked += 1;
      assert.equal(utilised, generatedPerIrm.get(irm.id) ?? 0n, `IRM ${irm.irm_number}: utilised is exactly its generated lines`);
    }
  }

  // The authority's side.
  const theirRequests = await rows(database, 'select request_id, ack_id, ack_status from sandbox.requests');
  const theirLines = await rows(database, 'select request_id, serial_no, status, ebrc_number from sandbox.request_lines');
  assert.equal(new Set(theirLines.filter((line) => line.ebrc_number !== null).map((line) => line.ebrc_number)).size,
    theirLines.filter((line) => line.ebrc_number !== null).length, 'the authority issued each eBRC number once');
  for (const theirs of theirRequests) {
    const ours = requestByRequestId.get(theirs.request_id);
    assert.ok(ours, `the authority holds ${theirs.request_id}, which we do not know: a push we lost track of`);
    if (theirs.ack_status === 'Validated') {
      assert.equal(ours.authority_ack_id, theirs.ack_id, `${theirs.request_id}: our ack id is the authority's`);
      assert.ok(['PROCESSED', 'PARTIALLY_PROCESSED', 'ERRORED'].includes(ours.status), `${theirs.request_id} accepted there, ${ours.status} here`);
    } else {
      assert.equal(ours.status, 'FAILED', `${theirs.request_id} refused there, ${ours.status} here`);
    }
  }
  const theirRequestIds = new Set(theirRequests.map((request) => request.request_id as string));
  for (const request of requests) {
    const codes = (request.error_details as { code: string }[]).map((detail) => detail.code);
    if (codes.includes('authority_not_received')) {
      assert.ok(!theirRequestIds.has(request.request_id), `${request.request_id} failed as never received, but the authority has it`);
    }
    if (request.authority_ack_id !== null) assert.ok(theirRequestIds.has(request.request_id), `${request.request_id} has an ack id the authority never gave`);
  }
  const theirLine = new Map(theirLines.map((line) => [`${line.request_id}/${line.serial_no}`, line]));
  for (const line of lines) {
    const request = requestById.get(line.id)!;
    if (request.authority_ack_id === null) continue;
    const theirs = theirLine.get(`${line.request_id}/${line.serial_no}`);
    assert.ok(theirs, `line ${line.request_id}/${line.serial_no} is unknown to the authority`);
    assert.equal(line.status, theirs.status, `line ${line.request_id}/${line.serial_no}: our outcome is the authority's`);
    assert.equal(line.ebrc_number, theirs.ebrc_number, `line ${line.request_id}/${line.serial_no}: our eBRC number is the authority's`);
  }
  if (options.exactEbrcSequence) {
    const [sequence] = await rows(database, 'select last_value::int as last, is_called from sandbox.ebrc_numbers');
    const issued = theirLines.filter((line) => line.ebrc_number !== null).length;
    assert.equal(sequence!.is_called ? Number(sequence!.last) : 0, issued, 'exactly one eBRC number drawn per generated line');
  }

  // The authority's balances agree with ours, for every IRM that one customer alone holds here.
  const holders = new Map<string, Row[]>();
  for (const irm of irms) holders.set(irm.irm_number, [...(holders.get(irm.irm_number) ?? []), irm]);
  const theirIrms = await rows(database, 'select irm_number, available_amount::text as available from sandbox.irms');
  const theirAvailable = new Map(theirIrms.map((irm) => [irm.irm_number as string, cents(irm.available)]));
  for (const [irmNumber, held] of holders) {
    if (held.length !== 1 || !named.has(held[0]!.id)) continue;
    assert.equal(theirAvailable.get(irmNumber), cents(held[0]!.available), `IRM ${irmNumber}: the authority's available amount is ours`);
  }

  // What clients were told stays true.
  const linesByRequestId = Map.groupBy(lines, (line) => line.request_id as string);
  for (const ack of options.acknowledged ?? []) {
    const stored = requestByRequestId.get(ack.requestId);
    assert.ok(stored, `acknowledged request ${ack.requestId} was lost`);
    assert.equal(stored.authority_ack_id, ack.authorityAckId, `${ack.requestId}: the acknowledged ack id`);
    assert.ok(['PROCESSED', 'PARTIALLY_PROCESSED', 'ERRORED'].includes(stored.status), `${ack.requestId} was acknowledged but is ${stored.status}`);
    const storedLines = (linesByRequestId.get(ack.requestId) ?? []).map((line) => `${line.serial_no}/${line.irm_number}/${cents(line.mapped)}`).sort();
    const ackedLines = ack.lines.map((line) => `${line.serialNo}/${line.irmNumber}/${line.mappedCents}`).sort();
    assert.deepEqual(storedLines, ackedLines, `${ack.requestId}: every acknowledged line is stored`);
  }

  return {
    requests: requests.length,
    byStatus,
    lines: lines.length,
    generatedLines: generated.length,
    irmsChecked,
    authorityRequests: theirRequests.length,
  };
}

/** The statuses counted as `status=n` pairs, for figures. */
export function statusFigures(byStatus: Record<string, number>): string {
  return Object.entries(byStatus).sort().map(([status, n]) => `${status}=${n}`).join(' ') || 'none';
}
