import assert from 'node:assert/strict';
import { ConfigError } from '../../../infra/base/config-read';
import { parseSubmitConfig } from '../../../gateways/submit/config';
import { LeaderSchedule, parseTpuAddress } from '../../../gateways/submit/tpu/leader-schedule';
import { encodeConnect, encodeTx, KIND, SenderDecoder, type SenderMessage } from '../../../gateways/submit/tpu/sender-codec';

// The `tpu` route's pure parts: which leaders the next windows hold, what a usable tpuQuic is, and the framing
// to and from the sender process.

describe('tpu route: leader schedule', () => {
  const sched = (): LeaderSchedule => {
    const s = new LeaderSchedule();
    // Slots 100..139: A A A A B B B B C C C C A A A A D D D D …
    const order = ['A', 'B', 'C', 'A', 'D', 'E', 'F', 'G', 'H', 'I'];
    s.setLeaders(100, Array.from({ length: 40 }, (_, i) => order[Math.floor(i / 4)]!));
    s.setNodes(new Map([['A', '10.0.0.1:8009'], ['B', '10.0.0.2:8009'], ['C', null], ['D', '10.0.0.4:8009']]));
    return s;
  };

  it('knows nothing before a slot, and nothing past its schedule', () => {
    const s = sched();
    assert.equal(s.windows(2), null);
    s.noteSlot(99);
    assert.equal(s.windows(2), null, 'a slot before the fetched schedule');
    s.noteSlot(150);
    assert.equal(s.windows(2), null, 'a slot past it');
  });

  it('gives the current window and the next ones, each leader once, with its address or null', () => {
    const s = sched();
    s.noteSlot(102);
    assert.deepEqual(s.windows(2), [
      { identity: 'A', tpu: '10.0.0.1:8009', firstSlot: 102 },
      { identity: 'B', tpu: '10.0.0.2:8009', firstSlot: 104 },
    ]);
    s.noteSlot(107);
    assert.deepEqual(s.windows(3)!.map((w) => [w.identity, w.tpu]), [['B', '10.0.0.2:8009'], ['C', null], ['A', '10.0.0.1:8009']]);
    s.noteSlot(110);
    // C, A, D: A's second window is a window of its own.
    assert.deepEqual(s.windows(3)!.map((w) => w.identity), ['C', 'A', 'D']);
    assert.deepEqual(s.windows(2)!.map((w) => w.identity), ['C', 'A']);
  });

  it('slots only move forward', () => {
    const s = sched();
    assert.equal(s.noteSlot(110), true);
    assert.equal(s.noteSlot(104), false);
    assert.equal(s.currentSlot(), 110);
    assert.equal(s.knownAhead(), 30);
  });

  it('a leader of two consecutive windows is named once', () => {
    const s = new LeaderSchedule();
    s.setLeaders(0, ['X', 'X', 'X', 'X', 'X', 'X', 'X', 'X', 'Y', 'Y', 'Y', 'Y']);
    s.noteSlot(1);
    assert.deepEqual(s.windows(3)!.map((w) => w.identity), ['X', 'Y']);
  });

  it('maps a peer address back to its identity (for the per-leader counters)', () => {
    const s = sched();
    assert.equal(s.identityOf('10.0.0.4:8009'), 'D');
    assert.equal(s.identityOf('10.0.0.9:8009'), undefined);
  });

  it('takes only ip:port as a TPU address', () => {
    assert.equal(parseTpuAddress('127.0.0.2:8009'), '127.0.0.2:8009');
    assert.equal(parseTpuAddress('[::1]:8009'), '[::1]:8009');
    for (const bad of [null, undefined, 8009, '', 'not an address', 'host.example:8009', '300.1.2.3:8009', '127.0.0.1:0', '127.0.0.1:70000', '127.0.0.1', '::1:8009', `${'1'.repeat(70)}:1`]) {
      assert.equal(parseTpuAddress(bad), null, JSON.stringify(bad));
    }
  });
});

describe('tpu route: sender framing', () => {
  it('encodes CONNECT and TX as the sender reads them', () => {
    const c = encodeConnect(['127.0.0.2:8009', '[::1]:9']);
    assert.equal(c.readUInt32LE(0), c.length - 4);
    assert.equal(c[4], KIND.connect);
    assert.equal(c[5], 2);
    assert.equal(c.subarray(7, 7 + c[6]!).toString(), '127.0.0.2:8009');
    const tx = Buffer.from([1, 2, 3, 4]);
    const t = encodeTx(0xfffffffe, ['127.0.0.2:8009'], tx);
    assert.equal(t.readUInt32LE(0), t.length - 4);
    assert.equal(t[4], KIND.tx);
    assert.equal(t.readUInt32LE(5), 0xfffffffe);
    assert.deepEqual(t.subarray(t.length - 4), tx);
    assert.throws(() => encodeTx(1, ['not an address!'], tx));
    assert.throws(() => encodeTx(1, ['1.2.3.4:5'], Buffer.alloc(70_000)));
  });

  const frame = (kind: number, body: Buffer): Buffer => {
    const b = Buffer.alloc(5 + body.length);
    b.writeUInt32LE(body.length + 1, 0);
    b[4] = kind;
    body.copy(b, 5);
    return b;
  };

  it('decodes the sender\'s frames split anywhere, and reports a bad one without losing the rest', () => {
    const result = Buffer.from([7, 0, 0, 0, 3, 0, 1, 2]);
    const stats = Buffer.from(JSON.stringify([{ peer: '127.0.0.2:8009', active: true, sent: 3, connect_error: 0, connection_timed_out: 1, connection_closed: 0, application_closed: 0, connection_reset: 0, transport_error: 0, write_error: 0, congestion_events: 0 }]));
    const all = Buffer.concat([frame(KIND.hello, Buffer.from('{"identity":"abc","ephemeral":true}')), frame(KIND.result, result), frame(KIND.stats, Buffer.from('{"nope":1}')), frame(KIND.stats, stats)]);
    for (let cut = 1; cut < all.length; cut += 7) {
      const out: SenderMessage[] = [];
      const bad: string[] = [];
      const d = new SenderDecoder();
      d.push(all.subarray(0, cut), (m) => out.push(m), (w) => bad.push(w));
      d.push(all.subarray(cut), (m) => out.push(m), (w) => bad.push(w));
      assert.deepEqual(out.map((m) => m.kind), ['hello', 'result', 'stats']);
      assert.deepEqual(out[1], { kind: 'result', id: 7, codes: ['queued', 'full', 'gone'] });
      assert.equal(bad.length, 1);
    }
  });
});

describe('tpu route: config', () => {
  const base = { enabled: true, tips: { accounts: ['11111111111111111111111111111111'] } };
  it('defaults: the rpc routes only, Agave client fanouts', () => {
    const c = parseSubmitConfig(base);
    assert.deepEqual(c.routes, ['rpc']);
    assert.deepEqual([c.tpu.sendFanout, c.tpu.connectFanout, c.tpu.identityFile], [2, 3, undefined]);
    assert.deepEqual(parseSubmitConfig({ ...base, routes: 'rpc, tpu' }).routes, ['rpc', 'tpu'], 'the environment form');
  });
  it('an operator mistake is one line naming the setting', () => {
    assert.throws(() => parseSubmitConfig({ ...base, routes: ['rpc', 'jito'] }), (e: Error) => e instanceof ConfigError && /^gateways\.submit\.routes: expected a list of "rpc" and "tpu", got "jito"$/.test(e.message));
    assert.throws(() => parseSubmitConfig({ ...base, routes: [] }), /gateways\.submit\.routes: at least one route/);
    assert.throws(() => parseSubmitConfig({ ...base, tpu: { sendFanout: 3, connectFanout: 2 } }), /gateways\.submit\.tpu\.connectFanout: must be ≥ sendFanout \(3\)/);
    assert.throws(() => parseSubmitConfig({ ...base, tpu: { bind: 'localhost:0' } }), /gateways\.submit\.tpu\.bind: expected ip:port/);
    assert.throws(() => parseSubmitConfig({ ...base, tpu: { rpcUrl: 'ftp://x' } }), /gateways\.submit\.tpu\.rpcUrl: expected an http\(s\) URL$/);
  });
});
