import type { Bus, ProduceRecord } from '../../bus/bus';
import { encodeTxRecord } from '../../bus/topics/stream-transactions';
import { encodeLookupsHeader, LOOKUPS_HEADER } from '../../bus/topics/stream-transactions-lookups';
import { encodeTransaction } from '../../proto/wire';
import { b58, fixtureTxs } from '../fanout/support';
import { rng } from '../support/prng';

// The fanout benchmark's workload, generated the same way (seeded) in the bench process (subscriber filters)
// and in the fanout process (transactions, embedded bus), so neither ships data to the other.
//
// Key distribution (printed by the bench):
//   - USERS ordinary accounts and HOT popular program accounts (think a busy DEX or token program);
//   - each subscriber: 2 filters × 10 include keys, uniform over USERS; with probability FILTER_HOT_P one of the
//     ten is a HOT key instead — a few subscribers watch a busy program, most watch their own accounts;
//   - each transaction: a real fixture transaction's static keys (its programs, payers, …) plus TX_USERS
//     uniform USERS accounts, plus one HOT key with probability TX_HOT_P.
// Every transaction's first signature carries its publish time (f64 LE, epoch ms, at bytes 0..7) and a
// sequence number (bytes 8..15), so a receiver measures publish→receipt latency without a side channel.

export const WORKLOAD = {
  seed: 20_202,
  users: 20_000,
  hot: 10,
  subscribers: 1000,
  filtersPerSubscriber: 2,
  keysPerFilter: 10,
  filterHotP: 0.1,
  txUsers: 3,
  txHotP: 0.1,
  /** Distinct transaction templates; a publish copies one and stamps a fresh signature into it. */
  templates: 2048,
};

export const STAMP_OFF = 0;
export const SEQ_OFF = 8;

function accountKey(kind: 'user' | 'hot', i: number): Buffer {
  const b = Buffer.alloc(32, kind === 'user' ? 0x33 : 0x44);
  b.writeUInt32BE(i + 1, 0);
  return b;
}

const pick = (r: () => number, n: number): number => Math.floor(r() * n);

/** Subscriber i's filter map (deterministic). */
/** A filter as strings (what a client sends; assignable to fanout/filter/compile.ts FilterSpec). */
export interface TextFilter {
  include: string[];
  exclude: string[];
  required: string[];
}

export function subscriberFilters(i: number): Array<[string, TextFilter]> {
  const r = rng(WORKLOAD.seed * 7919 + i);
  const out: Array<[string, TextFilter]> = [];
  for (let f = 0; f < WORKLOAD.filtersPerSubscriber; f++) {
    const keys = new Set<string>();
    while (keys.size < WORKLOAD.keysPerFilter) keys.add(b58(accountKey('user', pick(r, WORKLOAD.users))));
    if (r() < WORKLOAD.filterHotP) {
      keys.delete([...keys][0]!);
      keys.add(b58(accountKey('hot', pick(r, WORKLOAD.hot))));
    }
    out.push([`f${f}`, { include: [...keys], exclude: [], required: [] }]);
  }
  return out;
}

export interface TxTemplate {
  /** The record value (header ‖ keys ‖ message), with the template's own signature inside the message. */
  value: Buffer;
  /** Where signatures[0] sits in `value`. */
  sigOff: number;
  keys: Buffer;
  /** The record headers ingest sets (its lookups header: bus/topics/stream-transactions-lookups.ts); never written. */
  headers: Record<string, Buffer>;
}

/** The transaction templates (deterministic). */
export function txTemplates(): TxTemplate[] {
  const r = rng(WORKLOAD.seed);
  const fixtures = fixtureTxs();
  const out: TxTemplate[] = [];
  for (let t = 0; t < WORKLOAD.templates; t++) {
    const base = fixtures[t % fixtures.length]!.fields;
    const extra: Buffer[] = [];
    for (let u = 0; u < WORKLOAD.txUsers; u++) extra.push(accountKey('user', pick(r, WORKLOAD.users)));
    if (r() < WORKLOAD.txHotP) extra.push(accountKey('hot', pick(r, WORKLOAD.hot)));
    const sig = Buffer.alloc(64, 0x55);
    sig.writeUInt32BE(t, 16); // unique per template, found again below
    const accountKeys = [...base.accountKeys, ...extra];
    const message = encodeTransaction({ ...base, signatures: [sig, ...base.signatures.slice(1)], accountKeys });
    const keys = Buffer.concat(accountKeys);
    const value = encodeTxRecord({ slot: base.slot, observedAtMs: 0, accountKeys: keys, message });
    const sigOff = value.indexOf(sig, value.length - message.length);
    if (sigOff < 0) throw new Error('signature not found in the encoded template');
    out.push({ value, sigOff, keys, headers: { [LOOKUPS_HEADER]: encodeLookupsHeader(base.addressTableLookups) } });
  }
  return out;
}

/** Wall-clock ms with sub-ms resolution, comparable between processes of one machine. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

/** A publishable record from template `t`: a fresh signature (publish time + seq) in the key and the message. */
export function stampRecord(t: TxTemplate, seq: number): ProduceRecord {
  // An allocation of the record's own, not Buffer.from (a slice of the shared pool slab): the fanout child's
  // embedded bus keeps records without copying them (copyOnProduce: false), and a kept pool slice pins its whole
  // slab (64 KiB on Node 24) with the fanout's short-lived buffers cut from it; bus/embedded.ts copyRecord.
  const value = Buffer.allocUnsafeSlow(t.value.length);
  t.value.copy(value);
  const now = nowMs();
  value.writeDoubleLE(now, 4); // observed-at in the record header (TX record layout: +4 f64)
  value.writeDoubleLE(now, t.sigOff + STAMP_OFF);
  value.writeDoubleLE(seq, t.sigOff + SEQ_OFF);
  return { key: value.subarray(t.sigOff, t.sigOff + 64), value, headers: t.headers };
}

const MAX_RECORDS_PER_PRODUCE = 256;
const MAX_PRODUCES_IN_FLIGHT = 8;
/** Most records the feed appends before it yields (so before a live reader in its process can run). */
export const FEED_MAX_BURST = MAX_RECORDS_PER_PRODUCE * (MAX_PRODUCES_IN_FLIGHT + 1);

export interface FeedPlan {
  rate: number;
  seconds: number;
  /** First sequence number (keeps signatures unique across phases). */
  seq0: number;
}

/**
 * Publishes at `rate` tx/s for `seconds`: every tick, one produce of what is due (like ingest's per-entry-batch
 * produces). Returns how many were published. Used in the fanout process (embedded bus) and the bench (Kafka).
 */
export async function paceFeed(bus: Bus, topic: string, plan: FeedPlan, templates: TxTemplate[]): Promise<{ published: number; elapsedMs: number; lateMs: number; publishMs: number }> {
  const t0 = performance.now();
  const endAt = t0 + plan.seconds * 1000;
  let published = 0;
  // How late the most overdue record was made (its stamp is when it was made, so a publisher whose event loop
  // is stalled would hide that delay from the latency figures; this shows it).
  let lateMs = 0;
  const pending = new Set<Promise<void>>();
  // Time spent making records and handing them to the bus (synchronous, so wall time = this thread's CPU): the
  // publisher's own cost, which the fanout's process pays when the bus is embedded.
  let publishMs = 0;
  for (;;) {
    const now = performance.now();
    // At the end, exactly rate × seconds (the float product of elapsed time and rate can land just below it).
    const total = Math.round(plan.rate * plan.seconds);
    const due = (now >= endAt ? total : Math.min(Math.floor(((now - t0) / 1000) * plan.rate), total)) - published;
    if (due > 0) lateMs = Math.max(lateMs, now - (t0 + ((published + 1) / plan.rate) * 1000));
    // A late tick (the bench process is busy) makes a big batch; split it below Kafka's 1 MB message limit.
    for (let left = due; left > 0; ) {
      const s0 = performance.now();
      const n = Math.min(left, MAX_RECORDS_PER_PRODUCE);
      const records: ProduceRecord[] = [];
      for (let i = 0; i < n; i++) {
        const seq = plan.seq0 + published + i;
        records.push(stampRecord(templates[seq % templates.length]!, seq));
      }
      published += n;
      left -= n;
      const p = bus.produce(topic, records).finally(() => pending.delete(p));
      pending.add(p);
      publishMs += performance.now() - s0;
      if (pending.size > MAX_PRODUCES_IN_FLIGHT) await Promise.race(pending); // Kafka: a few produces in flight, never unbounded
    }
    if (now >= endAt) break;
    await new Promise((r) => setTimeout(r, 2));
  }
  await Promise.all(pending);
  return { published, elapsedMs: performance.now() - t0, lateMs, publishMs };
}

let cachedTemplates: TxTemplate[] | undefined;

/** fanout-child.ts's feed hook (embedded bus: the publisher shares the fanout's process, as in a one-machine deploy). */
export async function feed(bus: Bus, topics: { transactions: string }, msg: Record<string, unknown>): Promise<{ published: number; elapsedMs: number; lateMs: number; publishMs: number }> {
  cachedTemplates ??= txTemplates();
  const plan = msg as unknown as FeedPlan;
  return paceFeed(bus, topics.transactions, plan, cachedTemplates);
}
