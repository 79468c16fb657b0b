import assert from 'node:assert/strict';
import { decodeFrame, encodeVerdict, FrameReader, STATUS_FRAME_BYTES, writeStatus } from '../../../gateways/submit/quic/bridge-codec';
import { subjectCommonName } from '../../../gateways/submit/quic/client-cert';
import { parseQuicConfig } from '../../../gateways/submit/quic/config';
import { streamTransaction } from '../../../gateways/submit/quic/stream-frame';
import { Twins } from '../../../gateways/submit/quic/twins';
import { applyEnv, parseConfig, ConfigError } from '../../../infra/config';

// The pure parts of the QUIC transport: bridge framing, the stream framing, the twin table, the CN reader
// (on a certificate made by the same library the SDK uses is covered end to end; here: garbage and absence),
// and the config section with its environment overrides.

function frame(body: number[]): Buffer {
  const b = Buffer.from(body);
  const len = Buffer.alloc(4);
  len.writeUInt32LE(b.length);
  return Buffer.concat([len, b]);
}

describe('QUIC transport: pure parts', () => {
  it('FrameReader reassembles frames split anywhere, and refuses an oversized length', () => {
    const tx = [0x02, 7, 0, 0, 0, 9, 0, 0, 0, 3, 0xaa, 0xbb];
    const closed = [0x03, 7, 0, 0, 0, 1];
    const all = Buffer.concat([frame(tx), frame(closed), frame(tx)]);
    for (let cut = 0; cut <= all.length; cut++) {
      const got: ReturnType<typeof decodeFrame>[] = [];
      const r = new FrameReader(1024, (b) => got.push(decodeFrame(Buffer.from(b))));
      r.push(all.subarray(0, cut));
      r.push(all.subarray(cut));
      assert.equal(got.length, 3);
      assert.deepEqual(got[0], { type: 'tx', conn: 7, req: 9, kind: 'datagram', bytes: Buffer.from([0xaa, 0xbb]) });
      assert.deepEqual(got[1], { type: 'closed', conn: 7, reason: 'idle_timeout' });
    }
    const r = new FrameReader(16, () => undefined);
    assert.throws(() => r.push(frame(new Array(17).fill(0))), /17 bytes/);
  });

  it('decodes OPEN, EVENT and rejects unknown frames; encodes VERDICT and STATUS', () => {
    const open = decodeFrame(Buffer.from([0x01, 5, 0, 0, 0, 3, ...Buffer.from('::1'), 0x30, 0x82]));
    assert.deepEqual(open, { type: 'open', conn: 5, ip: '::1', cert: Buffer.from([0x30, 0x82]) });
    assert.deepEqual(decodeFrame(Buffer.from([0x04, 1])), { type: 'event', event: 'handshake_rate_limited' });
    assert.equal(decodeFrame(Buffer.from([0x02, 1, 0, 0, 0, 1, 0, 0, 0, 9])).type, 'bad');
    assert.equal(decodeFrame(Buffer.from([0x7f])).type, 'bad');
    const v = encodeVerdict(5, 1, 'unknown api key');
    assert.equal(v.readUInt32LE(0), v.length - 4);
    assert.deepEqual([v[4], v.readUInt32LE(5), v.readUInt32LE(9), v.subarray(13).toString()], [0x81, 5, 1, 'unknown api key']);
    const out = Buffer.alloc(STATUS_FRAME_BYTES * 2);
    assert.equal(writeStatus(out, writeStatus(out, 0, 1, 0x03), 2, 0x00), 20);
    assert.deepEqual([...out.subarray(0, 10)], [6, 0, 0, 0, 0x82, 1, 0, 0, 0, 0x03]);
  });

  it('stream framing: 0x01 then the transaction; empty or another first byte is no transaction', () => {
    assert.deepEqual(streamTransaction(Buffer.from([1, 9, 8])), Buffer.from([9, 8]));
    assert.equal(streamTransaction(Buffer.from([1])), null);
    assert.equal(streamTransaction(Buffer.from([])), null);
    assert.equal(streamTransaction(Buffer.from([2, 9])), null);
  });

  it('twins: the other path on the same connection within the window, once; same path, other connection or late is not', () => {
    const t = new Twins(1000, 3);
    const tx = Buffer.alloc(200, 1);
    t.note(1, tx, 'datagram', 0x00, 0);
    assert.equal(t.take(1, tx, 'datagram', 10), undefined, 'same path = a resend');
    assert.equal(t.take(2, tx, 'stream', 10), undefined, 'other connection');
    assert.equal(t.take(1, tx, 'stream', 10), 0x00);
    assert.equal(t.take(1, tx, 'stream', 20), undefined, 'consumed');
    t.note(1, tx, 'stream', 0x03, 0);
    assert.equal(t.take(1, tx, 'datagram', 1001), undefined, 'too late');
    for (let i = 0; i < 10; i++) t.note(1, Buffer.alloc(100, i), 'stream', 0, 2000);
    assert.equal(t.size, 3, 'bounded');
    assert.equal(new Twins(0).take(1, tx, 'stream', 0), undefined, 'window 0 = off');
  });

  it('subjectCommonName: null for garbage and empty input', () => {
    assert.equal(subjectCommonName(Buffer.alloc(0)), null);
    assert.equal(subjectCommonName(Buffer.from('not a certificate')), null);
  });

  it('config: defaults, limits checked, environment overrides under gateways.submit.quic', () => {
    const d = parseQuicConfig(undefined);
    assert.deepEqual([d.enabled, d.host, d.port, d.maxConnectionsPerKey, d.maxStreamsPerConnection, d.idleTimeoutMs], [false, '127.0.0.1', 5000, 8, 256, 30_000]);
    assert.throws(() => parseQuicConfig({ maxConnectionsPerKey: 10, maxConnections: 5 }), ConfigError);
    assert.throws(() => parseQuicConfig({ idleTimeoutMs: 5 }), /idleTimeoutMs/);
    const raw = applyEnv({}, { MERIDIAN__GATEWAYS__SUBMIT__QUIC__MAX_CONNECTIONS_PER_KEY: '3', MERIDIAN__GATEWAYS__SUBMIT__QUIC__LISTEN: '127.0.0.1:0' });
    const cfg = parseConfig(raw);
    assert.deepEqual([cfg.gateways.submitQuic.maxConnectionsPerKey, cfg.gateways.submitQuic.port], [3, 0]);
  });
});
