import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { ConfigError, DEFAULT_KEY_ID, loadConfig, type Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { readServiceFile, type ServiceFile } from '../service-file.ts';
import { readAdminTokenFile } from '../services/admin-token.ts';
import { createConsoleUser, listConsoleUsers, newUserProblems, updateConsoleUser, type ConsoleUser, type ConsoleUserChange } from '../services/console-users.ts';
import { isRole, type ConsoleRole } from '../domain/console-roles.ts';
import { encryptionStatus, type EncryptionStatus } from '../services/sealed-values.ts';
import { chainName, cliSource, verifyAuditChains, type AuditVerification } from '../services/audit.ts';
import {
  createPlatformWithKey,
  issuePlatformKey,
  listPlatformKeys,
  listPlatformsPage,
  requireApiKey,
  setPlatformRequiresTwoFactor,
  revokePlatformKey,
  type ApiKeyView,
  type IssuedKeyView,
  type PlatformView,
} from '../services/platforms.ts';
import { openDatabase, type Database } from '../store/database.ts';
import { DataDirLockedError } from '../store/data-dir-lock.ts';
import { isUuid } from '../store/ids.ts';
import { migrate, MIGRATION_LOCK_WAITS, SchemaMismatchError } from '../store/migrate.ts';
import { migrateJobQueue } from '../jobs/boss.ts';
import { restoreEmbedded, RestoreError } from '../store/embedded-backup.ts';

const USAGE = `Usage: npm run cli -- <command> [options] [--json]

Commands:
  migrate                               apply database migrations (also: npm run migrate)
  create-platform --name <name>         create a platform and its first API key (shown once)
  list-platforms                        list platforms, newest first
  issue-key --platform <platformId>     issue another API key for a platform (shown once)
  list-keys --platform <platformId>     list a platform's keys (display prefix, last use and state, never the key)
  revoke-key --key <keyId>              revoke a key
  create-user --platform <platformId> --email <email> [--role owner|operator|viewer] [--password-stdin]
                                        create a console user (the password, at least 12 characters, is read from
                                        stdin with --password-stdin, else asked for in the terminal; without --role
                                        the platform's first user is its owner, the others operators)
  list-users --platform <platformId>    list a platform's console users
  disable-user --user <userId>          disable a console user (its console sessions end at once)
  enable-user --user <userId>           enable a disabled console user again
  set-role --user <userId> --role owner|operator|viewer
                                        change a console user's role
  reset-two-factor --user <userId>      forget a console user's second factor and recovery codes (a lost phone);
                                        its sessions end
  require-two-factor --platform <platformId> [--off]
                                        require two-factor sign-in of every console user of the platform (--off:
                                        each user chooses)
  backup <file>                         copy the embedded database to a new file, consistent even while the service
                                        runs (through its admin API then); on PostgreSQL use pg_dump (README, "Backups")
  restore <file>                        replace the embedded database by a backup, the service stopped (the replaced
                                        database is kept beside it, renamed); on PostgreSQL use pg_restore
  encryption-status                     how many sealed values use each key of the encryption key ring
                                        (ENCRYPTION_KEYS): an old key can be dropped once it counts 0
  audit-verify                          recompute every audit trail chain: exit 0 with a summary, exit 1 naming the
                                        first entry that does not verify (edited or deleted); the database directly

Uses DATABASE_URL when set, else the embedded database in DATA_DIR. While the service runs on the embedded
database (which one process at a time may open), every command goes through its admin API instead, with the
admin token from DATA_DIR/admin-token (or ADMIN_TOKEN). --json prints one JSON object per command.`;

class UsageError extends Error {}

const HELP_HINT = '`npm run cli -- --help` lists every command and its options.';

/**
 * What a usage mistake prints: the mistake, then only the command's own lines of USAGE (or the command names, for an
 * unknown one), so that the message is not buried under the whole usage text.
 */
export function usageMistake(message: string, command: string | undefined): string {
  const lines = USAGE.split('\n');
  const start = command === undefined ? -1 : lines.findIndex((line) => line === `  ${command}` || line.startsWith(`  ${command} `));
  if (start === -1) {
    const commands = lines.flatMap((line) => /^ {2}([a-z][a-z-]*)(?: |$)/.exec(line)?.[1] ?? []);
    return `${message}\nCommands: ${commands.join(', ')}.\n${HELP_HINT}`;
  }
  // The command and its options, without the description that follows them in the usage text.
  const syntax = lines[start]!.trim().split(/ {2,}/)[0]!;
  return `${message}\nUsage: npm run cli -- ${syntax}\n${HELP_HINT}`;
}

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
 * What to do when the embedded database is held and the holder cannot be asked through an admin API: another
 * process than the service, or a service that is not listening (yet). Names the folder, the holder and the options.
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
  const starting =
    service === false ? '' : '\nA running service is reached through its admin API once it listens (DATA_DIR/service.json): if it is starting, wait and run the command again.';
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
    starting +
    keys
  );
}

/** The arguments are right but name something that is not there: not a usage problem. */
class NotFoundError extends Error {}

/** A failure whose message is the whole story (the service's answer, the admin API not reachable): exit 1. */
class CommandError extends Error {}

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

type Values = { name?: string; platform?: string; key?: string; user?: string; email?: string; role?: string; off?: boolean; 'password-stdin'?: boolean };
type Args = {
  name: string;
  platformId: string;
  keyId: string;
  userId: string;
  email: string;
  password: string;
  file: string;
  role: ConsoleRole | undefined;
  off: boolean;
};

function roleOf(value: string | undefined, flag: string): ConsoleRole {
  const role = required(value, flag);
  if (!isRole(role)) throw new UsageError(`${flag} must be one of owner, operator, viewer; got "${role}"`);
  return role;
}

/** Reads the password: all of stdin (one final newline dropped), or typed at a prompt that does not echo it. */
async function readPassword(fromStdin: boolean): Promise<string> {
  if (fromStdin) {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
  }
  if (!process.stdin.isTTY) throw new UsageError('give the password on stdin with --password-stdin (or run the command in a terminal to be asked for it)');
  const first = await prompt('Password (at least 12 characters): ');
  const second = await prompt('The same password again: ');
  if (first !== second) throw new UsageError('the two passwords differ');
  return first;
}

/** One line typed in the terminal, not echoed. */
function prompt(question: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin;
    process.stderr.write(question);
    let typed = '';
    const finish = (error?: Error) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      if (error) reject(error);
      else resolve(typed);
    };
    const onData = (chunk: Buffer) => {
      for (const character of chunk.toString('utf8')) {
        if (character === '\r' || character === '\n') return finish();
        if (character === '\u0003') return finish(new UsageError('cancelled'));
        if (character === '\u007f' || character === '\b') typed = [...typed].slice(0, -1).join('');
        else typed += character;
      }
    };
    stdin.setRawMode(true);
    stdin.resume();
    stdin.on('data', onData);
  });
}

/**
 * Checks the command and its options before anything is opened, so that a usage mistake is reported
 * as one (exit 2) even while the service holds the embedded database.
 */
async function checkUsage(command: string, values: Values, positionals: string[]): Promise<Args> {
  const args: Args = { name: '', platformId: '', keyId: '', userId: '', email: '', password: '', file: '', role: undefined, off: false };
  switch (command) {
    case 'backup':
    case 'restore':
      args.file = path.resolve(required(positionals[1], `${command} <file>: the file`));
      if (command === 'backup' && fs.existsSync(args.file)) throw new UsageError(`${args.file} already exists: give the name of a new file`);
      if (command === 'restore' && !fs.statSync(args.file, { throwIfNoEntry: false })?.isFile()) throw new UsageError(`${args.file} is not a file`);
      return args;
    case 'migrate':
    case 'list-platforms':
    case 'encryption-status':
    case 'audit-verify':
      return args;
    case 'create-platform':
      args.name = required(values.name, '--name').trim();
      if (args.name.length === 0 || args.name.length > 200) throw new UsageError('--name must be 1 to 200 characters');
      return args;
    case 'issue-key':
    case 'list-keys':
    case 'list-users':
      args.platformId = requiredId(values.platform, '--platform');
      return args;
    case 'revoke-key':
      args.keyId = requiredId(values.key, '--key');
      return args;
    case 'disable-user':
    case 'enable-user':
    case 'reset-two-factor':
      args.userId = requiredId(values.user, '--user');
      return args;
    case 'set-role':
      args.userId = requiredId(values.user, '--user');
      args.role = roleOf(values.role, '--role');
      return args;
    case 'require-two-factor':
      args.platformId = requiredId(values.platform, '--platform');
      args.off = values.off === true;
      return args;
    case 'create-user': {
      args.platformId = requiredId(values.platform, '--platform');
      args.email = required(values.email, '--email');
      if (values.role !== undefined) args.role = roleOf(values.role, '--role');
      // The e-mail first, so that nobody types a password for a command that fails anyway.
      if (newUserProblems({ email: args.email, password: '' }).some((problem) => problem.path === '/email')) {
        throw new UsageError(`--email must be an e-mail address of at most 254 characters, got "${args.email}"`);
      }
      args.password = await readPassword(values['password-stdin'] === true);
      const problem = newUserProblems({ email: args.email, password: args.password })[0];
      if (problem) throw new UsageError(`the ${problem.message}`);
      return args;
    }
    default:
      throw new UsageError(`Unknown command "${command}"`);
  }
}

/**
 * What the commands need, whichever way they reach it: the database itself, or the admin API of the service that
 * holds it. Both answer with the admin API's shapes, so that every command prints the same either way.
 */
type Operator = {
  migrate(): Promise<Output>;
  createPlatform(name: string): Promise<{ platform: PlatformView; apiKey: string; keyId: string }>;
  listPlatforms(page: number): Promise<Page<PlatformView>>;
  issueKey(platformId: string): Promise<IssuedKeyView>;
  listKeys(platformId: string, page: number): Promise<Page<ApiKeyView>>;
  /** The key, revoked now or before. */
  revokeKey(keyId: string): Promise<{ key: ApiKeyView; alreadyRevoked: boolean }>;
  createUser(platformId: string, email: string, password: string, role: ConsoleRole | undefined): Promise<ConsoleUser>;
  listUsers(platformId: string, page: number): Promise<Page<ConsoleUser>>;
  updateUser(userId: string, change: ConsoleUserChange): Promise<ConsoleUser>;
  setRequireTwoFactor(platformId: string, required: boolean): Promise<PlatformView>;
  /** Writes a consistent copy of the embedded database to `file`; its size in bytes. */
  backup(file: string): Promise<number>;
  encryptionStatus(): Promise<EncryptionStatus>;
  verifyAudit(): Promise<AuditVerification>;
};

type Page<T> = { items: T[]; meta: { totalPages: number } };

/** Every page of a list, 100 at a time. */
async function everything<T>(page: (page: number) => Promise<Page<T>>): Promise<T[]> {
  const items: T[] = [];
  for (let number = 1; ; number++) {
    const answer = await page(number);
    items.push(...answer.items);
    if (number >= answer.meta.totalPages) return items;
  }
}

const PAGE = { limit: 100 };

/** Which thing an AppError `not_found` was about, as the CLI says it. */
function notFoundAs<T>(what: string, work: () => Promise<T>): Promise<T> {
  return work().catch((error: unknown) => {
    if (error instanceof AppError && error.code === 'not_found') throw new NotFoundError(what);
    throw error;
  });
}

/** The database itself: the services the admin API calls. */
function databaseOperator(database: Database, ringIds: readonly string[]): Operator {
  const db = database.db;
  return {
    async migrate() {
      const applied = await migrate(database, undefined, {
        ...MIGRATION_LOCK_WAITS,
        onRetry: (attempt, reason) => process.stderr.write(`migrating: ${reason}; rolled back, trying again (attempt ${attempt})\n`),
      });
      await migrateJobQueue(database);
      return { text: applied.length ? `Applied: ${applied.join(', ')}` : 'Nothing to apply; the database is up to date.', json: { applied } };
    },
    async createPlatform(name) {
      await migrate(database);
      return createPlatformWithKey(db, name, cliSource());
    },
    listPlatforms: (page) => listPlatformsPage(db, { page, ...PAGE }),
    issueKey: (platformId) => notFoundAs(`No platform ${platformId}`, () => issuePlatformKey(db, platformId, cliSource())),
    listKeys: (platformId, page) => notFoundAs(`No platform ${platformId}`, () => listPlatformKeys(db, platformId, { page, ...PAGE })),
    revokeKey: (keyId) =>
      notFoundAs(`No key ${keyId}`, async () => {
        try {
          // No authenticator in this process to tell: the service's cache lets the key go within API_KEY_CACHE_SECONDS.
          return { key: await revokePlatformKey(db, keyId, cliSource()), alreadyRevoked: false };
        } catch (error) {
          if (error instanceof AppError && error.code === 'api_key_already_revoked') return { key: await requireApiKey(db, keyId), alreadyRevoked: true };
          throw error;
        }
      }),
    createUser: (platformId, email, password, role) => notFoundAs(`No platform ${platformId}`, () => createConsoleUser(db, platformId, { email, password, role }, cliSource())),
    listUsers: (platformId, page) => notFoundAs(`No platform ${platformId}`, () => listConsoleUsers(db, platformId, { page, ...PAGE })),
    updateUser: (userId, change) => notFoundAs(`No console user ${userId}`, () => updateConsoleUser(db, userId, change, cliSource())),
    setRequireTwoFactor: (platformId, required) => notFoundAs(`No platform ${platformId}`, () => setPlatformRequiresTwoFactor(db, platformId, required, cliSource())),
    verifyAudit: () => verifyAuditChains(db),
    async backup(file) {
      if (database.backup === undefined) throw new CommandError(POSTGRES_BACKUP);
      return writeBackup(file, (await database.backup()).stream());
    },
    encryptionStatus: () => encryptionStatus(db, ringIds[0]!, ringIds),
  };
}

const POSTGRES_BACKUP =
  'DATABASE_URL is set: back up PostgreSQL with pg_dump (pg_dump --format=custom --file <file> "$DATABASE_URL") and restore with pg_restore; README, "Backups".';

/** Writes the backup to a new file (readable by its owner only: it holds the sealed credentials), whole or not at all. */
async function writeBackup(file: string, content: ReadableStream<Uint8Array>): Promise<number> {
  const partial = `${file}.partial`;
  try {
    await pipeline(Readable.fromWeb(content as never), fs.createWriteStream(partial, { flags: 'wx', mode: 0o600 }));
    fs.renameSync(partial, file);
  } catch (error) {
    fs.rmSync(partial, { force: true });
    throw error;
  }
  return fs.statSync(file).size;
}

type Answer = { status: number; body: any };

/** The admin API of the service that holds the embedded database (DATA_DIR/service.json names it). */
function adminApiOperator(running: ServiceFile, token: string): Operator {
  const where = `the admin API of the running service (pid ${running.pid}) at ${running.url}/admin/v1`;
  async function call(method: string, url: string, body?: unknown): Promise<Answer> {
    let response: Response;
    try {
      response = await fetch(`${running.url}/admin/v1${url}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (error) {
      throw new CommandError(`Could not reach ${where}: ${(error as Error).message}. Is the service still running?`);
    }
    const text = await response.text();
    let parsed: any;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (response.status === 401) {
      throw new CommandError(
        `${where} refused the admin token (${parsed?.code ?? response.status}). The CLI sends ADMIN_TOKEN when set, else the token in ${running.adminTokenFile ?? 'DATA_DIR/admin-token'}: set ADMIN_TOKEN to the service's.`,
      );
    }
    return { status: response.status, body: parsed };
  }
  /** The answer's body when it has this status; a 404 is `notFound`; anything else fails with the service's words. */
  function expect(answer: Answer, status: number, notFound: string): any {
    if (answer.status === status) return answer.body;
    if (answer.status === 404 && answer.body?.code === 'not_found') throw new NotFoundError(notFound);
    const detail = typeof answer.body?.detail === 'string' ? answer.body.detail : `${where} answered ${answer.status}`;
    throw new CommandError(detail);
  }
  const query = (page: number) => `?page=${page}&limit=${PAGE.limit}`;
  return {
    async migrate() {
      return { text: `Nothing to apply: the running service (pid ${running.pid}) applied every migration when it started.`, json: { applied: [] } };
    },
    async createPlatform(name) {
      const created = expect(await call('POST', '/platforms', { name }), 201, 'No platform');
      // The platform's one key so far: its id, as the CLI shows it.
      const keys = expect(await call('GET', `/platforms/${created.platform.id}/api-keys?limit=1`), 200, `No platform ${created.platform.id}`);
      return { platform: created.platform, apiKey: created.apiKey, keyId: keys.items[0].id };
    },
    listPlatforms: async (page) => expect(await call('GET', `/platforms${query(page)}`), 200, 'No platforms'),
    issueKey: async (platformId) => expect(await call('POST', `/platforms/${platformId}/api-keys`, {}), 201, `No platform ${platformId}`),
    listKeys: async (platformId, page) => expect(await call('GET', `/platforms/${platformId}/api-keys${query(page)}`), 200, `No platform ${platformId}`),
    async revokeKey(keyId) {
      const answer = await call('POST', `/api-keys/${keyId}/revoke`, {});
      if (answer.status === 409 && answer.body?.code === 'api_key_already_revoked') {
        return { key: expect(await call('GET', `/api-keys/${keyId}`), 200, `No key ${keyId}`), alreadyRevoked: true };
      }
      return { key: expect(answer, 200, `No key ${keyId}`), alreadyRevoked: false };
    },
    createUser: async (platformId, email, password, role) =>
      expect(await call('POST', `/platforms/${platformId}/users`, { email, password, ...(role === undefined ? {} : { role }) }), 201, `No platform ${platformId}`),
    listUsers: async (platformId, page) => expect(await call('GET', `/platforms/${platformId}/users${query(page)}`), 200, `No platform ${platformId}`),
    updateUser: async (userId, change) => expect(await call('PATCH', `/users/${userId}`, change), 200, `No console user ${userId}`),
    setRequireTwoFactor: async (platformId, required) =>
      expect(await call('PATCH', `/platforms/${platformId}`, { requireTwoFactor: required }), 200, `No platform ${platformId}`),
    async verifyAudit() {
      throw new CommandError(
        `The running service (pid ${running.pid}) holds the embedded database: stop it, then run audit-verify (it reads the database itself, not through the service).`,
      );
    },
    async backup(file) {
      let response: Response;
      try {
        // No time limit: a large database takes a while to copy and send.
        response = await fetch(`${running.url}/admin/v1/backup`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
      } catch (error) {
        throw new CommandError(`Could not reach ${where}: ${(error as Error).message}. Is the service still running?`);
      }
      if (response.status !== 200 || response.body === null) {
        const text = await response.text();
        let detail: string | undefined;
        try {
          detail = JSON.parse(text).detail;
        } catch {
          detail = undefined;
        }
        throw new CommandError(typeof detail === 'string' ? detail : `${where} answered ${response.status}`);
      }
      return writeBackup(file, response.body);
    },
    encryptionStatus: async () => expect(await call('GET', '/encryption-status'), 200, 'No encryption status'),
  };
}

/**
 * The admin API of the service holding the embedded database, when one does: its service.json names a live process
 * that holds the data folder's lock. Undefined when the holder is something else (or a service not listening yet).
 */
function runningService(config: Config): ServiceFile | undefined {
  const running = readServiceFile(config.dataDir);
  if (!running || running.pid !== lockHolder(config.dataDir)) return undefined;
  try {
    process.kill(running.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return undefined;
  }
  return running;
}

function adminTokenFor(config: Config, running: ServiceFile): string {
  if (config.adminToken) return config.adminToken;
  if (running.adminTokenFile === null) {
    throw new CommandError(
      `The running service (pid ${running.pid}) holds the embedded database in ${config.dataDir} and takes its admin token from ADMIN_TOKEN: run the CLI with the same ADMIN_TOKEN.`,
    );
  }
  try {
    return readAdminTokenFile(running.adminTokenFile);
  } catch (error) {
    throw new CommandError(`Could not read the admin token of the running service (pid ${running.pid}) from ${running.adminTokenFile}: ${(error as Error).message}`);
  }
}

/** The key as the CLI prints it (the shape its --json has always had, with when it was last used). */
function keyOutput(key: ApiKeyView) {
  return { id: key.id, platformId: key.platformId, displayPrefix: key.prefix, createdAt: key.createdAt, lastUsedAt: key.lastUsedAt, revokedAt: key.revokedAt };
}

function userLine(user: ConsoleUser): string {
  const twoFactor = user.twoFactor.enrolled ? 'two-factor' : 'password only';
  return `${user.id}  ${user.email}  ${user.role}  ${user.disabled ? 'disabled' : 'active'}  ${twoFactor}  created ${user.createdAt}`;
}

async function run(command: string, args: Args, operator: Operator): Promise<Output> {
  switch (command) {
    case 'migrate':
      return operator.migrate();
    case 'create-platform': {
      const { platform, apiKey, keyId } = await operator.createPlatform(args.name);
      return {
        text: `Created platform ${platform.id} (${platform.name}).\nAPI key (shown once; it is stored only as a hash):\n\n  ${apiKey}\n`,
        json: { platform: { id: platform.id, name: platform.name, createdAt: platform.createdAt }, keyId, apiKey },
      };
    }
    case 'list-platforms': {
      const platforms = await everything((page) => operator.listPlatforms(page));
      return {
        text: platforms.length ? platforms.map((p) => `${p.id}  ${p.name}`).join('\n') : 'No platforms yet.',
        json: { platforms: platforms.map((p) => ({ id: p.id, name: p.name, createdAt: p.createdAt })) },
      };
    }
    case 'issue-key': {
      const platformId = args.platformId;
      const issued = await operator.issueKey(platformId);
      return {
        text: `Issued key ${issued.id} for platform ${platformId}.\nAPI key (shown once):\n\n  ${issued.apiKey}\n`,
        json: { keyId: issued.id, platformId, displayPrefix: issued.prefix, apiKey: issued.apiKey },
      };
    }
    case 'list-keys': {
      const keys = await everything((page) => operator.listKeys(args.platformId, page));
      return {
        text:
          keys
            .map(
              (k) =>
                `${k.id}  ${k.prefix}…  created ${k.createdAt}  last used ${k.lastUsedAt ?? 'never'}  ${k.revokedAt ? `revoked ${k.revokedAt}` : 'active'}`,
            )
            .join('\n') || 'No keys.',
        json: { keys: keys.map(keyOutput) },
      };
    }
    case 'revoke-key': {
      const { key, alreadyRevoked } = await operator.revokeKey(args.keyId);
      return {
        text: alreadyRevoked
          ? `Key ${key.id} (${key.prefix}…) was already revoked at ${key.revokedAt}; nothing changed.`
          : `Revoked key ${key.id} (${key.prefix}…) at ${key.revokedAt}.`,
        json: { key: keyOutput(key), alreadyRevoked },
      };
    }
    case 'create-user': {
      const user = await operator.createUser(args.platformId, args.email, args.password, args.role);
      return { text: `Created console user ${user.id} (${user.email}, ${user.role}) for platform ${user.platformId}.`, json: { user } };
    }
    case 'list-users': {
      const users = await everything((page) => operator.listUsers(args.platformId, page));
      return { text: users.map(userLine).join('\n') || 'No console users.', json: { users } };
    }
    case 'disable-user':
    case 'enable-user': {
      const disabled = command === 'disable-user';
      const user = await operator.updateUser(args.userId, { disabled });
      return {
        text: disabled
          ? `Disabled console user ${user.id} (${user.email}): it cannot sign in, and its console sessions have ended.`
          : `Enabled console user ${user.id} (${user.email}): it can sign in again.`,
        json: { user },
      };
    }
    case 'set-role': {
      const user = await operator.updateUser(args.userId, { role: args.role! });
      return { text: `Console user ${user.id} (${user.email}) is now ${user.role === 'owner' ? 'an' : 'a'} ${user.role}.`, json: { user } };
    }
    case 'reset-two-factor': {
      const user = await operator.updateUser(args.userId, { twoFactor: null });
      return {
        text: `Reset the second factor of console user ${user.id} (${user.email}): its sessions have ended; it signs in with its password and sets up a new one.`,
        json: { user },
      };
    }
    case 'require-two-factor': {
      const platform = await operator.setRequireTwoFactor(args.platformId, !args.off);
      return {
        text: platform.requireTwoFactor
          ? `Platform ${platform.id} (${platform.name}) now requires two-factor sign-in of every console user.`
          : `Platform ${platform.id} (${platform.name}) no longer requires two-factor sign-in.`,
        json: { platform },
      };
    }
    case 'audit-verify': {
      const result = await operator.verifyAudit();
      if (!result.ok) {
        const entry = result.entryId === null ? `entry ${result.chainSeq ?? '?'}` : `entry ${result.entryId} (number ${result.chainSeq} of the chain)`;
        throw new CommandError(`The audit trail does not verify: in the ${chainName(result.chain)} chain, ${entry}: ${result.reason}.`);
      }
      return { text: `The audit trail verifies: ${result.entries} entries in ${result.chains} chains.`, json: result };
    }
    case 'backup': {
      const bytes = await operator.backup(args.file);
      return {
        text:
          `Backed up the embedded database to ${args.file} (${bytes} bytes).\n` +
          'It holds everything but the encryption keys: keep DATA_DIR/encryption.key (or your ENCRYPTION_KEYS / ENCRYPTION_KEY) safe apart from it; a restore needs the same keys.',
        json: { file: args.file, bytes },
      };
    }
    case 'encryption-status': {
      const status = await operator.encryptionStatus();
      return { text: encryptionStatusText(status), json: status };
    }
    default:
      throw new UsageError(`Unknown command "${command}"`);
  }
}

function encryptionStatusText(status: EncryptionStatus): string {
  // Per column in the order of the totals: the ring's keys first, then any key id the ring lacks.
  const order = status.keys.map((key) => key.keyId);
  const lines = status.keys.map(
    ({ keyId, values, current, inRing }) =>
      `  ${keyId.padEnd(32)} ${String(values).padStart(10)}  ${current ? 'current' : !inRing ? 'NOT IN THE RING: put it back before anything else' : values === 0 ? 'unused: can be dropped' : 'being re-sealed'}`,
  );
  const columns = status.columns.map(
    ({ table, column, what, keys }) =>
      `  ${`${table}.${column}`.padEnd(44)} ${order.filter((keyId) => keys[keyId]).map((keyId) => `${keyId}: ${keys[keyId]}`).join(', ') || 'none'}  (${what})`,
  );
  return ['Sealed values per key id (current key first in the ring):', ...lines, '', 'Per column:', ...columns].join('\n');
}

/** `restore`: on the data folder itself, which the service must not hold. */
async function restore(config: Config, file: string): Promise<Output> {
  if (config.databaseUrl) throw new CommandError(POSTGRES_BACKUP);
  const { replaced, migrations } = await restoreEmbedded(config.dataDir, file);
  return {
    text:
      `Restored ${file} into ${config.dataDir} (${migrations} migrations applied in it).` +
      (replaced ? `\nThe database it replaced is kept in ${replaced}; remove it once the service runs as expected.` : '') +
      '\nStart the service: it applies any newer migrations, and refuses to start if the encryption key is not the one the backup was written with.',
    json: { file, dataDir: config.dataDir, replaced: replaced ?? null },
  };
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
        user: { type: 'string' },
        email: { type: 'string' },
        role: { type: 'string' },
        off: { type: 'boolean' },
        'password-stdin': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    const command = process.argv.slice(2).find((arg) => !arg.startsWith('-'));
    process.stderr.write(`${usageMistake((error as Error).message, command)}\n`);
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
    const args = await checkUsage(command, values, positionals);
    const config = loadConfig();
    dataDir = config.dataDir;
    if (command === 'restore') {
      const output = await restore(config, args.file);
      process.stdout.write(values.json ? `${JSON.stringify(output.json)}\n` : `${output.text}\n`);
      return 0;
    }
    if (command === 'backup' && !config.databaseUrl && !fs.existsSync(path.join(config.dataDir, 'pgdata', 'PG_VERSION'))) {
      throw new CommandError(`There is no embedded database in ${config.dataDir} (DATA_DIR) to back up.`);
    }
    let operator: Operator;
    try {
      database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
      // The ids only (no key file is made here): the embedded default's key file is the key `default`.
      operator = databaseOperator(database, config.encryptionKeys?.map((key) => key.id) ?? [DEFAULT_KEY_ID]);
    } catch (error) {
      // The embedded database is held: by the running service, ask it through its admin API.
      const running = error instanceof DataDirLockedError ? runningService(config) : undefined;
      if (running === undefined) throw error;
      operator = adminApiOperator(running, adminTokenFor(config, running));
    }
    const output = await run(command, args, operator);
    process.stdout.write(values.json ? `${JSON.stringify(output.json)}\n` : `${output.text}\n`);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) return report(values.json ? error.message : usageMistake(error.message, command), 2);
    if (error instanceof DataDirLockedError && dataDir !== undefined) return report(heldMessage(command, dataDir), 1);
    if (error instanceof AppError) return report(error.message, 1);
    if (error instanceof ConfigError || error instanceof DataDirLockedError || error instanceof NotFoundError || error instanceof CommandError || error instanceof SchemaMismatchError || error instanceof RestoreError) {
      return report(error.message, 1);
    }
    return report(`Failed: ${error instanceof Error ? error.message : String(error)}`, 1);
  } finally {
    await database?.close();
  }
}

process.exitCode = await main();
