// Classic pcap (not pcapng) of UDP datagrams: what tcpdump writes. Reader and writer side by side.
//
//   global header (24 B)                     record header (16 B), then incl_len frame bytes
//   0  4  magic (a1b2c3d4 µs | a1b23c4d ns;  0  4  ts_sec
//         byte-swapped = big-endian file)    4  4  ts_usec (ts_nsec for the ns magic)
//   4  2  version major (2)                  8  4  incl_len  (bytes captured, ≤ what is left)
//   6  2  version minor (4)                  12 4  orig_len  (bytes on the wire)
//   8  4  thiszone · 12 4 sigfigs
//   16 4  snaplen  · 20 4 linktype (1 Ethernet, 101/228 raw IPv4)
//
//   Ethernet: dst 6 · src 6 · ethertype 2 (BE) [0x8100/0x88a8 VLAN tag: TCI 2 · ethertype 2, repeatable]
//   IPv4 (0x0800): ver|IHL 1 · tos 1 · total length 2 · id 2 · flags|fragment 2 · ttl 1 · protocol 1 (17 UDP)
//                  · checksum 2 · src 4 · dst 4 · options (IHL·4 − 20)
//   UDP: src port 2 · dst port 2 · length 2 (header included) · checksum 2 · payload

import { CaptureError } from './errors';

const GLOBAL_HDR_SZ = 24;
const RECORD_HDR_SZ = 16;
const MAGIC_US = 0xa1b2c3d4;
const MAGIC_NS = 0xa1b23c4d;
const MAGIC_US_SWAPPED = 0xd4c3b2a1;
const MAGIC_NS_SWAPPED = 0x4d3cb2a1;
export const PCAP_MAGICS: readonly number[] = [MAGIC_US, MAGIC_NS, MAGIC_US_SWAPPED, MAGIC_NS_SWAPPED];
const LINKTYPE_OFF = 20;
const LINKTYPE_ETHERNET = 1;
const LINKTYPE_RAW = 101;
const LINKTYPE_IPV4 = 228;

const ETH_HDR_SZ = 14;
const ETH_TYPE_OFF = 12;
const ETHERTYPE_IPV4 = 0x0800;
const ETHERTYPE_VLAN = 0x8100;
const ETHERTYPE_QINQ = 0x88a8;
const VLAN_TAG_SZ = 4;
const IPV4_MIN_HDR_SZ = 20;
const IPV4_TOTAL_LEN_OFF = 2;
const IPV4_FRAG_OFF = 6;
const IPV4_FRAG_MASK = 0x3fff; // MF flag + fragment offset: any fragment is skipped
const IPV4_PROTO_OFF = 9;
const IPV4_CHECKSUM_OFF = 10;
const IP_PROTO_UDP = 17;
const UDP_HDR_SZ = 8;
const UDP_LEN_OFF = 4;

export interface PcapRead {
  packets: Buffer[];
  /** Arrival time of each packet, ms since the epoch (fractional). */
  timesMs: number[];
  /** Frames that are not IPv4/UDP, fragments, or cut short by the snap length. */
  skipped: number;
}

/** UDP payload of one IPv4 packet starting at ip, or null when it is not one (counted as skipped). */
function udpPayload(frame: Buffer, ip: number): Buffer | null {
  if (frame.length - ip < IPV4_MIN_HDR_SZ || frame[ip]! >> 4 !== 4) return null;
  const ihl = (frame[ip]! & 0x0f) * 4;
  const total = frame.readUInt16BE(ip + IPV4_TOTAL_LEN_OFF);
  if (ihl < IPV4_MIN_HDR_SZ || total < ihl + UDP_HDR_SZ || total > frame.length - ip) return null;
  if (frame[ip + IPV4_PROTO_OFF] !== IP_PROTO_UDP || (frame.readUInt16BE(ip + IPV4_FRAG_OFF) & IPV4_FRAG_MASK) !== 0) return null;
  const udp = ip + ihl;
  const udpLen = frame.readUInt16BE(udp + UDP_LEN_OFF);
  if (udpLen < UDP_HDR_SZ || udpLen > total - ihl) return null;
  return frame.subarray(udp + UDP_HDR_SZ, udp + udpLen);
}

function ethernetPayload(frame: Buffer): Buffer | null {
  if (frame.length < ETH_HDR_SZ) return null;
  let typeOff = ETH_TYPE_OFF;
  let type = frame.readUInt16BE(typeOff);
  while (type === ETHERTYPE_VLAN || type === ETHERTYPE_QINQ) {
    typeOff += VLAN_TAG_SZ;
    if (frame.length < typeOff + 2) return null;
    type = frame.readUInt16BE(typeOff);
  }
  return type === ETHERTYPE_IPV4 ? udpPayload(frame, typeOff + 2) : null;
}

export function readPcap(buf: Buffer): PcapRead {
  if (buf.length < GLOBAL_HDR_SZ) throw new CaptureError('pcap', 0, `truncated global header (${buf.length} of ${GLOBAL_HDR_SZ} bytes)`);
  const magic = buf.readUInt32LE(0);
  if (!PCAP_MAGICS.includes(magic)) throw new CaptureError('pcap', 0, `unknown magic 0x${magic.toString(16)}`);
  const le = magic === MAGIC_US || magic === MAGIC_NS;
  const subUnitsPerMs = magic === MAGIC_NS || magic === MAGIC_NS_SWAPPED ? 1e6 : 1e3;
  const u32 = (o: number): number => (le ? buf.readUInt32LE(o) : buf.readUInt32BE(o));
  const linktype = u32(LINKTYPE_OFF);
  if (linktype !== LINKTYPE_ETHERNET && linktype !== LINKTYPE_RAW && linktype !== LINKTYPE_IPV4) {
    throw new CaptureError('pcap', LINKTYPE_OFF, `unsupported link type ${linktype} (Ethernet or raw IPv4 expected)`);
  }
  const out: PcapRead = { packets: [], timesMs: [], skipped: 0 };
  let off = GLOBAL_HDR_SZ;
  while (off < buf.length) {
    if (buf.length - off < RECORD_HDR_SZ) throw new CaptureError('pcap', off, `truncated record header (${buf.length - off} of ${RECORD_HDR_SZ} bytes)`);
    const inclLen = u32(off + 8);
    const origLen = u32(off + 12);
    if (inclLen > buf.length - off - RECORD_HDR_SZ) throw new CaptureError('pcap', off, `record length ${inclLen} exceeds the ${buf.length - off - RECORD_HDR_SZ} bytes left`);
    const frame = buf.subarray(off + RECORD_HDR_SZ, off + RECORD_HDR_SZ + inclLen);
    const payload = inclLen < origLen ? null : linktype === LINKTYPE_ETHERNET ? ethernetPayload(frame) : udpPayload(frame, 0);
    if (payload === null) out.skipped++;
    else {
      out.packets.push(payload);
      out.timesMs.push(u32(off) * 1000 + u32(off + 4) / subUnitsPerMs);
    }
    off += RECORD_HDR_SZ + inclLen;
  }
  return out;
}

export interface PcapWriteOptions {
  dstPort: number;
  srcPort?: number;
  /** Dotted IPv4; default 127.0.0.1 for both. */
  srcIp?: string;
  dstIp?: string;
  /** Per-packet times (ms since epoch); default: all at 0. */
  timesMs?: readonly number[];
}

function ipv4Bytes(ip: string): Buffer {
  const parts = ip.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) throw new RangeError(`bad IPv4 address ${ip}`);
  return Buffer.from(parts);
}

function ipv4Checksum(hdr: Buffer, off: number): number {
  let sum = 0;
  for (let i = 0; i < IPV4_MIN_HDR_SZ; i += 2) sum += hdr.readUInt16BE(off + i);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

const MAX_UDP_PAYLOAD = 0xffff - IPV4_MIN_HDR_SZ - UDP_HDR_SZ;

/** Ethernet/IPv4/UDP frames in a little-endian µs pcap; UDP checksum 0 (allowed for IPv4). */
export function writePcap(packets: readonly Uint8Array[], opts: PcapWriteOptions): Buffer {
  const src = ipv4Bytes(opts.srcIp ?? '127.0.0.1');
  const dst = ipv4Bytes(opts.dstIp ?? '127.0.0.1');
  const frameOverhead = ETH_HDR_SZ + IPV4_MIN_HDR_SZ + UDP_HDR_SZ;
  let total = GLOBAL_HDR_SZ;
  for (const p of packets) {
    if (p.length > MAX_UDP_PAYLOAD) throw new RangeError(`UDP payload of ${p.length} bytes exceeds ${MAX_UDP_PAYLOAD}`);
    total += RECORD_HDR_SZ + frameOverhead + p.length;
  }
  const out = Buffer.alloc(total);
  out.writeUInt32LE(MAGIC_US, 0);
  out.writeUInt16LE(2, 4);
  out.writeUInt16LE(4, 6);
  out.writeUInt32LE(0xffff, 16);
  out.writeUInt32LE(LINKTYPE_ETHERNET, LINKTYPE_OFF);
  let off = GLOBAL_HDR_SZ;
  packets.forEach((p, i) => {
    const t = opts.timesMs?.[i] ?? 0;
    const sec = Math.floor(t / 1000);
    const frameLen = frameOverhead + p.length;
    out.writeUInt32LE(sec, off);
    out.writeUInt32LE(Math.min(999_999, Math.round((t - sec * 1000) * 1000)), off + 4);
    out.writeUInt32LE(frameLen, off + 8);
    out.writeUInt32LE(frameLen, off + 12);
    const eth = off + RECORD_HDR_SZ;
    out.fill(0xff, eth, eth + 6); // broadcast destination MAC; source MAC stays zero
    out.writeUInt16BE(ETHERTYPE_IPV4, eth + ETH_TYPE_OFF);
    const ip = eth + ETH_HDR_SZ;
    out[ip] = 0x45;
    out.writeUInt16BE(IPV4_MIN_HDR_SZ + UDP_HDR_SZ + p.length, ip + IPV4_TOTAL_LEN_OFF);
    out.writeUInt16BE(i & 0xffff, ip + 4);
    out[ip + 8] = 64; // TTL
    out[ip + IPV4_PROTO_OFF] = IP_PROTO_UDP;
    src.copy(out, ip + 12);
    dst.copy(out, ip + 16);
    out.writeUInt16BE(ipv4Checksum(out, ip), ip + IPV4_CHECKSUM_OFF);
    const udp = ip + IPV4_MIN_HDR_SZ;
    out.writeUInt16BE(opts.srcPort ?? opts.dstPort, udp);
    out.writeUInt16BE(opts.dstPort, udp + 2);
    out.writeUInt16BE(UDP_HDR_SZ + p.length, udp + UDP_LEN_OFF);
    out.set(p, udp + UDP_HDR_SZ);
    off += RECORD_HDR_SZ + frameLen;
  });
  return out;
}
