// A block marker read strictly as Agave's `solana-entry` crate reads it (entry/src/block_component.rs, published
// 4.2.2, through `wincode::deserialize::<BlockComponent>`). A data range (an entry batch payload as reassembled,
// entries.ts) whose u64 entry count is 0 holds a marker:
//
//   +0   u64  0                    entry count (an entry batch otherwise)
//   +8   u16  marker version       VersionedBlockMarker tag: only 1 (V1)
//   +10  u8   variant              BlockMarkerV1 tag: 0 Footer, 1 Header, 2 UpdateParent, 3 GenesisCertificate
//   +11  u16  byte length          LengthPrefixed.len: READ BUT NOT CHECKED by 4.2.2 (newer sources check it)
//   +13  payload, read field by field from the data range itself (not bounded by the byte length):
//        Header / UpdateParent  u8 version (1) · u64 parent slot · [32] parent block id
//        Footer                 u8 version (1) · [32] bank hash · u64 producer time ns · u8 n · n user agent
//                               · Option<FinalCert> · Option<SkipRewardCert> · Option<NotarRewardCert>
//            Option             u8 tag 0 (None) or 1 (Some), any other tag refused
//            FinalCert          u64 slot · [32] block id · Aggregate · Option<Aggregate> (notar)
//            Aggregate          [96] BLS signature (compressed) · u16 n · n bitmap
//            SkipRewardCert     u64 slot · [96] signature · compact-u16 n · n bitmap
//            NotarRewardCert    u64 slot · [32] block id · [96] signature · compact-u16 n · n bitmap
//        GenesisCertificate     u64 slot · [32] block id · [192] BLS signature · u64 n · n bitmap (no version)
//   bytes after the payload are left unread (wincode::deserialize, not deserialize_exact), as Agave's
//   blockstore does with a data range's tail.
//
// The BLS signatures are carried, not verified (verifying certificates needs the epoch's BLS keys and stake).
// The test (test/ingest/block-component.test.ts) checks every verdict here against the crate's own, recorded in
// test/fixtures/alpenglow/vectors.json.

/** entries.ts COUNT_SZ / HASH_SZ (not imported: entries.ts imports this file). */
const COUNT_SZ = 8;
const HASH_SZ = 32;
export const MARKER_VERSION_OFF = COUNT_SZ;
const MARKER_PAYLOAD_OFF = COUNT_SZ + 5; // 13
const BLS_COMPRESSED_SZ = 96;
const BLS_AFFINE_SZ = 192;

export const MarkerVariant = { footer: 0, header: 1, updateParent: 2, genesisCertificate: 3 } as const;

export const MARKER_REASONS = {
  marker_truncated: 'a block marker ends before its version, variant or byte length',
  marker_version: 'a block marker version other than 1',
  marker_variant: 'a block marker variant other than 0..3 (Footer, Header, UpdateParent, GenesisCertificate)',
  marker_payload_version: 'a Header, UpdateParent or Footer payload version other than 1',
  marker_payload_truncated: "a block marker's payload runs past the end of its data",
  marker_option_tag: 'a footer option tag other than 0 or 1',
  marker_short_vec: 'a non-canonical or overlong compact-u16 length in a reward certificate',
} as const;
export type MarkerReason = keyof typeof MARKER_REASONS;

export interface VotesAggregate {
  signature: Buffer;
  bitmap: Buffer;
}

export interface BlockFooter {
  bankHash: Buffer;
  producerTimeNanos: bigint;
  userAgent: Buffer;
  finalCert: { slot: bigint; blockId: Buffer; finalAggregate: VotesAggregate; notarAggregate: VotesAggregate | null } | null;
  skipRewardCert: { slot: bigint; signature: Buffer; bitmap: Buffer } | null;
  notarRewardCert: { slot: bigint; blockId: Buffer; signature: Buffer; bitmap: Buffer } | null;
}

export type ParsedMarker =
  | { kind: 'header'; byteLen: number; parentSlot: bigint; parentBlockId: Buffer }
  | { kind: 'update_parent'; byteLen: number; parentSlot: bigint; parentBlockId: Buffer }
  | ({ kind: 'footer'; byteLen: number } & BlockFooter)
  | { kind: 'genesis_certificate'; byteLen: number; slot: bigint; blockId: Buffer; blsSignature: Buffer; bitmap: Buffer };

export type MarkerParse = { ok: true; marker: ParsedMarker; consumed: number } | { ok: false; reason: MarkerReason; at: number };

/** Thrown inside the reader only; parseBlockMarker turns it into a value. */
class Refused {
  constructor(
    readonly reason: MarkerReason,
    readonly at: number,
  ) {}
}

class Reader {
  constructor(
    private readonly b: Buffer,
    public off: number,
  ) {}

  need(n: number): void {
    if (this.b.length - this.off < n) throw new Refused('marker_payload_truncated', this.off);
  }
  u8(): number {
    this.need(1);
    return this.b[this.off++]!;
  }
  u16(): number {
    this.need(2);
    const v = this.b.readUInt16LE(this.off);
    this.off += 2;
    return v;
  }
  u64(): bigint {
    this.need(8);
    const v = this.b.readBigUInt64LE(this.off);
    this.off += 8;
    return v;
  }
  bytes(n: number): Buffer {
    this.need(n);
    const v = this.b.subarray(this.off, this.off + n);
    this.off += n;
    return v;
  }
  /** solana-short-vec's ShortU16: 7 bits a byte, at most 3 bytes, canonical (no trailing zero byte), ≤ u16::MAX. */
  shortU16(): number {
    const at = this.off;
    let v = 0;
    for (let i = 0; i < 3; i++) {
      const byte = this.u8();
      v |= (byte & 0x7f) << (7 * i);
      if ((byte & 0x80) === 0) {
        if (i > 0 && byte === 0) throw new Refused('marker_short_vec', at);
        if (v > 0xffff) throw new Refused('marker_short_vec', at);
        return v;
      }
    }
    throw new Refused('marker_short_vec', at);
  }
  option(): boolean {
    const at = this.off;
    const tag = this.u8();
    if (tag > 1) throw new Refused('marker_option_tag', at);
    return tag === 1;
  }
  version(): void {
    const at = this.off;
    if (this.u8() !== 1) throw new Refused('marker_payload_version', at);
  }
  aggregate(): VotesAggregate {
    const signature = this.bytes(BLS_COMPRESSED_SZ);
    return { signature, bitmap: this.bytes(this.u16()) };
  }
}

/** Parses the marker of a data range whose entry count (bytes 0..8) is 0. */
export function parseBlockMarker(data: Buffer): MarkerParse {
  if (data.length < MARKER_PAYLOAD_OFF) return { ok: false, reason: 'marker_truncated', at: Math.min(data.length, MARKER_VERSION_OFF) };
  if (data.readUInt16LE(MARKER_VERSION_OFF) !== 1) return { ok: false, reason: 'marker_version', at: MARKER_VERSION_OFF };
  const variant = data[MARKER_VERSION_OFF + 2]!;
  if (variant > MarkerVariant.genesisCertificate) return { ok: false, reason: 'marker_variant', at: MARKER_VERSION_OFF + 2 };
  const byteLen = data.readUInt16LE(MARKER_VERSION_OFF + 3);
  const r = new Reader(data, MARKER_PAYLOAD_OFF);
  try {
    let marker: ParsedMarker;
    if (variant === MarkerVariant.header || variant === MarkerVariant.updateParent) {
      r.version();
      const fields = { byteLen, parentSlot: r.u64(), parentBlockId: r.bytes(HASH_SZ) };
      marker = variant === MarkerVariant.header ? { kind: 'header', ...fields } : { kind: 'update_parent', ...fields };
    } else if (variant === MarkerVariant.footer) {
      r.version();
      const bankHash = r.bytes(HASH_SZ);
      const producerTimeNanos = r.u64();
      const userAgent = r.bytes(r.u8());
      const finalCert = r.option() ? { slot: r.u64(), blockId: r.bytes(HASH_SZ), finalAggregate: r.aggregate(), notarAggregate: r.option() ? r.aggregate() : null } : null;
      const skipRewardCert = r.option() ? { slot: r.u64(), signature: r.bytes(BLS_COMPRESSED_SZ), bitmap: r.bytes(r.shortU16()) } : null;
      const notarRewardCert = r.option() ? { slot: r.u64(), blockId: r.bytes(HASH_SZ), signature: r.bytes(BLS_COMPRESSED_SZ), bitmap: r.bytes(r.shortU16()) } : null;
      marker = { kind: 'footer', byteLen, bankHash, producerTimeNanos, userAgent, finalCert, skipRewardCert, notarRewardCert };
    } else {
      const slot = r.u64();
      const blockId = r.bytes(HASH_SZ);
      const blsSignature = r.bytes(BLS_AFFINE_SZ);
      const n = r.u64();
      // A length past the data is refused before anything is sliced (a u64 can exceed any buffer).
      if (n > BigInt(data.length)) throw new Refused('marker_payload_truncated', r.off - 8);
      marker = { kind: 'genesis_certificate', byteLen, slot, blockId, blsSignature, bitmap: r.bytes(Number(n)) };
    }
    return { ok: true, marker, consumed: r.off };
  } catch (e) {
    if (e instanceof Refused) return { ok: false, reason: e.reason, at: e.at };
    throw e;
  }
}

/** Serializes a marker component as the crate does (byte length = the payload's size). Local chain, tests, bench. */
export function encodeBlockMarker(m: ParsedMarker): Buffer {
  const parts: Buffer[] = [];
  const u8 = (v: number) => parts.push(Buffer.from([v]));
  const u16 = (v: number) => {
    const b = Buffer.alloc(2);
    b.writeUInt16LE(v);
    parts.push(b);
  };
  const u64 = (v: bigint) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(v);
    parts.push(b);
  };
  const shortU16 = (v: number) => {
    const out: number[] = [];
    do {
      let byte = v & 0x7f;
      v >>= 7;
      if (v !== 0) byte |= 0x80;
      out.push(byte);
    } while (v !== 0);
    parts.push(Buffer.from(out));
  };
  const agg = (a: VotesAggregate) => {
    parts.push(a.signature);
    u16(a.bitmap.length);
    parts.push(a.bitmap);
  };
  let variant: number;
  if (m.kind === 'header' || m.kind === 'update_parent') {
    variant = m.kind === 'header' ? MarkerVariant.header : MarkerVariant.updateParent;
    u8(1);
    u64(m.parentSlot);
    parts.push(m.parentBlockId);
  } else if (m.kind === 'footer') {
    variant = MarkerVariant.footer;
    u8(1);
    parts.push(m.bankHash);
    u64(m.producerTimeNanos);
    u8(m.userAgent.length);
    parts.push(m.userAgent);
    u8(m.finalCert === null ? 0 : 1);
    if (m.finalCert !== null) {
      u64(m.finalCert.slot);
      parts.push(m.finalCert.blockId);
      agg(m.finalCert.finalAggregate);
      u8(m.finalCert.notarAggregate === null ? 0 : 1);
      if (m.finalCert.notarAggregate !== null) agg(m.finalCert.notarAggregate);
    }
    u8(m.skipRewardCert === null ? 0 : 1);
    if (m.skipRewardCert !== null) {
      u64(m.skipRewardCert.slot);
      parts.push(m.skipRewardCert.signature);
      shortU16(m.skipRewardCert.bitmap.length);
      parts.push(m.skipRewardCert.bitmap);
    }
    u8(m.notarRewardCert === null ? 0 : 1);
    if (m.notarRewardCert !== null) {
      u64(m.notarRewardCert.slot);
      parts.push(m.notarRewardCert.blockId);
      parts.push(m.notarRewardCert.signature);
      shortU16(m.notarRewardCert.bitmap.length);
      parts.push(m.notarRewardCert.bitmap);
    }
  } else {
    variant = MarkerVariant.genesisCertificate;
    u64(m.slot);
    parts.push(m.blockId);
    parts.push(m.blsSignature);
    u64(BigInt(m.bitmap.length));
    parts.push(m.bitmap);
  }
  const payload = Buffer.concat(parts);
  const head = Buffer.alloc(MARKER_PAYLOAD_OFF);
  head.writeUInt16LE(1, MARKER_VERSION_OFF);
  head[MARKER_VERSION_OFF + 2] = variant;
  head.writeUInt16LE(payload.length, MARKER_VERSION_OFF + 3);
  return Buffer.concat([head, payload]);
}
