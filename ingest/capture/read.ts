// readCapture: one entry point for the three capture formats, with detection by magic. Packets are views
// into `buf` (no copies); keep `buf` alive while they are used.

import { AR_MAGIC, readAr } from './ar';
import { CaptureError, NotACaptureError } from './errors';
import { PCAP_MAGICS, readPcap } from './pcap';
import { looksLikeU64lp, readU64lp } from './u64lp';

export type CaptureFormat = 'pcap' | 'ar' | 'u64lp';
export const CAPTURE_FORMATS: readonly CaptureFormat[] = ['pcap', 'ar', 'u64lp'];

export interface Capture {
  format: CaptureFormat;
  packets: Buffer[];
  /** pcap only: arrival times (ms since the epoch); null for formats without timestamps. */
  timesMs: number[] | null;
  /** pcap only: frames that were not IPv4/UDP (or were fragments or cut short); 0 otherwise. */
  skipped: number;
}

/**
 * pcap and ar announce themselves by magic; u64lp has none, so it is recognised by its first length prefixes
 * being datagram-sized (an empty file is an empty u64lp capture). null: none of the three.
 */
export function detectFormat(buf: Buffer): CaptureFormat | null {
  if (buf.length >= 4 && PCAP_MAGICS.includes(buf.readUInt32LE(0))) return 'pcap';
  if (buf.length >= AR_MAGIC.length && buf.subarray(0, AR_MAGIC.length).equals(AR_MAGIC)) return 'ar';
  if (looksLikeU64lp(buf)) return 'u64lp';
  return null;
}

/**
 * Throws CaptureError for an unreadable file (truncated, bad header), never for odd packets inside it, and
 * NotACaptureError when no format is given and the content is none of the three.
 */
export function readCapture(buf: Buffer, format?: CaptureFormat): Capture {
  const f = format ?? detectFormat(buf);
  if (f === null) throw new NotACaptureError();
  switch (f) {
    case 'pcap': {
      const r = readPcap(buf);
      return { format: f, packets: r.packets, timesMs: r.timesMs, skipped: r.skipped };
    }
    case 'ar':
      return { format: f, packets: readAr(buf), timesMs: null, skipped: 0 };
    case 'u64lp':
      return { format: f, packets: readU64lp(buf), timesMs: null, skipped: 0 };
    default: {
      const never: never = f;
      throw new CaptureError(String(never), 0, 'unknown format');
    }
  }
}

export { CaptureError, NotACaptureError };
