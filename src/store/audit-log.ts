import { sql, type Kysely, type Selectable } from 'kysely';
import type { AuditLogTable, Schema } from './schema.ts';
import { pageRows } from './paging.ts';

export type AuditRow = Selectable<AuditLogTable>;

/** The hash an empty chain starts from. */
export const GENESIS_HASH = '0'.repeat(64);

export type ChainHead = { chain: string; lastSeq: number; lastHash: string; anchorHash: string; anchorSeq: number };

/**
 * The chain's head, locked until the caller's transaction ends (created at the genesis hash on the chain's first
 * entry). Every append takes this lock first, so two transactions never extend the same entry: the second waits for
 * the first to commit and then reads its entry as the head. One statement, the same on PGlite and PostgreSQL.
 */
export async function lockChainHead(tx: Kysely<Schema>, chain: string): Promise<{ lastSeq: number; lastHash: string }> {
  const { rows } = await sql<{ last_seq: number | string; last_hash: string }>`
    insert into audit_chains (chain, last_seq, last_hash, anchor_hash, anchor_seq)
    values (${chain}, 0, ${GENESIS_HASH}, ${GENESIS_HASH}, 0)
    on conflict (chain) do update set chain = excluded.chain
    returning last_seq, last_hash`.execute(tx);
  const row = rows[0]!;
  return { lastSeq: Number(row.last_seq), lastHash: row.last_hash };
}

export type NewAuditRow = Omit<AuditRow, 'seq'>;

/**
 * Appends the entry and moves its chain's head to it (the head is locked by lockChainHead in the same transaction), in
 * one statement: the insert is a data-modifying CTE of the head's update (two round trips were one more per audited
 * request, an IRM page among them).
 */
export async function appendEntry(tx: Kysely<Schema>, row: NewAuditRow): Promise<void> {
  await tx
    .with('entry', (db) => db.insertInto('audit_log').values(row))
    .updateTable('audit_chains')
    .set({ last_seq: row.chain_seq, last_hash: row.hash })
    .where('chain', '=', row.chain)
    .execute();
}

export async function chainHeads(db: Kysely<Schema>): Promise<ChainHead[]> {
  const rows = await db.selectFrom('audit_chains').selectAll().orderBy('chain').execute();
  return rows.map((row) => ({
    chain: row.chain,
    lastSeq: Number(row.last_seq),
    lastHash: row.last_hash,
    anchorHash: row.anchor_hash,
    anchorSeq: Number(row.anchor_seq),
  }));
}

/** Up to `limit` entries of the chain after `afterSeq`, in chain order. */
export async function chainEntries(db: Kysely<Schema>, chain: string, afterSeq: number, limit: number): Promise<AuditRow[]> {
  return db.selectFrom('audit_log').selectAll().where('chain', '=', chain).where('chain_seq', '>', afterSeq).orderBy('chain_seq').limit(limit).execute();
}

/** Chains that have entries but no head row (a head deleted by hand): audit-verify names them. */
export async function chainsWithoutHead(db: Kysely<Schema>): Promise<string[]> {
  const { rows } = await sql<{ chain: string }>`
    select distinct chain from audit_log where not exists (select 1 from audit_chains where audit_chains.chain = audit_log.chain)
    limit 10`.execute(db);
  return rows.map((row) => row.chain);
}

/**
 * Deletes up to `limit` of the chain's oldest entries made before `before` (never one after an entry it keeps), and
 * moves the chain's anchor to the last one deleted, so that the entries kept still verify. Under the chain's lock.
 */
export async function purgeChainBefore(tx: Kysely<Schema>, chain: string, before: Date, limit: number): Promise<number> {
  await lockChainHead(tx, chain);
  const { rows } = await sql<{ chain_seq: number | string; hash: string }>`
    delete from audit_log where chain = ${chain} and chain_seq in (
      select chain_seq from audit_log
      where chain = ${chain} and chain_seq < coalesce(
        (select min(chain_seq) from audit_log where chain = ${chain} and at >= ${before}), 9223372036854775807)
      order by chain_seq limit ${limit})
    returning chain_seq, hash`.execute(tx);
  if (rows.length === 0) return 0;
  const last = rows.reduce((a, b) => (Number(a.chain_seq) > Number(b.chain_seq) ? a : b));
  await tx.updateTable('audit_chains').set({ anchor_seq: Number(last.chain_seq), anchor_hash: last.hash }).where('chain', '=', chain).execute();
  return rows.length;
}

/** Chains with an entry made before `before`. */
export async function chainsWithEntriesBefore(db: Kysely<Schema>, before: Date): Promise<string[]> {
  const { rows } = await sql<{ chain: string }>`
    select chain from audit_chains where exists (
      select 1 from audit_log where audit_log.chain = audit_chains.chain and audit_log.at < ${before})`.execute(db);
  return rows.map((row) => row.chain);
}

export type AuditFilter = {
  /** undefined: every platform's entries and the operator-wide ones (the admin API); else one platform's. */
  platformId?: string | undefined;
  actorType?: string | undefined;
  action?: string | undefined;
  targetType?: string | undefined;
  targetId?: string | undefined;
  /** UTC days of `at`, inclusive. */
  fromDate?: string | undefined;
  toDate?: string | undefined;
};

function filtered(db: Kysely<Schema>, filter: AuditFilter) {
  let query = db.selectFrom('audit_log');
  if (filter.platformId !== undefined) query = query.where('platform_id', '=', filter.platformId);
  if (filter.actorType) query = query.where('actor_type', '=', filter.actorType);
  if (filter.action) query = query.where('action', '=', filter.action);
  if (filter.targetType) query = query.where('target_type', '=', filter.targetType);
  if (filter.targetId) query = query.where('target_id', '=', filter.targetId);
  if (filter.fromDate) query = query.where('at', '>=', sql<Date>`(${filter.fromDate}::date)::timestamp at time zone 'UTC'`);
  if (filter.toDate) query = query.where('at', '<', sql<Date>`(${filter.toDate}::date + 1)::timestamp at time zone 'UTC'`);
  return query;
}

/** A page of matching entries, newest first, and how many match (counted with the page, as the customers' list). */
export async function listEntries(db: Kysely<Schema>, filter: AuditFilter & { offset: number; limit: number }): Promise<{ rows: AuditRow[]; total: number }> {
  const base = filtered(db, filter);
  const counted = await pageRows(
    base.selectAll().select(sql<number>`(count(*) over ())::int`.as('total_matching')).orderBy('at', 'desc').orderBy('seq', 'desc'),
    filter,
  ).execute();
  if (counted.length === 0 && filter.offset > 0) {
    const count = await base.select(sql<number>`count(*)::int`.as('total')).executeTakeFirstOrThrow();
    return { rows: [], total: count.total };
  }
  return { rows: counted.map(({ total_matching: _total, ...row }) => row as AuditRow), total: counted[0]?.total_matching ?? 0 };
}

/** Every matching entry, newest first, read in batches (for the CSV export): memory holds one batch. */
export async function* allEntries(db: Kysely<Schema>, filter: AuditFilter, batch = 500): AsyncGenerator<AuditRow> {
  let after: { at: Date; seq: number } | undefined;
  for (;;) {
    let query = filtered(db, filter).selectAll();
    if (after !== undefined) {
      const { at, seq } = after;
      query = query.where((eb) => eb.or([eb('at', '<', at), eb.and([eb('at', '=', at), eb('seq', '<', seq)])]));
    }
    const rows = await query.orderBy('at', 'desc').orderBy('seq', 'desc').limit(batch).execute();
    yield* rows;
    if (rows.length < batch) return;
    const last = rows.at(-1)!;
    after = { at: last.at, seq: Number(last.seq) };
  }
}
