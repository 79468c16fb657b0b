// u64lp: the simplest capture, repeated { u64 LE length, bytes }. What `meridian record` writes by default.

import { CaptureError } from './errors';

const LEN_SZ = 8;
const TWO_POW_32 = 0x1_0000_0000;

/** The largest datagram a u64lp capture can hold (a UDP payload). */
export const U64LP_MAX_PACKET = 65_535;
/** How many leading length prefixes detection walks. */
const DETECT_PACKETS = 4;

/**
 * Content check for a file without a magic: the first few length prefixes are datagram-sized (a file cut short
 * still counts, so the reader can say where it ends). An empty file is an empty capture.
 */
export function looksLikeU64lp(buf: Buffer): boolean {
  if (buf.length === 0) return true;
  let off = 0;
  for (let n = 0; n < DETECT_PACKETS && off < buf.length; n++) {
    if (buf.length - off < LEN_SZ) return n > 0;
    if (buf.readUInt32LE(off + 4) !== 0) return false;
    const len = buf.readUInt32LE(off);
    if (len > U64LP_MAX_PACKET) return false;
    off += LEN_SZ + len;
  }
  return true;
}

export function readU64lp(buf: Buffer): Buffer[] {
  const packets: Buffer[] = [];
  let off = 0;
  while (off < buf.length) {
    if (buf.length - off < LEN_SZ) throw new CaptureError('u64lp', off, `truncated length prefix (${buf.length - off} of ${LEN_SZ} bytes)`);
    const len = buf.readUInt32LE(off + 4) * TWO_POW_32 + buf.readUInt32LE(off);
    off += LEN_SZ;
    // Checked against the bytes left before slicing (STYLE habit 4): a wild length is a broken file.
    if (len > buf.length - off) throw new CaptureError('u64lp', off - LEN_SZ, `packet length ${len} exceeds the ${buf.length - off} bytes left`);
    packets.push(buf.subarray(off, off + len));
    off += len;
  }
  return packets;
}

export function writeU64lp(packets: readonly Uint8Array[]): Buffer {
  let total = 0;
  for (const p of packets) total += LEN_SZ + p.length;
  const out = Buffer.allocUnsafe(total);
  let off = 0;
  for (const p of packets) {
    out.writeUInt32LE(p.length, off);
    out.writeUInt32LE(0, off + 4);
    out.set(p, off + LEN_SZ);
    off += LEN_SZ + p.length;
  }
  return out;
}
