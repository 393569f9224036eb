import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Schema } from '../store/schema.ts';
import { replaceSealed, sealedKeyIds, sealedNotUnder, type SealedColumnPlace } from '../store/sealed-values.ts';
import { recordAuditAlone, SYSTEM_SOURCE } from './audit.ts';
import { BINDINGS, SEALED_ANSWER_PREFIX, type CredentialsVault } from './credentials-vault.ts';

/** A column of sealed values: where it is, what it holds (for people), and what each value is bound to. */
export type SealedColumn = SealedColumnPlace & {
  what: string;
  /** The additional authenticated data of the value in the row of this primary key (as the vault seals it). */
  boundTo: (key: readonly string[]) => string;
};

/**
 * Every column that holds values sealed with the key ring: the one list the start-up check, `encryption-status` and
 * the re-sealing job walk. A new sealed column is added here (and nowhere else) to be counted and re-sealed.
 */
export const SEALED_COLUMNS: readonly SealedColumn[] = [
  {
    what: 'authority portal logins',
    table: 'platform_customers',
    column: 'authority_credentials',
    primaryKey: ['id'],
    boundTo: ([id]) => BINDINGS.portalLogin(id!),
  },
  {
    what: 'authority API credential sets',
    table: 'platform_customers',
    column: 'authority_api_credentials',
    primaryKey: ['id'],
    boundTo: ([id]) => BINDINGS.apiCredentials(id!),
  },
  { what: 'webhook signing secrets', table: 'webhook_endpoints', column: 'secret', primaryKey: ['id'], boundTo: ([id]) => BINDINGS.webhookSecret(id!) },
  {
    what: 'previous webhook signing secrets (a rotation overlap)',
    table: 'webhook_endpoints',
    column: 'previous_secret',
    primaryKey: ['id'],
    boundTo: ([id]) => BINDINGS.webhookSecret(id!),
  },
  {
    what: 'kept Idempotency-Key answers that show a secret',
    table: 'idempotency_keys',
    column: 'response_body',
    primaryKey: ['platform_id', 'key'],
    prefix: SEALED_ANSWER_PREFIX,
    boundTo: ([platformId, key]) => BINDINGS.answer(`${platformId}\u0000${key}`),
  },
  { what: "console users' two-factor (TOTP) secrets", table: 'console_users', column: 'totp_secret', primaryKey: ['id'], boundTo: ([id]) => BINDINGS.totpSecret(id!) },
];

/** Background re-sealing, which the service asks for when the ring holds keys other than the current one. */
export interface ResealScheduler {
  scheduleReseal(): Promise<void>;
}

/** How many sealed values use each key id: in all and per column. */
export type EncryptionStatus = {
  currentKeyId: string;
  keys: { keyId: string; values: number; current: boolean; inRing: boolean }[];
  columns: { table: string; column: string; what: string; keys: Record<string, number> }[];
};

const COUNT_CHUNK = 5_000;
export const RESEAL_BATCH = 200;

/**
 * Moves every sealed value onto the ring's current key: batch by batch, each batch one transaction (a kill loses at
 * most the batch under way, which rolls back whole), walking each column in primary key order over the values not
 * under the current key. Those already re-sealed no longer match, so a run that starts again after a kill simply goes
 * on with what is left.
 */
export class KeyRotation {
  readonly #db: Kysely<Schema>;
  readonly #vault: CredentialsVault;
  readonly #ringIds: readonly string[];
  readonly #log: FastifyBaseLogger | undefined;
  readonly #batchSize: number;
  readonly #columns: readonly SealedColumn[];
  readonly #scheduler: ResealScheduler | undefined;

  constructor(options: {
    db: Kysely<Schema>;
    vault: CredentialsVault;
    ringIds: readonly string[];
    scheduler?: ResealScheduler;
    log?: FastifyBaseLogger;
    batchSize?: number;
    columns?: readonly SealedColumn[];
  }) {
    this.#scheduler = options.scheduler;
    this.#db = options.db;
    this.#vault = options.vault;
    this.#ringIds = options.ringIds;
    this.#log = options.log;
    this.#batchSize = options.batchSize ?? RESEAL_BATCH;
    this.#columns = options.columns ?? SEALED_COLUMNS;
  }

  /** Asks for a re-sealing run when the ring holds keys besides the current one (at each start: a kill's run goes on). */
  async scheduleIfRotating(): Promise<void> {
    if (this.#ringIds.length > 1) await this.#scheduler?.scheduleReseal();
  }

  /** Counts the sealed values of every column per key id, in chunks of the primary key (no count over a whole table). */
  async status(): Promise<EncryptionStatus> {
    return encryptionStatus(this.#db, this.#vault.currentKeyId, this.#ringIds, this.#columns);
  }

  /**
   * Re-seals every value not under the current key; `between` runs after each committed batch (a test stops the run
   * there). Values that do not open are left as they are and named in the log (the next run tries them again). A run
   * that moved values is one `encryption_key.rotate` entry of the audit trail.
   */
  async resealAll(between?: (done: number) => Promise<void> | void): Promise<{ resealed: number; failed: number }> {
    let resealed = 0;
    let failed = 0;
    for (const place of this.#columns) {
      let cursor: string[] | undefined;
      for (;;) {
        const batch = await this.#db.transaction().execute(async (tx) => {
          const rows = await sealedNotUnder(tx, place, this.#vault.currentKeyId, cursor, this.#batchSize);
          let done = 0;
          let broken = 0;
          for (const row of rows) {
            let next: string;
            try {
              next = this.#vault.reseal(place.boundTo(row.key), row.sealed);
            } catch (error) {
              broken++;
              this.#log?.error({ err: error, table: place.table, column: place.column, row: row.key.join('/') }, 'encryption: a sealed value does not open; left as it is');
              continue;
            }
            if (await replaceSealed(tx, place, row, next)) done++;
          }
          return { rows, done, broken };
        });
        if (batch.rows.length === 0) break;
        cursor = batch.rows.at(-1)!.key;
        resealed += batch.done;
        failed += batch.broken;
        this.#log?.info({ table: place.table, column: place.column, resealed, currentKeyId: this.#vault.currentKeyId }, 'encryption: re-sealed a batch under the current key');
        await between?.(resealed);
        if (batch.rows.length < this.#batchSize) break;
      }
    }
    // One operator-wide entry per run that moved values (not one per batch: a large rotation would flood the trail).
    if (resealed > 0) {
      await recordAuditAlone(this.#db, SYSTEM_SOURCE, { platformId: null, action: 'encryption_key.rotate', target: { type: 'encryption_key', id: this.#vault.currentKeyId } });
    }
    return { resealed, failed };
  }
}

/** How many sealed values of `columns` use each key id (see KeyRotation.status). */
export async function encryptionStatus(
  db: Kysely<Schema>,
  currentKeyId: string,
  ringIds: readonly string[],
  columns: readonly SealedColumn[] = SEALED_COLUMNS,
): Promise<EncryptionStatus> {
  const totals = new Map<string, number>(ringIds.map((id) => [id, 0]));
  const perColumn: EncryptionStatus['columns'] = [];
  for (const place of columns) {
    const keys: Record<string, number> = {};
    let cursor: string[] | undefined;
    for (;;) {
      const chunk = await sealedKeyIds(db, place, cursor, COUNT_CHUNK);
      for (const { keyId } of chunk) {
        keys[keyId] = (keys[keyId] ?? 0) + 1;
        totals.set(keyId, (totals.get(keyId) ?? 0) + 1);
      }
      if (chunk.length < COUNT_CHUNK) break;
      cursor = chunk.at(-1)!.key;
    }
    perColumn.push({ table: place.table, column: place.column, what: place.what, keys });
  }
  return {
    currentKeyId,
    keys: [...totals].map(([keyId, values]) => ({ keyId, values, current: keyId === currentKeyId, inRing: ringIds.includes(keyId) })),
    columns: perColumn,
  };
}
