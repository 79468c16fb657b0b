import assert from 'node:assert/strict';
import http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { deserializeSubscribeResponse, serializeSubscribeRequest, subscribePath, type SubscribeRequestInit } from '../../../proto/service';
import { StreamClient } from '../../support/stream-client';
import { waitFor } from '../../support/wait';
import { makeTx, startTestFanout, testKey, testKey58, type TestTx } from '../support';
import { frame, PREFACE, settingsFrame } from './raw-peer';
import { E, F, grpcMessage, grpcMessages, headersFrame, ping, RawH2Client, rstStream, S, T, windowUpdate } from './raw-h2-client';
import { portOf, rawSuite } from './support';

// The fanout's own HTTP/2 server (fanout/h2/) at the frame level, over loopback: a hand-written client sends
// exactly the bytes each case needs and the assertions are on the frames that come back — connection errors
// (GOAWAY codes), control answers, gRPC statuses, flow control — plus node:http2 and grpc-js for the
// HTTP-level answers.

const PATH = subscribePath('arpc.StreamService');
const MAX_FRAME = 16_384;
const MAX_REQUEST = 4 << 20; // maxRequestBytes(cfg) in fanout/server.ts for the default filter limits

const subscribe = (r: SubscribeRequestInit): Buffer => grpcMessage(serializeSubscribeRequest(r));

describe('fanout/h2 protocol', function () {
  this.timeout(30_000);
  const suite = rawSuite({ heartbeatMs: 600_000 });
  const connect = suite.connect;

  /** The connection is ended with GOAWAY `code` as its last frame, then the socket closes. */
  async function failsWith(c: RawH2Client, code: number): Promise<void> {
    const g = await c.goaway();
    assert.equal(g.code, code, `GOAWAY code (debug: ${g.debug})`);
    await c.waitClosed();
    assert.equal(c.frames[c.frames.length - 1]!.type, T.GOAWAY, 'nothing after GOAWAY');
  }

  describe('connection errors', () => {
    it('a bad connection preface → GOAWAY PROTOCOL_ERROR, then the socket closes', async () => {
      const c = await connect({ opening: Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n', 'latin1') });
      await failsWith(c, E.PROTOCOL_ERROR);
      assert.equal((await c.goaway()).lastStreamId, 0);
    });

    it('a first frame that is not SETTINGS → GOAWAY PROTOCOL_ERROR, then the socket closes', async () => {
      const c = await connect({ opening: Buffer.concat([PREFACE, ping(Buffer.alloc(8))]) });
      await failsWith(c, E.PROTOCOL_ERROR);
      assert.equal(c.frames.filter((x) => x.type === T.PING).length, 0, 'the PING is not answered');
    });

    it('a frame header announcing more than 16,384 bytes → GOAWAY FRAME_SIZE_ERROR before any payload', async () => {
      const c = await connect();
      const head = Buffer.alloc(9);
      head.writeUIntBE(MAX_FRAME + 1, 0, 3);
      head[3] = T.DATA;
      head.writeUInt32BE(1, 5);
      c.write(head); // the header alone: the payload never comes
      await failsWith(c, E.FRAME_SIZE_ERROR);
    });

    it('a frame of exactly 16,384 bytes is accepted (unknown type, ignored)', async () => {
      const c = await connect();
      c.send(0xfa, 0, 0, Buffer.alloc(MAX_FRAME, 7));
      c.write(ping(Buffer.from('12345678')));
      await c.frame((x) => x.type === T.PING && (x.flags & F.ACK) !== 0);
      assert.equal(c.closed, false);
    });

    it('WINDOW_UPDATE with increment 0 on stream 0 → GOAWAY PROTOCOL_ERROR', async () => {
      const c = await connect();
      c.write(windowUpdate(0, 0));
      await failsWith(c, E.PROTOCOL_ERROR);
    });

    it('DATA on an idle stream → GOAWAY PROTOCOL_ERROR', async () => {
      const c = await connect();
      c.data(5, Buffer.from('hello'));
      await failsWith(c, E.PROTOCOL_ERROR);
      assert.equal((await c.goaway()).lastStreamId, 0);
    });

    it('HEADERS whose HPACK does not decode → GOAWAY COMPRESSION_ERROR', async () => {
      const c = await connect();
      c.send(T.HEADERS, F.END_HEADERS, 1, Buffer.from([0x80])); // indexed field 0: no such index
      await failsWith(c, E.COMPRESSION_ERROR);
    });
  });

  describe('control frames', () => {
    it("the server's SETTINGS come first; SETTINGS are acked; PING is answered with the same 8 bytes", async () => {
      const c = await connect({ settings: [[S.INITIAL_WINDOW_SIZE, 1 << 20]] });
      const payload = Buffer.from('0123abcd', 'latin1');
      c.write(settingsFrame([[S.MAX_FRAME_SIZE, 20_000]]));
      c.write(ping(payload));
      const ack = await c.frame((x) => x.type === T.PING);
      assert.equal(ack.flags, F.ACK);
      assert.equal(ack.streamId, 0);
      assert.deepEqual(ack.payload, payload);
      await c.until(() => c.frames.filter((x) => x.type === T.SETTINGS && x.flags === F.ACK).length === 2, 2000, 'two SETTINGS ACKs');
      const first = c.frames[0]!;
      assert.equal(first.type, T.SETTINGS);
      assert.equal(first.flags, 0);
      const params = new Map<number, number>();
      for (let i = 0; i < first.payload.length; i += 6) params.set(first.payload.readUInt16BE(i), first.payload.readUInt32BE(i + 2));
      assert.equal(params.get(S.ENABLE_PUSH), 0);
      assert.equal(params.get(S.MAX_FRAME_SIZE), MAX_FRAME);
      assert.ok((params.get(S.INITIAL_WINDOW_SIZE) ?? 0) >= 65_535);
      for (const x of c.frames.filter((y) => y.type === T.SETTINGS && y.flags === F.ACK)) assert.equal(x.payload.length, 0);
      assert.equal(c.frames.filter((x) => x.type === T.GOAWAY).length, 0);
    });
  });

  describe('HTTP and gRPC answers', () => {
    async function http2Request(headers: http2.OutgoingHttpHeaders): Promise<{ headers: http2.IncomingHttpHeaders; endStream: boolean; trailers: boolean }> {
      const session = http2.connect(`http://127.0.0.1:${suite.port}`);
      session.on('error', () => undefined);
      try {
        const req = session.request(headers, { endStream: true });
        let trailers = false;
        req.on('trailers', () => (trailers = true));
        const [h, flags] = await new Promise<[http2.IncomingHttpHeaders, number]>((resolve, reject) => {
          req.once('response', (hh, fl) => resolve([hh, fl]));
          req.once('error', reject);
        });
        req.resume();
        await new Promise<void>((resolve) => req.once('close', resolve));
        return { headers: h, endStream: (flags & F.END_STREAM) !== 0, trailers };
      } finally {
        session.close();
      }
    }
    const grpcHeaders = (over: http2.OutgoingHttpHeaders): http2.OutgoingHttpHeaders => ({ ':method': 'POST', ':path': PATH, 'content-type': 'application/grpc', te: 'trailers', ...over });

    it('node:http2: an unknown path → trailers-only grpc-status 12', async () => {
      const r = await http2Request(grpcHeaders({ ':path': '/arpc.StreamService/Nope' }));
      assert.equal(r.headers[':status'], 200);
      assert.equal(r.headers['grpc-status'], '12');
      assert.match(String(r.headers['grpc-message']), /\/arpc\.StreamService\/Nope/);
      assert.equal(r.endStream, true, 'headers carry END_STREAM');
      assert.equal(r.trailers, false);
    });

    it('node:http2: content-type text/plain → :status 415; GET → :status 405', async () => {
      const a = await http2Request(grpcHeaders({ 'content-type': 'text/plain' }));
      assert.equal(a.headers[':status'], 415);
      assert.equal(a.endStream, true);
      const b = await http2Request(grpcHeaders({ ':method': 'GET' }));
      assert.equal(b.headers[':status'], 405);
      assert.equal(b.endStream, true);
    });

    it('grpc-js: a deadline → DEADLINE_EXCEEDED; the server ends the call itself at grpc-timeout', async () => {
      const gc = StreamClient.open(suite.f.address, { callOptions: { deadline: Date.now() + 300 } });
      const s = await gc.waitForEnd(5000);
      assert.equal(s.code, grpc.status.DEADLINE_EXCEEDED);
      // The server's side of it, without a client timer: trailers with grpc-status 4 after ~200 ms.
      const c = await connect();
      const t0 = Date.now();
      c.request(1, PATH, [['grpc-timeout', '200m']]);
      await c.streamEnded(1, 3000);
      assert.ok(Date.now() - t0 >= 190, `ended after ${Date.now() - t0} ms`);
      assert.equal(c.lastField(1, 'grpc-status'), '4');
      // The subscriber behind the call is gone too, not left writing into a finished stream.
      await waitFor(() => suite.f.fanout.stats().subscribers === 0, 2000, 'the timed-out subscribers gone');
    });

    it('a compressed request → 12; over the max size → 8; the max itself is accepted; a malformed body → 13', async () => {
      const c = await connect();
      c.request(1, PATH);
      c.data(1, grpcMessage(Buffer.from([0x10, 0x01]), 1));
      c.request(3, PATH);
      c.data(3, grpcMessage(Buffer.alloc(0), 0, MAX_REQUEST + 1));
      c.request(5, PATH);
      c.data(5, grpcMessage(Buffer.alloc(0), 0, MAX_REQUEST)); // its body never comes: the call waits
      c.request(7, PATH);
      c.data(7, grpcMessage(Buffer.from([0x0a, 0x7f, 0x01]))); // field 1, length 127 past the end
      for (const id of [1, 3, 7]) await c.streamEnded(id);
      assert.equal(c.lastField(1, 'grpc-status'), '12');
      assert.equal(c.lastField(3, 'grpc-status'), '8');
      assert.match(c.lastField(3, 'grpc-message') ?? '', new RegExp(`\\(${MAX_REQUEST + 1} vs\\. ${MAX_REQUEST}\\)`));
      assert.equal(c.lastField(7, 'grpc-status'), '13');
      // Fence: the server has read everything up to a later PING and its answers to it have all arrived.
      await c.fence();
      const s5 = c.stream(5);
      assert.equal(s5.ended || s5.rstCode !== undefined, false, 'a request of exactly the max is awaited');
      assert.equal(c.lastField(5, 'grpc-status'), undefined);
      assert.equal(c.closed, false);
    });
  });

  describe('flow control', () => {
    /** Subscribes stream 1 to every transaction and waits for the ping echo. */
    async function subscribeAll(c: RawH2Client): Promise<void> {
      c.request(1, PATH);
      c.data(1, subscribe({ transactions: { all: {} }, pingId: 9 }));
      await c.until(() => grpcMessages(c.dataOf(1)).bodies.length >= 1, 5000, 'ping echo');
    }
    it('WINDOW_UPDATE pushing an open stream past 2^31-1 → RST_STREAM FLOW_CONTROL_ERROR on it, the connection goes on (RFC 9113 §6.9.1)', async () => {
      const c = await connect();
      await subscribeAll(c);
      c.write(windowUpdate(1, 0x7fffffff));
      c.write(windowUpdate(1, 0x7fffffff));
      await c.until(() => c.stream(1).rstCode !== undefined, 5000, 'RST_STREAM on stream 1');
      assert.equal(c.stream(1).rstCode, E.FLOW_CONTROL_ERROR);
      c.write(ping(Buffer.from('after-rs')));
      await c.frame((x) => x.type === T.PING && (x.flags & F.ACK) !== 0);
      assert.equal(c.closed, false);
    });

    /** Transaction responses of stream 1, as received. */
    const txBytes = (b: Buffer): Buffer => Buffer.from(deserializeSubscribeResponse(b).getTransaction()!.serializeBinary());
    const txBodies = (c: RawH2Client): Buffer[] => grpcMessages(c.dataOf(1)).bodies.filter((b) => deserializeSubscribeResponse(b).hasTransaction());
    /** Publishes `txs`; resolves once the hub has handed every one of them to its subscribers (it counts each first). */
    async function publishHandedOver(txs: TestTx[]): Promise<void> {
      const before = suite.f.fanout.stats().transactions;
      await suite.f.publishTx(...txs);
      await waitFor(() => suite.f.fanout.stats().transactions >= before + txs.length, 5000, 'the hub to take every transaction');
    }

    it('a 100-byte stream window granted by hand in small steps: every response arrives byte for byte, split across DATA frames', async () => {
      const slow = await connect({ settings: [[S.INITIAL_WINDOW_SIZE, 100]], autoWindow: false });
      const normal = await connect();
      // The stream window is ours to grant, 7 bytes at a time up to 100 outstanding; the connection's is given back.
      let granted = 100;
      let connGiven = 0;
      let overrun = false;
      const grantLoop = setInterval(() => {
        const used = slow.stream(1).dataFrames.reduce((a, b) => a + b, 0);
        if (used > granted) overrun = true;
        const steps: Buffer[] = [];
        while (granted - used + 7 <= 100) {
          steps.push(windowUpdate(1, 7));
          granted += 7;
        }
        if (used > connGiven) {
          steps.push(windowUpdate(0, used - connGiven));
          connGiven = used;
        }
        if (steps.length > 0) slow.write(Buffer.concat(steps));
      }, 1);
      const txs = Array.from({ length: 30 }, (_, i) => makeTx({ base: i }));
      try {
        await Promise.all([subscribeAll(slow), subscribeAll(normal)]);
        await suite.f.publishTx(...txs);
        await normal.until(() => txBodies(normal).length === txs.length, 5000, 'all transactions (normal client)');
        await slow.until(() => txBodies(slow).length === txs.length, 15_000, 'all transactions (100-byte window)');
      } finally {
        clearInterval(grantLoop);
      }
      const want = txBodies(normal);
      assert.deepEqual(txBodies(slow), want, 'the same bytes as a client with a wide window');
      assert.deepEqual(want.map(txBytes), txs.map((t) => t.message), 'and those are the published transactions');
      assert.ok(Math.max(...want.map((b) => b.length)) > 100, 'some message is larger than the window');
      assert.ok(Math.max(...slow.stream(1).dataFrames) <= 100, 'no DATA frame beyond the window');
      assert.equal(overrun, false, 'never more DATA than the window granted');
      assert.ok(Math.max(...normal.stream(1).dataFrames) <= MAX_FRAME, 'no DATA frame beyond the default MAX_FRAME_SIZE');
    });

    it('without a connection WINDOW_UPDATE, data stops at 65,535 bytes until one comes', async () => {
      const c = await connect({ settings: [[S.INITIAL_WINDOW_SIZE, 1 << 20]], autoWindow: false });
      await subscribeAll(c);
      const txs = Array.from({ length: 150 }, (_, i) => makeTx({ base: i }));
      assert.ok(txs.reduce((a, t) => a + t.message.length, 0) > 100_000);
      await publishHandedOver(txs);
      const received = (): number => c.stream(1).dataFrames.reduce((a, b) => a + b, 0);
      await c.until(() => received() >= 65_535, 5000, 'the whole initial connection window');
      // Every transaction is with the stream; whatever the server was going to send has arrived by the fence.
      await c.fence();
      assert.equal(received(), 65_535, 'nothing past the connection window');
      c.write(windowUpdate(0, 1 << 20));
      await c.until(() => txBodies(c).length === txs.length, 5000, 'the rest after WINDOW_UPDATE');
      assert.deepEqual(txBodies(c).map(txBytes), txs.map((t) => t.message));
    });

    it('SETTINGS INITIAL_WINDOW_SIZE 0 mid-stream holds data back; raising it again lets everything through', async () => {
      const c = await connect();
      await subscribeAll(c);
      c.write(settingsFrame([[S.INITIAL_WINDOW_SIZE, 0]]));
      await c.until(() => c.frames.filter((x) => x.type === T.SETTINGS && x.flags === F.ACK).length === 2, 2000, 'the SETTINGS ACK');
      const before = c.dataOf(1).length;
      const txs = Array.from({ length: 20 }, (_, i) => makeTx({ base: i }));
      await publishHandedOver(txs);
      await c.fence();
      assert.equal(c.dataOf(1).length, before, 'no DATA in a zero window');
      c.write(settingsFrame([[S.INITIAL_WINDOW_SIZE, 65_535]]));
      await c.until(() => txBodies(c).length === txs.length, 5000, 'the transactions after the window reopened');
      assert.deepEqual(txBodies(c).map(txBytes), txs.map((t) => t.message));
    });
  });

  describe('stream lifetime', () => {
    it('RST_STREAM on a subscribed stream ends that subscriber only; closing the socket ends the rest', async () => {
      const c = await connect();
      const base = suite.f.fanout.stats().subscribers;
      for (const id of [1, 3, 5]) {
        c.request(id, PATH);
        c.data(id, subscribe({ transactions: { k: { accountInclude: [testKey58(id)] } }, pingId: id }));
      }
      await c.until(() => [1, 3, 5].every((id) => grpcMessages(c.dataOf(id)).bodies.length >= 1), 5000, 'three ping echoes');
      assert.equal(suite.f.fanout.stats().subscribers, base + 3);
      c.write(rstStream(3, E.CANCEL));
      await waitFor(() => suite.f.fanout.stats().subscribers === base + 2, 2000, 'one subscriber fewer');
      // The others still receive.
      const t = makeTx({ keys: [testKey(5)] });
      await suite.f.publishTx(t);
      await c.until(() => grpcMessages(c.dataOf(5)).bodies.length >= 2, 5000, 'the transaction on stream 5');
      c.destroy();
      await waitFor(() => suite.f.fanout.stats().subscribers === base, 2000, 'no subscribers of the closed socket');
    });

    it('fanout.close(): open streams get grpc-status 14 and a GOAWAY arrives', async () => {
      const g = await startTestFanout({ heartbeatMs: 600_000 });
      const c = await RawH2Client.connect(portOf(g.address));
      try {
        for (const id of [1, 3]) {
          c.request(id, PATH);
          c.data(id, subscribe({ pingId: id }));
        }
        await c.until(() => [1, 3].every((id) => grpcMessages(c.dataOf(id)).bodies.length >= 1), 5000, 'two ping echoes');
        const closing = g.close();
        const ga = await c.goaway();
        assert.equal(ga.code, E.NO_ERROR);
        assert.equal(ga.lastStreamId, 3);
        for (const id of [1, 3]) {
          await c.streamEnded(id);
          assert.equal(c.lastField(id, 'grpc-status'), '14');
        }
        await closing;
        await c.waitClosed();
      } finally {
        c.destroy();
      }
    });
  });

  it('a raw HEADERS frame written by hand is a valid request (the helpers themselves)', async () => {
    const c = await connect();
    c.write(headersFrame(1, [[':method', 'POST'], [':path', PATH], [':scheme', 'http'], ['content-type', 'application/grpc']]));
    c.write(frame(T.DATA, 0, 1, subscribe({ pingId: 42 })));
    await c.until(() => grpcMessages(c.dataOf(1)).bodies.length >= 1, 5000, 'ping echo');
    assert.equal(deserializeSubscribeResponse(grpcMessages(c.dataOf(1)).bodies[0]!).getPingId(), 42);
    assert.equal(c.stream(1).blocks[0]!.find(([n]) => n === ':status')?.[1], '200');
  });
});
