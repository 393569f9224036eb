/**
 * A re-sealing run to be killed: it re-seals in batches of RESEAL_BATCH with the key ring of its environment, writes
 * "committed <n>" after each committed batch and, at its (RESEAL_BATCH + 2)th value (inside a batch whose
 * transaction is open, with values already replaced in it), writes "inside" and stops there for good, so that the
 * test kills it with SIGKILL at that point.
 */
import fs from 'node:fs';
import { loadConfig } from '../../src/config.ts';
import { CredentialsVault } from '../../src/services/credentials-vault.ts';
import { KeyRotation } from '../../src/services/sealed-values.ts';
import { loadKeyRing } from '../../src/services/server-key.ts';
import { openDatabase } from '../../src/store/database.ts';

const config = loadConfig();
const batchSize = Number(process.env.RESEAL_BATCH);
let calls = 0;

class StallingVault extends CredentialsVault {
  override reseal(boundTo: string, sealed: string): string {
    calls++;
    if (calls === batchSize + 2) {
      fs.writeSync(1, 'inside\n');
      for (;;) {
        // Stuck in the batch's open transaction until killed.
      }
    }
    return super.reseal(boundTo, sealed);
  }
}

const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
const ring = loadKeyRing(config);
await new KeyRotation({ db: database.db, vault: new StallingVault(ring), ringIds: ring.ids, batchSize }).resealAll((done) => {
  fs.writeSync(1, `committed ${done}\n`);
});
fs.writeSync(1, 'finished\n');
