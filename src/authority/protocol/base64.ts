/**
 * Decodes standard base64 (with padding), or null for anything else. Buffer.from(text, 'base64') alone skips
 * characters it does not know, reads the URL-safe alphabet too and stops at stray padding, so a damaged value could
 * decode to different bytes; a text is taken only when encoding its bytes gives it back, which only canonical standard
 * base64 does (test/authority/protocol/base64.test.ts checks this against the grammar).
 */
export function decodeBase64Strictly(text: string): Buffer | null {
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : null;
}
