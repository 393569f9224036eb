import fs from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { DEFAULT_ENVELOPE_PROFILE, ENVELOPE_PROFILES, isEnvelopeProfile, type EnvelopeProfile } from './authority/protocol/envelope.ts';

export type Config = {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | undefined;
  /** PostgreSQL's statement_timeout for the service's connections (DATABASE_STATEMENT_TIMEOUT_MS). */
  databaseStatementTimeoutMs: number;
  /** How long a start waits for a PostgreSQL that does not answer (DATABASE_WAIT_SECONDS); 0: for ever. */
  databaseWaitSeconds: number;
  /**
   * The key ring (ENCRYPTION_KEYS, or ENCRYPTION_KEY as the ring of one key `default`), the current key first;
   * unset: the embedded default's key file (src/services/server-key.ts).
   */
  encryptionKeys: EncryptionKey[] | undefined;
  logLevel: string;
  rateLimitPerSecond: number;
  rateLimitBurst: number;
  apiKeyCacheSeconds: number;
  authorityTimeoutMs: number;
  irmRefreshIntervalSeconds: number;
  sandboxProcessingDelayMs: number;
  pollIntervalSeconds: number;
  /** Every customer's scheduled reconciliation (contract 13); 0 turns the schedule off. */
  reconcileIntervalSeconds: number;
  /** How many scheduled reconciliations a process runs at once. */
  reconcileConcurrency: number;
  runPoller: boolean;
  /** Whether this process relays events and delivers webhooks (RUN_WEBHOOKS). */
  runWebhooks: boolean;
  housekeepingIntervalSeconds: number;
  authorityEnvelopeProfile: EnvelopeProfile;
  /** sandbox: the sandbox program (its own credential-set login); dgft: the real authority. */
  authorityMode: AuthorityMode;
  /** The base of the authority's operations; in sandbox mode, unset means "start the sandbox program beside". */
  authorityUrl: string | undefined;
  /** The base of getAccessToken, when it is not authorityUrl. */
  authorityTokenUrl: string | undefined;
  /** The address the authority sees this service call from, named when it answers 403. */
  authorityEgressIp: string | undefined;
  /** Where the sandbox program started beside the service listens. */
  sandboxPort: number;
  /** Seconds before each retry of a failed webhook delivery; after the last, the delivery has failed. */
  webhookRetrySchedule: number[];
  /** A delivery that has no 2xx answer within this is failed (contract: 15 s). */
  webhookTimeoutMs: number;
  /** Loopback, private and internal webhook URLs are refused unless this is set (local development and tests). */
  webhookAllowPrivateUrls: boolean;
  /** An endpoint whose every delivery has failed for this long is disabled (contract: 5 days). */
  webhookDisableAfterSeconds: number;
  /** Deliveries in flight at once in one process; one endpoint takes at most a quarter of them. */
  webhookConcurrency: number;
  /** How long events (and their delivery attempts) are kept (contract: at least 30 days). */
  eventRetentionDays: number;
  /** AUDIT_RETENTION_DAYS: audit entries older than this are purged; null (unset) keeps them for ever. */
  auditRetentionDays: number | null;
  /** How long a web console session lasts from its sign-in (CONSOLE_SESSION_HOURS), in hours. */
  consoleSessionHours: number;
  /**
   * The admin API's bearer token (ADMIN_TOKEN). Unset: the admin API is off, except on the embedded default, which
   * makes a token once in a file of DATA_DIR (src/services/admin-token.ts).
   */
  adminToken: string | undefined;
  /** Whether a start applies the database migrations (MIGRATE_ON_START); false: it refuses a database that lacks one. */
  migrateOnStart: boolean;
  /** How long a SIGTERM waits for the requests and jobs in flight before it ends them (SHUTDOWN_TIMEOUT_SECONDS). */
  shutdownTimeoutSeconds: number;
  /**
   * Which proxies in front are trusted to say the client's address and protocol (X-Forwarded-For, -Proto), as
   * Fastify's trustProxy takes it: false (none, the default), true (any), a number of hops, or addresses and ranges.
   */
  trustProxy: TrustProxy;
  /** The bearer token /metrics takes from a client that is not on loopback (METRICS_TOKEN); unset: loopback only. */
  metricsToken: string | undefined;
  /** Where e-mail is sent (SMTP_URL, smtps:// or smtp:// with STARTTLS); unset: written as .eml files under DATA_DIR/mail. */
  smtpUrl: string | undefined;
  /** The From of every message (MAIL_FROM). */
  mailFrom: string;
  /** The service's address as its users reach it, for links in messages (PUBLIC_URL), without a trailing slash. */
  publicUrl: string;
  /** Attempts at a message before it has failed (MAIL_MAX_ATTEMPTS). */
  mailMaxAttempts: number;
  /** Seconds before the first retry of a message not taken (MAIL_RETRY_DELAY_SECONDS), doubling up to an hour. */
  mailRetryDelaySeconds: number;
};

export type TrustProxy = boolean | number | string[];

/** One key of the ring: its id (recorded in every value sealed with it) and its 32 bytes. */
export type EncryptionKey = { id: string; key: Buffer };

/** The id of the key of ENCRYPTION_KEY alone, and of every value sealed before key ids were recorded. */
export const DEFAULT_KEY_ID = 'default';
const KEY_ID = /^[A-Za-z0-9_.-]{1,32}$/;
const KEY_BYTES = 32;

export const AUTHORITY_MODES = ['sandbox', 'dgft'] as const;
export type AuthorityMode = (typeof AUTHORITY_MODES)[number];

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

const PROXY_ADDRESS_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

function trustProxy(env: Env): TrustProxy {
  const raw = (env.TRUST_PROXY ?? '').trim();
  if (raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d{1,2}$/.test(raw)) return Number(raw);
  const entries = raw.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/');
    const ok =
      PROXY_ADDRESS_NAMES.has(entry) ||
      (extra === undefined && address !== undefined && isIP(address) !== 0 && (bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (isIP(address) === 4 ? 32 : 128))));
    if (!ok) {
      throw new ConfigError(
        `TRUST_PROXY must be true, false, a number of proxies, or a comma-separated list of addresses, ranges (10.0.0.0/8) or loopback/linklocal/uniquelocal; got "${entry}"`,
      );
    }
  }
  return entries;
}

function httpUrl(env: Env, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an http:// or https:// URL`);
  }
  // Not quoted back: a URL may carry a password.
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`${name} must be an http:// or https:// URL, not ${url.protocol}`);
  return raw.replace(/\/+$/, '');
}

/** The contract's retry schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h. */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE = [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000];

function retrySchedule(env: Env, name: string): number[] {
  const raw = env[name];
  if (raw === undefined || raw === '') return DEFAULT_WEBHOOK_RETRY_SCHEDULE;
  const parts = raw.split(',').map((part) => part.trim());
  if (parts.length > 20 || parts.some((part) => !/^\d+$/.test(part) || Number(part) > 604_800)) {
    throw new ConfigError(`${name} must be up to 20 comma-separated whole numbers of seconds (each at most 604800), such as 5,300,1800; got "${raw}"`);
  }
  return parts.map(Number);
}

/**
 * The variables that may be given as a file instead (the `_FILE` convention of container images): X_FILE names a file
 * whose content, without its trailing newline, is X. A file other users could read is refused.
 */
export const SECRET_FILE_VARIABLES = ['ENCRYPTION_KEYS', 'ENCRYPTION_KEY', 'ADMIN_TOKEN', 'DATABASE_URL', 'SMTP_URL', 'METRICS_TOKEN'] as const;

/** The environment with every X_FILE of SECRET_FILE_VARIABLES read into X. */
export function withSecretFiles(env: Env): Env {
  const resolved: Env = { ...env };
  for (const name of SECRET_FILE_VARIABLES) {
    const file = env[`${name}_FILE`];
    if (file === undefined || file === '') continue;
    if (env[name] !== undefined && env[name] !== '') throw new ConfigError(`${name} and ${name}_FILE are both set; set one of them`);
    let stat: fs.Stats;
    try {
      stat = fs.statSync(file);
    } catch (error) {
      throw new ConfigError(`${name}_FILE names ${file}, which cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    if (!stat.isFile()) throw new ConfigError(`${name}_FILE names ${file}, which is not a file`);
    const mode = stat.mode & 0o777;
    if ((mode & 0o077) !== 0) {
      throw new ConfigError(
        `${name}_FILE names ${file}, which other users can read or write (mode ${mode.toString(8).padStart(4, '0')}); ` +
          `make it readable by its owner only (chmod 600 ${file})`,
      );
    }
    let content: string;
    try {
      content = fs.readFileSync(file, 'utf8');
    } catch (error) {
      throw new ConfigError(`${name}_FILE names ${file}, which cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    resolved[name] = content.replace(/\r?\n$/, '');
    if (resolved[name] === '') throw new ConfigError(`${name}_FILE names ${file}, which is empty`);
  }
  return resolved;
}

/** ENCRYPTION_KEYS (`id1:base64key1,id2:base64key2`, the first current) or ENCRYPTION_KEY (the ring {default: key}). */
export function encryptionKeys(env: Env): EncryptionKey[] | undefined {
  const ring = env.ENCRYPTION_KEYS || undefined;
  const single = env.ENCRYPTION_KEY || undefined;
  if (ring !== undefined && single !== undefined) {
    throw new ConfigError(`ENCRYPTION_KEYS and ENCRYPTION_KEY are both set; set one (ENCRYPTION_KEY alone is the ring ${DEFAULT_KEY_ID}:<key>)`);
  }
  if (single !== undefined) return [{ id: DEFAULT_KEY_ID, key: keyBytes(single, 'ENCRYPTION_KEY') }];
  if (ring === undefined) return undefined;
  const keys: EncryptionKey[] = [];
  for (const [index, entry] of ring.split(',').entries()) {
    const at = entry.indexOf(':');
    const id = at < 0 ? '' : entry.slice(0, at).trim();
    // Not quoted back: an entry holds a key.
    if (!KEY_ID.test(id)) {
      throw new ConfigError(
        `ENCRYPTION_KEYS entry ${index + 1} must be id:base64key, the id 1 to 32 letters, digits, ".", "_" or "-" (such as 2026-11:$(openssl rand -base64 32))`,
      );
    }
    if (keys.some((key) => key.id === id)) throw new ConfigError(`ENCRYPTION_KEYS names the key id ${id} twice`);
    const key = keyBytes(entry.slice(at + 1).trim(), `ENCRYPTION_KEYS key ${id}`);
    const twin = keys.find((other) => other.key.equals(key));
    if (twin) throw new ConfigError(`ENCRYPTION_KEYS holds the same key under the ids ${twin.id} and ${id}`);
    keys.push({ id, key });
  }
  return keys;
}

function keyBytes(base64: string, name: string): Buffer {
  const key = Buffer.from(base64, 'base64');
  if (key.length !== KEY_BYTES || !/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) {
    throw new ConfigError(`${name} must be ${KEY_BYTES} bytes in base64 (try: openssl rand -base64 32)`);
  }
  return key;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Reads the whole configuration from the environment; a bad value stops the start with a message naming it. */
export function loadConfig(given: Env = process.env): Config {
  const env = withSecretFiles(given);
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must start with postgres:// or postgresql://');
  }
  const keys = encryptionKeys(env);
  const envelopeProfile = env.AUTHORITY_ENVELOPE_PROFILE || DEFAULT_ENVELOPE_PROFILE;
  if (!isEnvelopeProfile(envelopeProfile)) {
    throw new ConfigError(`AUTHORITY_ENVELOPE_PROFILE must be one of ${ENVELOPE_PROFILES.join(', ')}, got "${envelopeProfile}"`);
  }
  const authorityMode = env.AUTHORITY_MODE || 'sandbox';
  if (!AUTHORITY_MODES.includes(authorityMode as AuthorityMode)) {
    throw new ConfigError(`AUTHORITY_MODE must be one of ${AUTHORITY_MODES.join(', ')}, got "${authorityMode}"`);
  }
  const authorityUrl = httpUrl(env, 'AUTHORITY_URL');
  if (authorityMode === 'dgft' && authorityUrl === undefined) {
    throw new ConfigError("AUTHORITY_MODE=dgft needs AUTHORITY_URL, the base of the authority's eBRC API");
  }
  const authorityEgressIp = env.AUTHORITY_EGRESS_IP || undefined;
  if (authorityEgressIp !== undefined && isIP(authorityEgressIp) === 0) {
    throw new ConfigError(`AUTHORITY_EGRESS_IP must be an IP address, got "${authorityEgressIp}"`);
  }
  const adminToken = env.ADMIN_TOKEN || undefined;
  // Not quoted back: it is a secret. Long enough that guessing it is hopeless (the admin API has no rate limit).
  if (adminToken !== undefined && !/^[\x21-\x7e]{32,512}$/.test(adminToken)) {
    throw new ConfigError('ADMIN_TOKEN must be 32 to 512 printable ASCII characters without spaces (try: openssl rand -base64 32)');
  }
  const metricsToken = env.METRICS_TOKEN || undefined;
  if (metricsToken !== undefined && !/^[\x21-\x7e]{32,512}$/.test(metricsToken)) {
    throw new ConfigError('METRICS_TOKEN must be 32 to 512 printable ASCII characters without spaces (try: openssl rand -base64 32)');
  }
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  return {
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: env.HOST || '127.0.0.1',
    dataDir: path.resolve(env.DATA_DIR || 'data'),
    databaseUrl,
    databaseStatementTimeoutMs: integer(env, 'DATABASE_STATEMENT_TIMEOUT_MS', 30_000, 100, 3_600_000),
    databaseWaitSeconds: integer(env, 'DATABASE_WAIT_SECONDS', 0, 0, 31_536_000),
    encryptionKeys: keys,
    logLevel,
    rateLimitPerSecond: integer(env, 'RATE_LIMIT_PER_SECOND', 50, 1, 1_000_000),
    rateLimitBurst: integer(env, 'RATE_LIMIT_BURST', 100, 1, 1_000_000),
    apiKeyCacheSeconds: integer(env, 'API_KEY_CACHE_SECONDS', 5, 0, 60),
    authorityTimeoutMs: integer(env, 'AUTHORITY_TIMEOUT_MS', 10_000, 1, 600_000),
    irmRefreshIntervalSeconds: integer(env, 'IRM_REFRESH_INTERVAL_SECONDS', 30, 0, 86_400),
    sandboxProcessingDelayMs: integer(env, 'SANDBOX_PROCESSING_DELAY_MS', 3_000, 0, 86_400_000),
    pollIntervalSeconds: integer(env, 'POLL_INTERVAL_SECONDS', 2, 1, 3_600),
    reconcileIntervalSeconds: integer(env, 'RECONCILE_INTERVAL_SECONDS', 86_400, 0, 30 * 86_400),
    reconcileConcurrency: integer(env, 'RECONCILE_CONCURRENCY', 2, 1, 32),
    runPoller: boolean(env, 'RUN_POLLER', true),
    runWebhooks: boolean(env, 'RUN_WEBHOOKS', true),
    housekeepingIntervalSeconds: integer(env, 'HOUSEKEEPING_INTERVAL_SECONDS', 600, 1, 86_400),
    authorityEnvelopeProfile: envelopeProfile,
    authorityMode: authorityMode as AuthorityMode,
    authorityUrl,
    authorityTokenUrl: httpUrl(env, 'AUTHORITY_TOKEN_URL'),
    authorityEgressIp,
    sandboxPort: integer(env, 'SANDBOX_PORT', 3100, 1, 65535),
    webhookRetrySchedule: retrySchedule(env, 'WEBHOOK_RETRY_SCHEDULE'),
    webhookTimeoutMs: integer(env, 'WEBHOOK_TIMEOUT_MS', 15_000, 100, 60_000),
    webhookAllowPrivateUrls: boolean(env, 'WEBHOOK_ALLOW_PRIVATE_URLS', false),
    webhookDisableAfterSeconds: integer(env, 'WEBHOOK_DISABLE_AFTER_SECONDS', 5 * 86_400, 1, 365 * 86_400),
    webhookConcurrency: integer(env, 'WEBHOOK_CONCURRENCY', 128, 1, 1_000),
    eventRetentionDays: integer(env, 'EVENT_RETENTION_DAYS', 30, 30, 3_650),
    // Unset: the audit trail is kept for ever.
    auditRetentionDays: env.AUDIT_RETENTION_DAYS === undefined || env.AUDIT_RETENTION_DAYS === '' ? null : integer(env, 'AUDIT_RETENTION_DAYS', 0, 1, 36_500),
    consoleSessionHours: integer(env, 'CONSOLE_SESSION_HOURS', 12, 1, 720),
    adminToken,
    migrateOnStart: boolean(env, 'MIGRATE_ON_START', true),
    shutdownTimeoutSeconds: integer(env, 'SHUTDOWN_TIMEOUT_SECONDS', 25, 1, 3_600),
    trustProxy: trustProxy(env),
    metricsToken,
    smtpUrl: smtpUrl(env),
    mailFrom: mailFrom(env),
    publicUrl: (httpUrl(env, 'PUBLIC_URL') ?? `http://localhost:${integer(env, 'PORT', 3000, 0, 65535)}`).replace(/\/+$/, ''),
    mailMaxAttempts: integer(env, 'MAIL_MAX_ATTEMPTS', 8, 1, 50),
    mailRetryDelaySeconds: integer(env, 'MAIL_RETRY_DELAY_SECONDS', 30, 1, 3_600),
  };
}

function smtpUrl(env: Env): string | undefined {
  const raw = env.SMTP_URL;
  if (raw === undefined || raw === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('SMTP_URL must be an smtps:// or smtp:// URL (smtps://user:password@mail.example.com:465)');
  }
  if (url.protocol !== 'smtps:' && url.protocol !== 'smtp:') throw new ConfigError(`SMTP_URL must be an smtps:// or smtp:// URL, got ${url.protocol}//`);
  return raw;
}

function mailFrom(env: Env): string {
  const raw = env.MAIL_FROM || 'ebrc-gateway <ebrc-gateway@localhost>';
  if (!/^[^\r\n]{3,320}$/.test(raw) || !/@/.test(raw)) throw new ConfigError(`MAIL_FROM must be an address (name@example.com or "Name <name@example.com>"), got "${raw}"`);
  return raw;
}
