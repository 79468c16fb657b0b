import fs from 'node:fs';
import { Writable } from 'node:stream';
import bs58 from 'bs58';
import type { Bus, BusMessage, ProduceRecord } from '../../bus/bus';
import { TOPIC } from '../../bus/topics';
import { EmbeddedBus } from '../../bus/embedded';
import { emptyRegistry, type RentalRegistry } from '../../bus/rental-registry';
import { encodeSlotRecord, slotKey } from '../../bus/topics/stream-slots';
import { encodeTxRecord } from '../../bus/topics/stream-transactions';
import { parseFanoutConfig, type FanoutConfig } from '../../fanout/config';
import { startFanout, type FanoutHandle, type FanoutOptions } from '../../fanout/server';
import { StreamFeed } from '../../fanout/stream-feed';
import type { LookupTables } from '../../fanout/lookup-tables/lookup-tables';
import type { Fanout } from '../../fanout/v1/hub';
import { createLogger, type Log } from '../../infra/base/log';
import { decodeTransaction } from '../../proto/txn/decode';
import { encodeTransaction } from '../../proto/wire';
import type { TxFields } from '../../proto/tx-fields';
import { fixture } from '../support/paths';

// Shared by the fanout tests and the fanout benchmark: real transactions from the fixtures (decoded by the
// ingest decoder), variants of them with a chosen signature and chosen account keys, and a fanout on an
// embedded bus with its own topic names.

export interface FixtureTx {
  name: string;
  fields: TxFields;
}

let cached: FixtureTx[] | undefined;

/** Every decodable fixture transaction (ballet_txn_transaction5 is deliberately invalid and skipped). */
export function fixtureTxs(): FixtureTx[] {
  if (cached !== undefined) return cached;
  const dir = fixture('txns');
  cached = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.bin'))
    .sort()
    .flatMap((name) => {
      const d = decodeTransaction(fs.readFileSync(`${dir}/${name}`), 300_000_000n);
      return d.ok ? [{ name, fields: d.tx }] : [];
    });
  if (cached.length < 10) throw new Error(`only ${cached.length} fixture transactions decode`);
  return cached;
}

/** A deterministic 32-byte key from a number (never all zeros, so base58 round-trips). */
export function testKey(i: number, salt = 0): Buffer {
  const b = Buffer.alloc(32, 0x11);
  b.writeUInt32BE(i >>> 0, 0);
  b.writeUInt32BE(salt >>> 0, 4);
  return b;
}

export const b58 = (b: Uint8Array): string => bs58.encode(b);
export const testKey58 = (i: number, salt = 0): string => b58(testKey(i, salt));

let sigCounter = 1;

/** A 64-byte signature no other test transaction has. */
export function uniqueSignature(): Buffer {
  const s = Buffer.alloc(64, 0x22);
  s.writeUInt32BE(process.pid, 0);
  s.writeDoubleBE(sigCounter++, 4);
  return s;
}

export interface TestTx {
  fields: TxFields;
  signature: Buffer;
  /** Static account keys, contiguous. */
  keys: Buffer;
  /** The encoded SubscribeResponseTransaction (what subscribers must receive byte for byte). */
  message: Buffer;
}

/**
 * A real fixture transaction with its first signature replaced and, when given, its static account keys
 * replaced by `keys` (the count may differ: the message is re-encoded from fields, as ingest would).
 */
export function makeTx(opts: { keys?: Buffer[]; base?: number; signature?: Buffer; slot?: bigint } = {}): TestTx {
  const all = fixtureTxs();
  const base = all[(opts.base ?? 0) % all.length]!.fields;
  const signature = opts.signature ?? uniqueSignature();
  const accountKeys = opts.keys ?? base.accountKeys;
  const fields: TxFields = { ...base, slot: opts.slot ?? base.slot, signatures: [signature, ...base.signatures.slice(1)], accountKeys };
  return { fields, signature, keys: Buffer.concat(accountKeys), message: encodeTransaction(fields) };
}

export function txRecord(t: TestTx, observedAtMs = Date.now()): ProduceRecord {
  return { key: t.signature, value: encodeTxRecord({ slot: t.fields.slot, observedAtMs, accountKeys: t.keys, message: t.message }) };
}

export function slotRecord(slot: bigint, firstSeenMs = Date.now()): ProduceRecord {
  return { key: slotKey(slot), value: encodeSlotRecord({ slot, firstSeenMs }) };
}

let topicCounter = 0;

/** Topic names of their own, so tests never read each other's records (a shared Kafka broker included). */
export function uniqueTopics(tag = 'fanout'): FanoutConfig['topics'] {
  const n = `${tag}.${process.pid}.${Date.now().toString(36)}.${topicCounter++}`;
  // No status topic unless a test creates one (fanout.topics.slotStatus: '' = not read).
  return { transactions: `${n}.transactions`, slots: `${n}.slots`, slotStatus: '', entries: `${n}.entries` };
}

/** A logger that writes nowhere (LOG=1 in the environment shows the lines). */
export function quietLog(): Log {
  if (process.env.LOG === '1') return createLogger({ level: 'debug' });
  return createLogger({ level: 'warn', destination: new Writable({ write: (_c, _e, cb) => cb() }) });
}

export function testConfig(over: Record<string, unknown> = {}): FanoutConfig {
  return parseFanoutConfig({ listen: '127.0.0.1:0', heartbeatMs: 150, ...over });
}

export interface TestFanout {
  bus: Bus;
  cfg: FanoutConfig;
  fanout: FanoutHandle;
  address: string;
  publishTx(...txs: TestTx[]): Promise<void>;
  publishSlot(...slots: bigint[]): Promise<void>;
  close(): Promise<void>;
}

/** A fanout on an embedded bus (or the given one), reading topics of its own. */
export async function startTestFanout(
  over: Record<string, unknown> = {},
  rentals: RentalRegistry = emptyRegistry(),
  busIn?: Bus,
  opts?: FanoutOptions,
): Promise<TestFanout> {
  const bus = busIn ?? new EmbeddedBus({ log: quietLog() });
  const topics = uniqueTopics();
  const cfg = testConfig({ topics, ...over });
  await bus.createTopics([
    { name: cfg.topics.transactions, partitions: 1, compacted: false },
    { name: cfg.topics.slots, partitions: 1, compacted: false },
    { name: cfg.topics.entries, partitions: 1, compacted: false },
  ]);
  const fanout = await startFanout(cfg, bus, rentals, quietLog(), opts);
  return {
    bus,
    cfg,
    fanout,
    address: fanout.address,
    publishTx: (...txs) => bus.produce(cfg.topics.transactions, txs.map((t) => txRecord(t))),
    publishSlot: (...slots) => bus.produce(cfg.topics.slots, slots.map((s) => slotRecord(s))),
    close: async () => {
      await fanout.close();
      if (busIn === undefined) await bus.close();
    },
  };
}

const feeds = new WeakMap<Fanout, StreamFeed>();

/**
 * The bus handler a v1 hub gets in the server (fanout/stream-feed.ts: de-duplicated, decoded once, the table cache
 * fed), without v2: one per hub, so its de-duplication window lasts across calls.
 */
export function feedOf(hub: Fanout, tables?: LookupTables): (messages: BusMessage[]) => void {
  let f = feeds.get(hub);
  if (f === undefined) {
    f = new StreamFeed({ transactions: TOPIC.streamTransactions, slots: TOPIC.streamSlots }, 100_000, hub, undefined, tables);
    feeds.set(hub, f);
  }
  return f.onBatch;
}
