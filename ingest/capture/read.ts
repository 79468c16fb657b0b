// readCapture: one entry point for the three capture formats, with detection by magic. Packets are views
// into `buf` (no copies); keep `buf` alive while they are used.

import { AR_MAGIC, readAr } from './ar';
import { CaptureError } from './errors';
import { PCAP_MAGICS, readPcap } from './pcap';
import { readU64lp } from './u64lp';

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

/** pcap and ar announce themselves; anything else is taken as u64lp (which has no magic). */
export function detectFormat(buf: Buffer): CaptureFormat {
  if (buf.length >= 4 && PCAP_MAGICS.includes(buf.readUInt32LE(0))) return 'pcap';
  if (buf.length >= AR_MAGIC.length && buf.subarray(0, AR_MAGIC.length).equals(AR_MAGIC)) return 'ar';
  return 'u64lp';
}

/** Throws CaptureError for an unreadable file (truncated, bad header), never for odd packets inside it. */
export function readCapture(buf: Buffer, format?: CaptureFormat): Capture {
  const f = format ?? detectFormat(buf);
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

export { CaptureError };
