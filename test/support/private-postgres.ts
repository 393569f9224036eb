import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

/**
 * A PostgreSQL server of the test's own, in a temporary folder on a free port, that a test may stop, restart and
 * cut connections of without touching the shared server: `initdb` and `pg_ctl` from the machine's PostgreSQL (as the
 * `postgres` user when the tests run as root, which initdb refuses to be). Trust authentication, fsync off.
 */
export type PrivatePostgres = {
  port: number;
  /** postgres://postgres@127.0.0.1:<port>/<database> */
  url: string;
  /** Stops the server (`fast`: sessions are terminated, as for a planned restart). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  /** pg_terminate_backend on every session of the test database, as an administrator (or a failover) would. */
  terminateConnections(): Promise<number>;
  /** Stops the server and removes its folder. */
  destroy(): Promise<void>;
};

/** The folder of initdb and pg_ctl: PG_BINDIR, else pg_config's, else the newest under /usr/lib/postgresql. */
async function binDir(): Promise<string | undefined> {
  if (process.env.PG_BINDIR) return process.env.PG_BINDIR;
  try {
    const { stdout } = await run('pg_config', ['--bindir']);
    const dir = stdout.trim();
    if (fs.existsSync(path.join(dir, 'initdb'))) return dir;
  } catch {
    // no pg_config on PATH
  }
  const root = '/usr/lib/postgresql';
  if (!fs.existsSync(root)) return undefined;
  const versions = fs.readdirSync(root).filter((name) => /^\d+$/.test(name)).sort((a, b) => Number(b) - Number(a));
  const found = versions.map((version) => path.join(root, version, 'bin')).find((dir) => fs.existsSync(path.join(dir, 'initdb')));
  return found;
}

/** Why a private server cannot be made here (no PostgreSQL binaries), or undefined when it can. */
export async function privatePostgresUnavailable(): Promise<string | undefined> {
  return (await binDir()) === undefined ? 'no initdb found (install PostgreSQL, or set PG_BINDIR)' : undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function startPrivatePostgres(database = 'gateway'): Promise<PrivatePostgres> {
  const bin = await binDir();
  if (bin === undefined) throw new Error('no initdb found (install PostgreSQL, or set PG_BINDIR)');
  const asRoot = process.getuid?.() === 0;
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-private-pg-'));
  const data = path.join(folder, 'data');
  const as = (command: string, args: string[]) => (asRoot ? run('runuser', ['-u', 'postgres', '--', path.join(bin, command), ...args]) : run(path.join(bin, command), args));
  if (asRoot) await run('chown', ['postgres', folder]);
  await as('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '--no-instructions']);
  const port = await freePort();
  const options = `-p ${port} -k ${folder} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`;
  const start = async () => {
    await as('pg_ctl', ['-D', data, '-o', options, '-l', path.join(folder, 'server.log'), '-w', '-t', '60', 'start']);
  };
  const stop = async (mode: 'fast' | 'immediate' = 'fast') => {
    await as('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
  };
  const admin = async <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres` });
    client.on('error', () => undefined);
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  try {
    await start();
    await admin((client) => client.query(`create database ${database}`));
  } catch (error) {
    await stop('immediate').catch(() => undefined);
    fs.rmSync(folder, { recursive: true, force: true });
    throw error;
  }
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/${database}`,
    stop,
    start,
    async terminateConnections() {
      return admin(async (client) => {
        const result = await client.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [database]);
        return result.rowCount ?? 0;
      });
    },
    async destroy() {
      await stop('immediate').catch(() => undefined);
      fs.rmSync(folder, { recursive: true, force: true });
    },
  };
}
