import { decodeBase58, encodeBase58 } from './base58';

// Transaction strings: base58 (JSON-RPC default) and base64 (JSON-RPC with encoding base64, and /plaintext).
// Node's own base64 decoder skips characters it does not know; the contract wants "invalid base64" for those,
// so the alphabet and padding are checked first (standard alphabet; padding optional but, if present, correct).

const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

export function decodeBase64Strict(s: string): Buffer | null {
  if (!BASE64_RE.test(s)) return null;
  const r = s.length % 4;
  if (r === 1) return null;
  if (r !== 0 && s.endsWith('=')) return null;
  return Buffer.from(s, 'base64');
}

export { decodeBase58, encodeBase58 };
