import { createHash, randomUUID } from 'node:crypto';
import os from 'node:os';
import type { Writable } from 'node:stream';
import type { Kysely } from 'kysely';
import { ACTOR_TYPES, AUDIT_ACTIONS, type ActorType, type AuditAction } from '../domain/audit.ts';
import * as store from '../store/audit-log.ts';
import type { Schema } from '../store/schema.ts';
import { itemsPage, offsetOf, type PageRequest } from './pages.ts';
import { CSV_CONTENT_TYPE, writeSpreadsheet, type Download } from './spreadsheets/write.ts';


export type AuditActor = { type: ActorType; id: string | null; label: string | null };

/**
 * Who makes a change, and from where: built by the HTTP layer from the request (the API key's id and prefix, the
 * console user, the admin token), by the CLI, or SYSTEM for background work. Never holds a secret.
 */
export type AuditSource = { actor: AuditActor; ip: string | null; userAgent: string | null; requestId: string | null };

export const SYSTEM_SOURCE: AuditSource = { actor: { type: 'system', id: null, label: 'ebrc-gateway' }, ip: null, userAgent: null, requestId: null };

/** The CLI as an actor: the operating-system user who ran it, on this host. */
export function cliSource(): AuditSource {
  let user = 'unknown';
  try {
    user = os.userInfo().username;
  } catch {
    // No passwd entry for the uid (a container): the uid is still known to the host's logs.
  }
  return { actor: { type: 'cli', id: user, label: `${user}@${os.hostname()}` }, ip: null, userAgent: null, requestId: null };
}

export type AuditTarget = { type: string; id: string };

/** What a change records: its platform (null for operator-wide), action, target and outcome. */
export type AuditRecord = {
  platformId: string | null;
  action: AuditAction;
  target: AuditTarget | null;
  outcome?: 'succeeded' | 'failed';
};

/** An entry as the API shows it (contract 14). */
export type AuditEntry = {
  id: string;
  at: string;
  platformId: string | null;
  actor: AuditActor;
  action: string;
  target: { type: string | null; id: string | null };
  outcome: 'succeeded' | 'failed';
  ip: string | null;
  userAgent: string | null;
  requestId: string | null;
};

/** JSON with every object's keys sorted, no white space: the same text for the same entry, whoever wrote it. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).filter((key) => record[key] !== undefined).sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(',')}}`;
}

/** SHA-256 (hex) over the previous entry's hash of the chain and the entry's canonical JSON. */
export function entryHash(prevHash: string, entry: AuditEntry): string {
  return createHash('sha256').update(prevHash).update('\n').update(canonicalJson(entry)).digest('hex');
}

/** The chain an entry belongs to: its platform's, or '' for the operator-wide entries. */
function chainOf(platformId: string | null): string {
  return platformId ?? '';
}

export function toAuditEntry(row: store.AuditRow): AuditEntry {
  return {
    id: row.id,
    at: row.at.toISOString(),
    platformId: row.platform_id,
    actor: { type: row.actor_type as ActorType, id: row.actor_id, label: row.actor_label },
    action: row.action,
    target: { type: row.target_type, id: row.target_id },
    outcome: row.outcome as AuditEntry['outcome'],
    ip: row.ip,
    userAgent: row.user_agent,
    requestId: row.request_id,
  };
}

/** Longest user agent kept: the header is the client's to fill. */
const MAX_USER_AGENT = 512;

/**
 * Appends the change's entry to its platform's chain, in `tx`: the transaction that makes the change, so that the
 * change and its entry commit together or not at all. Locks the chain's head until that transaction ends: call it as
 * the last statement of the transaction (after the outbox's events), so the lock is held briefly and always last.
 */
export async function recordAudit(tx: Kysely<Schema>, source: AuditSource, record: AuditRecord): Promise<AuditEntry> {
  const chain = chainOf(record.platformId);
  const head = await store.lockChainHead(tx, chain);
  // Taken once the head is locked, so that a chain's entries are in time order too.
  const entry: AuditEntry = {
    id: randomUUID(),
    at: new Date().toISOString(),
    platformId: record.platformId,
    actor: source.actor,
    action: record.action,
    target: { type: record.target?.type ?? null, id: record.target?.id ?? null },
    outcome: record.outcome ?? 'succeeded',
    ip: source.ip,
    userAgent: source.userAgent === null ? null : source.userAgent.slice(0, MAX_USER_AGENT),
    requestId: source.requestId,
  };
  const hash = entryHash(head.lastHash, entry);
  await store.appendEntry(tx, {
    id: entry.id,
    at: new Date(entry.at),
    platform_id: entry.platformId,
    chain,
    chain_seq: head.lastSeq + 1,
    actor_type: entry.actor.type,
    actor_id: entry.actor.id,
    actor_label: entry.actor.label,
    action: entry.action,
    target_type: entry.target.type,
    target_id: entry.target.id,
    outcome: entry.outcome,
    ip: entry.ip,
    user_agent: entry.userAgent,
    request_id: entry.requestId,
    prev_hash: head.lastHash,
    hash,
  });
  return entry;
}

/** Records an entry in a transaction of its own (a change that is not itself a database write, a refused sign-in). */
export async function recordAuditAlone(db: Kysely<Schema>, source: AuditSource, record: AuditRecord): Promise<AuditEntry> {
  return db.transaction().execute((tx) => recordAudit(tx, source, record));
}

export type AuditVerification =
  | { ok: true; chains: number; entries: number }
  | { ok: false; chain: string; entryId: string | null; chainSeq: number | null; reason: string };

const VERIFY_BATCH = 1_000;

/**
 * Recomputes every chain from its anchor: each entry must follow the one before it (its sequence number and its
 * previous hash) and hash to what it stores, and the chain must end at its head. The first entry that does not is
 * named; an entry edited in the database (any field) or deleted is found this way.
 */
export async function verifyAuditChains(db: Kysely<Schema>): Promise<AuditVerification> {
  const heads = await store.chainHeads(db);
  let entries = 0;
  for (const head of heads) {
    let prevHash = head.anchorHash;
    let prevSeq = head.anchorSeq;
    for (;;) {
      const rows = await store.chainEntries(db, head.chain, prevSeq, VERIFY_BATCH);
      for (const row of rows) {
        const chainSeq = Number(row.chain_seq);
        const broken = (reason: string): AuditVerification => ({ ok: false, chain: head.chain, entryId: row.id, chainSeq, reason });
        if (chainSeq !== prevSeq + 1) return broken(`entry ${prevSeq + 1} of the chain is missing`);
        if (row.prev_hash !== prevHash) return broken('its previous hash is not the hash of the entry before it');
        if (row.chain !== (row.platform_id ?? '')) return broken('its platform is not its chain\'s');
        if (entryHash(prevHash, toAuditEntry(row)) !== row.hash) return broken('its content does not match its hash (edited after it was written)');
        prevHash = row.hash;
        prevSeq = chainSeq;
        entries += 1;
      }
      if (rows.length < VERIFY_BATCH) break;
    }
    if (prevSeq !== head.lastSeq || prevHash !== head.lastHash) {
      return { ok: false, chain: head.chain, entryId: null, chainSeq: prevSeq + 1, reason: `the chain ends at entry ${prevSeq} but its head is entry ${head.lastSeq} (entries deleted)` };
    }
  }
  const orphans = await store.chainsWithoutHead(db);
  if (orphans.length > 0) return { ok: false, chain: orphans[0]!, entryId: null, chainSeq: null, reason: 'the chain has entries but no head (its head was deleted)' };
  return { ok: true, chains: heads.length, entries };
}

/** How a chain is named in messages: its platform's id, or "operator-wide". */
export function chainName(chain: string): string {
  return chain === '' ? 'operator-wide' : `platform ${chain}`;
}

/**
 * Deletes entries older than `before`, oldest first, in batches of `limit` per chain and transaction; each chain's
 * anchor moves to the last entry deleted so that what is kept still verifies. Returns how many were deleted.
 */
export async function purgeAuditBefore(db: Kysely<Schema>, before: Date, limit: number): Promise<number> {
  let purged = 0;
  for (const chain of await store.chainsWithEntriesBefore(db, before)) {
    for (;;) {
      const deleted = await db.transaction().execute((tx) => store.purgeChainBefore(tx, chain, before, limit));
      purged += deleted;
      if (deleted < limit) break;
    }
  }
  return purged;
}

export type AuditListQuery = PageRequest & Omit<store.AuditFilter, 'platformId'> & { platformId?: string | undefined };

export async function listAuditLog(db: Kysely<Schema>, query: AuditListQuery) {
  const { rows, total } = await store.listEntries(db, { ...query, offset: offsetOf(query), limit: query.limit });
  return itemsPage(rows.map(toAuditEntry), total, query);
}

const CSV_HEADER = [
  'id', 'at', 'platformId', 'actorType', 'actorId', 'actorLabel', 'action', 'targetType', 'targetId', 'outcome', 'ip', 'userAgent', 'requestId',
] as const;

function csvCells(entry: AuditEntry): (string | null)[] {
  return [
    entry.id, entry.at, entry.platformId, entry.actor.type, entry.actor.id, entry.actor.label, entry.action,
    entry.target.type, entry.target.id, entry.outcome, entry.ip, entry.userAgent, entry.requestId,
  ];
}

/**
 * The matching entries (every one, not a page) as CSV, newest first, streamed in batches. Cells go through the same
 * guard as the reports: text that a spreadsheet program would evaluate gets a leading quote.
 */
export function auditCsv(db: Kysely<Schema>, filter: store.AuditFilter, now: Date): Download {
  const owner = filter.platformId ?? 'all-platforms';
  return {
    fileName: `${owner}-audit-log-${now.toISOString().slice(0, 10)}.csv`,
    contentType: CSV_CONTENT_TYPE,
    async write(out: Writable) {
      async function* rows() {
        for await (const row of store.allEntries(db, filter)) yield csvCells(toAuditEntry(row));
      }
      await writeSpreadsheet('csv', [{ name: 'Audit log', header: CSV_HEADER, rows: rows() }], out);
    },
  };
}
