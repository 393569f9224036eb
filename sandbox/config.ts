/** The sandbox program's settings, from its environment variables (SANDBOX_*). */
import { BlockList, isIP } from 'node:net';
import type { EnvelopeProfile } from '../src/authority/protocol/envelope.ts';
import { DEFAULT_ENVELOPE_PROFILE, ENVELOPE_PROFILES, isEnvelopeProfile } from '../src/authority/protocol/envelope.ts';

export type SandboxConfig = {
  host: string;
  /** 0 lets the system pick a free port. */
  port: number;
  /** The embedded database's folder; unused when databaseUrl is set. */
  dataDir: string;
  /** postgres://…: the sandbox keeps its state in the schema authority_sandbox there. */
  databaseUrl: string | undefined;
  processingDelayMs: number;
  /** How long a push is held after it is stored, before its acknowledgement is sent (the real authority takes a while). */
  pushAnswerDelayMs: number;
  /** The callers the protocol operations accept; null when everyone is. */
  allowedIps: BlockList | null;
  rateLimitPerSecond: number;
  rateLimitBurst: number;
  /** The profile of every credential set that was not issued for a profile of its own. */
  envelopeProfile: EnvelopeProfile;
  logLevel: string;
};

export class SandboxConfigError extends Error {}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const MAX_PORT = 65_535;

export function readSandboxConfig(env: Record<string, string | undefined>): SandboxConfig {
  const text = (name: string, fallback: string): string => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? fallback : value;
  };
  const whole = (name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number => {
    const value = text(name, String(fallback));
    const number = Number(value);
    if (!/^\d+$/.test(value) || number < min || number > max) {
      throw new SandboxConfigError(`${name} must be a whole number from ${min} to ${max} (got ${JSON.stringify(value)}).`);
    }
    return number;
  };

  const databaseUrl = env.SANDBOX_DATABASE_URL?.trim() || undefined;
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new SandboxConfigError('SANDBOX_DATABASE_URL must be a postgres:// or postgresql:// URL.');
  }
  const envelopeProfile = text('SANDBOX_ENVELOPE_PROFILE', DEFAULT_ENVELOPE_PROFILE);
  if (!isEnvelopeProfile(envelopeProfile)) {
    throw new SandboxConfigError(`SANDBOX_ENVELOPE_PROFILE must be one of ${ENVELOPE_PROFILES.join(', ')}.`);
  }
  const logLevel = text('SANDBOX_LOG_LEVEL', 'info');
  if (!LOG_LEVELS.includes(logLevel)) throw new SandboxConfigError(`SANDBOX_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}.`);

  return {
    host: text('SANDBOX_HOST', '127.0.0.1'),
    port: whole('SANDBOX_PORT', 3100, 0, MAX_PORT),
    dataDir: text('SANDBOX_DATA_DIR', './data-sandbox'),
    databaseUrl,
    processingDelayMs: whole('SANDBOX_PROCESSING_DELAY_MS', 3000, 0),
    pushAnswerDelayMs: whole('SANDBOX_PUSH_ANSWER_DELAY_MS', 0, 0, 60_000),
    allowedIps: readAllowList(env.SANDBOX_ALLOWED_IPS ?? ''),
    rateLimitPerSecond: whole('SANDBOX_RATE_LIMIT_PER_SECOND', 50, 1),
    rateLimitBurst: whole('SANDBOX_RATE_LIMIT_BURST', 100, 1),
    envelopeProfile,
    logLevel,
  };
}

/** Comma-separated addresses and CIDR ranges (IPv4 or IPv6); empty means everyone. */
export function readAllowList(text: string): BlockList | null {
  const entries = text.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  if (entries.length === 0) return null;
  const allowed = new BlockList();
  for (const entry of entries) {
    const [address = '', prefix] = entry.split('/');
    const family = isIP(address);
    const bits = prefix === undefined ? null : Number(prefix);
    const maxBits = family === 6 ? 128 : 32;
    if (family === 0 || (bits !== null && (!/^\d+$/.test(prefix ?? '') || bits > maxBits))) {
      throw new SandboxConfigError(`SANDBOX_ALLOWED_IPS: ${JSON.stringify(entry)} is not an IP address or a CIDR range.`);
    }
    const type = family === 6 ? 'ipv6' : 'ipv4';
    if (bits === null) allowed.addAddress(address, type);
    else allowed.addSubnet(address, bits, type);
  }
  return allowed;
}
