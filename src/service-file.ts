import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

/**
 * `DATA_DIR/service.json`: where the service that holds the embedded database listens, so that the CLI, which cannot
 * open the database meanwhile, goes through that service's admin API instead (contract 8). Written once the service
 * listens, removed when it stops; a file left by a killed service names a pid that no longer holds the data folder.
 */
export type ServiceFile = {
  /** A base URL this machine reaches the service at (a wildcard HOST is reached on loopback). */
  url: string;
  pid: number;
  /** The file holding the admin token; null when the service takes ADMIN_TOKEN from its environment, or has none. */
  adminTokenFile: string | null;
};

/** Where the first start writes the demo platform's API key when it does not run in a terminal (never to the log). */
export function demoKeyFileOf(dataDir: string): string {
  return path.join(dataDir, 'demo-api-key');
}

export function serviceFileOf(dataDir: string): string {
  return path.join(dataDir, 'service.json');
}

/** The URL of a listening address, as a client on this machine reaches it. */
export function localUrlOf(address: AddressInfo): string {
  const host = address.address === '0.0.0.0' ? '127.0.0.1' : address.address === '::' ? '::1' : address.address;
  return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
}

/** Written to a temporary file and renamed, so that a reader never sees half of it. */
export function writeServiceFile(dataDir: string, content: ServiceFile): void {
  const file = serviceFileOf(dataDir);
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, `${JSON.stringify(content)}\n`, { mode: 0o600 });
  fs.renameSync(temporary, file);
}

/** Removes the file if it is this process's (a later service may have written its own). */
export function removeServiceFile(dataDir: string, pid: number = process.pid): void {
  if (readServiceFile(dataDir)?.pid === pid) fs.rmSync(serviceFileOf(dataDir), { force: true });
}

export function readServiceFile(dataDir: string): ServiceFile | undefined {
  try {
    const parsed = JSON.parse(fs.readFileSync(serviceFileOf(dataDir), 'utf8')) as Partial<ServiceFile>;
    if (typeof parsed.url !== 'string' || !Number.isInteger(parsed.pid)) return undefined;
    return { url: parsed.url, pid: parsed.pid!, adminTokenFile: typeof parsed.adminTokenFile === 'string' ? parsed.adminTokenFile : null };
  } catch {
    return undefined;
  }
}
