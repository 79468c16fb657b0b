// API keys are UUIDs. The registry holds their lowercase hyphenated text form; transports bring them as query
// text (HTTP), certificate CN text (QUIC), or 16 raw bytes / 36 ASCII characters in front of a datagram (UDP).

export const UUID_TEXT_SZ = 36;
export const UUID_RAW_SZ = 16;
const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const HYPHENS = [8, 13, 18, 23];
const HEX = '0123456789abcdef';

/** The canonical (lowercase) key, or null when the text is not a UUID. */
export function normalizeApiKey(text: string | undefined | null): string | null {
  if (text === undefined || text === null || text.length !== UUID_TEXT_SZ || !UUID_RE.test(text)) return null;
  return text.toLowerCase();
}

/** True when bytes[off..off+36) is the ASCII text form of a UUID. */
export function isTextUuidAt(b: Uint8Array, off: number): boolean {
  if (b.length - off < UUID_TEXT_SZ) return false;
  for (let i = 0; i < UUID_TEXT_SZ; i++) {
    const c = b[off + i]!;
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (c !== 0x2d) return false;
    } else if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46))) {
      return false;
    }
  }
  return true;
}

/** The text form of 16 raw UUID bytes at `off`. */
export function uuidFromRaw(b: Uint8Array, off: number): string {
  let s = '';
  for (let i = 0; i < UUID_RAW_SZ; i++) {
    if (HYPHENS.includes(s.length)) s += '-';
    const v = b[off + i]!;
    s += HEX[v >> 4]! + HEX[v & 15]!;
  }
  return s;
}

/** 16 raw bytes of a UUID text (tests and clients that send the raw form). */
export function uuidToRaw(text: string): Buffer {
  const k = normalizeApiKey(text);
  if (k === null) throw new RangeError('not a UUID');
  return Buffer.from(k.replace(/-/g, ''), 'hex');
}

export type DatagramKey = { ok: true; apiKey: string; txOffset: number } | { ok: false };

/**
 * The key prefix of a UDP datagram: the 36-character text form when the first 36 bytes are one (checked first:
 * for 16 raw bytes plus a transaction to spell one, 36 bytes would all have to be hex digits with hyphens in place), else 16 raw bytes.
 */
export function readDatagramKey(b: Uint8Array): DatagramKey {
  if (isTextUuidAt(b, 0)) {
    let s = '';
    for (let i = 0; i < UUID_TEXT_SZ; i++) s += String.fromCharCode(b[i]! | 0x20); // | 0x20 lowercases hex letters; digits and '-' are unchanged
    return { ok: true, apiKey: s, txOffset: UUID_TEXT_SZ };
  }
  if (b.length < UUID_RAW_SZ) return { ok: false };
  return { ok: true, apiKey: uuidFromRaw(b, 0), txOffset: UUID_RAW_SZ };
}
