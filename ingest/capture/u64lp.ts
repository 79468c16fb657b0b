// u64lp: the simplest capture, repeated { u64 LE length, bytes }. What `meridian record` writes by default.

import { CaptureError } from './errors';

const LEN_SZ = 8;
const TWO_POW_32 = 0x1_0000_0000;

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
