import pg from 'pg';

/** The admin connection of the benchmarks' scratch databases. */
const ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** One statement on the admin connection (create or drop a scratch database). */
export async function admin(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** The URL of a database on the admin connection's server; its sessions carry `applicationName` when given. */
export function scratchDatabaseUrl(name: string, applicationName?: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  if (applicationName) url.searchParams.set('application_name', applicationName);
  return url.toString();
}
