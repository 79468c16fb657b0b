import assert from 'node:assert/strict';
import bs58 from 'bs58';
import fc from 'fast-check';
import { readRecording, fileChunks } from '../../../bus/recording-io';
import { decodeTxRecord } from '../../../bus/topics/stream-transactions';
import { compileFilters, maskNames, type CompiledFilterSet, type FilterSpec } from '../../../fanout/filter/compile';
import type { FilterExtraSpec, InstructionSpec } from '../../../fanout/filter/compile-extra';
import { FilterIndex } from '../../../fanout/filter/filter-index';
import { VOTE_PROGRAM } from '../../../fanout/filter/tx-facts';
import type { LoadedAddresses } from '../../../fanout/filter/loaded-addresses';
import { matchWithLoaded } from '../../../fanout/v2/loaded-match';
import { decodeTransaction } from '../../../proto/txn/decode';
import type { TxFields } from '../../../proto/tx-fields';
import { encodeTransaction } from '../../../proto/wire';
import { fixture } from '../../support/paths';
import { v1Vectors } from '../../support/v1-vectors';
import { fixtureTxs } from '../support';

// Stream v2's filter parts beyond account lists (instructions, roles, signature, vote: proto/stream_v2.proto,
// README "Stream v2 filters: instructions, roles, signatures, votes"): the indexed match (FilterIndex, fed the
// record's bytes as the hub feeds it) equals a naive evaluation of the README's rules written over the decoded
// transaction fields, transaction by transaction, for random filters of every kind (with and without
// match_loaded_addresses) over a topic of mixed legacy, v0 and v1 transactions: the recorded demo topic, the
// fixture and v1-vector transactions (decoded by the ingest decoder), and random variants of them.

const LIMITS = { maxFilters: 16, maxKeysPerList: 1000, maxFilterNameLen: 128 };

/** A small pool of keys, so random filters and transactions meet; key 0 is the Vote program, key 1 the System
 *  program (every recorded transaction calls it). */
const POOL: Buffer[] = [VOTE_PROGRAM, Buffer.alloc(32), ...Array.from({ length: 10 }, (_, i) => Buffer.alloc(32, i + 1))];
const SIGS: Buffer[] = Array.from({ length: 4 }, (_, i) => Buffer.alloc(64, 0x40 + i));

interface Tx {
  fields: TxFields;
  keys: Buffer;
  message: Buffer;
  /** What the lookups load (v0/v1 with lookups only), as a resolver would give it. */
  loaded: LoadedAddresses | null;
}

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

function toTx(fields: TxFields, loaded: LoadedAddresses | null = null): Tx {
  return { fields, keys: Buffer.concat(fields.accountKeys), message: encodeTransaction(fields), loaded };
}

/** The README's rules, over decoded fields (never the record bytes the index reads). */
function naive(f: FilterSpec & { loadedFlag: boolean }, t: Tx): boolean {
  const fl = t.fields;
  const n = fl.accountKeys.length;
  const S = fl.numRequiredSignatures;
  const present = new Set(fl.accountKeys.map(hex));
  const writable = new Set<string>();
  fl.accountKeys.forEach((k, i) => {
    const w = i < S ? i < S - fl.numReadonlySignedAccounts : i < n - fl.numReadonlyUnsignedAccounts;
    if (w) writable.add(hex(k));
  });
  const signers = new Set(fl.accountKeys.slice(0, S).map(hex));
  if (f.loadedFlag && t.loaded !== null) {
    for (const k of t.loaded.writable) (present.add(hex(k)), writable.add(hex(k)));
    for (const k of t.loaded.readonly) present.add(hex(k));
  }
  const has = (s: string, set: Set<string>): boolean => set.has(hex(bs58.decode(s)));
  const inc = f.include as string[];
  if (inc.length > 0 && !inc.some((k) => has(k, present))) return false;
  if (!(f.required as string[]).every((k) => has(k, present))) return false;
  if ((f.exclude as string[]).some((k) => has(k, present))) return false;
  const x = f.extra;
  if (x === undefined) return true;
  if (!(x.writable as string[]).every((k) => has(k, writable))) return false;
  if (!(x.signer as string[]).every((k) => has(k, signers))) return false;
  const program = (i: number): string | null => (fl.instructions[i]!.programIdIndex < n ? hex(fl.accountKeys[fl.instructions[i]!.programIdIndex]!) : null);
  if (x.instructions.length > 0) {
    const ok = fl.instructions.some((ix, i) =>
      x.instructions.some((q) => {
        if (program(i) !== hex(bs58.decode(q.programId))) return false;
        const d = ix.data;
        if (q.dataSize !== undefined && d.length !== q.dataSize) return false;
        if (d.length < q.dataPrefix.length || !d.subarray(0, q.dataPrefix.length).equals(Buffer.from(q.dataPrefix))) return false;
        return q.dataAt.every((a) => a.offset + a.bytes.length <= d.length && d.subarray(a.offset, a.offset + a.bytes.length).equals(Buffer.from(a.bytes)));
      }),
    );
    if (!ok) return false;
  }
  if (x.signature !== '' && !(fl.signatures.length > 0 && bs58.encode(fl.signatures[0]!) === x.signature)) return false;
  if (x.vote !== undefined) {
    const isVote = fl.versioned !== true && fl.signatures.length <= 2 && fl.instructions.length === 1 && program(0) === hex(VOTE_PROGRAM);
    if (isVote !== x.vote) return false;
  }
  return true;
}

// ---- the topic -----------------------------------------------------------------------------------------------

async function recordedTxs(): Promise<TxFields[]> {
  const out: TxFields[] = [];
  for await (const r of readRecording(fileChunks(fixture('topics', 'demo-stream.mrec')))) {
    if (r.value === null || !r.topic.endsWith('transactions')) continue;
    const d = decodeTxRecord(r.value);
    if (!d.ok) continue;
    // The record's message is the encoded SubscribeResponseTransaction; its fields come back through the ingest
    // decoder only from wire bytes, so the recorded message is kept as it is and its fields parsed back.
    out.push(parseMessage(d.record.accountKeys, d.record.message));
  }
  return out;
}

/** The fields of an encoded SubscribeResponseTransaction (a recorded record's message), by google-protobuf. */
function parseMessage(keys: Buffer, message: Buffer): TxFields {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { SubscribeResponseTransaction } = require('../../../proto/gen/arpc_pb') as typeof import('../../../proto/gen/arpc_pb');
  const m = SubscribeResponseTransaction.deserializeBinary(message);
  const accountKeys = m.getAccountKeysList_asU8().map((k) => Buffer.from(k));
  assert.equal(Buffer.concat(accountKeys).equals(keys), true, 'record keys are the message keys');
  return {
    slot: BigInt(m.getSlot()),
    numRequiredSignatures: m.getNumRequiredSignatures(),
    numReadonlySignedAccounts: m.getNumReadonlySignedAccounts(),
    numReadonlyUnsignedAccounts: m.getNumReadonlyUnsignedAccounts(),
    recentBlockhash: Buffer.from(m.getRecentBlockhash_asU8()),
    signatures: m.getSignaturesList_asU8().map((s) => Buffer.from(s)),
    accountKeys,
    instructions: m.getInstructionsList().map((i) => ({ programIdIndex: i.getProgramIdIndex(), accounts: Buffer.from(i.getAccounts_asU8()), data: Buffer.from(i.getData_asU8()) })),
    addressTableLookups: m.getAddressTableLookupsList().map((l) => ({ accountKey: Buffer.from(l.getAccountKey_asU8()), writableIndexes: Buffer.from(l.getWritableIndexes_asU8()), readonlyIndexes: Buffer.from(l.getReadonlyIndexes_asU8()) })),
    versioned: m.hasVersioned() ? m.getVersioned()!.getValue() : undefined,
  };
}

function baseTxs(): TxFields[] {
  const out = fixtureTxs().map((f) => f.fields);
  for (const v of v1Vectors().transactions) {
    if (v.expected.crate_decode !== 'ok') continue;
    const d = decodeTransaction(Buffer.from(v.hex, 'hex'), 7n);
    if (d.ok) out.push(d.tx);
  }
  return out;
}

const arbData = fc.uint8Array({ minLength: 0, maxLength: 5, max: 1 });
/** Keys 0–3 (the Vote program and three others) are the programs: drawn more often. */
const arbHot = fc.oneof(fc.nat({ max: 3 }), fc.nat({ max: 11 }));
const arbKeyIdx = fc.nat({ max: POOL.length - 1 });

/** A random variant of a base transaction: keys from the pool, header counts, instructions, signature, lookups. */
function arbVariant(bases: TxFields[]): fc.Arbitrary<Tx> {
  return fc
    .record({
      base: fc.nat({ max: bases.length - 1 }),
      keys: fc.uniqueArray(arbHot, { minLength: 1, maxLength: 8 }),
      s: fc.nat(),
      ros: fc.nat(),
      rou: fc.nat(),
      ixs: fc.array(fc.record({ p: fc.oneof(fc.nat({ max: 2 }), fc.nat({ max: 9 })), data: arbData }), { minLength: 0, maxLength: 4 }),
      sigs: fc.array(fc.nat({ max: SIGS.length - 1 }), { minLength: 1, maxLength: 3 }),
      version: fc.constantFrom<'legacy' | 'v0'>('legacy', 'v0'),
      loadedW: fc.array(arbKeyIdx, { maxLength: 3 }),
      loadedR: fc.array(arbKeyIdx, { maxLength: 3 }),
      voteShape: fc.nat({ max: 5 }),
    })
    .map((r) => {
      const b = bases[r.base]!;
      if (r.voteShape === 0) {
        // A simple vote (one instruction to the Vote program), or one that misses it by a signature or a version.
        r.keys = [4, 5, 0];
        r.ixs = [{ p: 2, data: new Uint8Array([1]) }];
        r.sigs = r.sigs.slice(0, 1 + (r.s % 3));
        r.s = 1;
      }
      const n = r.keys.length;
      const S = r.s % (n + 1);
      const fields: TxFields = {
        ...b,
        numRequiredSignatures: S,
        numReadonlySignedAccounts: S === 0 ? 0 : r.ros % (S + 1),
        numReadonlyUnsignedAccounts: r.rou % (n - S + 1),
        accountKeys: r.keys.map((i) => POOL[i]!),
        // An index past the static keys names no static program (possible only in a malformed message).
        instructions: r.ixs.map((i) => ({ programIdIndex: i.p, accounts: Buffer.alloc(0), data: Buffer.from(i.data) })),
        signatures: r.sigs.map((i) => SIGS[i]!),
        versioned: r.version === 'v0',
        addressTableLookups: r.version === 'v0' ? [{ accountKey: POOL[11]!, writableIndexes: Buffer.from(r.loadedW.map((_, i) => i)), readonlyIndexes: Buffer.from(r.loadedR.map((_, i) => 10 + i)) }] : [],
      };
      return toTx(fields, r.version === 'v0' ? { writable: r.loadedW.map((i) => POOL[i]!), readonly: r.loadedR.map((i) => POOL[i]!), unresolvedTables: [] } : null);
    });
}

const K58 = (i: number): string => bs58.encode(POOL[i]!);

const arbInstruction: fc.Arbitrary<InstructionSpec> = fc.record({
  p: arbHot,
  prefix: fc.uint8Array({ maxLength: 2, max: 1 }),
  at: fc.array(fc.record({ offset: fc.nat({ max: 4 }), bytes: fc.uint8Array({ minLength: 1, maxLength: 1, max: 1 }) }), { maxLength: 1 }),
  size: fc.option(fc.nat({ max: 6 }), { nil: undefined }),
}).map((r) => {
  // A size shorter than the prefix or an offset's end is refused at compile (the compile tests): kept valid here.
  const need = Math.max(r.prefix.length, ...r.at.map((a) => a.offset + a.bytes.length));
  return { programId: K58(r.p), dataPrefix: r.prefix, dataAt: r.at, ...(r.size === undefined ? {} : { dataSize: Math.max(r.size, need) }) };
});

type RandomFilter = FilterSpec & { loadedFlag: boolean };

/** Each part is absent from most filters: a filter ANDs them, and one with all of them set would match nothing. */
const sometimes = <T>(arb: fc.Arbitrary<T>, none: T): fc.Arbitrary<T> => fc.oneof({ weight: 3, arbitrary: fc.constant(none) }, { weight: 1, arbitrary: arb });
const keyList = (max: number): fc.Arbitrary<string[]> => sometimes(fc.array(arbHot.map(K58), { minLength: 1, maxLength: max }), []);

const arbFilter: fc.Arbitrary<RandomFilter> = fc
  .record({
    include: keyList(2),
    exclude: keyList(1),
    required: keyList(2),
    writable: keyList(2),
    signer: keyList(2),
    instructions: sometimes(fc.array(arbInstruction, { minLength: 1, maxLength: 2 }), []),
    signature: sometimes<number | undefined>(fc.nat({ max: SIGS.length - 1 }), undefined),
    vote: sometimes<boolean | undefined>(fc.boolean(), undefined),
    loadedFlag: fc.boolean(),
  })
  .map((r) => {
    const extra: FilterExtraSpec = { instructions: r.instructions, writable: r.writable, signer: r.signer, signature: r.signature === undefined ? '' : bs58.encode(SIGS[r.signature]!), ...(r.vote === undefined ? {} : { vote: r.vote }) };
    return { include: r.include, exclude: r.exclude, required: r.required, extra, loadedFlag: r.loadedFlag, options: { encoding: 'decoded' as const, matchLoaded: r.loadedFlag } };
  });

interface Sub {
  name: string;
  loadedMask: number;
  filters: RandomFilter[];
  set: CompiledFilterSet;
}

describe('v2 filter parts: instructions, roles, signature, vote (indexed = naive)', function () {
  this.timeout(120_000);
  let topic: Tx[] = [];

  before(async () => {
    const bases = baseTxs();
    const recorded = await recordedTxs();
    assert.ok(recorded.length > 0, 'the recorded demo topic has transactions');
    const kinds = new Set([...bases, ...recorded].map((f) => (f.versioned === true ? (f.v1Config !== undefined ? 'v1' : 'v0') : 'legacy')));
    assert.deepEqual([...kinds].sort(), ['legacy', 'v0', 'v1'], 'mixed legacy/v0/v1 transactions');
    topic = [...recorded, ...bases].map((f) => toTx(f));
    topic.push(...fc.sample(arbVariant(bases), { numRuns: 300, seed: 38 }));
  });

  it('for random streams of random filters, every transaction reaches exactly the filters the rules say', () => {
    const seen = { instructions: 0, writable: 0, signer: 0, signature: 0, vote: 0, noVote: 0, loadedWritable: 0 };
    fc.assert(
      fc.property(fc.array(fc.array(arbFilter, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 6 }), fc.array(fc.nat(), { minLength: 30, maxLength: 60 }), (streams, picks) => {
        const index = new FilterIndex<Sub>();
        const subs: Sub[] = [];
        streams.forEach((filters, s) => {
          const entries = filters.map((f, i) => [`f${i}`, f] as [string, FilterSpec]);
          const r = compileFilters(entries, LIMITS);
          if (!r.ok) throw new Error(r.error.details);
          let loadedMask = 0;
          for (const f of r.set.filters) if (filters[f.slot]!.loadedFlag) loadedMask |= 1 << f.slot;
          const sub = { name: `s${s}`, loadedMask, filters, set: r.set };
          subs.push(sub);
          index.replace(sub, r.set);
        });
        const check = (p: number): void => {
          const t = topic[p % topic.length]!;
          index.prepare(t.keys, t.message);
          const got = new Map<Sub, string[]>();
          const ms = t.loaded === null ? index.match(t.keys) : matchWithLoaded(index, t.keys, t.loaded);
          for (const m of ms) got.set(m.sub, maskNames(m.set, m.mask));
          for (const sub of subs) {
            const want = sub.filters.flatMap((f, i) => (naive(f, t) ? [`f${i}`] : []));
            for (const i of want) {
              const x = sub.filters[Number(i.slice(1))]!.extra!;
              if (x.instructions.length > 0) seen.instructions++;
              if (x.writable.length > 0) seen.writable++;
              if (x.signer.length > 0) seen.signer++;
              if (x.signature !== '') seen.signature++;
              if (x.vote === true) seen.vote++;
              if (x.vote === false) seen.noVote++;
              if (x.writable.length > 0 && sub.filters[Number(i.slice(1))]!.loadedFlag && t.loaded !== null && t.loaded.writable.length > 0) seen.loadedWritable++;
            }
            assert.deepEqual(got.get(sub) ?? [], want, `${sub.name} on a ${t.fields.versioned === true ? 'versioned' : 'legacy'} transaction`);
          }
        };
        for (const p of picks) check(p);
        // Filters change: every other stream goes, the others keep their first filter and get the rest reversed
        // (unchanged filters keep their entries, changed ones are removed from every chain, instruction and
        // signature index and re-added): the index answers as a fresh one would.
        for (let i = 0; i < subs.length; i++) {
          const sub = subs[i]!;
          if (i % 2 === 1) {
            index.remove(sub);
            sub.filters = [];
            continue;
          }
          const filters = [sub.filters[0]!, ...sub.filters.slice(1).reverse()];
          const r = compileFilters(filters.map((f, j) => [`f${j}`, f] as [string, FilterSpec]), LIMITS, sub.set);
          if (!r.ok) throw new Error(r.error.details);
          sub.filters = filters;
          sub.loadedMask = filters.reduce((m, f, j) => (f.loadedFlag ? m | (1 << j) : m), 0);
          index.replace(sub, r.set);
        }
        for (const p of picks.slice(0, 15)) check(p);
      }),
      { numRuns: 300, seed: 3838 },
    );
    // Not vacuous: every kind of part was matched (and, by the equality, refused) many times.
    for (const [k, v] of Object.entries(seen)) assert.ok(v > 20, `${k}: ${v} matches`);
  });

  it("a program key is held while an instruction filter names it, beside account lists on the same key, and dropped after", () => {
    const index = new FilterIndex<string>();
    const ixOn = (k: number): CompiledFilterSet => {
      const r = compileFilters([['i', { include: [], exclude: [], required: [], extra: { instructions: [{ programId: K58(k), dataPrefix: new Uint8Array(0), dataAt: [] }], writable: [], signer: [], signature: '' } }]], LIMITS);
      if (!r.ok) throw new Error(r.error.details);
      return r.set;
    };
    const acc = compileFilters([['a', { include: [K58(2)], exclude: [], required: [] }]], LIMITS);
    assert.ok(acc.ok);
    index.replace('acc', acc.set);
    index.replace('ix2', ixOn(2));
    index.replace('ix3', ixOn(3));
    assert.equal(index.size.keys, 2);
    index.remove('acc'); // key 2 stays: ix2 names it
    assert.equal(index.size.keys, 2);
    // A transaction calling key 2 and key 3 reaches both instruction streams.
    const fields: TxFields = { slot: 1n, numRequiredSignatures: 1, numReadonlySignedAccounts: 0, numReadonlyUnsignedAccounts: 2, recentBlockhash: Buffer.alloc(32, 9), signatures: [SIGS[0]!], accountKeys: [POOL[4]!, POOL[2]!, POOL[3]!], instructions: [{ programIdIndex: 1, accounts: Buffer.alloc(0), data: Buffer.from([1]) }, { programIdIndex: 2, accounts: Buffer.alloc(0), data: Buffer.alloc(0) }], addressTableLookups: [], versioned: false };
    const t = toTx(fields);
    index.prepare(t.keys, t.message);
    assert.deepEqual(index.match(t.keys).map((m) => m.sub).sort(), ['ix2', 'ix3']);
    index.remove('ix2');
    assert.equal(index.size.keys, 1);
    index.prepare(t.keys, t.message);
    assert.deepEqual(index.match(t.keys).map((m) => m.sub), ['ix3']);
  });

  it('prefixes of 4, 8 and more bytes, many filters in one bucket, removed in any order: indexed = naive (property)', () => {
    // The instruction index decides a bucket of one filter from its table slot and chains the rest (head removed,
    // middle removed, last removed); prefixes over 8 bytes and data_at take the whole check. Bytes mostly 0, else 1,
    // so that filters share buckets and data meets even 12-byte prefixes.
    const bytes = (n: number): fc.Arbitrary<Uint8Array> => fc.array(fc.constantFrom(0, 0, 0, 0, 0, 0, 0, 1), { minLength: n, maxLength: n }).map((a) => Uint8Array.from(a));
    const arbIx: fc.Arbitrary<InstructionSpec> = fc
      .record({ p: fc.constantFrom(2, 3), len: fc.constantFrom(0, 3, 4, 5, 8, 8, 8, 9, 12), at: fc.option(fc.nat({ max: 10 }), { nil: undefined }), size: fc.option(fc.nat({ max: 4 }), { nil: undefined }) })
      .chain((r) => fc.record({ prefix: bytes(r.len), atBytes: bytes(r.at === undefined ? 0 : 1) }).map((b) => ({ ...r, ...b })))
      .map((r) => {
        const dataAt = r.at === undefined ? [] : [{ offset: r.at, bytes: r.atBytes }];
        const need = Math.max(r.prefix.length, ...dataAt.map((a) => a.offset + a.bytes.length));
        return { programId: K58(r.p), dataPrefix: r.prefix, dataAt, ...(r.size === undefined ? {} : { dataSize: need + r.size }) };
      });
    const arbTx = fc.array(fc.record({ p: fc.constantFrom(1, 2), len: fc.nat({ max: 14 }) }).chain((r) => bytes(r.len).map((data) => ({ p: r.p, data }))), { minLength: 1, maxLength: 3 }).map((ixs) =>
      toTx({ slot: 1n, numRequiredSignatures: 1, numReadonlySignedAccounts: 0, numReadonlyUnsignedAccounts: 2, recentBlockhash: Buffer.alloc(32, 9), signatures: [SIGS[0]!], accountKeys: [POOL[4]!, POOL[2]!, POOL[3]!], instructions: ixs.map((i) => ({ programIdIndex: i.p, accounts: Buffer.alloc(0), data: Buffer.from(i.data) })), addressTableLookups: [], versioned: false }),
    );
    let hits = 0;
    let longHits = 0;
    fc.assert(
      fc.property(fc.array(arbIx, { minLength: 1, maxLength: 60 }), fc.array(fc.boolean(), { minLength: 60, maxLength: 60 }), fc.array(arbTx, { minLength: 20, maxLength: 20 }), (ixs, gone, txs) => {
        const index = new FilterIndex<number>();
        const specs = ixs.map((q): RandomFilter => ({ include: [], exclude: [], required: [], extra: { instructions: [q], writable: [], signer: [], signature: '' }, loadedFlag: false }));
        specs.forEach((f, s) => {
          const r = compileFilters([['f', f]], LIMITS);
          if (!r.ok) throw new Error(r.error.details);
          index.replace(s, r.set);
        });
        const live = new Set(specs.map((_, s) => s));
        const check = (): void => {
          for (const t of txs) {
            index.prepare(t.keys, t.message);
            const got = index.match(t.keys).map((m) => m.sub).sort((a, b) => a - b);
            const want = [...live].filter((s) => naive(specs[s]!, t)).sort((a, b) => a - b);
            for (const s of want) if (ixs[s]!.dataPrefix.length >= 8) longHits++;
            hits += want.length;
            assert.deepEqual(got, want);
          }
        };
        check();
        specs.forEach((_, s) => {
          if (!gone[s]) return;
          index.remove(s);
          live.delete(s);
        });
        check();
      }),
      { numRuns: 150, seed: 38 },
    );
    // Not vacuous: filters matched (and, by the equality, were refused) many times, 8 bytes and longer too.
    assert.ok(hits > 500 && longHits > 100, `${hits} matches, ${longHits} of prefixes of 8 bytes or more`);
  });

  it('a transaction matched without its facts (no prepare) reaches no filter with such parts', () => {
    const index = new FilterIndex<string>();
    const r = compileFilters([['v', { include: [], exclude: [], required: [], extra: { instructions: [], writable: [], signer: [], signature: '', vote: false } }]], LIMITS);
    assert.ok(r.ok);
    index.replace('a', r.set);
    const t = topic[0]!;
    assert.equal(index.match(t.keys).length, 0);
    index.prepare(t.keys, t.message);
    assert.equal(index.match(t.keys).length, naive({ ...(r.ok ? { include: [], exclude: [], required: [] } : {}), extra: { instructions: [], writable: [], signer: [], signature: '', vote: false }, loadedFlag: false } as RandomFilter, t) ? 1 : 0);
  });
});
