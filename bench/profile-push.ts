/**
 * `node bench/profile-push.ts [--seconds N] [--connections N] [--no-profile]`: where the service's CPU goes while it
 * takes concurrent 999-line pushes on PostgreSQL (issue 28's "service CPU per acknowledged line").
 *
 * Creates the databases `ebrc_profile` and `ebrc_profile_sandbox`, starts the sandbox program, seeds a platform and a few
 * customers (bench/lib/seed.ts), starts the service as `npm start` does plus `--cpu-prof`, verifies the four push
 * customers through the API, pushes for N seconds (default 15) at N connections (default 4) with autocannon, and stops
 * the service. Prints the lines acknowledged, the CPU per acknowledged line of the service and of its database sessions
 * (from /proc, as `npm run bench` measures it), the service's peak RSS over the pushes, and the profile's self time by
 * function and by module. The profile itself stays in bench/tmp/profile/ for Chromium's DevTools.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { CredentialSet } from '../src/authority/protocol/credentials.ts';
import { openDatabase } from '../src/store/database.ts';
import { allIrms, ApiClient, createVerifiedCustomer, type ApiIrm } from './lib/api.ts';
import { load } from './lib/load.ts';
import { CpuMeter, RssSampler, freePort, startServer, type Server } from './lib/processes.ts';
import { formatCount, log } from './lib/progress.ts';
import { BENCH_SERVICE_ENV } from './lib/start-script.ts';
import { IrmPool } from './lib/pushes.ts';
import { SANDBOX_APPLICATION_NAME, SANDBOX_PASSWORD, SANDBOX_PROCESSING_DELAY_MS, issueCredentialSet, startSandboxProgram } from './lib/sandbox.ts';
import { admin, scratchDatabaseUrl } from './lib/scratch-postgres.ts';
import { SANDBOX_USERNAMES, seed } from './lib/seed.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const TMP = path.join(ROOT, 'bench', 'tmp');
const PROFILES = path.join(TMP, 'profile');
const PUSH_LINES = 999;
const PUSH_ACCOUNTS = ['demo.exporter', 'bulk.exporter', 'vostro.exporter', 'services.exporter'];

const { values: flags } = parseArgs({
  options: { seconds: { type: 'string', default: '15' }, connections: { type: 'string', default: '4' }, 'no-profile': { type: 'boolean', default: false } },
});
const SECONDS = Number(flags.seconds);
const CONNECTIONS = Number(flags.connections);

const DATABASE = 'ebrc_profile';
const SERVICE_APPLICATION_NAME = 'ebrc-profile-service';
/** This program's own session, which reads pg_stat_activity: not counted. */
const OWN_APPLICATION_NAME = 'ebrc-profile-bench';

type Frame = { functionName: string; url: string; lineNumber: number };
type CpuProfile = { nodes: { id: number; callFrame: Frame; children?: number[] }[]; samples: number[]; timeDeltas: number[] };

/** Self time by function and by module (a node_modules package, one of our files, Node's own module, or native code). */
function summarise(profile: CpuProfile): string {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, index) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0)));
  const byFunction = new Map<string, number>();
  const byModule = new Map<string, number>();
  let busy = 0;
  for (const [id, micros] of self) {
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === '(idle)' || frame.functionName === '(program)') continue;
    busy += micros;
    const url = frame.url.replace(`file://${ROOT}/`, '');
    const module = url.includes('node_modules/')
      ? url.slice(url.lastIndexOf('node_modules/') + 13).split('/').slice(0, url.includes('node_modules/@') ? 2 : 1).join('/')
      : url === '' ? `(${frame.functionName.replace(/[()]/g, '') || 'native'})` : url;
    byModule.set(module, (byModule.get(module) ?? 0) + micros);
    const name = `${frame.functionName || '(anonymous)'} ${url}:${frame.lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + micros);
  }
  const top = (map: Map<string, number>, count: number) =>
    [...map].sort((a, b) => b[1] - a[1]).slice(0, count).map(([name, micros]) => `${(micros / 1000).toFixed(0).padStart(7)} ms ${((micros / busy) * 100).toFixed(1).padStart(5)}%  ${name}`).join('\n');
  return `busy ${(busy / 1000).toFixed(0)} ms\n\nby module:\n${top(byModule, 30)}\n\nby function (self):\n${top(byFunction, 50)}`;
}

async function main(): Promise<void> {
  fs.mkdirSync(PROFILES, { recursive: true });
  const servers: Server[] = [];
  for (const name of [DATABASE, `${DATABASE}_sandbox`]) {
    await admin(`drop database if exists "${name}" with (force)`);
    await admin(`create database "${name}"`);
  }
  const sessions = new pg.Client({ connectionString: scratchDatabaseUrl(DATABASE, OWN_APPLICATION_NAME) });
  await sessions.connect();
  try {
    const sandbox = await startSandboxProgram({
      name: 'profile-sandbox',
      storage: { databaseUrl: scratchDatabaseUrl(`${DATABASE}_sandbox`) },
      port: await freePort(),
      processingDelayMs: SANDBOX_PROCESSING_DELAY_MS,
      logDir: TMP,
    });
    servers.push(sandbox);
    const credentialSets = new Map<string, CredentialSet>();
    for (const username of SANDBOX_USERNAMES) credentialSets.set(username, await issueCredentialSet(sandbox.baseUrl, username));
    const encryptionKey = randomBytes(32);
    const database = await openDatabase({ databaseUrl: scratchDatabaseUrl(DATABASE), dataDir: TMP });
    const seeded = await seed(database, { customers: 20, bigCustomerIrms: 2_000, irmsPerCustomer: 200, bigCustomerRequests: 100, requestCustomers: 5, requestsPerCustomer: 10 }, encryptionKey, credentialSets, os.availableParallelism())
      .finally(() => database.close());
    for (const file of fs.readdirSync(PROFILES)) fs.rmSync(path.join(PROFILES, file));
    const service = await startServer({
      name: 'profile-service',
      script: path.join(ROOT, 'src', 'main.ts'),
      nodeFlags: flags['no-profile'] ? [] : ['--cpu-prof', `--cpu-prof-dir=${PROFILES}`],
      env: {
        ...BENCH_SERVICE_ENV,
        AUTHORITY_URL: sandbox.baseUrl,
        ENCRYPTION_KEY: encryptionKey.toString('base64'),
        DATABASE_URL: scratchDatabaseUrl(DATABASE, SERVICE_APPLICATION_NAME),
      },
      port: await freePort(),
      readyPath: '/ready',
      logDir: TMP,
      startTimeoutMs: 120_000,
    });
    servers.push(service);
    const api = new ApiClient(service.baseUrl, seeded.apiKey);
    const irmsByCustomer = new Map<string, ApiIrm[]>();
    for (const account of PUSH_ACCOUNTS) {
      const customerId = await createVerifiedCustomer(api, account, 'Profile', SANDBOX_PASSWORD);
      irmsByCustomer.set(customerId, await allIrms(api, customerId));
    }
    const pool = new IrmPool();
    pool.reset(irmsByCustomer);
    log(`${formatCount(pool.size())} pushable IRMs, room for ${pool.capacity(PUSH_LINES)} concurrent 999-line pushes`);
    const cpu = new CpuMeter(async () => [
      { pid: service.pid, group: 'service' },
      { pid: sandbox.pid, group: 'sandbox' },
      ...(await sessions.query<{ pid: number; application_name: string }>(
        'select pid, application_name from pg_stat_activity where datname like $1 and application_name <> $2',
        [`${DATABASE}%`, OWN_APPLICATION_NAME],
      )).rows.map((row) => ({
        pid: row.pid,
        group: row.application_name === SANDBOX_APPLICATION_NAME ? 'sandbox database' : row.application_name === SERVICE_APPLICATION_NAME ? 'database' : 'other database',
      })),
    ]);
    const pushOptions = { url: service.baseUrl, connections: CONNECTIONS, headers: { 'x-api-key': seeded.apiKey, 'content-type': 'application/json' }, requests: [pool.request(PUSH_LINES)], timeoutSeconds: 120 };
    // Warm-up; pushes its end cut off complete at the service, then are accounted for (as `npm run bench` does).
    await load({ ...pushOptions, seconds: 3 });
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await pool.recover(api);
    pool.resetOutcomes();
    const rss = new RssSampler(service.pid);
    await cpu.start();
    rss.start();
    const measured = await load({ ...pushOptions, seconds: SECONDS });
    const shares = await cpu.stop();
    const peakRssBytes = rss.stop();
    const lines = pool.outcomes.validated * PUSH_LINES;
    log(`${pool.outcomes.validated} pushes Validated (${formatCount(lines)} lines, ${(lines / SECONDS).toFixed(0)} lines/s), failed ${pool.outcomes.failed} ${JSON.stringify(pool.outcomes.failureCodes)}, other ${pool.outcomes.other}; p50 ${measured.p50.toFixed(0)} ms`);
    for (const [group, seconds] of Object.entries(shares.groupSeconds)) log(`  ${group}: ${seconds.toFixed(2)} s CPU, ${((seconds * 1e6) / Math.max(1, lines)).toFixed(1)} µs per acknowledged line`);
    log(`  the service's peak RSS: ${(peakRssBytes / 1024 ** 2).toFixed(0)} MB`);
    await service.stop();
    servers.pop();
    // The main thread's profile (thread 0); the JSON parse worker writes its own.
    const [file] = fs.readdirSync(PROFILES).filter((name) => name.endsWith('.0.001.cpuprofile'));
    if (file) {
      console.log(summarise(JSON.parse(fs.readFileSync(path.join(PROFILES, file), 'utf8')) as CpuProfile));
      log(`profile: ${path.join(PROFILES, file)}`);
    }
  } finally {
    for (const server of servers.reverse()) await server.stop();
    await sessions.end();
  }
}

await main();
