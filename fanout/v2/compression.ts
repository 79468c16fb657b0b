import { frameCompressed, SharedCompressor, type CompressedShared, type MessageEncoding } from '../../proto/grpc-compression';
import { frameUpdate } from '../../proto/wire-v2';

// Compression of v2 updates, for any transport: a stream that negotiated gzip or zstd (the transport chose it from
// the client's grpc-accept-encoding, proto/grpc-compression.ts chooseEncoding) gets its updates through frame().
// A record's shared part (proto/wire-v2.ts: cursor, created_at, the transaction encoded once per record) is
// compressed once per encoding, whatever the number of streams it goes to: the hub hands the same Buffer to every
// stream in turn, so a few entries keyed by that Buffer's identity are the whole cache. Each stream's message is
// then that compressed part spliced with its own filter ids and seq, stored (grpc-compression.ts), for the price of
// a copy and a CRC over a few bytes.
//
// What stays uncompressed (flag 0 in the same stream, as gRPC allows): shared parts under MIN_COMPRESS_BYTES (slot
// updates, heartbeats, acks: compression would not pay for its header), and any part compression does not make
// smaller (decided once per part, the same for every stream). A replay encodes its shared parts per stream, so a
// replayed update costs one compression per update.

/** Shared parts smaller than this are sent as they are (a gzip member costs 18 bytes of framing, zstd 12). */
export const MIN_COMPRESS_BYTES = 128;
/** Parts remembered: the hub's live record (two shared parts at most: with and without `loaded`) plus replays'. */
const CACHE_ENTRIES = 8;

interface Entry {
  shared: Buffer | null;
  gzip: CompressedShared | null | undefined;
  zstd: CompressedShared | null | undefined;
}

export class UpdateCompression {
  private readonly compressor = new SharedCompressor();
  private readonly entries: Entry[] = Array.from({ length: CACHE_ENTRIES }, () => ({ shared: null, gzip: undefined, zstd: undefined }));
  private next = 0;
  /** Parts compressed (each once per encoding), and parts sent uncompressed because compression did not pay. */
  readonly counts = { compressed: 0, notSmaller: 0, inBytes: 0, outBytes: 0 };

  /** The framed update (seq still 0; stampSeq writes it) for a stream of `encoding`. */
  frame(encoding: MessageEncoding, perStream: Uint8Array, shared: Buffer): Buffer {
    if (encoding === 'identity' || shared.length < MIN_COMPRESS_BYTES) return frameUpdate(perStream, shared);
    const c = this.compressed(shared, encoding);
    return (c === null ? null : frameCompressed(c, perStream)) ?? frameUpdate(perStream, shared);
  }

  private compressed(shared: Buffer, encoding: 'gzip' | 'zstd'): CompressedShared | null {
    let e: Entry | undefined;
    for (const x of this.entries) if (x.shared === shared) e = x;
    if (e === undefined) {
      e = this.entries[this.next]!;
      this.next = (this.next + 1) % CACHE_ENTRIES;
      e.shared = shared;
      e.gzip = undefined;
      e.zstd = undefined;
    }
    let c = e[encoding];
    if (c === undefined) {
      c = this.compressor.compress(shared, encoding);
      e[encoding] = c;
      if (c === null) this.counts.notSmaller++;
      else {
        this.counts.compressed++;
        this.counts.inBytes += shared.length;
        this.counts.outBytes += c.body.length;
      }
    }
    return c;
  }
}
