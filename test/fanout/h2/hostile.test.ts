import assert from 'node:assert/strict';
import { serializeSubscribeRequest, subscribePath } from '../../../proto/service';
import { liveBytes } from '../../support/gc';
import { StreamClient } from '../../support/stream-client';
import { waitFor } from '../../support/wait';
import { b58, makeTx, testKey, testKey58, type TestFanout } from '../support';
import { frame, PREFACE, settingsFrame } from './raw-peer';
import { E, F, grpcMessage, grpcRequestFields, headersFrame, ping, RawH2Client, rstStream, S, T, windowUpdate } from './raw-h2-client';
import { prng, rawSuite, sleep } from './support';
import { encodeHeaderBlock } from '../../../fanout/h2/hpack';
import { DEFAULT_CONNECTION_LIMITS } from '../../../fanout/h2/connection';
import type { GrpcCall } from '../../../fanout/h2/grpc-call';
import { startGrpcServer } from '../../../fanout/h2/server';
import { fanoutMetrics } from '../../../fanout/metrics';
import bs58 from 'bs58';
import { V2Client } from '../v2/client';

// Peers that attack the fanout's own HTTP/2 server (fanout/h2/) over loopback: header-block and rapid-reset
// floods (the reset budget ends them; gRPC clients that cancel and re-subscribe never reach it), a PING flood that reads nothing, and a few thousand random and mutated frame sequences. Each must
// end in the documented way while the server stays up and keeps serving a normal client.

const PATH = subscribePath('arpc.StreamService');
const MAX_FRAME = 16_384;
const MAX_HEADER_LIST = 16 << 10; // DEFAULT_CONNECTION_LIMITS.maxHeaderListBytes
/** Connections flooding HEADERS + RST_STREAM pairs at once. */
const RAPID_FLOODERS = 10;

/** A normal grpc-js client subscribes and receives a transaction published now. */
async function normalClientWorks(f: TestFanout, key: number): Promise<void> {
  const c = StreamClient.open(f.address);
  try {
    c.send({ transactions: { k: { accountInclude: [testKey58(key)] } }, pingId: 1 });
    await c.waitFor((r) => r.pingId === 1, 5000);
    const t = makeTx({ keys: [testKey(key)] });
    await f.publishTx(t);
    await c.waitFor((r) => r.transaction !== undefined, 5000);
  } finally {
    await c.close();
  }
}

/** The server's SETTINGS are in and acked: no ACK of ours can land inside a header block that follows. */
async function settled(c: RawH2Client): Promise<void> {
  await c.frame((x) => x.type === T.SETTINGS && x.flags === 0);
}

describe('fanout/h2 hostile peers', function () {
  this.timeout(60_000);
  const suite = rawSuite({ heartbeatMs: 1000 });
  const connect = suite.connect;

  it('a header block of exactly 2× 16 KiB is held; one byte more → GOAWAY ENHANCE_YOUR_CALM', async () => {
    // No PING can fence an open header block (any frame but its CONTINUATION is a PROTOCOL_ERROR), so the fence
    // is the block's own end: held to the bound, it is decoded at END_HEADERS, and these bytes (indexed field 0)
    // do not decode: GOAWAY COMPRESSION_ERROR, not the size cut-off.
    const held = await connect();
    await settled(held);
    held.send(T.HEADERS, 0, 1, Buffer.alloc(MAX_FRAME, 0x80));
    held.send(T.CONTINUATION, 0, 1, Buffer.alloc(2 * MAX_HEADER_LIST - MAX_FRAME, 0x80));
    held.send(T.CONTINUATION, F.END_HEADERS, 1, Buffer.alloc(0));
    const decoded = await held.goaway();
    assert.equal(decoded.code, E.COMPRESSION_ERROR, `the bound itself is allowed: the block was decoded (GOAWAY ${decoded.code} "${decoded.debug}")`);
    await held.waitClosed();
    // The same block and one byte more, on a new connection.
    const c = await connect();
    await settled(c);
    c.send(T.HEADERS, 0, 1, Buffer.alloc(MAX_FRAME, 0x80));
    c.send(T.CONTINUATION, 0, 1, Buffer.alloc(2 * MAX_HEADER_LIST - MAX_FRAME, 0x80));
    c.send(T.CONTINUATION, 0, 1, Buffer.from([0x80]));
    const g = await c.goaway();
    assert.equal(g.code, E.ENHANCE_YOUR_CALM);
    await c.waitClosed();
  });

  it('a CONTINUATION flood ends at GOAWAY ENHANCE_YOUR_CALM; memory does not grow with it', async () => {
    const before = liveBytes();
    const floods: RawH2Client[] = [];
    let offered = 0;
    for (let i = 0; i < 20; i++) {
      const c = await connect();
      await settled(c);
      floods.push(c);
      // Up to 4 MB of header block per connection, never ended, for as long as the connection takes it.
      const cont = frame(T.CONTINUATION, 0, 1, Buffer.alloc(MAX_FRAME, 0x42));
      c.send(T.HEADERS, 0, 1, Buffer.alloc(MAX_FRAME, 0x42));
      for (let k = 0; k < 16 && !c.closed; k++) {
        offered += 16 * cont.length;
        c.write(Buffer.concat(Array.from({ length: 16 }, () => cont)));
        await sleep(1);
      }
    }
    for (const c of floods) {
      assert.equal((await c.goaway()).code, E.ENHANCE_YOUR_CALM);
      await c.waitClosed();
    }
    // Whatever was offered, a connection holds at most 2 × 16 KiB of header block before it is cut off, and
    // nothing once it is gone. Measured live (after full collections), not as garbage not yet collected, and
    // against what the floods wrote (at least one write of 256 KiB each): a fraction of it, not all of it.
    const grew = liveBytes() - before;
    assert.ok(grew < offered / 2, `live memory grew ${(grew / 1e6).toFixed(1)} MB for ${(offered / 1e6).toFixed(1)} MB of CONTINUATION written`);
    await normalClientWorks(suite.f, 1);
  });

  it('streams beyond maxOpenStreams are refused (RST_STREAM REFUSED_STREAM); after GOAWAY new streams are refused too', async () => {
    const calls: GrpcCall[] = [];
    const server = await startGrpcServer(
      {
        host: '127.0.0.1',
        port: 0,
        paths: new Set(['/t.S/M']),
        limits: { ...DEFAULT_CONNECTION_LIMITS, maxOpenStreams: 4 },
        maxMessageBytes: 1024,
        maxRequestBytesTotal: 1 << 20,
        maxConnections: 10,
        keepaliveMs: 60_000,
        keepaliveTimeoutMs: 10_000,
        handshakeTimeoutMs: 10_000,
      },
      (call) => {
        calls.push(call);
        call.sendHeaders();
      },
    );
    const c = await RawH2Client.connect(server.port);
    try {
      for (const id of [1, 3, 5, 7, 9, 11]) c.request(id, '/t.S/M');
      await c.until(() => c.stream(9).rstCode !== undefined && c.stream(11).rstCode !== undefined, 3000, 'two refusals');
      assert.deepEqual([c.stream(9).rstCode, c.stream(11).rstCode], [E.REFUSED_STREAM, E.REFUSED_STREAM]);
      assert.equal(calls.length, 4);
      await c.until(() => [1, 3, 5, 7].every((id) => c.stream(id).blocks.length === 1), 3000, 'headers of the four open calls');
      calls[0]!.end();
      await c.streamEnded(1);
      assert.equal(c.lastField(1, 'grpc-status'), '0');
      // Stream 1 is half-closed (local) now and still counts (RFC 9113 §5.1.2) until the client ends its side, as a
      // gRPC client does on the status.
      c.data(1, Buffer.alloc(0), true);
      c.request(13, '/t.S/M'); // a place is free again
      await c.until(() => calls.length === 5, 3000, 'the fifth call');
      const closing = server.close(500);
      const g = await c.goaway();
      assert.deepEqual([g.code, g.lastStreamId], [E.NO_ERROR, 13]);
      c.request(15, '/t.S/M');
      await c.until(() => c.stream(15).rstCode !== undefined || c.closed, 3000, 'stream 15 refused');
      assert.equal(c.stream(15).rstCode, E.REFUSED_STREAM);
      assert.equal(calls.length, 5);
      await closing;
      await c.waitClosed();
    } finally {
      c.destroy();
      await server.close(0);
    }
  });

  it(`rapid reset from ${RAPID_FLOODERS} connections at 1500 streams/s each: each closed with GOAWAY ENHANCE_YOUR_CALM within 1 MB; a v1 and a v2 subscriber receive every transaction throughout`, async () => {
    const v1 = StreamClient.open(suite.f.address);
    const v2 = new V2Client(suite.f.address, { 'grpc.use_local_subchannel_pool': 1 });
    const closes = fanoutMetrics.floodClose('client_reset');
    const closes0 = closes.value;
    try {
      v1.send({ transactions: { k: { accountInclude: [testKey58(4)] } }, pingId: 1 });
      await v1.waitFor((r) => r.pingId === 1);
      v2.add('k', [testKey58(4)]);
      v2.start();
      v2.ping(1);
      await v2.waitUpdates((u) => u.some((x) => x.hasPong()), 'v2 pong');
      const pair = (id: number): Buffer => Buffer.concat([headersFrame(id, grpcRequestFields(PATH)), rstStream(id, E.CANCEL)]);
      // Each connection below the old per-second cap on new streams (2000/s), which a server busy with ten such
      // connections never saw exceeded: 1500 pairs a second, sustained, for up to 6 s.
      const PAIRS_PER_WRITE = 150;
      const WRITE_EVERY_MS = 100;
      const FLOOD_MS = 6000;
      const published: string[] = [];
      let flooding = true;
      const publisher = (async () => {
        while (flooding || published.length < 3) {
          const t = makeTx({ keys: [testKey(4)] });
          published.push(b58(t.signature));
          await suite.f.publishTx(t);
          await sleep(20);
        }
      })();
      const floods = Array.from({ length: RAPID_FLOODERS }, async () => {
        const c = await connect();
        let id = 1;
        const until = Date.now() + FLOOD_MS;
        while (!c.closed && !c.frames.some((x) => x.type === T.GOAWAY) && Date.now() < until) {
          c.write(Buffer.concat(Array.from({ length: PAIRS_PER_WRITE }, () => pair((id += 2) - 2))));
          await sleep(WRITE_EVERY_MS);
        }
        const g = await c.goaway();
        await c.waitClosed();
        return { g, pairLen: pair(1).length };
      });
      const results = await Promise.all(floods);
      flooding = false;
      await publisher;
      for (const { g, pairLen } of results) {
        assert.equal(g.code, E.ENHANCE_YOUR_CALM, `GOAWAY "${g.debug}"`);
        // GOAWAY's last stream id is the last stream the server read: what it read of the flood, in pairs.
        const read = ((g.lastStreamId + 1) / 2) * pairLen;
        assert.ok(read < 1 << 20, `closed after ${read} bytes of pairs read`);
      }
      assert.equal(closes.value - closes0, RAPID_FLOODERS, 'meridian_fanout_h2_flood_closes_total{reason="client_reset"}');
      const want = new Set(published);
      await v1.waitFor(() => published.every((sig) => v1.transactions.some((t) => t.signature === sig)), 20_000);
      const hex = published.map((sig) => Buffer.from(bs58.decode(sig)).toString('hex'));
      await v2.waitUpdates(() => hex.every((h) => v2.sigs().includes(h)), 'v2 received every transaction');
      assert.equal(v1.status, undefined, 'v1 still streaming');
      assert.equal(v2.status, undefined, 'v2 still streaming');
      console.log(`      ${want.size} transactions published during the floods, all received by both; cut off after ${results.map((r) => ((r.g.lastStreamId + 1) / 2) | 0).join(', ')} pairs`);
    } finally {
      v2.cancel();
      await v1.close();
    }
  });

  it('grpc-js clients cancelling and re-subscribing, and v2 filter churn, never spend a budget', async () => {
    const errs = (): number => ['ENHANCE_YOUR_CALM', 'PROTOCOL_ERROR'].reduce((n, c) => n + fanoutMetrics.connectionError(c).value, 0);
    const before = errs();
    // One connection for every v1 call (grpc-js shares a subchannel among channels to one address).
    const CYCLES = 300;
    for (let i = 0; i < CYCLES; i++) {
      const c = StreamClient.open(suite.f.address);
      c.send({ transactions: { k: { accountInclude: [testKey58(5)] } }, pingId: i });
      await c.waitFor((r) => r.pingId === i);
      await c.close(); // RST_STREAM CANCEL
    }
    const v2 = new V2Client(suite.f.address);
    try {
      for (let i = 0; i < CYCLES; i++) {
        v2.add(`f${i}`, [testKey58(6, i)]);
        if (i > 0) v2.remove(`f${i - 1}`);
      }
      v2.ping(7);
      await v2.waitUpdates((u) => u.some((x) => x.hasPong()), 'pong after the churn');
      assert.equal(v2.status, undefined);
    } finally {
      v2.cancel();
    }
    const last = StreamClient.open(suite.f.address);
    last.send({ transactions: { k: { accountInclude: [testKey58(5)] } }, pingId: 1 });
    await last.waitFor((r) => r.pingId === 1);
    const t = makeTx({ keys: [testKey(5)] });
    await suite.f.publishTx(t);
    await last.waitFor((r) => r.transaction?.signature === b58(t.signature));
    await last.close();
    assert.equal(errs() - before, 0, 'no connection ended for a protocol error or a budget');
  });

  it('a client that floods PINGs and reads nothing is disconnected; a normal client keeps receiving; memory stays bounded', async () => {
    const normal = StreamClient.open(suite.f.address);
    normal.send({ transactions: { k: { accountInclude: [testKey58(3)] } }, pingId: 1 });
    await normal.waitFor((r) => r.pingId === 1);
    const c = await connect();
    await c.frame((x) => x.type === T.SETTINGS);
    c.socket.pause(); // reads nothing from here on
    const pings = Buffer.concat(Array.from({ length: 1 << 15 }, (_, i) => ping(Buffer.from(`p${String(i).padStart(7, '0')}`))));
    // What the process holds live (after full collections), before and after each write: the server's unsent
    // PING ACKs among it. Garbage (every PING read is) does not count, however late the collector would run.
    const before = liveBytes();
    let maxLive = before;
    let sent = 0;
    const published: string[] = [];
    const t0 = Date.now();
    while (!c.closed && sent < 256 << 20 && Date.now() - t0 < 20_000) {
      if (!c.socket.write(pings)) await new Promise<void>((r) => { c.socket.once('drain', r); c.socket.once('close', r); });
      sent += pings.length;
      if (published.length < 5 && sent % (8 * pings.length) === 0) {
        const t = makeTx({ keys: [testKey(3)] });
        published.push(b58(t.signature));
        await suite.f.publishTx(t);
      }
      maxLive = Math.max(maxLive, liveBytes());
    }
    await c.waitClosed(5000);
    assert.ok(sent > 1 << 20, `disconnected after only ${sent} bytes of PING`);
    const t = makeTx({ keys: [testKey(3)] });
    await suite.f.publishTx(t);
    await normal.waitFor((r) => r.transaction?.signature === b58(t.signature), 5000);
    assert.equal(normal.status, undefined, 'the normal client is still streaming');
    assert.ok(normal.transactions.length >= published.length + 1, `${normal.transactions.length} transactions for ${published.length + 1} published`);
    assert.ok(maxLive - before < 64 << 20, `live memory grew by ${((maxLive - before) / 1e6).toFixed(0)} MB while ${(sent / 1e6).toFixed(0)} MB of PING went in`);
    await normal.close();
  });

  describe('fuzz', () => {
    /** A valid subscribe exchange, frame by frame; the fuzzer mutates it. */
    interface RawFrame {
      type: number;
      flags: number;
      id: number;
      payload: Buffer;
      length?: number;
    }
    const request = grpcMessage(serializeSubscribeRequest({ transactions: { a: { accountInclude: [testKey58(7)] } }, pingId: 5 }));
    const block = encodeHeaderBlock(grpcRequestFields(PATH));
    const valid = (): RawFrame[] => [
      { type: T.SETTINGS, flags: 0, id: 0, payload: settingsFrame([[S.INITIAL_WINDOW_SIZE, 65_535], [S.MAX_FRAME_SIZE, 16_384]]).subarray(9) },
      { type: T.WINDOW_UPDATE, flags: 0, id: 0, payload: windowUpdate(0, 1000).subarray(9) },
      { type: T.HEADERS, flags: F.END_HEADERS, id: 1, payload: block },
      { type: T.DATA, flags: 0, id: 1, payload: request },
      { type: T.PING, flags: 0, id: 0, payload: Buffer.from('abcdefgh') },
      { type: T.HEADERS, flags: 0, id: 3, payload: block.subarray(0, 10) },
      { type: T.CONTINUATION, flags: F.END_HEADERS, id: 3, payload: block.subarray(10) },
      { type: T.DATA, flags: 0, id: 3, payload: request },
      { type: T.RST_STREAM, flags: 0, id: 3, payload: rstStream(3, E.CANCEL).subarray(9) },
      { type: T.WINDOW_UPDATE, flags: 0, id: 1, payload: windowUpdate(1, 100).subarray(9) },
      { type: T.PRIORITY, flags: 0, id: 1, payload: Buffer.from([0, 0, 0, 0, 16]) },
      { type: T.DATA, flags: F.END_STREAM, id: 1, payload: Buffer.alloc(0) },
    ];
    const randomBytes = (rnd: () => number, n: number): Buffer => Buffer.from(Array.from({ length: n }, () => Math.floor(rnd() * 256)));
    const randomFrame = (rnd: () => number): RawFrame => ({
      type: Math.floor(rnd() * 12),
      flags: rnd() < 0.5 ? Math.floor(rnd() * 256) : [0, 1, 4, 5, 8, 0x20][Math.floor(rnd() * 6)]!,
      id: [0, 1, 2, 3, 5, 0x7fffffff, Math.floor(rnd() * 100)][Math.floor(rnd() * 7)]!,
      payload: randomBytes(rnd, rnd() < 0.3 ? Math.floor(rnd() * 9) : Math.floor(rnd() * 64)),
    });

    function mutate(rnd: () => number, frames: RawFrame[]): RawFrame[] {
      const out: RawFrame[] = frames.map((x) => ({ ...x, payload: Buffer.from(x.payload) }));
      const n = 1 + Math.floor(rnd() * 3);
      for (let i = 0; i < n && out.length > 0; i++) {
        const at = Math.floor(rnd() * out.length);
        const x = out[at]!;
        switch (Math.floor(rnd() * 10)) {
          case 0:
            if (x.payload.length > 0) x.payload[Math.floor(rnd() * x.payload.length)]! ^= 1 << Math.floor(rnd() * 8);
            break;
          case 1:
            x.type = Math.floor(rnd() * 12);
            break;
          case 2:
            x.flags = Math.floor(rnd() * 256);
            break;
          case 3:
            x.id = [0, 1, 2, 3, 5, 7, 0x7fffffff][Math.floor(rnd() * 7)]!;
            break;
          case 4:
            out.splice(at, 1);
            break;
          case 5:
            out.splice(at, 0, { ...x });
            break;
          case 6: {
            const j = Math.floor(rnd() * out.length);
            out[at] = out[j]!;
            out[j] = x;
            break;
          }
          case 7:
            x.payload = x.payload.subarray(0, Math.floor(rnd() * x.payload.length));
            break;
          case 8:
            x.length = rnd() < 0.9 ? Math.floor(rnd() * 200) : Math.floor(rnd() * 0xffffff);
            break;
          default:
            out.splice(at, 0, randomFrame(rnd));
        }
      }
      return out;
    }

    /** The bytes of `frames`; a last frame left short by a wrong length is completed with zeros when it may be. */
    function serialize(frames: RawFrame[]): Buffer {
      const parts = frames.map((x) => {
        const b = frame(x.type, x.flags, x.id, x.payload);
        if (x.length !== undefined) b.writeUIntBE(x.length, 0, 3);
        return b;
      });
      const bytes = Buffer.concat(parts);
      let off = 0;
      while (bytes.length - off >= 9) {
        const len = bytes.readUIntBE(off, 3);
        if (len > MAX_FRAME) return bytes; // the server stops right here (FRAME_SIZE_ERROR)
        off += 9 + len;
      }
      if (off === bytes.length) return bytes;
      const need = off < bytes.length && bytes.length - off < 9 ? 9 - (bytes.length - off) : off - bytes.length;
      return Buffer.concat([bytes, Buffer.alloc(need)]);
    }

    type Outcome = 'closed' | 'pinged';
    interface Result {
      outcome: Outcome;
      /** From connecting to the close or the probe's ACK. */
      ms: number;
    }

    /** The bytes of the fuzz case `seed`. */
    function fuzzCase(seed: number): Buffer {
      const rnd = prng(seed);
      const frames = rnd() < 0.7 ? mutate(rnd, valid()) : Array.from({ length: 1 + Math.floor(rnd() * 8) }, () => randomFrame(rnd));
      let bytes = serialize(frames);
      // A short tail (under a frame header) was padded to a header announcing 0 bytes: fine. Complete a
      // partial payload so that the probe PING starts at a frame boundary.
      let off = 0;
      while (bytes.length - off >= 9) {
        const len = bytes.readUIntBE(off, 3);
        if (len > MAX_FRAME) break;
        if (bytes.length - off - 9 < len) bytes = Buffer.concat([bytes, Buffer.alloc(off + 9 + len - bytes.length)]);
        off += 9 + len;
      }
      return bytes;
    }

    /** A connection that writes the preface, SETTINGS, `bytes` and a probe PING at once, until it is closed or the probe is answered. */
    async function runOne(seed: number, bytes: Buffer): Promise<Result> {
      const probe = Buffer.alloc(8);
      probe.writeUInt32BE(seed, 0);
      probe.write('fz!!', 4, 'latin1');
      const t0 = performance.now();
      const c = await RawH2Client.connect(suite.port, { opening: Buffer.concat([PREFACE, settingsFrame([]), bytes, ping(probe)]) });
      try {
        await c.until(() => c.closed || c.frames.some((x) => x.type === T.PING && (x.flags & F.ACK) !== 0 && x.payload.equals(probe)), 3000, `close or PING ACK (seed ${seed})`);
        return { outcome: c.closed ? 'closed' : 'pinged', ms: performance.now() - t0 };
      } finally {
        c.destroy();
      }
    }

    it('3,000 random and mutated frame sequences: each connection ends or answers PING, about as fast as a valid one; the server serves on', async () => {
      const N = 3000;
      const BATCH = 50;
      // A reference in the same batches: valid exchanges (a subscription and the probe), REF_EVERY-th in line.
      const REF_EVERY = 10;
      const counts: Record<Outcome, number> = { closed: 0, pinged: 0 };
      const failures: string[] = [];
      const fuzzMs: number[] = [];
      const refMs: number[] = [];
      const validBytes = serialize(valid());
      for (let s = 0; s < N; s += BATCH) {
        const n = Math.min(BATCH, N - s);
        const refs: Array<Promise<Result>> = [];
        const cases: Array<Promise<Result>> = [];
        for (let i = 0; i < n; i++) {
          if (i % REF_EVERY === 0) refs.push(runOne(100_000 + s + i, validBytes));
          cases.push(runOne(1000 + s + i, fuzzCase(1000 + s + i)));
        }
        const [results, refResults] = await Promise.all([Promise.allSettled(cases), Promise.all(refs)]);
        for (const r of results) {
          if (r.status === 'fulfilled') {
            counts[r.value.outcome]++;
            fuzzMs.push(r.value.ms);
          } else failures.push(String(r.reason instanceof Error ? r.reason.message : r.reason));
        }
        for (const r of refResults) {
          assert.equal(r.outcome, 'pinged', 'a valid exchange is answered');
          refMs.push(r.ms);
        }
      }
      assert.deepEqual(failures.slice(0, 5), [], `${failures.length} connections neither ended nor answered PING`);
      assert.equal(counts.closed + counts.pinged, N);
      assert.ok(counts.closed > N / 10 && counts.pinged > N / 10, `outcomes ${JSON.stringify(counts)}`);
      // No wall-clock bound (the machine's speed drifts): fuzzed connections are answered about as fast as the
      // valid ones that shared their batches, e.g. none waits for a timer to be cut off.
      const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
      assert.ok(mean(fuzzMs) < 3 * mean(refMs), `a fuzzed connection took ${mean(fuzzMs).toFixed(1)} ms on average, a valid one in the same batches ${mean(refMs).toFixed(1)} ms`);
      await waitFor(() => suite.f.fanout.stats().subscribers === 0, 5000, 'every fuzz subscriber gone');
      await normalClientWorks(suite.f, 4);
    });
  });
});
