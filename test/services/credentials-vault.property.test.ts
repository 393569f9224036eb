import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { CredentialsVault, keyIdOf, UnknownKeyError } from '../../src/services/credentials-vault.ts';
import { KeyRing, ServerKey } from '../../src/services/server-key.ts';

const keyId = fc.stringMatching(/^[A-Za-z0-9_.-]{1,32}$/);
/** Two to five distinct key ids, each with a key of its own. */
const keys = fc
  .uniqueArray(keyId, { minLength: 2, maxLength: 5 })
  .chain((ids) => fc.tuple(fc.constant(ids), fc.array(fc.uint8Array({ minLength: 32, maxLength: 32 }), { minLength: ids.length, maxLength: ids.length })))
  .map(([ids, secrets]) => ids.map((id, index) => new ServerKey(Buffer.from(secrets[index]!), id)));

/** A ring of some of `all`, in some order, the current key first. */
function ringOf(all: ServerKey[], order: number[]): KeyRing {
  return new KeyRing(order.map((index) => all[index % all.length]!).filter((key, index, list) => list.indexOf(key) === index));
}

test('what one ring seals, any ring holding its key opens; re-sealing moves it onto the current key; a ring without it names the id', () => {
  fc.assert(
    fc.property(
      keys,
      fc.array(fc.nat(), { minLength: 1, maxLength: 5 }),
      fc.array(fc.nat(), { minLength: 1, maxLength: 5 }),
      fc.uuid(),
      fc.string(),
      (all, sealingOrder, openingOrder, endpointId, secret) => {
        const sealing = ringOf(all, sealingOrder);
        const opening = ringOf(all, openingOrder);
        const sealed = new CredentialsVault(sealing).sealWebhookSecret(endpointId, secret);
        assert.equal(keyIdOf(sealed), sealing.current.id, 'the sealed text names the current key');
        const reader = new CredentialsVault(opening);
        if (opening.byId(sealing.current.id) === undefined) {
          assert.throws(() => reader.openWebhookSecret(endpointId, sealed), (error: unknown) => error instanceof UnknownKeyError && error.keyId === sealing.current.id && error.message.includes(sealing.current.id));
          return;
        }
        assert.equal(reader.openWebhookSecret(endpointId, sealed), secret);
        const resealed = reader.reseal(`webhook-endpoint/${endpointId}`, sealed);
        assert.equal(keyIdOf(resealed), opening.current.id);
        assert.equal(new CredentialsVault(new KeyRing([opening.current])).openWebhookSecret(endpointId, resealed), secret, 'the current key alone opens it');
        assert.throws(() => reader.openWebhookSecret(`${endpointId}x`, resealed), 'still bound to its endpoint');
      },
    ),
    { numRuns: 300 },
  );
});

test('values sealed before key ids (v1:…) open as the key default and re-seal onto the current key', () => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.uuid(), fc.string(), fc.string(), (old, next, customerId, username, password) => {
      fc.pre(!Buffer.from(old).equals(Buffer.from(next)));
      const before = new CredentialsVault(KeyRing.of(Buffer.from(old)));
      const legacy = before.seal(customerId, { username, password }).replace(/^v2:default:/, 'v1:');
      assert.equal(keyIdOf(legacy), 'default');
      const ring = new KeyRing([new ServerKey(Buffer.from(next), 'next'), new ServerKey(Buffer.from(old), 'default')]);
      const vault = new CredentialsVault(ring);
      assert.deepEqual(vault.open(customerId, legacy), { username, password });
      const moved = vault.reseal(customerId, legacy);
      assert.match(moved, /^v2:next:/);
      assert.deepEqual(new CredentialsVault(new KeyRing([ring.current])).open(customerId, moved), { username, password });
    }),
    { numRuns: 100 },
  );
});
