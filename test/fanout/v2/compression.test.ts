import assert from 'node:assert/strict';
import http2 from 'node:http2';
import zlib from 'node:zlib';
import { FilterAdd, Start, SubscribeRequest, SubscribeUpdate, TransactionFilter } from '../../../proto/gen/stream_v2_pb';
import { chooseEncoding, decompressMessage, frameCompressed, SharedCompressor, zstdAvailable, zstdBlocks, type MessageEncoding } from '../../../proto/grpc-compression';
import { V2_SUBSCRIBE_PATH } from '../../../proto/service-v2';
import { encodeFilterIds, encodeTxShared, frameUpdate, stampSeq } from '../../../proto/wire-v2';
import { waitFor } from '../../support/wait';
import { makeTx, startTestFanout, testKey, testKey58, type TestFanout } from '../support';
import { seqsContiguous, V2Client } from './client';

// gzip and zstd on stream v2 (proto/grpc-compression.ts, fanout/v2/compression.ts): the splice of a shared part
// compressed once with each stream's stored tail, checked against independent decoders; then end to end on both
// transports (the own HTTP/2 server, and grpc-js: fanout.transport, which reads grpc-accept-encoding at the HTTP/2
// level) with a grpc-js client (which announces `identity,deflate,gzip`) and raw node:http2 clients that announce
// exactly one encoding and count the bytes they read. zstd needs node:zlib's zstd (Node ≥ 22.15): on an
// older Node those cases skip and say why (`infra/scripts/with-node.sh 24 npx mocha …` runs them).

const ZSTD_SKIP = `zstd needs Node ≥ 22.15 (node:zlib); this is ${process.version}`;
const encodings = ['gzip', 'zstd'] as const;
/** The title says why a zstd case is pending on this Node. */
const title = (enc: 'gzip' | 'zstd', what: string): string => `${enc}: ${what}${enc === 'zstd' && !zstdAvailable ? ` (skipped: ${ZSTD_SKIP})` : ''}`;

function sharedOf(i: number): Buffer {
  const t = makeTx({ base: i });
  return encodeTxShared(Buffer.from('0a0b0c0d', 'hex'), 1_700_000_000_123, { slot: 77n + BigInt(i), signature: t.signature, decoded: t.message, raw: null, observedAtMs: 1_700_000_000_000 });
}

function gzipIsOneMember(body: Buffer): void {
  // The deflate stream ends at BFINAL exactly where the 8-byte trailer begins: nothing after one member.
  const deflate = body.subarray(10, body.length - 8);
  const r = zlib.inflateRawSync(deflate, { info: true }) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
  assert.equal(r.engine.bytesWritten, deflate.length, 'the deflate stream ends at the trailer');
  assert.equal(body.readUInt32LE(body.length - 8), zlib.crc32(r.buffer), 'CRC-32 of the whole content');
  assert.equal(body.readUInt32LE(body.length - 4), r.buffer.length, 'ISIZE');
}

describe('stream v2 compression: the splice (proto/grpc-compression.ts)', () => {
  for (const enc of encodings) {
    it(title(enc, "one compressed shared part + each stream's ids and seq decode to the identity update"), function () {
      if (enc === 'zstd' && !zstdAvailable) this.skip();
      const comp = new SharedCompressor();
      for (let i = 0; i < 6; i++) {
        const shared = sharedOf(i);
        const c = comp.compress(shared, enc);
        assert.ok(c !== null, 'a transaction compresses');
        for (const [ids, seq] of [[[] as string[], 1], [['a'], 2], [['acc', 'bb-filter'], 0x1_2345_6789], [['x'.repeat(128)], 2 ** 53 - 1]] as const) {
          const perStream = encodeFilterIds(ids);
          const framed: Buffer = frameCompressed(c, perStream)!;
          stampSeq(framed, seq);
          assert.equal(framed[0], 1, 'compressed flag');
          assert.equal(framed.readUInt32BE(1), framed.length - 5);
          const body = framed.subarray(5);
          const plain = decompressMessage(body, enc, 4 << 20);
          if (enc === 'gzip') gzipIsOneMember(body);
          else {
            // One frame whose declared content size is the whole message.
            assert.equal(body.readUInt32LE(0), 0xfd2fb528);
            assert.equal(body.readUInt32LE(5), plain.length);
          }
          const identity = frameUpdate(perStream, shared);
          stampSeq(identity, seq);
          const a = SubscribeUpdate.deserializeBinary(plain);
          const b = SubscribeUpdate.deserializeBinary(identity.subarray(5));
          assert.deepEqual(a.toObject(), b.toObject());
          assert.equal(a.getSeq(), seq);
          assert.deepEqual(a.getFiltersList(), ids);
          assert.ok(framed.length < identity.length, `${framed.length} < ${identity.length}`);
        }
      }
    });
  }

  for (const enc of encodings) {
    it(title(enc, 'large parts (several blocks) splice too'), function () {
      if (enc === 'zstd' && !zstdAvailable) this.skip();
      const comp = new SharedCompressor();
      for (const size of [4096, 200_000, 600_000]) {
        // Half compressible, half random: several deflate / zstd blocks of both kinds.
        const shared = Buffer.concat([Buffer.alloc(size / 2, 7), Buffer.from(Array.from({ length: size / 2 }, (_, i) => (i * 2654435761) >>> 24))]);
        const c = comp.compress(shared, enc)!;
        const m = frameCompressed(c, encodeFilterIds(['big']))!;
        stampSeq(m, 9);
        const plain = decompressMessage(m.subarray(5), enc, 4 << 20);
        assert.deepEqual(plain.subarray(0, size), shared);
        assert.deepEqual(plain.subarray(size), Buffer.concat([encodeFilterIds(['big']), Buffer.from([0x09, 9, 0, 0, 0, 0, 0, 0, 0])]));
        if (enc === 'gzip') gzipIsOneMember(m.subarray(5));
      }
    });
  }

  it(`zstd: frames of every header form node:zlib writes (content size or not, checksum) splice${zstdAvailable ? '' : ` (skipped: ${ZSTD_SKIP})`}`, function () {
    if (!zstdAvailable) this.skip();
    const z = zlib as unknown as { zstdCompressSync(b: Buffer, o: object): Buffer; constants: Record<string, number> };
    const C = z.constants;
    for (const params of [{}, { [C.ZSTD_c_contentSizeFlag!]: 0 }, { [C.ZSTD_c_checksumFlag!]: 1 }]) {
      const shared = sharedOf(2);
      const body = zstdBlocks(z.zstdCompressSync(shared, { params }))!;
      assert.ok(body !== null);
      const m = frameCompressed({ encoding: 'zstd', body, length: shared.length, crc: 0 }, encodeFilterIds(['f']))!;
      stampSeq(m, 3);
      assert.equal(SubscribeUpdate.deserializeBinary(decompressMessage(m.subarray(5), 'zstd', 1 << 20)).getSeq(), 3);
    }
    assert.equal(zstdBlocks(Buffer.from('not a frame')), null);
  });

  it('gzip is one member (what flate2\'s GzDecoder and gRPC C-core read), and the check tells two members apart', () => {
    const shared = sharedOf(3);
    const c = new SharedCompressor().compress(shared, 'gzip')!;
    const framed = frameCompressed(c, encodeFilterIds(['f']))!;
    stampSeq(framed, 42);
    gzipIsOneMember(framed.subarray(5));
    // Two members (what concatenating gzip outputs would give): Node's gunzip reads both, a one-member reader does not.
    const two = Buffer.concat([zlib.gzipSync(shared), zlib.gzipSync(Buffer.from([0x09, 42, 0, 0, 0, 0, 0, 0, 0]))]);
    assert.equal(zlib.gunzipSync(two).length, shared.length + 9);
    assert.throws(() => gzipIsOneMember(two));
  });

  it('chooses in the client\'s order: the first of identity or an encoding it serves', () => {
    assert.equal(chooseEncoding(undefined, ['zstd', 'gzip']), 'identity');
    assert.equal(chooseEncoding('', ['zstd', 'gzip']), 'identity');
    assert.equal(chooseEncoding('identity,deflate,gzip', ['zstd', 'gzip']), 'identity'); // grpc-js and C-core, always
    assert.equal(chooseEncoding('gzip', ['zstd', 'gzip']), 'gzip'); // Go, Java with gzip registered
    assert.equal(chooseEncoding('deflate, GZIP ,identity', ['zstd', 'gzip']), 'gzip');
    assert.equal(chooseEncoding('zstd,gzip', ['zstd', 'gzip']), 'zstd');
    assert.equal(chooseEncoding('zstd,gzip', ['gzip']), 'gzip'); // a Node without zstd
    assert.equal(chooseEncoding('deflate,snappy', ['zstd', 'gzip']), 'identity');
  });
});

/** A v2 stream over bare node:http2 that announces `accept` and keeps every message as it came. */
class RawV2 {
  readonly frames: Array<{ flag: number; body: Buffer }> = [];
  headers: http2.IncomingHttpHeaders | undefined;
  wireBytes = 0;
  private pending = Buffer.alloc(0);
  private readonly session: http2.ClientHttp2Session;

  constructor(address: string, accept: string | undefined, include: string) {
    this.session = http2.connect(`http://${address}`);
    this.session.on('error', () => undefined);
    const req = this.session.request({ ':method': 'POST', ':path': V2_SUBSCRIBE_PATH, 'content-type': 'application/grpc', te: 'trailers', ...(accept === undefined ? {} : { 'grpc-accept-encoding': accept }) });
    req.on('error', () => undefined);
    req.on('response', (h) => (this.headers = h));
    req.on('data', (b: Buffer) => {
      this.wireBytes += b.length;
      this.pending = Buffer.concat([this.pending, b]);
      while (this.pending.length >= 5 && this.pending.length >= 5 + this.pending.readUInt32BE(1)) {
        const n = this.pending.readUInt32BE(1);
        this.frames.push({ flag: this.pending[0]!, body: Buffer.from(this.pending.subarray(5, 5 + n)) });
        this.pending = this.pending.subarray(5 + n);
      }
    });
    const f = new TransactionFilter();
    f.setAccountIncludeList([include]);
    const a = new FilterAdd();
    a.setId('f');
    a.setFilter(f);
    const add = new SubscribeRequest();
    add.setAddFilter(a);
    const start = new SubscribeRequest();
    start.setStart(new Start());
    for (const r of [add, start]) {
      const b = Buffer.from(r.serializeBinary());
      const p = Buffer.alloc(5);
      p.writeUInt32BE(b.length, 1);
      req.write(Buffer.concat([p, b]));
    }
  }

  get encoding(): MessageEncoding {
    const e = this.headers?.['grpc-encoding'];
    return e === 'gzip' || e === 'zstd' ? e : 'identity';
  }

  updates(): SubscribeUpdate[] {
    return this.frames.map((f) => SubscribeUpdate.deserializeBinary(f.flag === 1 ? decompressMessage(f.body, this.encoding, 4 << 20) : f.body));
  }

  sigs(): string[] {
    return this.updates()
      .filter((u) => u.hasTransaction())
      .map((u) => Buffer.from(u.getTransaction()!.getSignature_asU8()).toString('hex'));
  }

  close(): void {
    this.session.destroy();
  }
}

const TRANSPORTS = [
  ['h2', 'own HTTP/2 server'],
  ['grpc-js', 'grpc-js server'],
] as const;

for (const [transport, transportName] of TRANSPORTS) describe(`stream v2 compression end to end, ${transportName}`, function () {
  this.timeout(60_000);
  let f: TestFanout;
  const raws: RawV2[] = [];
  const key = testKey(31, 5);
  const key58 = testKey58(31, 5);
  const N = 40;

  beforeEach(async () => {
    f = await startTestFanout({ transport, heartbeatMs: 60_000 });
  });
  afterEach(async () => {
    for (const r of raws.splice(0)) r.close();
    await f.close();
  });

  const raw = (accept: string | undefined): RawV2 => {
    const r = new RawV2(f.address, accept, key58);
    raws.push(r);
    return r;
  };

  /** Publishes N matching transactions once every stream has its ack (its Start was read after it). */
  async function publishWhenReady(ready: () => boolean): Promise<string[]> {
    await waitFor(ready, 10_000, 'every stream acknowledged');
    await waitFor(() => f.fanout.v2Stats()!.streams >= raws.length, 5000, 'streams open');
    const txs = Array.from({ length: N }, (_, i) => makeTx({ keys: [key, testKey(1, 1)], base: i }));
    await f.publishTx(...txs);
    return txs.map((t) => t.signature.toString('hex'));
  }

  it('a grpc-js client (it always sends identity,deflate,gzip) gets identity, like a client that lists nothing', async () => {
    const c = new V2Client(f.address);
    const plain = raw(undefined);
    try {
      c.add('f', [key58]);
      c.start();
      const sigs = await publishWhenReady(() => c.updates.some((u) => u.hasFilterAck()) && plain.frames.length >= 1);
      await c.waitUpdates((u) => u.filter((x) => x.hasTransaction()).length === N, `${N} transactions`);
      await waitFor(() => plain.sigs().length === N, 10_000, 'identity stream');
      assert.deepEqual(c.sigs(), sigs);
      assert.deepEqual(plain.sigs(), sigs);
      assert.ok(seqsContiguous(c.updates));
      assert.ok(c.updates.filter((u) => u.hasTransaction()).every((u) => u.getCursor_asU8().length > 0 && u.getFiltersList().join() === 'f'));
      assert.equal(plain.encoding, 'identity');
      assert.ok(plain.frames.every((x) => x.flag === 0), 'nothing compressed for a client that announced nothing');
      assert.equal(f.fanout.v2Stats()!.compressed, 0, 'nothing was compressed');
    } finally {
      c.cancel();
    }
  });

  for (const enc of encodings) {
    it(title(enc, `announced → grpc-encoding ${enc}, transactions compressed once for three streams, fewer bytes on the wire`), async function () {
      if (enc === 'zstd' && !zstdAvailable) return this.skip();
      const a = raw(enc);
      const b = raw(`${enc},identity`);
      const c = raw(`deflate,${enc},gzip`);
      const plain = raw('identity');
      const before = f.fanout.v2Stats()!.compressed;
      const sigs = await publishWhenReady(() => raws.every((r) => r.frames.length >= 1));
      await waitFor(() => raws.every((r) => r.sigs().length === N), 15_000, 'every stream got every transaction');
      for (const r of [a, b, c]) {
        assert.equal(r.headers?.['grpc-encoding'], enc);
        assert.deepEqual(r.sigs(), sigs);
        const txFrames = r.frames.filter((x) => x.flag === 1);
        assert.equal(txFrames.length, N, 'every transaction compressed (acks stay identity)');
        assert.deepEqual(
          r.updates().map((u) => u.getSeq()),
          r.updates().map((_, i) => i + 1),
        );
      }
      assert.equal(plain.encoding, 'identity');
      assert.deepEqual(plain.sigs(), sigs);
      // Once per record and encoding, not per stream: three streams, N records.
      assert.equal(f.fanout.v2Stats()!.compressed - before, N);
      const ratio = a.wireBytes / plain.wireBytes;
      console.log(`      ${enc}: ${a.wireBytes} bytes read against ${plain.wireBytes} identity (${ratio.toFixed(3)}) for ${N} transactions`);
      assert.ok(ratio < 0.9, `compressed stream read ${ratio.toFixed(3)} of the identity stream's bytes`);
    });
  }

  // The own server's rule; grpc-js decompresses gzip/deflate requests itself (and announces them).
  if (transport === 'h2') it('refuses a compressed request (UNIMPLEMENTED), as it announces grpc-accept-encoding: identity', async () => {
    const session = http2.connect(`http://${f.address}`);
    session.on('error', () => undefined);
    try {
      const req = session.request({ ':method': 'POST', ':path': V2_SUBSCRIBE_PATH, 'content-type': 'application/grpc', te: 'trailers', 'grpc-encoding': 'gzip' });
      let trailers: http2.IncomingHttpHeaders | undefined;
      let headers: http2.IncomingHttpHeaders | undefined;
      req.on('response', (h) => (headers = h));
      req.on('trailers', (t) => (trailers = t));
      req.on('error', () => undefined);
      req.on('data', () => undefined);
      const body = zlib.gzipSync(Buffer.from(new SubscribeRequest().serializeBinary()));
      const p = Buffer.alloc(5);
      p[0] = 1;
      p.writeUInt32BE(body.length, 1);
      req.write(Buffer.concat([p, body]));
      await waitFor(() => trailers !== undefined || headers?.['grpc-status'] !== undefined, 10_000, 'status');
      assert.equal((trailers ?? headers)!['grpc-status'], '12');
      assert.equal(headers!['grpc-accept-encoding'], 'identity');
    } finally {
      session.destroy();
    }
  });
});
