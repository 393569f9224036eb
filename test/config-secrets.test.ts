import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { ConfigError, encryptionKeys, loadConfig, withSecretFiles } from '../src/config.ts';

const A = Buffer.alloc(32, 1).toString('base64');
const B = Buffer.alloc(32, 2).toString('base64');

function refused(pattern: RegExp) {
  return (error: unknown) => error instanceof ConfigError && pattern.test(error.message);
}

/** A file holding `content` with the given mode, in a folder of the test's own. */
function secretFile(content: string, mode = 0o600): string {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'ebrc-secret-'));
  const file = path.join(folder, 'secret');
  fs.writeFileSync(file, content, { mode });
  fs.chmodSync(file, mode);
  return file;
}

test('ENCRYPTION_KEYS is a ring, the first key current; ENCRYPTION_KEY alone is the ring {default}', () => {
  assert.deepEqual(encryptionKeys({ ENCRYPTION_KEYS: `2026-11:${A}, old_1:${B}` }), [
    { id: '2026-11', key: Buffer.from(A, 'base64') },
    { id: 'old_1', key: Buffer.from(B, 'base64') },
  ]);
  assert.deepEqual(encryptionKeys({ ENCRYPTION_KEY: A }), [{ id: 'default', key: Buffer.from(A, 'base64') }]);
  assert.equal(encryptionKeys({}), undefined);
  assert.deepEqual(loadConfig({ ENCRYPTION_KEYS: `next:${B},default:${A}` }).encryptionKeys?.map((key) => key.id), ['next', 'default']);
});

test('a bad ring is refused with a message that names the problem and never a key', () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ ENCRYPTION_KEYS: A }, /ENCRYPTION_KEYS entry 1 must be id:base64key/],
    [{ ENCRYPTION_KEYS: `a:${A},:${B}` }, /ENCRYPTION_KEYS entry 2 must be id:base64key/],
    [{ ENCRYPTION_KEYS: `a b:${A}` }, /ENCRYPTION_KEYS entry 1/],
    [{ ENCRYPTION_KEYS: `a:${A},a:${B}` }, /names the key id a twice/],
    [{ ENCRYPTION_KEYS: `a:${A},b:${A}` }, /same key under the ids a and b/],
    [{ ENCRYPTION_KEYS: `a:${Buffer.alloc(16).toString('base64')}` }, /ENCRYPTION_KEYS key a must be 32 bytes in base64/],
    [{ ENCRYPTION_KEYS: `a:not base64 at all!` }, /ENCRYPTION_KEYS key a must be 32 bytes/],
    [{ ENCRYPTION_KEYS: `a:${A}`, ENCRYPTION_KEY: B }, /ENCRYPTION_KEYS and ENCRYPTION_KEY are both set/],
    [{ ENCRYPTION_KEY: 'c2hvcnQ=' }, /ENCRYPTION_KEY must be 32 bytes in base64/],
  ];
  for (const [env, pattern] of cases) {
    assert.throws(() => loadConfig(env), (error: unknown) => {
      assert.ok(error instanceof ConfigError, String(error));
      assert.match(error.message, pattern);
      assert.ok(!error.message.includes(A) && !error.message.includes(B), `no key in: ${error.message}`);
      return true;
    });
  }
});

test('X_FILE is read into X without its trailing newline, for each secret variable', () => {
  const url = 'postgresql://app:s3cret@db:5432/ebrc';
  const token = 'adm_0123456789abcdefghijklmnopqrstuv';
  const config = loadConfig({
    ENCRYPTION_KEYS_FILE: secretFile(`next:${B},default:${A}\n`),
    ADMIN_TOKEN_FILE: secretFile(`${token}\n`),
    DATABASE_URL_FILE: secretFile(`${url}\r\n`),
  });
  assert.deepEqual(config.encryptionKeys?.map((key) => key.id), ['next', 'default']);
  assert.equal(config.adminToken, token);
  assert.equal(config.databaseUrl, url);
  assert.equal(loadConfig({ ENCRYPTION_KEY_FILE: secretFile(A) }).encryptionKeys?.[0]?.id, 'default', 'without a newline too');
  assert.equal(withSecretFiles({ SMTP_URL_FILE: secretFile('smtp://user:pass@mail:587\n') }).SMTP_URL, 'smtp://user:pass@mail:587');
  assert.equal(withSecretFiles({ SMTP_URL_FILE: secretFile('smtp://mail:25\n\n') }).SMTP_URL, 'smtp://mail:25\n', 'only the one trailing newline goes');
});

test('a secret file other users can read or write is refused, naming the file and its mode', () => {
  for (const mode of [0o644, 0o640, 0o604, 0o660, 0o602]) {
    const file = secretFile('adm_0123456789abcdefghijklmnopqrstuv\n', mode);
    assert.throws(
      () => loadConfig({ ADMIN_TOKEN_FILE: file }),
      refused(new RegExp(`ADMIN_TOKEN_FILE names ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}, which other users can read or write \\(mode 0${mode.toString(8)}\\)`)),
      `mode ${mode.toString(8)}`,
    );
  }
  assert.equal(loadConfig({ ADMIN_TOKEN_FILE: secretFile('adm_0123456789abcdefghijklmnopqrstuv', 0o400) }).adminToken, 'adm_0123456789abcdefghijklmnopqrstuv');
});

test('X and X_FILE both set, a missing file or an empty one are refused', () => {
  const file = secretFile(`${A}\n`);
  assert.throws(() => loadConfig({ ENCRYPTION_KEY: A, ENCRYPTION_KEY_FILE: file }), refused(/ENCRYPTION_KEY and ENCRYPTION_KEY_FILE are both set; set one of them/));
  assert.throws(() => loadConfig({ DATABASE_URL_FILE: '/nonexistent/db-url' }), refused(/DATABASE_URL_FILE names \/nonexistent\/db-url, which cannot be read \(ENOENT\)/));
  assert.throws(() => loadConfig({ DATABASE_URL_FILE: path.dirname(file) }), refused(/which is not a file/));
  assert.throws(() => loadConfig({ ADMIN_TOKEN_FILE: secretFile('\n') }), refused(/which is empty/));
  assert.deepEqual(loadConfig({ ENCRYPTION_KEY_FILE: '' }), loadConfig({}), 'an empty X_FILE counts as unset');
});
