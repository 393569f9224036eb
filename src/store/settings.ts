import type { Kysely } from 'kysely';
import type { Schema } from './schema.ts';

export async function readSetting(db: Kysely<Schema>, name: string): Promise<string | undefined> {
  const row = await db.selectFrom('installation_settings').select('value').where('name', '=', name).executeTakeFirst();
  return row?.value;
}

/** Stores a setting unless one is there already (another process may be first); returns the value that holds. */
export async function settleSetting(db: Kysely<Schema>, name: string, value: string): Promise<string> {
  await db.insertInto('installation_settings').values({ name, value }).onConflict((oc) => oc.column('name').doNothing()).execute();
  return (await readSetting(db, name))!;
}
