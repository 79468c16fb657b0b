import bs58 from 'bs58';
import { compileFilters, type CompiledFilterSet, type FilterSpec } from '../../fanout/filter/compile';
import { FilterIndex } from '../../fanout/filter/filter-index';
import type { TxFields } from '../../proto/tx-fields';
import { encodeFactsHeader } from '../../bus/topics/stream-transactions-facts';
import { encodeTransactionInto, transactionSize } from '../../proto/wire';
import type { BenchResult } from './stats';

// Matching CPU per transaction at 1,000 v2 streams (FilterIndex, as the hub calls it: prepare + match), for
// filters on instructions and roles beside account-only filters of the same reach, in the same run, interleaved
// round by round. Stream s watches pool s: account-only, `account_include [pool s]`; with the new parts,
// `instructions [{program P(s mod 8), data_prefix disc(s) (8 bytes)}]` and `account_writable [pool s]` — both
// match exactly the transactions that swap on pool s (checked). The topic: swap-shaped transactions (payer signs,
// pool and vault writable, program readonly, a Compute Budget instruction first), one random pool each, and a third
// System transfers that no stream matches. A third index holds the account-only filters and is matched through the
// same prepare() hook (no filter with the new parts: it reads nothing) — the cost the hook adds to streams that use
// none of the new options. Process CPU (user + system), not wall time: the machine is shared.

const STREAMS = 1000;
const PROGRAMS = 8;
const TXS = 3000;
const ROUNDS = 9;
const LIMITS = { maxFilters: 16, maxKeysPerList: 1000, maxFilterNameLen: 128 };

const key = (tag: number, i: number): Buffer => {
  const b = Buffer.alloc(32, tag);
  b.writeUInt32BE(i + 1, 0);
  return b;
};
const pool = (s: number): Buffer => key(0xa1, s);
const program = (p: number): Buffer => key(0xb2, p);
const disc = (s: number): Buffer => {
  const d = Buffer.alloc(8, 0x5c);
  d.writeUInt32LE(s * 2654435761 >>> 0, 0);
  return d;
};
const COMPUTE_BUDGET = Buffer.from(bs58.decode('ComputeBudget111111111111111111111111111111'));
const SYSTEM = Buffer.alloc(32);

interface Rec {
  keys: Buffer;
  message: Buffer;
  /** The record's facts header, as ingest writes it (bus/topics/stream-transactions-facts.ts). */
  facts: Buffer;
  pool: number;
}

function topic(): Rec[] {
  let seed = 38;
  const rand = (n: number): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n);
  const out: Rec[] = [];
  for (let i = 0; i < TXS; i++) {
    const payer = key(0xc3, i);
    const sig = Buffer.alloc(64, 0);
    sig.writeUInt32BE(i + 1, 0);
    let fields: TxFields;
    let s = -1;
    if (i % 3 === 2) {
      // a System transfer: payer, destination, System program
      fields = { slot: 1n, numRequiredSignatures: 1, numReadonlySignedAccounts: 0, numReadonlyUnsignedAccounts: 1, recentBlockhash: Buffer.alloc(32, 1), signatures: [sig], accountKeys: [payer, key(0xd4, i), SYSTEM], instructions: [{ programIdIndex: 2, accounts: Buffer.from([0, 1]), data: Buffer.from('020000000500000000000000', 'hex') }], addressTableLookups: [], versioned: false };
    } else {
      s = rand(STREAMS);
      const data = Buffer.concat([disc(s), Buffer.alloc(16, 7)]);
      // payer (signer, writable), pool, vault (writable), program, Compute Budget (readonly)
      fields = {
        slot: 1n, numRequiredSignatures: 1, numReadonlySignedAccounts: 0, numReadonlyUnsignedAccounts: 2, recentBlockhash: Buffer.alloc(32, 1), signatures: [sig],
        accountKeys: [payer, pool(s), key(0xe5, i), program(s % PROGRAMS), COMPUTE_BUDGET],
        instructions: [{ programIdIndex: 4, accounts: Buffer.alloc(0), data: Buffer.from('02400d0300', 'hex') }, { programIdIndex: 3, accounts: Buffer.from([0, 1, 2]), data }],
        addressTableLookups: [], versioned: i % 2 === 0,
      };
    }
    const size = transactionSize(fields);
    const message = Buffer.allocUnsafe(size);
    const positions = new Int32Array(1 + fields.instructions.length);
    encodeTransactionInto(message, 0, fields, size, positions);
    out.push({ keys: Buffer.concat(fields.accountKeys), message, facts: encodeFactsHeader(fields, positions)!, pool: s });
  }
  return out;
}

function set(spec: FilterSpec): CompiledFilterSet {
  const r = compileFilters([['f', spec]], LIMITS);
  if (!r.ok) throw new Error(r.error.details);
  return r.set;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

export async function benchFanoutFilterParts(): Promise<BenchResult[]> {
  const recs = topic();
  const accounts = new FilterIndex<number>();
  const parts = new FilterIndex<number>();
  for (let s = 0; s < STREAMS; s++) {
    const p58 = bs58.encode(pool(s));
    accounts.replace(s, set({ include: [p58], exclude: [], required: [] }));
    parts.replace(s, set({ include: [], exclude: [], required: [], extra: { instructions: [{ programId: bs58.encode(program(s % PROGRAMS)), dataPrefix: disc(s), dataAt: [] }], writable: [p58], signer: [], signature: '' } }));
  }
  // Same reach: each swap reaches exactly its pool's stream through either index; a transfer reaches none.
  for (const r of recs) {
    const a = accounts.match(r.keys).map((m) => m.sub);
    parts.prepare(r.keys, r.message, r.facts);
    const b = parts.match(r.keys).map((m) => m.sub);
    parts.prepare(r.keys, r.message);
    const c = parts.match(r.keys).map((m) => m.sub);
    if (b.join() !== c.join()) throw new Error(`the facts header matched otherwise than the message: ${b} / ${c}`);
    const want = r.pool < 0 ? [] : [r.pool];
    if (a.join() !== want.join() || b.join() !== want.join()) throw new Error(`reach differs: ${a} / ${b} / ${want}`);
  }
  let sink = 0;
  const runDirect = (): number => {
    const c0 = process.cpuUsage();
    for (const r of recs) sink += accounts.match(r.keys).length;
    const c = process.cpuUsage(c0);
    return ((c.user + c.system) * 1000) / recs.length; // ns per transaction
  };
  // Records as ingest writes them now (facts header), and as before it (facts read from the message).
  const runHooked = (index: FilterIndex<number>): number => {
    const c0 = process.cpuUsage();
    for (const r of recs) {
      index.prepare(r.keys, r.message, r.facts);
      sink += index.match(r.keys).length;
    }
    const c = process.cpuUsage(c0);
    return ((c.user + c.system) * 1000) / recs.length;
  };
  const runHookedRead = (index: FilterIndex<number>): number => {
    const c0 = process.cpuUsage();
    for (const r of recs) {
      index.prepare(r.keys, r.message);
      sink += index.match(r.keys).length;
    }
    const c = process.cpuUsage(c0);
    return ((c.user + c.system) * 1000) / recs.length;
  };
  // The same loop as runHooked, its own copy: one call site per index, so neither run inherits the other's
  // (polymorphic) inline caches.
  const runHookedAccounts = (): number => {
    const c0 = process.cpuUsage();
    for (const r of recs) {
      accounts.prepare(r.keys, r.message, r.facts);
      sink += accounts.match(r.keys).length;
    }
    const c = process.cpuUsage(c0);
    return ((c.user + c.system) * 1000) / recs.length;
  };
  for (let w = 0; w < 3; w++) (runDirect(), runHookedAccounts(), runHooked(parts), runHookedRead(parts)); // warm up
  const direct: number[] = [];
  const hooked: number[] = [];
  const withParts: number[] = [];
  const withPartsRead: number[] = [];
  // Interleaved, each round a whole pass over the topic (×20 so a round is long enough for cpuUsage's µs).
  for (let r = 0; r < ROUNDS; r++) {
    const reps = 20;
    let a = 0;
    let b = 0;
    let c = 0;
    let d = 0;
    // The order rotates: whichever runs right after the other index's pass finds its own postings out of cache.
    for (let i = 0; i < reps; i++) {
      const o = (r * reps + i) % 4;
      if (o === 0) (a += runDirect(), (b += runHookedAccounts()), (c += runHooked(parts)), (d += runHookedRead(parts)));
      else if (o === 1) ((b += runHookedAccounts()), (c += runHooked(parts)), (d += runHookedRead(parts)), (a += runDirect()));
      else if (o === 2) ((c += runHooked(parts)), (d += runHookedRead(parts)), (a += runDirect()), (b += runHookedAccounts()));
      else ((d += runHookedRead(parts)), (a += runDirect()), (b += runHookedAccounts()), (c += runHooked(parts)));
    }
    direct.push(a / reps);
    hooked.push(b / reps);
    withParts.push(c / reps);
    withPartsRead.push(d / reps);
  }
  if (sink === 0) throw new Error('nothing matched');
  const acc = median(direct);
  const hk = median(hooked);
  const pt = median(withParts);
  const pr = median(withPartsRead);
  return [
    {
      bench: 'fanout-filter-parts',
      case: `matching at ${STREAMS} streams, ${TXS} transactions (2/3 swaps on one pool each, 1/3 transfers nobody matches), median of ${ROUNDS} interleaved rounds`,
      figures: {
        account_only_ns_per_tx: Math.round(acc),
        account_only_through_prepare_hook_ns_per_tx: Math.round(hk),
        instruction_and_role_ns_per_tx: Math.round(pt),
        instruction_and_role_vs_account_only: Number((pt / acc).toFixed(2)),
        instruction_and_role_message_read_ns_per_tx: Math.round(pr),
        instruction_and_role_message_read_vs_account_only: Number((pr / acc).toFixed(2)),
        hook_vs_direct: Number((hk / acc).toFixed(3)),
      },
      note: 'aim: instruction+role ≤ 1.2× account-only of the same reach (records with the facts header ingest writes: header counts, signature and instruction positions, no walk of the message; "message_read": records without it, the message read once per record as before); the hook costs streams without the new parts nothing measurable (aim ≤ 1.05×)',
    },
  ];
}
