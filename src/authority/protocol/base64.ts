const BASE64_TEXT = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Decodes standard base64 (with padding), or null for anything else. Buffer.from(text, 'base64') alone skips
 * characters it does not know and stops at stray padding, so a damaged value could decode to different bytes.
 */
export function decodeBase64Strictly(text: string): Buffer | null {
  if (text.length % 4 !== 0 || !BASE64_TEXT.test(text)) return null;
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : null;
}
