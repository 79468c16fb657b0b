import assert from 'node:assert/strict';
import net from 'node:net';
import { DEFAULT_CONNECTION_LIMITS } from '../../../fanout/h2/connection';
import { startGrpcServer, type GrpcServer } from '../../../fanout/h2/server';
import { waitFor } from '../../support/wait';
import { frame, PREFACE, settingsFrame } from './raw-peer';
import { E, F, grpcRequestFields, headersFrame, ping, RawH2Client, S, T, windowUpdate } from './raw-h2-client';

// The own HTTP/2 server's time bounds and per-stream answers added by issue 20: an unfinished header block and
// an unacknowledged SETTINGS end the connection; a header list over the bound costs its stream (431), not the
// connection; the stream cap is advertised as SETTINGS_MAX_CONCURRENT_STREAMS; a malformed request gets
// RST_STREAM PROTOCOL_ERROR; frames after the peer's END_STREAM get STREAM_CLOSED; a stream we have answered while
// the peer still sends is half-closed (local), and what the peer sends on it is judged after our answer as before.

const PATH = '/t.S/M';
/** A path the server does not serve: answered at once with a trailers-only UNIMPLEMENTED (END_STREAM). */
const UNKNOWN = '/t.S/Unknown';
const SETTINGS_TIMEOUT = 0x4;
const STREAM_CLOSED = 0x5;

describe('fanout/h2 limits: time bounds and per-stream answers', function () {
  this.timeout(60_000);
  let server: GrpcServer;
  before(async () => {
    server = await startGrpcServer(
      {
        host: '127.0.0.1',
        port: 0,
        paths: new Set([PATH]),
        limits: { ...DEFAULT_CONNECTION_LIMITS, maxOpenStreams: 7, headerBlockTimeoutMs: 300, settingsAckTimeoutMs: 300 },
        maxMessageBytes: 1024,
        maxRequestBytesTotal: 1 << 20,
        maxConnections: 10,
        keepaliveMs: 60_000,
        keepaliveTimeoutMs: 10_000,
        handshakeTimeoutMs: 10_000,
      },
      (call) => call.sendHeaders(),
    );
  });
  after(async () => {
    await server.close(0);
  });

  it('our SETTINGS carry MAX_CONCURRENT_STREAMS = the cap enforced', async () => {
    const c = await RawH2Client.connect(server.port);
    try {
      const s = await c.frame((x) => x.type === T.SETTINGS && x.flags === 0);
      const pairs = new Map<number, number>();
      for (let at = 0; at < s.payload.length; at += 6) pairs.set(s.payload.readUInt16BE(at), s.payload.readUInt32BE(at + 2));
      assert.equal(pairs.get(S.MAX_CONCURRENT_STREAMS), 7);
    } finally {
      c.destroy();
    }
  });

  it('a header block left unfinished → GOAWAY ENHANCE_YOUR_CALM after headerBlockTimeoutMs', async () => {
    const c = await RawH2Client.connect(server.port);
    try {
      await c.frame((x) => x.type === T.SETTINGS && x.flags === 0);
      c.send(T.HEADERS, 0, 1, Buffer.from([0x83]));
      const g = await c.goaway(10_000);
      assert.equal(g.code, E.ENHANCE_YOUR_CALM);
      await c.waitClosed();
    } finally {
      c.destroy();
    }
  });

  it('our SETTINGS never acknowledged → GOAWAY SETTINGS_TIMEOUT', async () => {
    // A raw socket: RawH2Client acks every SETTINGS.
    const s = net.connect(server.port, '127.0.0.1');
    let got = Buffer.alloc(0);
    let closed = false;
    s.on('data', (b: Buffer) => (got = Buffer.concat([got, b])));
    s.on('error', () => undefined);
    s.on('close', () => (closed = true));
    await new Promise<void>((r) => s.once('connect', () => r()));
    s.write(Buffer.concat([PREFACE, settingsFrame([])]));
    await waitFor(() => closed, 10_000, 'the server ends the connection');
    let code: number | undefined;
    for (let at = 0; at + 9 <= got.length; at += 9 + got.readUIntBE(at, 3)) if (got[at + 3] === T.GOAWAY) code = got.readUInt32BE(at + 9 + 4);
    assert.equal(code, SETTINGS_TIMEOUT);
  });

  it('a header list over the bound → 431 on that stream; the connection and the HPACK table go on', async () => {
    const c = await RawH2Client.connect(server.port);
    try {
      await c.frame((x) => x.type === T.SETTINGS && x.flags === 0);
      // 20 KiB of list in a block under the 32 KiB byte bound, in two frames.
      const big = headersFrame(1, grpcRequestFields(PATH, [['x-big', 'a'.repeat(20 << 10)]]), 0).subarray(9);
      c.write(Buffer.concat([frame(T.HEADERS, F.END_STREAM, 1, big.subarray(0, 16_000)), frame(T.CONTINUATION, F.END_HEADERS, 1, big.subarray(16_000))]));
      await c.until(() => c.stream(1).blocks.length > 0, 5000, 'the 431');
      assert.equal(c.lastField(1, ':status'), '431');
      c.request(3, PATH);
      await c.until(() => c.stream(3).blocks.length > 0, 5000, 'the next request is served');
      assert.equal(c.lastField(3, ':status'), '200');
      c.write(ping(Buffer.from('stillok!')));
      await c.frame((x) => x.type === T.PING && x.payload.toString() === 'stillok!');
      assert.equal(c.frames.filter((x) => x.type === T.GOAWAY).length, 0);
    } finally {
      c.destroy();
    }
  });

  it('malformed requests → RST_STREAM PROTOCOL_ERROR; DATA after END_STREAM → GOAWAY STREAM_CLOSED', async () => {
    const c = await RawH2Client.connect(server.port);
    try {
      await c.frame((x) => x.type === T.SETTINGS && x.flags === 0);
      c.request(1, PATH, [['X-Upper', 'a']]);
      c.request(3, PATH, [['connection', 'keep-alive']]);
      c.request(5, PATH, [['te', 'gzip']]);
      c.write(headersFrame(7, [[':method', 'POST'], [':scheme', 'http'], [':path', PATH], [':status', '200']]));
      await c.until(() => [1, 3, 5, 7].every((id) => c.stream(id).rstCode !== undefined), 5000, 'four resets');
      assert.deepEqual([1, 3, 5, 7].map((id) => c.stream(id).rstCode), [E.PROTOCOL_ERROR, E.PROTOCOL_ERROR, E.PROTOCOL_ERROR, E.PROTOCOL_ERROR]);
      // A GET (405, END_STREAM both ways) closes stream 9; DATA on it afterwards is a connection error.
      c.write(headersFrame(9, [[':method', 'GET'], [':scheme', 'http'], [':path', PATH]], F.END_HEADERS | F.END_STREAM));
      await c.streamEnded(9);
      c.data(9, Buffer.from('late'));
      assert.equal((await c.goaway()).code, STREAM_CLOSED);
    } finally {
      c.destroy();
    }
  });

  it('half-closed (local): after our END_STREAM the peer\'s frames are still judged, and such streams count toward the cap (RFC 9113 §5.1, §5.1.2)', async () => {
    const c = await RawH2Client.connect(server.port);
    try {
      await c.frame((x) => x.type === T.SETTINGS && x.flags === 0);
      // Requests the server answers at their HEADERS, the peer's side left open; every frame below is sent after
      // the answer has arrived, which is when a server that closed the stream at its own END_STREAM ignored them.
      c.request(1, UNKNOWN);
      c.request(3, UNKNOWN, [['content-length', '4']]);
      c.request(5, UNKNOWN);
      c.request(7, UNKNOWN);
      c.request(9, UNKNOWN);
      for (const id of [1, 3, 5, 7, 9]) assert.equal((await c.streamEnded(id)).rstCode, undefined, `stream ${id} answered with END_STREAM`);
      assert.equal(c.lastField(1, 'grpc-status'), '12');
      // The cap (7) counts the five half-closed streams: two more fit, the eighth is refused.
      c.request(11, PATH);
      c.request(13, PATH);
      c.request(15, PATH);
      await c.until(() => c.stream(15).rstCode !== undefined, 5000, 'the stream over the cap refused');
      assert.equal(c.stream(15).rstCode, E.REFUSED_STREAM);
      assert.equal(c.stream(13).rstCode, undefined);
      c.write(windowUpdate(1, 0x7fffffff));
      c.write(windowUpdate(1, 0x7fffffff));
      c.data(3, Buffer.from('more than four'));
      c.write(windowUpdate(5, 0));
      c.write(headersFrame(7, [[':path', '/trailers/with/a/pseudo-header']], F.END_HEADERS | F.END_STREAM));
      c.data(9, Buffer.from('end'), true); // a normal end: closed, no answer
      await c.until(() => [1, 3, 5, 7].every((id) => c.stream(id).rstCode !== undefined), 5000, 'four stream errors');
      assert.deepEqual([1, 3, 5, 7].map((id) => c.stream(id).rstCode), [E.FLOW_CONTROL_ERROR, E.PROTOCOL_ERROR, E.PROTOCOL_ERROR, E.PROTOCOL_ERROR]);
      await c.fence();
      assert.equal(c.stream(9).rstCode, undefined);
      // Those streams are closed now, so the cap has room again.
      c.request(17, PATH);
      c.write(ping(Buffer.from('stillok!')));
      await c.frame((x) => x.type === T.PING && x.payload.toString() === 'stillok!');
      assert.equal(c.stream(17).rstCode, undefined);
      assert.equal(c.lastField(17, ':status'), '200');
      // Stream 9 was closed by the peer's END_STREAM: DATA on it now is a connection error.
      c.data(9, Buffer.from('late'));
      assert.equal((await c.goaway()).code, STREAM_CLOSED);
    } finally {
      c.destroy();
    }
  });
});
