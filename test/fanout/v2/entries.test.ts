import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { status as Status } from '@grpc/grpc-js';
import { Keypair, PublicKey, SystemProgram, Transaction } from '@solana/web3.js';
import bs58 from 'bs58';
import type { Bus } from '../../../bus/bus';
import { EmbeddedBus } from '../../../bus/embedded';
import { KafkaBus } from '../../../bus/kafka';
import { decodeEntryBatch, encodeEntryBatch } from '../../../ingest/entry/entries';
import type { BatchOutput } from '../../../ingest/pipeline';
import { publishSink } from '../../../ingest/publish-sink';
import { Publisher } from '../../../ingest/publisher';
import type { DecodedTxn } from '../../../proto/txn/decode';
import { decodeCursor, encodeCursor, stampOf, TopicTag } from '../../../fanout/v2/cursor';
import { startFanout } from '../../../fanout/server';
import { FilterAckStatus, type SubscribeUpdate } from '../../../proto/gen/stream_v2_pb';
import { closeConnection, connect, payerOf, rpc, startNode } from '../../infra/local/chain/support';
import { kafkaBrokers } from '../../support/kafka';
import { emptyRegistry } from '../../../bus/rental-registry';
import { quietLog, startTestFanout, testConfig, uniqueTopics, type TestFanout } from '../support';
import { seqsContiguous, V2Client } from './client';

// stream v2's entry stream and RAW transactions, on both buses. Records reach the bus through ingest's own publish
// path (publish-sink.ts over a real Publisher): entry batches of signed transactions are decoded as ingest decodes
// them and published to stream.transactions and stream.entries, and v2 clients read them over the fanout's HTTP/2
// server with the generated messages. RAW bytes are checked against what the local chain's getTransaction returns
// with encoding base64.

type BusKind = 'embedded' | 'kafka';

async function openBus(kind: BusKind): Promise<Bus> {
  if (kind === 'embedded') return new EmbeddedBus({ log: quietLog() });
  return new KafkaBus({ brokers: await kafkaBrokers(), clientId: 'v2-entries', log: quietLog() });
}

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const payer = Keypair.generate();
let lamports = 1;

/** A signed legacy transfer to `dest`: its wire bytes. */
function wireTx(dest: PublicKey): Buffer {
  const t = new Transaction({ feePayer: payer.publicKey, recentBlockhash: bs58.encode(crypto.randomBytes(32)) });
  t.add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: dest, lamports: lamports++ }));
  t.sign(payer);
  return t.serialize();
}

/** Publishes entry batches as ingest does (one batch per call), on the fanout's topics. */
class Ingest {
  private readonly publisher: Publisher;
  private readonly sink: ReturnType<typeof publishSink>;
  private nextShred = new Map<bigint, number>();

  constructor(bus: Bus, topics: { transactions: string; slots: string; entries: string }) {
    this.publisher = new Publisher(bus, { maxItems: 1000 });
    this.sink = publishSink(this.publisher, { topics });
  }

  /** One batch of `entries` (each a list of transaction wire bytes; [] = a tick) in `slot`. */
  async batch(slot: bigint, entries: Buffer[][]): Promise<void> {
    const payload = encodeEntryBatch(entries.map((txs) => ({ numHashes: 12_500n, hash: crypto.randomBytes(32), txs })));
    const decode = decodeEntryBatch(payload, slot);
    assert.ok(decode.ok);
    const first = this.nextShred.get(slot) ?? 0;
    this.nextShred.set(slot, first + 32);
    if (first === 0) this.sink.slot(slot, Date.now()); // a slot's first shred: its stream.slots record
    const txs: DecodedTxn[] = decode.entries.flatMap((e) => e.txs);
    const now = Date.now();
    const out: BatchOutput = {
      batch: { slot, parentOffset: 1, firstShred: first, lastShred: first + 31, sets: 1, payload, lastInSlot: false, startKnown: true, firstSeenMs: now, completedMs: now },
      decode,
      entries: decode.entries,
      txs,
    };
    this.sink.batch(out);
    await this.publisher.idle();
    assert.equal(this.publisher.stats().failed, 0);
  }
}

/** A client's entry and RAW updates in order, as comparable items. */
function items(us: SubscribeUpdate[]): string[] {
  const out: string[] = [];
  for (const u of us) {
    if (u.hasEntry()) out.push(`entry:${hex(u.getEntry()!.getHash_asU8())}`);
    else if (u.hasTransaction() && u.getTransaction()!.getRaw_asU8().length > 0) out.push(`raw:${hex(u.getTransaction()!.getSignature_asU8())}`);
  }
  return out;
}

/** Like items(), with each update's slot. */
function slotItems(us: SubscribeUpdate[]): string[] {
  const out: string[] = [];
  for (const u of us) {
    if (u.hasEntry()) out.push(`entry:${u.getEntry()!.getSlot()}:${hex(u.getEntry()!.getHash_asU8())}`);
    else if (u.hasTransaction() && u.getTransaction()!.getRaw_asU8().length > 0) out.push(`raw:${u.getTransaction()!.getSlot()}:${hex(u.getTransaction()!.getSignature_asU8())}`);
  }
  return out;
}

for (const kind of ['embedded', 'kafka'] as const) {
  describe(`stream v2 entries and RAW transactions, ${kind} bus`, function () {
    this.timeout(kind === 'kafka' ? 180_000 : 60_000);
    let bus: Bus;
    let f: TestFanout;
    let ingest: Ingest;
    const clients: V2Client[] = [];
    const client = (): V2Client => {
      const c = new V2Client(f.address);
      clients.push(c);
      return c;
    };
    const watched = Keypair.generate().publicKey;
    const other = Keypair.generate().publicKey;
    const w58 = watched.toBase58();

    beforeEach(async () => {
      bus = await openBus(kind);
      f = await startTestFanout({ heartbeatMs: 200 }, undefined, bus);
      ingest = new Ingest(bus, f.cfg.topics);
    });

    afterEach(async () => {
      for (const c of clients.splice(0)) c.cancel();
      await f.close();
      await bus.close();
    });

    /** A started client whose stream has a cursor (a heartbeat came): what it gets next is what the hub reads next. */
    async function started(add: (c: V2Client) => void, start: Parameters<V2Client['start']>[0], acks: number): Promise<V2Client> {
      const c = client();
      add(c);
      c.start(start);
      await c.waitUpdates((u) => u.filter((x) => x.hasFilterAck()).length === acks && u.some((x) => x.hasHeartbeat() && x.getCursor_asU8().length > 0), 'acks and a heartbeat');
      return c;
    }

    it('one Entry per entry (ticks too) with its fields, seq and cursor; RAW transactions carry the wire bytes; DECODED filters unchanged', async () => {
      const c = await started(
        (x) => {
          x.add('raw', [w58], { encoding: 'raw' });
          x.add('dec', [w58]);
        },
        { entries: true },
        2,
      );
      const e0 = [wireTx(watched), wireTx(other), wireTx(watched)];
      const e2 = [wireTx(watched)];
      await ingest.batch(77n, [e0, [], e2]);
      await c.waitUpdates(() => c.updates.filter((u) => u.hasEntry()).length === 3 && c.txs().length === 6, 'three entries, three raw and three decoded');
      assert.ok(seqsContiguous(c.updates));
      const entries = c.updates.filter((u) => u.hasEntry()).map((u) => u.getEntry()!);
      assert.deepEqual(
        entries.map((e) => [e.getSlot(), e.getIndexKnown(), e.getIndex(), e.getStartingTransactionIndex(), e.getTransactionCount(), e.getNumHashes(), e.getBatchFirstShred(), e.getIndexInBatch()]),
        [
          [77, true, 0, 0, 3, 12_500, 0, 0],
          [77, true, 1, 3, 0, 12_500, 0, 1],
          [77, true, 2, 3, 1, 12_500, 0, 2],
        ],
      );
      // Signatures: each transaction's first, in entry order.
      assert.deepEqual(entries[0]!.getSignaturesList_asU8().map(hex), e0.map((w) => hex(w.subarray(1, 65))));
      const raw = c.txs().filter((u) => u.getTransaction()!.getRaw_asU8().length > 0);
      const dec = c.txs().filter((u) => u.getTransaction()!.hasDecoded());
      assert.deepEqual(raw.map((u) => hex(u.getTransaction()!.getRaw_asU8())), [e0[0]!, e0[2]!, e2[0]!].map(hex), 'the wire bytes, only the matching transactions');
      assert.ok(raw.every((u) => !u.getTransaction()!.hasDecoded() && u.getFiltersList().join() === 'raw' && u.getTransaction()!.getSlot() === 77));
      assert.deepEqual(raw.map((u) => hex(u.getTransaction()!.getSignature_asU8())), [e0[0]!, e0[2]!, e2[0]!].map((w) => hex(w.subarray(1, 65))));
      assert.ok(dec.length === 3 && dec.every((u) => u.getTransaction()!.getRaw_asU8().length === 0 && u.getFiltersList().join() === 'dec'));
      // Cursors name stream.entries; the first RAW transaction of e0 (not its last) resumes from before the record.
      for (const u of [...raw, ...c.updates.filter((x) => x.hasEntry())]) {
        const d = decodeCursor(u.getCursor_asU8());
        assert.ok(d.ok && d.position.has(TopicTag.entries));
      }
      const entryOff = (u: SubscribeUpdate): number => {
        const d = decodeCursor(u.getCursor_asU8());
        assert.ok(d.ok);
        return d.position.get(TopicTag.entries)![0]!;
      };
      const e0Update = c.updates.find((u) => u.hasEntry())!;
      assert.equal(entryOff(raw[0]!), entryOff(e0Update) - 1, 'before e0');
      assert.equal(entryOff(raw[1]!), entryOff(e0Update), 'after e0');
    });

    it('ticks ride in the next entry\'s record: one Entry each as before; a tick\'s cursor resumes before that record, so the entry after it is never skipped', async () => {
      const sub = (x: V2Client): void => x.add('raw', [w58], { encoding: 'raw' });
      const c = await started(sub, { entries: true }, 1);
      const e0 = [wireTx(watched)];
      const e3 = [wireTx(watched)];
      await ingest.batch(88n, [e0, [], [], e3, []]);
      await c.waitUpdates(() => c.updates.filter((u) => u.hasEntry()).length === 5 && c.txs().length === 2, 'five entries, two raw');
      assert.ok(seqsContiguous(c.updates));
      const entries = c.updates.filter((u) => u.hasEntry());
      assert.deepEqual(
        entries.map((u) => u.getEntry()!).map((e) => [e.getIndex(), e.getStartingTransactionIndex(), e.getTransactionCount(), e.getIndexInBatch()]),
        [[0, 0, 1, 0], [1, 1, 0, 1], [2, 1, 0, 2], [3, 1, 1, 3], [4, 2, 0, 4]],
      );
      const all = items(c.updates);
      // From the first tick's cursor: both ticks again, the entry after them and its RAW transaction, the last tick.
      const b = client();
      sub(b);
      b.start({ entries: true, cursor: entries[1]!.getCursor_asU8() });
      await b.waitUpdates((u) => u.some((x) => x.hasReplayComplete()), 'replay complete');
      await b.waitUpdates(() => items(b.updates).length === all.length - 2, 'the rest from the first tick');
      assert.deepEqual(items(b.updates), all.slice(2));
    });

    it('resumes entries and RAW transactions from a cursor across the replay seam: nothing lost, repeats only within one entry', async () => {
      const sub = (x: V2Client): void => x.add('raw', [w58]); // DEFAULT on a RAW stream: RAW
      const ref = await started(sub, { entries: true, raw: true }, 1);
      const a = await started(sub, { entries: true, raw: true }, 1);
      const batches = async (n: number, slot: bigint): Promise<void> => {
        for (let i = 0; i < n; i++) await ingest.batch(slot, [[wireTx(watched), wireTx(other), wireTx(watched)], [], [wireTx(watched)]]);
      };
      await batches(6, 900n);
      const perBatch = 3 + 3; // 3 entries, 3 RAW
      await a.waitUpdates(() => items(a.updates).length === 6 * perBatch, 'a has six batches');
      const aItems = items(a.updates);
      const aUpdates = a.updates.filter((u) => u.hasEntry() || (u.hasTransaction() && u.getTransaction()!.getRaw_asU8().length > 0));
      // After-cursor: the last RAW transaction of an entry (4th batch, first entry, its second RAW: index 3*6+2).
      const kAfter = 3 * perBatch + 2;
      assert.match(aItems[kAfter]!, /^raw:/);
      // Before-cursor: the first RAW transaction of that entry (it has one more after it).
      const kBefore = 3 * perBatch + 1;
      const entryAt = 3 * perBatch; // its Entry update
      a.cancel();
      await batches(3, 901n);
      const bAfter = client();
      sub(bAfter);
      bAfter.start({ entries: true, raw: true, cursor: aUpdates[kAfter]!.getCursor_asU8() });
      const bBefore = client();
      sub(bBefore);
      bBefore.start({ entries: true, raw: true, cursor: aUpdates[kBefore]!.getCursor_asU8() });
      await Promise.all([bAfter, bBefore].map((b) => b.waitUpdates((u) => u.some((x) => x.hasReplayComplete()), 'replay complete')));
      await batches(2, 902n);
      const total = 11 * perBatch;
      await ref.waitUpdates(() => items(ref.updates).length === total, 'ref has all');
      const refItems = items(ref.updates);
      assert.deepEqual(refItems.slice(0, aItems.length), aItems);
      await bAfter.waitUpdates(() => items(bAfter.updates).length === total - kAfter - 1, 'bAfter has the rest');
      assert.deepEqual(items(bAfter.updates), refItems.slice(kAfter + 1), 'after-cursor: exactly the rest');
      await bBefore.waitUpdates(() => items(bBefore.updates).length === total - entryAt, 'bBefore has the rest');
      assert.deepEqual(items(bBefore.updates), refItems.slice(entryAt), 'before-cursor: the rest, from that entry again');
      for (const b of [bAfter, bBefore]) {
        assert.ok(seqsContiguous(b.updates));
        const rc = b.updates.findIndex((u) => u.hasReplayComplete());
        assert.ok(rc > 0 && b.updates[rc]!.getReplayComplete()!.getReplayed() > 0);
      }
    });

    it('starts entries and RAW from a slot: that slot and later ones, replayed, then live', async () => {
      const sub = (x: V2Client): void => x.add('raw', [w58]);
      const ref = await started(sub, { entries: true, raw: true }, 1);
      for (const slot of [300n, 301n, 302n]) await ingest.batch(slot, [[wireTx(watched), wireTx(other)], []]);
      await ref.waitUpdates(() => items(ref.updates).length === 9, 'ref has three slots');
      const b = client();
      sub(b);
      b.start({ entries: true, raw: true, slot: 301 });
      await b.waitUpdates((u) => u.some((x) => x.hasReplayComplete()), 'replay complete');
      await ingest.batch(303n, [[wireTx(watched)]]);
      await ref.waitUpdates(() => items(ref.updates).length === 11, 'ref has slot 303');
      const want = slotItems(ref.updates).filter((x) => !x.includes(':300:'));
      await b.waitUpdates(() => items(b.updates).length === want.length, 'b has slots 301..303');
      assert.deepEqual(slotItems(b.updates), want);
      assert.ok(seqsContiguous(b.updates));
    });

    it('a cursor without stream.entries (made before entries were served): valid for DECODED, refused for entries and RAW with the reason', async () => {
      const a = await started((x) => x.add('a', [w58]), {}, 1);
      await ingest.batch(5n, [[wireTx(watched)]]);
      await a.waitUpdates(() => a.txs().length === 1, 'one');
      const d = decodeCursor(a.txs()[0]!.getCursor_asU8());
      assert.ok(d.ok);
      d.position.delete(TopicTag.entries);
      const old = encodeCursor(d.position, d.logs === null ? null : stampOf(d.logs));
      const ok = client();
      ok.add('a', [w58]);
      ok.start({ cursor: old });
      await ok.waitUpdates((u) => u.some((x) => x.hasReplayComplete()), 'replay complete');
      for (const start of [{ entries: true }, { raw: true }]) {
        const no = client();
        no.add('a', [w58]);
        no.start({ cursor: old, ...start });
        const st = await no.waitStatus();
        assert.equal(st.code, Status.INVALID_ARGUMENT);
        assert.match(st.details, /made before entries were served/);
      }
    });

    it('match_loaded_addresses with RAW is acknowledged INVALID (RAW matches static keys only), and the stream goes on', async () => {
      const c = client();
      c.add('x', [w58], { encoding: 'raw', matchLoaded: true });
      c.add('y', [w58], { encoding: 'raw' });
      await c.waitUpdates((u) => u.filter((x) => x.hasFilterAck()).length === 2, 'acks');
      const acks = c.updates.filter((u) => u.hasFilterAck()).map((u) => u.getFilterAck()!); // heartbeats may come too
      assert.deepEqual(acks.map((x) => [x.getId(), x.getStatus(), x.getReasonCode()]), [
        ['x', FilterAckStatus.FILTER_ACK_INVALID, 'unsupported_combination'],
        ['y', FilterAckStatus.FILTER_ACK_OK, ''],
      ]);
    });
  });
}

describe('stream v2 entries: a bus without the entries topic', function () {
  this.timeout(60_000);
  it('v2 runs without entries; Start with entries or RAW and RAW filters are refused with the reason', async () => {
    const bus = new EmbeddedBus({ log: quietLog() });
    const topics = { ...uniqueTopics(), entries: 'absent.entries' };
    const cfg = testConfig({ topics, heartbeatMs: 200 });
    await bus.createTopics([
      { name: topics.transactions, partitions: 1, compacted: false },
      { name: topics.slots, partitions: 1, compacted: false },
    ]);
    const fanout = await startFanout(cfg, bus, emptyRegistry(), quietLog());
    const clients: V2Client[] = [];
    try {
      const c = new V2Client(fanout.address);
      clients.push(c);
      c.add('r', [Keypair.generate().publicKey.toBase58()], { encoding: 'raw' });
      c.add('d', [Keypair.generate().publicKey.toBase58()]);
      c.start();
      await c.waitUpdates((u) => u.filter((x) => x.hasFilterAck()).length === 2 && u.some((x) => x.hasHeartbeat()), 'acks and a heartbeat');
      const acks = c.updates.filter((u) => u.hasFilterAck()).map((u) => u.getFilterAck()!);
      assert.equal(acks[0]!.getStatus(), FilterAckStatus.FILTER_ACK_INVALID);
      assert.equal(acks[0]!.getReasonCode(), 'unsupported_encoding');
      assert.match(acks[0]!.getReason(), /absent\.entries/);
      assert.equal(acks[1]!.getStatus(), FilterAckStatus.FILTER_ACK_OK);
      const d = decodeCursor(c.updates.find((u) => u.hasHeartbeat())!.getCursor_asU8());
      assert.ok(d.ok && !d.position.has(TopicTag.entries), 'cursors name the topics read');
      const e = new V2Client(fanout.address);
      clients.push(e);
      e.start({ entries: true });
      const st = await e.waitStatus();
      assert.equal(st.code, Status.INVALID_ARGUMENT);
      assert.match(st.details, /not served here: absent\.entries/);
    } finally {
      for (const c of clients) c.cancel();
      await fanout.close();
      await bus.close();
    }
  });
});

describe('stream v2 RAW bytes against the local chain', function () {
  this.timeout(120_000);
  it("RAW equals the bytes the chain's getTransaction returns with encoding base64", async () => {
    const { node } = await startNode({ slotMs: 50 });
    const conn = connect(node);
    const bus = new EmbeddedBus({ log: quietLog() });
    const f = await startTestFanout({ heartbeatMs: 200 }, undefined, bus);
    const c = new V2Client(f.address);
    try {
      const from = payerOf(node);
      const dest = Keypair.generate().publicKey;
      c.add('raw', [dest.toBase58()], { encoding: 'raw' });
      c.start();
      await c.waitUpdates((u) => u.some((x) => x.hasHeartbeat() && x.getCursor_asU8().length > 0), 'heartbeat');
      const landed: Array<{ sig: string; slot: number; bytes: Buffer }> = [];
      for (let i = 0; i < 3; i++) {
        const { blockhash, lastValidBlockHeight } = await conn.getLatestBlockhash();
        const t = new Transaction({ feePayer: from.publicKey, recentBlockhash: blockhash }).add(SystemProgram.transfer({ fromPubkey: from.publicKey, toPubkey: dest, lamports: 1_000_000 + i }));
        t.sign(from);
        const sig = await conn.sendRawTransaction(t.serialize());
        await conn.confirmTransaction({ signature: sig, blockhash, lastValidBlockHeight }, 'confirmed');
        const got = await rpc(node.httpUrl, 'getTransaction', [sig, { encoding: 'base64', commitment: 'confirmed', maxSupportedTransactionVersion: 0 }]);
        assert.ok(got.result !== null && got.result !== undefined, JSON.stringify(got.error));
        const [b64, enc] = got.result.transaction as [string, string];
        assert.equal(enc, 'base64');
        landed.push({ sig, slot: got.result.slot as number, bytes: Buffer.from(b64, 'base64') });
      }
      // The chain's bytes go through ingest's decode and publish path (one entry per transaction, in its slot).
      const ingest = new Ingest(bus, f.cfg.topics);
      for (const l of landed) await ingest.batch(BigInt(l.slot), [[l.bytes]]);
      await c.waitUpdates(() => c.txs().length === 3, 'three RAW');
      c.txs().forEach((u, i) => {
        const t = u.getTransaction()!;
        assert.ok(Buffer.from(t.getRaw_asU8()).equals(landed[i]!.bytes), 'RAW = getTransaction base64 bytes');
        assert.equal(bs58.encode(t.getSignature_asU8()), landed[i]!.sig);
        assert.equal(t.getSlot(), landed[i]!.slot);
      });
      assert.ok(seqsContiguous(c.updates));
    } finally {
      c.cancel();
      await f.close();
      await bus.close();
      closeConnection(conn);
      await node.close();
    }
  });
});
