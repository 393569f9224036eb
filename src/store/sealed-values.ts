import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Schema } from './schema.ts';

/**
 * A column that holds sealed values (see src/services/sealed-values.ts for the list): its table, its table's primary
 * key (the order the re-sealing walks in), and the text before the sealed value when the column holds other values
 * too (`sealed:` in the kept Idempotency-Key answers).
 */
export type SealedColumnPlace = {
  table: string;
  column: string;
  primaryKey: readonly string[];
  prefix?: string;
};

/** A sealed value as the re-sealing reads it: its row's primary key values and the sealed text without its prefix. */
export type SealedRow = { key: string[]; sealed: string };

function prefixOf(place: SealedColumnPlace): string {
  return place.prefix ?? '';
}

/** The rows of the column that hold a sealed value. */
function holdsSealed(place: SealedColumnPlace): RawBuilder<unknown> {
  const column = sql.ref(place.column);
  return place.prefix ? sql`${column} like ${sql.lit(`${place.prefix}%`)}` : sql`${column} is not null`;
}

/** The key id of each sealed value, in SQL: `v2:<id>:…` names it; the older `v1:…` are the key `default`'s. */
function keyIdSql(place: SealedColumnPlace): RawBuilder<string> {
  const column = sql.ref(place.column);
  const start = prefixOf(place).length;
  return sql<string>`case when substr(${column}, ${sql.lit(start + 1)}, 3) = 'v2:' then split_part(substr(${column}, ${sql.lit(start + 4)}), ':', 1) else 'default' end`;
}

function keyColumns(place: SealedColumnPlace): RawBuilder<unknown> {
  return sql`(${sql.join(place.primaryKey.map((name) => sql.ref(name)))})`;
}

function after(place: SealedColumnPlace, cursor: readonly string[] | undefined): RawBuilder<unknown> {
  if (cursor === undefined) return sql`true`;
  return sql`${keyColumns(place)} > (${sql.join(cursor.map((value) => sql`${value}`))})`;
}

function keyOf(place: SealedColumnPlace, row: Record<string, unknown>): string[] {
  return place.primaryKey.map((name) => String(row[`key_${name}`]));
}

function selectKey(place: SealedColumnPlace): RawBuilder<unknown> {
  return sql.join(place.primaryKey.map((name) => sql`${sql.ref(name)}::text as ${sql.ref(`key_${name}`)}`));
}

/** The key ids of up to `limit` sealed values of the column after `cursor`, in primary key order (counting in chunks). */
export async function sealedKeyIds(
  db: Kysely<Schema>,
  place: SealedColumnPlace,
  cursor: readonly string[] | undefined,
  limit: number,
): Promise<{ key: string[]; keyId: string }[]> {
  const { rows } = await sql<Record<string, unknown>>`
    select ${selectKey(place)}, ${keyIdSql(place)} as key_id from ${sql.table(place.table)}
    where ${holdsSealed(place)} and ${after(place, cursor)}
    order by ${sql.join(place.primaryKey.map((name) => sql.ref(name)))}
    limit ${limit}`.execute(db);
  return rows.map((row) => ({ key: keyOf(place, row), keyId: String(row.key_id) }));
}

/**
 * Up to `limit` sealed values of the column, after `cursor`, that are not under the key `keyId`, locked for the
 * transaction `tx` that re-seals them.
 */
export async function sealedNotUnder(
  tx: Kysely<Schema>,
  place: SealedColumnPlace,
  keyId: string,
  cursor: readonly string[] | undefined,
  limit: number,
): Promise<SealedRow[]> {
  const { rows } = await sql<Record<string, unknown>>`
    select ${selectKey(place)}, ${sql.ref(place.column)} as sealed from ${sql.table(place.table)}
    where ${holdsSealed(place)} and ${keyIdSql(place)} <> ${keyId} and ${after(place, cursor)}
    order by ${sql.join(place.primaryKey.map((name) => sql.ref(name)))}
    limit ${limit}
    for update`.execute(tx);
  const prefix = prefixOf(place);
  return rows.map((row) => ({ key: keyOf(place, row), sealed: String(row.sealed).slice(prefix.length) }));
}

/** Replaces a sealed value, unless it changed since it was read (then the newer value, sealed under the current key, stays). */
export async function replaceSealed(tx: Kysely<Schema>, place: SealedColumnPlace, row: SealedRow, resealed: string): Promise<boolean> {
  const prefix = prefixOf(place);
  const matches = sql.join(place.primaryKey.map((name, index) => sql`${sql.ref(name)}::text = ${row.key[index]}`), sql` and `);
  const result = await sql`
    update ${sql.table(place.table)} set ${sql.ref(place.column)} = ${prefix + resealed}
    where ${matches} and ${sql.ref(place.column)} = ${prefix + row.sealed}`.execute(tx);
  return Number(result.numAffectedRows ?? 0) > 0;
}

/** How many sealed values of the column are under each key id not in `ids` (the start-up check of a dropped key). */
export async function sealedOutside(db: Kysely<Schema>, place: SealedColumnPlace, ids: readonly string[]): Promise<Map<string, number>> {
  const { rows } = await sql<{ key_id: string; n: number | string }>`
    select key_id, count(*) as n from (
      select ${keyIdSql(place)} as key_id from ${sql.table(place.table)} where ${holdsSealed(place)}
    ) sealed
    where key_id not in (${sql.join(ids.map((id) => sql`${id}`))})
    group by key_id`.execute(db);
  return new Map(rows.map((row) => [row.key_id, Number(row.n)]));
}

/** One sealed value under the key `keyId`, if any (to test that the ring's key of that id opens what it sealed). */
export async function oneSealedUnder(db: Kysely<Schema>, place: SealedColumnPlace, keyId: string): Promise<SealedRow | undefined> {
  const { rows } = await sql<Record<string, unknown>>`
    select ${selectKey(place)}, ${sql.ref(place.column)} as sealed from ${sql.table(place.table)}
    where ${holdsSealed(place)} and ${keyIdSql(place)} = ${keyId}
    limit 1`.execute(db);
  const row = rows[0];
  return row ? { key: keyOf(place, row), sealed: String(row.sealed).slice(prefixOf(place).length) } : undefined;
}
