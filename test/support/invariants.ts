import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/store/database.ts';
import type { SandboxSchema } from '../../sandbox/store/schema.ts';
import { cents } from './workflow.ts';

/**
 * The money invariants of the whole system, checked directly in the tables once nothing is open any more: ours, and
 * the sandbox authority program's own storage (its schema authority_sandbox, read through the program's handle: on
 * the embedded backend it is another PGlite, on PostgreSQL a schema of the scratch database). The reliability tests
 * run them after crashes, injected faults and races.
 */

/** The sandbox program's storage, as SandboxProgram.database gives it: read only here, never written. */
export type AuthorityStore = { db: Kysely<SandboxSchema> };

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
 * twice). Only a crash of the authority itself could leave a gap (a rolled-back draw); the tests kill the service,
 * never the sandbox program, so every test may ask for it.
 */
export async function assertLedgerConsistent(
  database: Database,
  authority: AuthorityStore,
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

  // The authority's side, in the sandbox program's own storage.
  const theirRequests: Row[] = await authority.db.selectFrom('authority_sandbox.requests').select(['request_id', 'ack_id', 'ack_status']).execute();
  const theirLines: Row[] = await authority.db
    .selectFrom('authority_sandbox.request_lines')
    .select(['request_id', 'serial_no', 'status', 'ebrc_number'])
    .execute();
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
    const { rows: [sequence] } = await sql<{ last: number; is_called: boolean }>`select last_value::int as last, is_called from authority_sandbox.ebrc_numbers`.execute(authority.db);
    const issued = theirLines.filter((line) => line.ebrc_number !== null).length;
    assert.equal(sequence!.is_called ? Number(sequence!.last) : 0, issued, 'exactly one eBRC number drawn per generated line');
  }

  // The authority's balances agree with ours, for every IRM that one customer alone holds here.
  const holders = new Map<string, Row[]>();
  for (const irm of irms) holders.set(irm.irm_number, [...(holders.get(irm.irm_number) ?? []), irm]);
  const theirIrms = await authority.db.selectFrom('authority_sandbox.irms').select(['irm_number', sql<string>`available_amount::text`.as('available')]).execute();
  const theirAvailable = new Map(theirIrms.map((irm) => [irm.irm_number, cents(irm.available)]));
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

/**
 * The secrets of every API credential set the sandbox program holds (the client secrets, the x-Api-Keys, the users'
 * private keys), to look for in logs and answers as the portal password is looked for. A private key is looked for by
 * a piece of its base64 that sits on one line of its PEM too, so that neither form of it may leak.
 */
export async function authorityCredentialSecrets(authority: AuthorityStore): Promise<string[]> {
  const sets = await authority.db.selectFrom('authority_sandbox.credential_sets').select(['client_secret', 'api_key', 'user_private_key']).execute();
  assert.ok(sets.length > 0, 'the sandbox holds credential sets');
  return sets.flatMap((set) => [set.client_secret, set.api_key, set.user_private_key.slice(128, 168)]);
}

/** The genebrc.request.* event type of each status a request can rest in (SUBMITTING has none). */
const REQUEST_EVENT_OF_STATUS: Readonly<Record<string, string>> = {
  PENDING: 'genebrc.request.acknowledged',
  FAILED: 'genebrc.request.failed',
  PROCESSED: 'genebrc.request.processed',
  PARTIALLY_PROCESSED: 'genebrc.request.partially_processed',
  ERRORED: 'genebrc.request.errored',
};

export type EventFigures = { events: number; requests: number; ebrcEvents: number; irmEvents: number; customerEvents: number };

/**
 * "No change without its event, no event without its change" (contract 9), checked directly in the tables, whatever
 * was killed when:
 * - a request still SUBMITTING has no event; a PENDING one exactly one genebrc.request.acknowledged; a FAILED one
 *   exactly one genebrc.request.failed and no acknowledgement (it was never PENDING); a PROCESSED,
 *   PARTIALLY_PROCESSED or ERRORED one exactly one acknowledgement and exactly one event of its own type. Each event
 *   names the request's platform and customer, and its data's status is the one of its type;
 * - exactly one ebrc.generated per GENERATED line of a PROCESSED or PARTIALLY_PROCESSED request (same eBRC number,
 *   same requestId), and none for any other request;
 * - every genebrc.request.* and ebrc.generated event is of a stored request;
 * - every IRM stored has exactly one irm.received, and every irm.received is of a stored IRM (`irms: false` skips
 *   this, for tests that seed IRMs without the service);
 * - a customer's platform_customer.verified events outnumber its platform_customer.credentials_invalid ones by one
 *   while its credentials are valid, equal them while they are invalid, and there are none while it is unverified;
 * - an event with a customer carries that customer's platform.
 */
export async function assertEventsMatchChanges(database: Database, options: { irms?: boolean } = {}): Promise<EventFigures> {
  const events = await rows(
    database,
    `select e.id, e.type, e.platform_id, e.platform_customer_id, c.platform_id as customer_platform_id,
            e.data->>'requestId' as request_id, e.data->>'status' as status, e.data->>'ebrcNumber' as ebrc_number, e.data->>'id' as data_id
       from events e left join platform_customers c on c.id = e.platform_customer_id`,
  );
  for (const event of events) {
    if (event.platform_customer_id !== null) {
      assert.equal(event.customer_platform_id, event.platform_id, `event ${event.id} (${event.type}) carries its customer's platform`);
    }
  }
  const byType = Map.groupBy(events, (event) => event.type as string);
  const ofType = (type: string) => byType.get(type) ?? [];
  const key = (customerId: unknown, requestId: unknown) => `${customerId}/${requestId}`;

  const requests = await rows(database, 'select id, platform_id, platform_customer_id, request_id, status from genebrc_requests');
  const requestByKey = new Map(requests.map((request) => [key(request.platform_customer_id, request.request_id), request]));
  const requestEvents = new Map<string, Row[]>();
  for (const type of Object.values(REQUEST_EVENT_OF_STATUS)) {
    for (const event of ofType(type)) {
      const request = requestByKey.get(key(event.platform_customer_id, event.request_id));
      assert.ok(request, `${event.type} event ${event.id} is of request ${event.request_id}, which is not stored for customer ${event.platform_customer_id}`);
      assert.equal(event.platform_id, request.platform_id, `event ${event.id}: the request's platform`);
      const expectedStatus = type === 'genebrc.request.acknowledged' ? 'PENDING' : Object.keys(REQUEST_EVENT_OF_STATUS).find((s) => REQUEST_EVENT_OF_STATUS[s] === type);
      assert.equal(event.status, expectedStatus, `event ${event.id} (${event.type}) shows the request ${expectedStatus}`);
      const list = requestEvents.get(request.id) ?? [];
      list.push(event);
      requestEvents.set(request.id, list);
    }
  }
  for (const request of requests) {
    const types = (requestEvents.get(request.id) ?? []).map((event) => event.type as string).sort();
    let expected: string[];
    if (request.status === 'SUBMITTING') expected = [];
    else if (request.status === 'PENDING' || request.status === 'FAILED') expected = [REQUEST_EVENT_OF_STATUS[request.status]!];
    else {
      assert.ok(REQUEST_EVENT_OF_STATUS[request.status], `request ${request.request_id} has an unknown status ${request.status}`);
      expected = ['genebrc.request.acknowledged', REQUEST_EVENT_OF_STATUS[request.status]!].sort();
    }
    assert.deepEqual(types, expected, `request ${request.request_id} (${request.status}): its events`);
  }

  // One ebrc.generated per eBRC generated here, of its request.
  const generated = await rows(
    database,
    `select r.platform_customer_id, r.request_id, r.status as request_status, l.ebrc_number
       from genebrc_request_lines l join genebrc_requests r on r.id = l.request_id where l.status = 'GENERATED'`,
  );
  const ebrcEvents = ofType('ebrc.generated');
  const ebrcEventsByKey = Map.groupBy(ebrcEvents, (event) => key(event.platform_customer_id, event.request_id));
  for (const event of ebrcEvents) {
    const request = requestByKey.get(key(event.platform_customer_id, event.request_id));
    assert.ok(request, `ebrc.generated ${event.id} (${event.ebrc_number}) is of request ${event.request_id}, which is not stored`);
    assert.ok(['PROCESSED', 'PARTIALLY_PROCESSED'].includes(request.status), `ebrc.generated ${event.id} of request ${event.request_id}, which is ${request.status}`);
    assert.equal(event.platform_id, request.platform_id, `ebrc.generated ${event.id}: the request's platform`);
  }
  const generatedByKey = Map.groupBy(generated, (line) => key(line.platform_customer_id, line.request_id));
  for (const request of requests) {
    const k = key(request.platform_customer_id, request.request_id);
    const numbers = (ebrcEventsByKey.get(k) ?? []).map((event) => event.ebrc_number as string).sort();
    const expected = ['PROCESSED', 'PARTIALLY_PROCESSED'].includes(request.status)
      ? (generatedByKey.get(k) ?? []).map((line) => line.ebrc_number as string).sort()
      : [];
    assert.deepEqual(numbers, expected, `request ${request.request_id} (${request.status}): one ebrc.generated per eBRC`);
  }

  // One irm.received per IRM stored.
  const irmEvents = ofType('irm.received');
  if (options.irms !== false) {
    const irms = await rows(database, 'select id, platform_id, platform_customer_id, irm_number from irms');
    const irmById = new Map(irms.map((irm) => [irm.id as string, irm]));
    const seen = new Map<string, number>();
    for (const event of irmEvents) {
      const irm = irmById.get(event.data_id);
      assert.ok(irm, `irm.received ${event.id} is of IRM ${event.data_id}, which is not stored`);
      assert.equal(event.platform_customer_id, irm.platform_customer_id, `irm.received ${event.id}: the IRM's customer`);
      assert.equal(event.platform_id, irm.platform_id, `irm.received ${event.id}: the IRM's platform`);
      seen.set(irm.id, (seen.get(irm.id) ?? 0) + 1);
    }
    const missing = irms.filter((irm) => seen.get(irm.id) === undefined).map((irm) => irm.irm_number);
    const repeated = [...seen].filter(([, n]) => n > 1).map(([id]) => irmById.get(id)!.irm_number);
    assert.deepEqual(missing.slice(0, 10), [], `${missing.length} stored IRMs have no irm.received`);
    assert.deepEqual(repeated.slice(0, 10), [], `${repeated.length} IRMs have more than one irm.received`);
  }

  // Verified and refused credentials alternate, each with its event.
  const customers = await rows(database, 'select id, authority_credentials_status as status from platform_customers');
  const count = (type: string) => {
    const counts = new Map<string, number>();
    for (const event of ofType(type)) counts.set(event.platform_customer_id, (counts.get(event.platform_customer_id) ?? 0) + 1);
    return counts;
  };
  const verified = count('platform_customer.verified');
  const invalid = count('platform_customer.credentials_invalid');
  for (const customer of customers) {
    const v = verified.get(customer.id) ?? 0;
    const i = invalid.get(customer.id) ?? 0;
    const expected = customer.status === 'valid' ? [i + 1, i] : customer.status === 'invalid' ? [Math.max(i, 1), i] : [0, 0];
    assert.deepEqual([v, i], expected, `customer ${customer.id} (${customer.status}): its verified and credentials_invalid events`);
  }

  return {
    events: events.length,
    requests: requests.length,
    ebrcEvents: ebrcEvents.length,
    irmEvents: irmEvents.length,
    customerEvents: ofType('platform_customer.verified').length + ofType('platform_customer.credentials_invalid').length,
  };
}
