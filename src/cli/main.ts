import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.ts';
import { createPlatform, issueApiKey } from '../services/platforms.ts';
import { openDatabase, type Database } from '../store/database.ts';
import { DataDirLockedError } from '../store/data-dir-lock.ts';
import { isUuid } from '../store/ids.ts';
import { migrate } from '../store/migrate.ts';
import { findPlatform, listApiKeys, listPlatforms, revokeApiKey } from '../store/platforms.ts';

const USAGE = `Usage: npm run cli -- <command> [options] [--json]

Commands:
  migrate                               apply database migrations
  create-platform --name <name>         create a platform and its first API key (shown once)
  list-platforms                        list platforms
  issue-key --platform <platformId>     issue another API key for a platform (shown once)
  list-keys --platform <platformId>     list a platform's keys (display prefix and state, never the key)
  revoke-key --key <keyId>              revoke a key; it stops working within API_KEY_CACHE_SECONDS

Uses DATABASE_URL when set, else the embedded database in DATA_DIR. One process at a time may open the
embedded database: stop the service first, or run both on PostgreSQL (the same DATABASE_URL).
--json prints one JSON object per command.`;

class UsageError extends Error {}

/** The pid in the data folder's lock file, if it names one. */
function lockHolder(dataDir: string): number | undefined {
  try {
    const pid = Number.parseInt(fs.readFileSync(path.join(dataDir, 'ebrc-gateway.lock'), 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Whether that pid runs the service (src/main.ts), as far as /proc tells; undefined where it cannot tell. */
function isTheService(pid: number): boolean | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').some((arg) => arg.endsWith(path.join('src', 'main.ts')));
  } catch {
    return undefined;
  }
}

/**
 * What to do when the embedded database is held (by the running service, usually): the CLI has no way yet to ask
 * the service to run a command (an admin API would be that way), so it names the folder, the holder and the options.
 */
function heldMessage(command: string, dataDir: string): string {
  const pid = lockHolder(dataDir);
  const service = pid === undefined ? undefined : isTheService(pid);
  const holder =
    pid === undefined ? 'another process' : service === true ? `the running service (pid ${pid})` : service === false ? `another process (pid ${pid})` : `another process (pid ${pid}; the service, if it runs)`;
  const stop =
    pid === undefined
      ? 'stop the service'
      : service === false
        ? `stop that process (kill -TERM ${pid})`
        : `stop the service (kill -TERM ${pid}, or Ctrl-C where \`npm start\` runs)`;
  const again = process.argv
    .slice(2)
    .map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`))
    .join(' ');
  const keys =
    command === 'create-platform' || command === 'issue-key' || command === 'revoke-key'
      ? '\nA key issued or revoked while the service is stopped takes effect when it starts again.'
      : '';
  return (
    `Cannot run "${command}": the embedded database in ${dataDir} (DATA_DIR) is held by ${holder}, and only one process at a time may open it.\n` +
    'What to do:\n' +
    `  - ${stop}, run \`npm run cli -- ${again}\` again, then start the service (\`npm start\`);\n` +
    '  - or run the service and the CLI on PostgreSQL: the same DATABASE_URL for both, and the CLI works while the service runs;\n' +
    '  - or, for a separate embedded database, set DATA_DIR to another folder (it has none of the service\'s platforms or keys).' +
    keys
  );
}

/** The arguments are right but name something that is not there: not a usage problem. */
class NotFoundError extends Error {}

type Output = { text: string; json: Record<string, unknown> };

function required(value: string | undefined, flag: string): string {
  if (!value) throw new UsageError(`${flag} is required`);
  return value;
}

function requiredId(value: string | undefined, flag: string): string {
  const id = required(value, flag);
  if (!isUuid(id)) throw new UsageError(`${flag} must be an id (a UUID), got "${id}"`);
  return id;
}

type Values = { name?: string; platform?: string; key?: string };
type Args = { name: string; platformId: string; keyId: string };

/**
 * Checks the command and its options before anything is opened, so that a usage mistake is reported
 * as one (exit 2) even while the service holds the embedded database.
 */
function checkUsage(command: string, values: Values): Args {
  const args: Args = { name: '', platformId: '', keyId: '' };
  switch (command) {
    case 'migrate':
    case 'list-platforms':
      return args;
    case 'create-platform':
      args.name = required(values.name, '--name').trim();
      if (args.name.length === 0 || args.name.length > 200) throw new UsageError('--name must be 1 to 200 characters');
      return args;
    case 'issue-key':
    case 'list-keys':
      args.platformId = requiredId(values.platform, '--platform');
      return args;
    case 'revoke-key':
      args.keyId = requiredId(values.key, '--key');
      return args;
    default:
      throw new UsageError(`Unknown command "${command}"`);
  }
}

async function run(command: string, args: Args, database: Database): Promise<Output> {
  const db = database.db;
  switch (command) {
    case 'migrate': {
      const applied = await migrate(database);
      return { text: applied.length ? `Applied: ${applied.join(', ')}` : 'Nothing to apply; the database is up to date.', json: { applied } };
    }
    case 'create-platform': {
      const name = args.name;
      await migrate(database);
      const { platform, apiKey, key } = await createPlatform(db, name);
      return {
        text: `Created platform ${platform.id} (${platform.name}).\nAPI key (shown once; it is stored only as a hash):\n\n  ${apiKey}\n`,
        json: { platform: { id: platform.id, name: platform.name, createdAt: platform.createdAt }, keyId: key.id, apiKey },
      };
    }
    case 'list-platforms': {
      const platforms = await listPlatforms(db);
      return {
        text: platforms.length ? platforms.map((p) => `${p.id}  ${p.name}`).join('\n') : 'No platforms yet.',
        json: { platforms },
      };
    }
    case 'issue-key': {
      const platformId = args.platformId;
      if (!(await findPlatform(db, platformId))) throw new NotFoundError(`No platform ${platformId}`);
      const { apiKey, key } = await issueApiKey(db, platformId);
      return {
        text: `Issued key ${key.id} for platform ${platformId}.\nAPI key (shown once):\n\n  ${apiKey}\n`,
        json: { keyId: key.id, platformId, displayPrefix: key.displayPrefix, apiKey },
      };
    }
    case 'list-keys': {
      const platformId = args.platformId;
      if (!(await findPlatform(db, platformId))) throw new NotFoundError(`No platform ${platformId}`);
      const keys = await listApiKeys(db, platformId);
      return {
        text: keys
          .map((k) => `${k.id}  ${k.displayPrefix}…  created ${k.createdAt.toISOString()}  ${k.revokedAt ? `revoked ${k.revokedAt.toISOString()}` : 'active'}`)
          .join('\n') || 'No keys.',
        json: { keys },
      };
    }
    case 'revoke-key': {
      const keyId = args.keyId;
      const revoked = await revokeApiKey(db, keyId);
      if (!revoked) throw new NotFoundError(`No key ${keyId}`);
      const { alreadyRevoked, ...key } = revoked;
      const when = key.revokedAt?.toISOString();
      return {
        text: alreadyRevoked
          ? `Key ${key.id} (${key.displayPrefix}…) was already revoked at ${when}; nothing changed.`
          : `Revoked key ${key.id} (${key.displayPrefix}…) at ${when}.`,
        json: { key, alreadyRevoked },
      };
    }
    default:
      throw new UsageError(`Unknown command "${command}"`);
  }
}

async function main(): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        json: { type: 'boolean', default: false },
        name: { type: 'string' },
        platform: { type: 'string' },
        key: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  const command = positionals[0];
  if (values.help || !command) {
    process.stdout.write(`${USAGE}\n`);
    return command || values.help ? 0 : 2;
  }
  const report = (error: string, exitCode: number) => {
    if (values.json) process.stdout.write(`${JSON.stringify({ error })}\n`);
    else process.stderr.write(`${error}\n`);
    return exitCode;
  };
  let database: Database | undefined;
  let dataDir: string | undefined;
  try {
    const args = checkUsage(command, values);
    const config = loadConfig();
    dataDir = config.dataDir;
    database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
    const output = await run(command, args, database);
    process.stdout.write(values.json ? `${JSON.stringify(output.json)}\n` : `${output.text}\n`);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) return report(values.json ? error.message : `${error.message}\n\n${USAGE}`, 2);
    if (error instanceof DataDirLockedError && dataDir !== undefined) return report(heldMessage(command, dataDir), 1);
    if (error instanceof ConfigError || error instanceof DataDirLockedError || error instanceof NotFoundError) return report(error.message, 1);
    return report(`Failed: ${error instanceof Error ? error.message : String(error)}`, 1);
  } finally {
    await database?.close();
  }
}

process.exitCode = await main();
