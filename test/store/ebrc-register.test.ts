import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { insertCustomer } from '../../src/store/customers.ts';
import { insertRegistered, updateRegistered, type RegisterValues } from '../../src/store/ebrcs.ts';
import { describeEachBackend } from '../support/harness.ts';

function ebrc(number: string, changes: Partial<RegisterValues> = {}): RegisterValues {
  return {
    ebrc_number: number,
    ebrc_date: '2026-11-20',
    irm_number: 'HDFCIR0599001001001807',
    sb_cum_invoice_number: 'INV-1',
    sb_cum_invoice_date: '2026-11-01',
    realised_value_fcc: '1234567890123.45',
    currency: 'USD',
    iec_code: '0599001001',
    request_id: null,
    source: 'elsewhere',
    status: 'generated',
    ...changes,
  };
}

describeEachBackend('The eBRC register store', (h) => {
  const newCustomer = async () => {
    const id = randomUUID();
    await insertCustomer(h.database.db, { id, platformId: h.platformA.id, name: 'Register', email: `register-${id}@example.com`, type: 'customer', companyName: 'Co', address: null });
    return { platformId: h.platformA.id, customerId: id };
  };

  test('a batch whose customer is missing, or is another platform’s, is refused whole: nothing of it is stored', async () => {
    const owner = await newCustomer();
    const batch = (prefix: string) => [ebrc(`${prefix}1`), ebrc(`${prefix}2`)];
    for (const [label, wrongOwner] of [
      ['a customer that does not exist', { platformId: h.platformA.id, customerId: randomUUID() }],
      ['the customer under another platform', { platformId: h.platformB.id, customerId: owner.customerId }],
      ['a platform that does not exist', { platformId: randomUUID(), customerId: owner.customerId }],
    ] as const) {
      const prefix = `EBRCOWNER${randomUUID().slice(0, 8)}`;
      await assert.rejects(insertRegistered(h.database.db, wrongOwner, batch(prefix)), (error: { code?: string }) => error.code === '23503', label);
      const stored = await h.database.db.selectFrom('ebrcs').select('id').where('ebrc_number', 'like', `${prefix}%`).execute();
      assert.deepEqual(stored, [], label);
    }
    const prefix = `EBRCOWNER${randomUUID().slice(0, 8)}`;
    assert.equal((await insertRegistered(h.database.db, owner, batch(prefix))).length, 2, 'the right owner’s batch is stored');
  });

  test('a batch is written in one statement and returned in the order given, amounts exact; an existing eBRC is kept or claimed', async () => {
    const owner = await newCustomer();
    const numbers = Array.from({ length: 50 }, (_, index) => `EBRC${String(50 - index).padStart(16, '0')}`);
    const written = await insertRegistered(h.database.db, owner, numbers.map((number) => ebrc(number)));
    assert.deepEqual(written.map((row) => row.ebrc_number), numbers);
    assert.deepEqual([written[0]!.realised_value_fcc, written[0]!.ebrc_date, written[0]!.sb_cum_invoice_date], ['1234567890123.45', '2026-11-20', '2026-11-01']);
    assert.equal(new Set(written.map((row) => row.id)).size, 50);

    const kept = await insertRegistered(h.database.db, owner, [ebrc(numbers[0]!, { source: 'this_service', request_id: 'R1' })], 'keep');
    assert.deepEqual(kept, [], 'keep: nothing written');
    const [claimed] = await insertRegistered(h.database.db, owner, [ebrc(numbers[0]!, { source: 'this_service', request_id: 'R1', currency: 'EUR' })], 'claim');
    assert.deepEqual([claimed!.id, claimed!.source, claimed!.request_id, claimed!.currency], [written[0]!.id, 'this_service', 'R1', 'USD']);
  });

  test("the authority's text with half a surrogate pair or a NUL is kept with U+FFFD in its place, not refused with its batch", async () => {
    const owner = await newCustomer();
    const rows = await insertRegistered(h.database.db, owner, [ebrc('EBRC-ODD-1', { sb_cum_invoice_number: 'INV\uD800-2' }), ebrc('EBRC-ODD-2', { irm_number: 'IRM\u0000-3' }), ebrc('EBRC-PLAIN')]);
    assert.deepEqual(rows.map((row) => [row.ebrc_number, row.sb_cum_invoice_number, row.irm_number]), [
      ['EBRC-ODD-1', 'INV\uFFFD-2', ebrc('').irm_number],
      ['EBRC-ODD-2', ebrc('').sb_cum_invoice_number, 'IRM\uFFFD-3'],
      ['EBRC-PLAIN', ebrc('').sb_cum_invoice_number, ebrc('').irm_number],
    ]);
    const [updated] = await updateRegistered(h.database.db, [{ ...ebrc('EBRC-ODD-1', { sb_cum_invoice_number: 'INV-\uDC00', currency: 'U\u0000D' }), id: rows[0]!.id }]);
    assert.deepEqual([updated!.sb_cum_invoice_number, updated!.currency], ['INV-\uFFFD', 'U\uFFFDD']);
  });
});
