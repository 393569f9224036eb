import type { TestContext } from 'node:test';
import type { SandboxConfig } from '../../sandbox/config.ts';
import { gatewayApiKey, gatewayEnv, httpClient, killGateway, startGateway, stopGateway, waitUntilReady, type RequestOptions, type Running } from './gateway.ts';
import { scratchDatabase, startTestSandbox, type Backend, type TestResponse } from './harness.ts';
import type { PushStream } from './push-stream.ts';
import { Random, runSeed, scaled } from './reliability.ts';
import { sleep } from './workflow.ts';

/**
 * The harness the kill tests share (test/reliability/crash, webhook-outbox-kill, upload-kill): `node src/main.ts` as a
 * child process on a scratch database, against a sandbox authority program in the test's process that is never
 * killed; killed with SIGKILL and started again on the same data, with a client that follows it from one start to the
 * next.
 */

type Scratch = Awaited<ReturnType<typeof scratchDatabase>>;

/** How often the start after a kill is itself killed before it is ready (migrations, recovery, the lock). */
const EARLY_KILL_CHANCE = 0.2;

/** The service under test, across its kills and restarts. */
export class KilledService {
  readonly #env: Record<string, string>;
  readonly #random: Random;
  #running: Running | undefined;
  #base = '';
  #apiKey = '';
  /** The output of every start that has ended, in order. */
  readonly outputs: string[] = [];
  /** Starts killed before they were ready. */
  killsDuringStart = 0;
  /** How long each restart after a kill took to be ready, in ms. */
  readonly restartMs: number[] = [];

  constructor(env: Record<string, string>, random: Random) {
    this.#env = env;
    this.#random = random;
  }

  /** The first start: waits until it is ready and takes its API key (the demo key, or a new platform's on PostgreSQL). */
  async start(scratch: Scratch, platformName: string): Promise<void> {
    this.#running = startGateway(this.#env);
    this.#base = await waitUntilReady(this.#running);
    this.#apiKey = await gatewayApiKey(this.#running, scratch, platformName);
  }

  get apiKey(): string {
    return this.#apiKey;
  }

  /** The base URL of the running start. */
  get base(): string {
    return this.#base;
  }

  /** The output of the running start so far. */
  output(): string {
    return this.#running?.output() ?? '';
  }

  /** A client of the API with the platform's key that always talks to the running start; each call gives up after 15 s. */
  readonly client = {
    request: (method: string, url: string, options?: RequestOptions): Promise<TestResponse> => httpClient(this.#base, this.#apiKey, 15_000).request(method, url, options),
  };

  /** SIGKILL, as a crash would: nothing is flushed, nothing is closed. Its output is kept. */
  async kill(): Promise<void> {
    const running = this.#running!;
    await killGateway(running);
    this.outputs.push(running.output());
  }

  /** Starts again after a kill; now and then that start is killed too before it is ready, and the next one waited for. */
  async restart(): Promise<void> {
    if (this.#random.chance(EARLY_KILL_CHANCE)) {
      const early = startGateway(this.#env);
      await sleep(this.#random.int(50, 1_500));
      await killGateway(early);
      this.outputs.push(early.output());
      this.killsDuringStart += 1;
    }
    const restarting = Date.now();
    this.#running = startGateway(this.#env);
    this.#base = await waitUntilReady(this.#running);
    this.restartMs.push(Date.now() - restarting);
  }

  /**
   * `workers` clients push and poll on `stream` (7 calls in 10 push) in rounds; each round but the last ends with a
   * kill (after `onKill`, at its moment) and a restart, after which the calls the kill cut off and the last
   * acknowledgements are retried with their Idempotency-Keys. The last round runs 2 s (5 s in a long run) and ends
   * when the workers are done. Returns the kills made during the stream.
   */
  async pushThroughKills(stream: PushStream, options: { kills: number; workers: number; onKill?: () => void }): Promise<number> {
    let kills = 0;
    for (let round = 0; round <= options.kills; round++) {
      const last = round === options.kills;
      let stopping = false;
      const workers = Array.from({ length: options.workers }, async () => {
        while (!stopping && stream.usableIrms > 0) {
          if (this.#random.chance(0.7)) await stream.pushOnce(this.client);
          else await stream.pollOnce(this.client);
        }
      });
      await sleep(last ? scaled(2_000, 5_000) : this.#random.int(200, 2_500));
      stopping = true;
      if (last) {
        await Promise.all(workers);
        break;
      }
      await this.kill();
      kills += 1;
      options.onKill?.();
      await Promise.all(workers);
      await this.restart();
      await stream.retryUnanswered(this.client);
      await stream.replayAcknowledged(this.client);
    }
    return kills;
  }

  /** SIGTERM (SIGKILL after 15 s); its output is kept. Does nothing once stopped or killed. */
  async stop(): Promise<void> {
    const running = this.#running;
    if (!running || running.child.exitCode !== null || running.child.signalCode !== null) return;
    await stopGateway(running);
    this.outputs.push(running.output());
  }

  /** The output of every start, the running one's included. */
  logs(): string {
    const running = this.#running;
    const live = running && running.child.exitCode === null && running.child.signalCode === null ? [running.output()] : [];
    return [...this.outputs, ...live].join('\n');
  }
}

export type KillRun = {
  seed: number;
  /** The kill schedule's randomness, from the seed (RELIABILITY_SEED replays it). */
  random: Random;
  scratch: Scratch;
  sandbox: Awaited<ReturnType<typeof startTestSandbox>>;
  env: Record<string, string>;
  service: KilledService;
  /** When the first start began (Date.now()). */
  startedAt: number;
};

/**
 * One kill test's run on a backend: a scratch database, the sandbox program, the service started and ready, then
 * `body`; afterwards the service is stopped, the sandbox closed and the database dropped, whatever happened.
 */
export async function killRun(
  backend: Backend,
  t: TestContext,
  options: { platformName: string; sandbox?: Partial<SandboxConfig>; env?: Record<string, string> },
  body: (run: KillRun) => Promise<void>,
): Promise<void> {
  const seed = runSeed();
  t.diagnostic(`seed ${seed} (RELIABILITY_SEED=${seed} replays the kill schedule)`);
  const random = new Random(seed);
  const scratch = await scratchDatabase(backend);
  // The kill tests kill the service, not the authority: the sandbox program runs here, across every kill and restart.
  const sandbox = await startTestSandbox(scratch, { processingDelayMs: 200, ...options.sandbox }).catch(async (error: unknown) => {
    await scratch.drop();
    throw error;
  });
  const env = gatewayEnv(scratch, sandbox.url, { RATE_LIMIT_PER_SECOND: '100000', RATE_LIMIT_BURST: '100000', ...options.env });
  const service = new KilledService(env, random);
  try {
    const startedAt = Date.now();
    await service.start(scratch, options.platformName);
    await body({ seed, random, scratch, sandbox, env, service, startedAt });
  } finally {
    try {
      await service.stop();
      await sandbox.close();
    } finally {
      await scratch.drop();
    }
  }
}
