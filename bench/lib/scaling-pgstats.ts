/**
 * What the database did between two moments, for bench/scaling.ts: pg_stat_database's counters for one database, the
 * row counts of each of its tables (pg_stat_all_tables), and the write-ahead log written, in all (pg_current_wal_lsn)
 * and for that database alone, by table (pg_walinspect: each WAL record's block reference names its database and
 * relation; a record without one, a commit, counts as the database's when its transaction wrote there).
 *
 * PostgreSQL publishes a session's counters when the session goes idle, at most once a second: take the snapshot at
 * the end of a window only once the work has been idle for a couple of seconds (settleStats).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';

export type DatabaseCounters = {
  xactCommit: number;
  xactRollback: number;
  tupInserted: number;
  tupUpdated: number;
  tupDeleted: number;
  tupReturned: number;
  tupFetched: number;
  blksRead: number;
  blksHit: number;
  tempBytes: number;
};

export type TableCounters = {
  inserted: number;
  updated: number;
  hotUpdated: number;
  deleted: number;
  /** Sequential scans and the rows they read; index scans. */
  seqScans: number;
  seqRows: number;
  indexScans: number;
};

const ZERO_TABLE: TableCounters = { inserted: 0, updated: 0, hotUpdated: 0, deleted: 0, seqScans: 0, seqRows: 0, indexScans: 0 };
const TABLE_KEYS = Object.keys(ZERO_TABLE) as (keyof TableCounters)[];

export type Snapshot = {
  at: number;
  /** pg_current_wal_flush_lsn() as text. */
  lsn: string;
  database: DatabaseCounters;
  /** schema.table → counters. */
  tables: Record<string, TableCounters>;
};

/** One table's share of a window: rows and WAL. */
export type TableDelta = TableCounters & { walBytes: number; walFpiBytes: number; walRecords: number };

export type Delta = {
  seconds: number;
  database: DatabaseCounters;
  /** The whole server's WAL over the window (every database, and other work on the server). */
  serverWalBytes: number;
  /** This database's WAL records over the window, null when pg_walinspect is not available. */
  wal: { bytes: number; fpiBytes: number; records: number; commitBytes: number } | null;
  tables: Record<string, TableDelta>;
};

const COUNTERS: [keyof DatabaseCounters, string][] = [
  ['xactCommit', 'xact_commit'],
  ['xactRollback', 'xact_rollback'],
  ['tupInserted', 'tup_inserted'],
  ['tupUpdated', 'tup_updated'],
  ['tupDeleted', 'tup_deleted'],
  ['tupReturned', 'tup_returned'],
  ['tupFetched', 'tup_fetched'],
  ['blksRead', 'blks_read'],
  ['blksHit', 'blks_hit'],
  ['tempBytes', 'temp_bytes'],
];

/**
 * Reads the statistics of the database `name` through `client`, a session connected to that database (pg_stat_all_tables
 * shows the tables of the session's own database only). Each snapshot costs that session one transaction; the caller
 * counts them (queries()).
 */
export class PgStats {
  readonly #client: pg.Client;
  readonly #name: string;
  #databaseOid = 0;
  #walinspect = false;
  #queries = 0;
  #slot: string | undefined;

  constructor(client: pg.Client, name: string) {
    this.#client = client;
    this.#name = name;
  }

  /** Creates pg_walinspect in the database when the server has it (a superuser session); false when it cannot. */
  async prepare(): Promise<boolean> {
    this.#databaseOid = Number((await this.#query<{ oid: number }>('select oid::int as oid from pg_database where datname = $1', [this.#name])).rows[0]?.oid ?? 0);
    try {
      await this.#query('create extension if not exists pg_walinspect');
      this.#walinspect = true;
    } catch {
      this.#walinspect = false;
    }
    return this.#walinspect;
  }

  get walinspect(): boolean {
    return this.#walinspect;
  }

  /** Statements this helper sent to the database (each its own transaction), to be taken off xact_commit. */
  queries(): number {
    return this.#queries;
  }

  async #query<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
    this.#queries++;
    return this.#client.query<R>(text, values);
  }

  /**
   * Keeps the WAL from now on until release(): a temporary physical replication slot of this session (other work on a
   * shared server can force checkpoints that recycle the WAL of a window before it is read). Temporary: PostgreSQL drops
   * it when the session ends, whatever happens to the benchmark.
   */
  async reserve(): Promise<void> {
    if (!this.#walinspect || this.#slot) return;
    this.#slot = `ebrc_scaling_${process.pid}`;
    await this.#query('select pg_create_physical_replication_slot($1, true, true)', [this.#slot]);
  }

  async release(): Promise<void> {
    if (!this.#slot) return;
    const slot = this.#slot;
    this.#slot = undefined;
    await this.#query('select pg_drop_replication_slot($1)', [slot]);
  }

  async snapshot(): Promise<Snapshot> {
    // One statement, so that the database's counters, the tables' and the LSN are read together.
    const { rows } = await this.#query<{ lsn: string; database: Record<string, string>; tables: { name: string; ins: string; upd: string; hot: string; del: string; seq: string; seqrows: string; idx: string | null }[] | null }>(
      `select pg_current_wal_flush_lsn()::text as lsn,
        (select row_to_json(d) from pg_stat_database d where d.datname = $1) as database,
        (select json_agg(json_build_object('name', schemaname || '.' || relname, 'ins', n_tup_ins, 'upd', n_tup_upd, 'hot', n_tup_hot_upd, 'del', n_tup_del,
             'seq', seq_scan, 'seqrows', seq_tup_read, 'idx', idx_scan))
           from pg_stat_all_tables where schemaname not in ('pg_catalog', 'information_schema') and schemaname not like 'pg_toast%') as tables`,
      [this.#name],
    );
    const row = rows[0]!;
    const database = Object.fromEntries(COUNTERS.map(([key, column]) => [key, Number(row.database[column] ?? 0)])) as DatabaseCounters;
    const tables: Record<string, TableCounters> = {};
    for (const table of row.tables ?? []) {
      tables[table.name] = {
        inserted: Number(table.ins),
        updated: Number(table.upd),
        hotUpdated: Number(table.hot),
        deleted: Number(table.del),
        seqScans: Number(table.seq),
        seqRows: Number(table.seqrows),
        indexScans: Number(table.idx ?? 0),
      };
    }
    return { at: performance.now(), lsn: row.lsn, database, tables };
  }

  /** What happened between two snapshots (the window's WAL reserved by reserve() before the first); releases the WAL. */
  async delta(from: Snapshot, to: Snapshot): Promise<Delta> {
    try {
      return await this.#delta(from, to);
    } finally {
      await this.release();
    }
  }

  async #delta(from: Snapshot, to: Snapshot): Promise<Delta> {
    const database = Object.fromEntries(COUNTERS.map(([key]) => [key, to.database[key] - from.database[key]])) as DatabaseCounters;
    const tables: Record<string, TableDelta> = {};
    for (const [name, counters] of Object.entries(to.tables)) {
      const before = from.tables[name] ?? ZERO_TABLE;
      const table = { walBytes: 0, walFpiBytes: 0, walRecords: 0 } as TableDelta;
      for (const key of TABLE_KEYS) table[key] = counters[key] - before[key];
      tables[name] = table;
    }
    const serverWalBytes = Number((await this.#query<{ bytes: string }>('select pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::bigint as bytes', [to.lsn, from.lsn])).rows[0]?.bytes ?? 0);
    let wal: Delta['wal'] = null;
    if (this.#walinspect) wal = { bytes: 0, fpiBytes: 0, records: 0, commitBytes: 0 };
    if (wal && serverWalBytes > 0) {
      const owners = await this.#relationOwners();
      const { rows } = await this.#query<{ filenode: string | null; records: string; bytes: string; fpi: string }>(
        `with r as (
           select xid, record_length, fpi_length, regexp_match(block_ref, 'rel \\d+/(\\d+)/(\\d+)') as m
           from pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)
         ),
         ours as (select distinct xid from r where m is not null and m[1]::oid = $3::oid and xid <> '0'::xid)
         select case when m is not null and m[1]::oid = $3::oid then m[2] else null end as filenode,
           count(*) as records, sum(record_length) as bytes, sum(fpi_length) as fpi
         from r
         where (m is not null and m[1]::oid = $3::oid) or (m is null and xid in (select xid from ours))
         group by 1`,
        [from.lsn, to.lsn, this.#databaseOid],
      );
      for (const row of rows) {
        const bytes = Number(row.bytes);
        const fpi = Number(row.fpi);
        const records = Number(row.records);
        wal.bytes += bytes;
        wal.fpiBytes += fpi;
        wal.records += records;
        if (row.filenode === null) {
          wal.commitBytes += bytes;
          continue;
        }
        const name = owners.get(row.filenode) ?? 'other relations (dropped or rewritten)';
        const table = (tables[name] ??= { ...ZERO_TABLE, walBytes: 0, walFpiBytes: 0, walRecords: 0 });
        table.walBytes += bytes;
        table.walFpiBytes += fpi;
        table.walRecords += records;
      }
    }
    return { seconds: (to.at - from.at) / 1000, database, serverWalBytes, wal, tables };
  }

  /** Each relation file of the database → the table it belongs to (an index or TOAST data counts as its table's). */
  async #relationOwners(): Promise<Map<string, string>> {
    const { rows } = await this.#query<{ filenode: string; oid: number; name: string; schema: string; index_of: number | null; toast_of: number | null }>(
      `select pg_relation_filenode(c.oid)::text as filenode, c.oid::int as oid, c.relname as name, n.nspname as schema,
         i.indrelid::int as index_of, (select t.oid::int from pg_class t where t.reltoastrelid = c.oid) as toast_of
       from pg_class c join pg_namespace n on n.oid = c.relnamespace left join pg_index i on i.indexrelid = c.oid
       where pg_relation_filenode(c.oid) is not null`,
    );
    const byOid = new Map(rows.map((row) => [row.oid, row]));
    const ownerName = (oid: number, depth = 0): string => {
      const row = byOid.get(oid);
      if (!row) return 'other relations (dropped or rewritten)';
      if (depth < 4 && row.index_of !== null) return ownerName(row.index_of, depth + 1);
      if (depth < 4 && row.toast_of !== null) return ownerName(row.toast_of, depth + 1);
      if (row.schema === 'pg_catalog' || row.schema === 'information_schema') return 'system catalogs';
      return `${row.schema}.${row.name}`;
    };
    return new Map(rows.map((row) => [row.filenode, ownerName(row.oid)]));
  }
}

/**
 * Waits for the sessions' counters to be published. PostgreSQL 15 publishes a session's counters when it goes idle, but
 * not twice within a second: a session that went idle sooner publishes 10 s later (PGSTAT_IDLE_INTERVAL), and a pool
 * keeps such sessions idle. So the wait is 11 s.
 */
export const SETTLE_SECONDS = 11;

export async function settleStats(): Promise<void> {
  await sleep(SETTLE_SECONDS * 1000);
}

/** `delta` less what the idle database does in the same time (`idle`, measured over `idle.seconds`), floored at 0. */
export function lessIdle(delta: Delta, idle: Delta): Delta {
  const share = idle.seconds > 0 ? delta.seconds / idle.seconds : 0;
  const minus = (value: number, idleValue: number): number => Math.max(0, value - idleValue * share);
  const database = Object.fromEntries(Object.entries(delta.database).map(([key, value]) => [key, minus(value, idle.database[key as keyof DatabaseCounters])])) as DatabaseCounters;
  const tables: Record<string, TableDelta> = {};
  for (const [name, table] of Object.entries(delta.tables)) {
    const base = idle.tables[name];
    if (!base) {
      tables[name] = table;
      continue;
    }
    const less = { ...table };
    for (const key of [...TABLE_KEYS, 'walBytes', 'walFpiBytes', 'walRecords'] as const) less[key] = minus(table[key], base[key]);
    tables[name] = less;
  }
  const wal = delta.wal && idle.wal
    ? {
      bytes: minus(delta.wal.bytes, idle.wal.bytes),
      fpiBytes: minus(delta.wal.fpiBytes, idle.wal.fpiBytes),
      records: minus(delta.wal.records, idle.wal.records),
      commitBytes: minus(delta.wal.commitBytes, idle.wal.commitBytes),
    }
    : delta.wal;
  return { seconds: delta.seconds, database, serverWalBytes: minus(delta.serverWalBytes, idle.serverWalBytes), wal, tables };
}

/** A growing table's storage: its live rows, their average size, and each B-tree index's depth and density. */
export type TableStorage = {
  table: string;
  rows: number;
  /** Average live tuple (header included), bytes. */
  rowBytes: number;
  deadRows: number;
  /** Heap, indexes, TOAST. */
  totalBytes: number;
  indexes: { name: string; bytes: number; entries: number; level: number; leafPages: number; leafDensity: number }[];
};

/**
 * VACUUM (ANALYZE)s the tables (so that each index's entry count is exact and dead rows are reclaimed), then reads
 * pgstattuple and pgstatindex. Null when those extensions are not available.
 */
export async function tableStorage(client: pg.Client, tables: readonly string[]): Promise<TableStorage[] | null> {
  try {
    await client.query('create extension if not exists pgstattuple');
  } catch {
    return null;
  }
  const result: TableStorage[] = [];
  for (const table of tables) {
    await client.query(`vacuum (analyze) ${table}`);
    const tuple = (await client.query<{ tuple_count: string; tuple_len: string; dead_tuple_count: string }>(`select * from pgstattuple($1::regclass)`, [table])).rows[0]!;
    const total = Number((await client.query<{ bytes: string }>('select pg_total_relation_size($1::regclass) as bytes', [table])).rows[0]?.bytes ?? 0);
    const { rows: indexRows } = await client.query<{ name: string; bytes: string; entries: string; level: number; leaf_pages: string; density: number }>(
      `select i.indexrelid::regclass::text as name, pg_relation_size(i.indexrelid) as bytes, greatest(c.reltuples, 0)::bigint as entries,
         s.tree_level as level, s.leaf_pages, s.avg_leaf_density as density
       from pg_index i join pg_class c on c.oid = i.indexrelid join pg_am a on a.oid = c.relam,
         lateral pgstatindex(i.indexrelid::regclass) s
       where i.indrelid = $1::regclass and a.amname = 'btree'
       order by pg_relation_size(i.indexrelid) desc`,
      [table],
    );
    const rows = Number(tuple.tuple_count);
    result.push({
      table,
      rows,
      rowBytes: rows > 0 ? Number(tuple.tuple_len) / rows : 0,
      deadRows: Number(tuple.dead_tuple_count),
      totalBytes: total,
      indexes: indexRows.map((row) => ({
        name: row.name,
        bytes: Number(row.bytes),
        entries: Number(row.entries),
        level: Number(row.level),
        leafPages: Number(row.leaf_pages),
        leafDensity: Number(row.density),
      })),
    });
  }
  return result;
}
