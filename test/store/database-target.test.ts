import assert from 'node:assert/strict';
import { test } from 'node:test';
import { databaseTarget } from '../../src/store/database.ts';

/** The log lines of a start that waits for PostgreSQL name where it waits, never who connects. */

test('a TCP URL is named by its host and port, without its user or password', () => {
  assert.equal(databaseTarget('postgres://ebrc:secret@db.example:6543/ebrc'), 'db.example:6543');
  assert.equal(databaseTarget('postgresql://ebrc@db.example/ebrc'), 'db.example:5432');
});

test("a Unix socket's URL is named by the socket's directory (its host parameter), as pg connects to it", () => {
  assert.equal(databaseTarget('postgres://ebrc:secret@localhost/ebrc?host=/var/run/postgresql'), '/var/run/postgresql:5432');
});
