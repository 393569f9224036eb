import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ADVANCE_PURPOSE_CODE,
  BANNED_PURPOSE_CODES,
  IT_SERVICE_PURPOSE_CODES,
  PORT_CODES,
  VALID_PURPOSE_CODES,
} from '../../src/domain/purpose-codes.ts';

test('expands the annexure ranges inclusively', () => {
  for (const code of ['P0101', 'P0104', 'P0214', 'P0220', 'P0226', 'P0801', 'P0809', 'P1013', 'P1022', 'P1103', 'P1109']) {
    assert.ok(VALID_PURPOSE_CODES.has(code), code);
  }
  for (const code of ['P0105', 'P0213', 'P0227', 'P0303', 'P0810', 'P1012', 'P1023', 'P1102', 'P9999', 'p0103']) {
    assert.ok(!VALID_PURPOSE_CODES.has(code), code);
  }
});

test('holds exactly the annexure codes', () => {
  assert.equal(VALID_PURPOSE_CODES.size, 92);
  assert.ok([...VALID_PURPOSE_CODES].every((code) => /^P\d{4}$/.test(code)));
});

test('banned, advance and IT service codes are valid codes', () => {
  assert.deepEqual([...BANNED_PURPOSE_CODES].sort(), ['P0101', 'P0108']);
  assert.equal(ADVANCE_PURPOSE_CODE, 'P0103');
  assert.deepEqual([...IT_SERVICE_PURPOSE_CODES].sort(), ['P0103', 'P0802', 'P0803', 'P0807']);
  for (const code of [...BANNED_PURPOSE_CODES, ...IT_SERVICE_PURPOSE_CODES]) assert.ok(VALID_PURPOSE_CODES.has(code), code);
});

test('the port master has the documented ports, all of 6 characters', () => {
  for (const port of ['INDEL4', 'INMAA1', 'INBOM4', 'INNSA1']) assert.ok(PORT_CODES.has(port), port);
  assert.ok(PORT_CODES.size >= 40);
  assert.ok([...PORT_CODES].every((port) => /^IN[A-Z]{3}\d$/.test(port)));
});
