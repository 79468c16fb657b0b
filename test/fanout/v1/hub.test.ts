import assert from 'node:assert/strict';
import { TOPIC } from '../../../bus/topics';
import type { BusMessage } from '../../../bus/bus';
import { wireEncoder } from '../../../fanout/v1/encoder';
import { isStreamError } from '../../../fanout/errors';
import { Fanout, type ResponseEncoder } from '../../../fanout/v1/hub';
import type { Session } from '../../../fanout/v1/session';
import { FakePort } from '../fake-port';
import { feedOf, makeTx, quietLog, slotRecord, testConfig, testKey, testKey58, txRecord, type TestTx } from '../support';

// The hub without a network: encode-once sharing, dedupe, slots, heartbeats, bad records.

const topics = { transactions: TOPIC.streamTransactions, slots: TOPIC.streamSlots };

function msg(topic: string, r: { key: Buffer | null; value: Buffer | null }, offset = 0): BusMessage {
  return { topic, partition: 0, offset: String(offset), key: r.key, value: r.value, headers: {}, timestamp: Date.now() };
}
const txMsg = (t: TestTx): BusMessage => msg(topics.transactions, txRecord(t));

class CountingEncoder implements ResponseEncoder {
  transactions = 0;
  filterNames = (names: string[]): Buffer => wireEncoder.filterNames(names);
  transaction = (at: number, f: Buffer, m: Buffer): Buffer => {
    this.transactions++;
    return wireEncoder.transaction(at, f, m);
  };
  ping = (id: number): Buffer => wireEncoder.ping(id);
  slot = (at: number, s: bigint): Buffer => wireEncoder.slot(at, s);
}

describe('fanout hub', () => {
  let hub: Fanout;
  let enc: CountingEncoder;
  beforeEach(() => {
    enc = new CountingEncoder();
    hub = new Fanout(testConfig({ topics, heartbeatMs: 60_000 }), enc, quietLog());
  });
  afterEach(() => hub.close());

  /** Opens a session that no stream cap refuses (no origin given). */
  const open = (p: FakePort): Session => {
    const s = hub.open(p);
    if (isStreamError(s)) return assert.fail(`refused: ${s.details}`);
    return s;
  };

  const upd = (filters: Array<[string, { include?: string[] }]>, extra: { newSeenSlots?: boolean } = {}) => ({
    filters: filters.map(([n, f]) => [n, { include: f.include ?? [], exclude: [], required: [] }] as const),
    pingId: undefined,
    newSeenSlots: extra.newSeenSlots,
  });

  it('encodes a transaction once per distinct filter-name list and hands the same bytes to each subscriber', () => {
    const ports = [new FakePort(), new FakePort(), new FakePort()];
    const [a, b, c] = ports.map(open);
    a!.handle(upd([['main', { include: [testKey58(1)] }]]));
    b!.handle(upd([['main', {}]]));
    c!.handle(upd([['other', { include: [testKey58(1)] }]]));
    feedOf(hub)([txMsg(makeTx({ keys: [testKey(1)] }))]);
    assert.equal(enc.transactions, 2, 'main and other');
    assert.deepEqual(ports.map((p) => p.written.length), [1, 1, 1]);
    assert.equal(ports[0]!.written[0], ports[1]!.written[0], 'the very same Buffer');
    assert.notEqual(ports[0]!.written[0], ports[2]!.written[0]);
    assert.equal(hub.stats().deliveredTransactions, 3);
  });

  it('drops duplicate signatures and duplicate slots; counts bad records; slots only where switched on', () => {
    const on = new FakePort();
    const off = new FakePort();
    open(on).handle(upd([['all', {}]], { newSeenSlots: true }));
    open(off).handle(upd([['all', {}]]));
    const t = makeTx();
    feedOf(hub)([txMsg(t), txMsg(t), msg(topics.slots, slotRecord(7n)), msg(topics.slots, slotRecord(7n))]);
    feedOf(hub)([msg(topics.transactions, { key: Buffer.alloc(64, 1), value: Buffer.from([9, 9]) }), msg(topics.slots, { key: null, value: null })]);
    assert.equal(on.written.length, 2, 'one transaction, one slot');
    assert.equal(off.written.length, 1);
    const s = hub.stats();
    assert.equal(s.dedupeDrops, 2);
    assert.equal(s.badRecords, 2);
    assert.equal(s.transactions, 1);
    assert.equal(s.slots, 1);
  });

  it('close() ends every session with UNAVAILABLE and later sessions at once', () => {
    const p = new FakePort();
    open(p);
    hub.close();
    assert.ok(p.ended !== undefined && p.ended !== 'ok' && p.ended.kind === 'shuttingDown');
    const late = new FakePort();
    open(late);
    assert.ok(late.ended !== undefined && late.ended !== 'ok' && late.ended.kind === 'shuttingDown');
    assert.equal(hub.stats().subscribers, 0);
  });
});
