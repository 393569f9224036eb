/**
 * Loaded into a service process by bench/scaling.ts (`node --import bench/lib/scaling-statements.ts …`): counts the
 * statements the process sends to PostgreSQL, by what they touch, so that the benchmark can say how many statements an
 * event costs. PostgreSQL's own per-statement counter (pg_stat_statements) needs a server restart to load; this counts
 * at the client instead: every `query` of node-postgres (Kysely, pg-boss on the service's executor, BEGIN and COMMIT
 * included). It changes nothing else: the counters are incremented and the call goes on as before.
 *
 * On SIGUSR2 the process writes its counts to SCALING_STATEMENTS_FILE (JSON, see StatementCounts), synchronously.
 */
import fs from 'node:fs';
import pg from 'pg';

export type StatementKind = 'transaction' | 'pgBoss' | 'outbox' | 'other';

export type StatementCounts = {
  /** How many times SIGUSR2 was answered (the benchmark waits for it to move). */
  signals: number;
  total: number;
  /** BEGIN/COMMIT/ROLLBACK/SAVEPOINT; pg-boss's own SQL (schema pgboss); the events and webhook tables; the rest. */
  byKind: Record<StatementKind, number>;
  /** Statements by their first 120 characters (whitespace collapsed), for the first 500 distinct beginnings. */
  byText: Record<string, number>;
};

const counts: StatementCounts = { signals: 0, total: 0, byKind: { transaction: 0, pgBoss: 0, outbox: 0, other: 0 }, byText: {} };
const byText = new Map<string, number>();
const MAX_TEXTS = 500;

const TRANSACTION = /^\s*(begin|commit|rollback|savepoint|release|start transaction)\b/i;
const PG_BOSS = /\bpgboss\b/i;
const OUTBOX = /\b(events|webhook_attempts|webhook_endpoints|event_day_counts)\b/i;

function kindOf(text: string): StatementKind {
  if (TRANSACTION.test(text)) return 'transaction';
  if (PG_BOSS.test(text)) return 'pgBoss';
  if (OUTBOX.test(text)) return 'outbox';
  return 'other';
}

function textOf(config: unknown): string {
  if (typeof config === 'string') return config;
  if (typeof config === 'object' && config !== null && 'text' in config && typeof config.text === 'string') return config.text;
  return '';
}

type Query = (this: unknown, ...args: unknown[]) => unknown;
const prototype = pg.Client.prototype as unknown as { query: Query };
const original = prototype.query;
prototype.query = function countedQuery(this: unknown, ...args: unknown[]): unknown {
  counts.total++;
  const text = textOf(args[0]);
  counts.byKind[kindOf(text)]++;
  const beginning = text.slice(0, 200).replace(/\s+/g, ' ').trim().slice(0, 120);
  const seen = byText.get(beginning);
  if (seen !== undefined) byText.set(beginning, seen + 1);
  else if (byText.size < MAX_TEXTS) byText.set(beginning, 1);
  return original.apply(this, args);
};

const file = process.env.SCALING_STATEMENTS_FILE;
if (file) {
  process.on('SIGUSR2', () => {
    counts.signals++;
    counts.byText = Object.fromEntries(byText);
    fs.writeFileSync(file, JSON.stringify(counts));
  });
}
