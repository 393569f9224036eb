import assert from 'node:assert/strict';
import { WireFailure, type WireFailureKind } from '../../src/authority/dgft/wire-failure.ts';

/** Asserts that a call of the authority's client fails with a WireFailure of this kind, and returns it. */
export async function failsWith(promise: Promise<unknown>, kind: WireFailureKind): Promise<WireFailure> {
  let failure: WireFailure | undefined;
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof WireFailure, String(error));
    assert.equal(error.failure, kind, error.message);
    failure = error;
    return true;
  });
  assert.ok(failure);
  return failure;
}
