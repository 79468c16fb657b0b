import assert from 'node:assert/strict';
import bs58 from 'bs58';
import { encodeLookupsHeader } from '../../bus/topics/stream-transactions-lookups';
import { parseFanoutConfig } from '../../fanout/config';
import { compileFilters, type CompiledFilterSet } from '../../fanout/filter/compile';
import { FilterIndex } from '../../fanout/filter/filter-index';
import { openLookupTables } from '../../fanout/lookup-tables/lookup-tables';
import { TableHits } from '../../fanout/lookup-tables/table-hits';
import { tableId } from '../../fanout/lookup-tables/table-resolver';
import { encodeLookupTable } from '../../proto/lookup-table/account';
import { SLOT_MAX } from '../../proto/lookup-table/program';
import type { TxFields } from '../../proto/tx-fields';
import { encodeTransaction } from '../../proto/wire';
import { rng } from '../support/prng';

// Matching against tables (table-hits.ts, MatchKeys.matchRecord / matchSplitRecord, FilterIndex.matchIds /
// matchSplitIds) must give exactly what the per-transaction path gives: forRecord's block of static + loaded keys
// through FilterIndex.match / matchSplit — the same subscribers, masks and order. Seeded random tables, filters
// and transactions, drawn from a small address pool so that loaded addresses repeat static keys and each other and
// hit include, required and exclude lists; indexes past a table's length, the same-slot extension rule,
// deactivation and its cool-down, absent and unknown tables, bytes that do not parse; and between rounds the
// filters (the index's epoch) and the tables (extensions, deactivation, close, seen in the stream) change.

const POOL = 64;

function bytesOf(rand: () => number, n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = Math.floor(rand() * 256);
  return b;
}

function compile(filters: Array<{ include: string[]; exclude: string[]; required: string[] }>): CompiledFilterSet {
  const r = compileFilters(
    filters.map((f, i) => [`f${i}`, f]),
    { maxFilters: 16, maxKeysPerList: 1000, maxFilterNameLen: 128 },
  );
  if (!r.ok) throw new Error(r.error.details);
  return r.set;
}

describe('lookup tables: matching against precomputed table hits', () => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    it(`gives the per-transaction path's matches exactly (seed ${seed})`, async () => {
      const rand = rng(seed);
      const pick = (n: number): number => Math.floor(rand() * n);
      const pool = Array.from({ length: POOL }, () => bytesOf(rand, 32));
      const poolKey = (): Buffer => pool[pick(POOL)]!;
      const addrs = (n: number): Buffer => Buffer.concat(Array.from({ length: n }, poolKey));

      // Tables the node holds: some with an authority (the stream may extend, deactivate, close them), one
      // extended in slot 100 from index 5 on, one deactivated in slot 50 (usable up to 50 + 512), one empty.
      const tableKeys = Array.from({ length: 9 }, () => bytesOf(rand, 32));
      const authority = bytesOf(rand, 32);
      const node = new Map<string, Buffer>();
      tableKeys.slice(0, 7).forEach((k, i) => {
        const len = i === 6 ? 0 : 3 + pick(20);
        node.set(
          bs58.encode(k),
          encodeLookupTable({
            deactivationSlot: i === 3 ? 50n : SLOT_MAX,
            lastExtendedSlot: i === 2 ? 100n : 1n,
            lastExtendedSlotStartIndex: i === 2 ? Math.min(5, len) : 0,
            authority: i % 2 === 0 ? authority : null,
            addresses: addrs(len),
          }),
        );
      });
      // tableKeys[7]: absent (the node has no such account); tableKeys[8]: never asked (unknown).
      const call = async <T>(_m: string, p: unknown[] = []): Promise<T> => {
        const keys = p[0] as string[];
        return { context: { slot: 10 }, value: keys.map((k) => (node.has(k) ? { owner: 'AddressLookupTab1e1111111111111111111111111', data: [node.get(k)!.toString('base64'), 'base64'] } : null)) } as T;
      };
      const cfg = parseFanoutConfig({ lookupTables: { rpcUrl: 'http://test.invalid', matchV1: true, waitMs: 10_000, confirmMs: 600_000, retryMs: 600_000 } });
      const lt = openLookupTables(cfg.lookupTables, call)!;
      try {
        for (const k of tableKeys.slice(0, 8)) {
          await new Promise<void>((res) => lt.resolver.resolve([{ table: k, writableIndexes: Buffer.alloc(0), readonlyIndexes: Buffer.alloc(0) }], 10n, () => res()));
        }
        const index = new FilterIndex<number>();
        const hits = new TableHits(index, undefined, 0); // lists built on first use
        const tiny = new TableHits(index, 300, 0); // resets on nearly every table; some lists alone past the bound
        const lazy = new TableHits(index); // direct look-ups for a table's first uses in an epoch, then its list
        const randomFilters = (): CompiledFilterSet => {
          const list = (max: number): string[] => Array.from({ length: pick(max + 1) }, () => bs58.encode(poolKey()));
          return compile(
            Array.from({ length: 1 + pick(3) }, () => {
              const r = rand();
              // Some match-all filters (only exclude), some with required keys, most with includes.
              if (r < 0.1) return { include: [], exclude: list(3), required: [] };
              if (r < 0.35) return { include: list(2), exclude: list(1), required: list(2).slice(0, 1 + pick(2)) };
              return { include: list(6), exclude: rand() < 0.3 ? list(2) : [], required: [] };
            }),
          );
        };
        for (let s = 0; s < 25; s++) index.replace(s, randomFilters());

        let compared = 0;
        let withLoadedHits = 0;
        for (let round = 0; round < 12; round++) {
          for (let t = 0; t < 150; t++) {
            const slot = [10n, 100n, 101n, 562n, 563n, 2000n][pick(6)]!;
            const idx = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => (rand() < 0.08 ? pick(256) : pick(26))));
            const fields: TxFields = {
              slot,
              numRequiredSignatures: 1,
              numReadonlySignedAccounts: 0,
              numReadonlyUnsignedAccounts: 1,
              recentBlockhash: bytesOf(rand, 32),
              signatures: [bytesOf(rand, 64)],
              accountKeys: Array.from({ length: 2 + pick(6) }, poolKey),
              instructions: [{ programIdIndex: 1, accounts: Buffer.from([0]), data: Buffer.alloc(0) }],
              addressTableLookups: Array.from({ length: pick(4) }, () => ({
                accountKey: rand() < 0.05 ? tableKeys[8]! : tableKeys[pick(8)]!,
                writableIndexes: idx(pick(5)),
                readonlyIndexes: idx(pick(5)),
              })),
              versioned: true,
            };
            let message = encodeTransaction(fields);
            const cut = rand() < 0.03;
            if (cut) message = message.subarray(0, pick(message.length)); // bytes that do not parse
            const accountKeys = Buffer.concat(fields.accountKeys);
            // The record as an older ingest wrote it (lookups in the message only), and as ingest writes it now
            // (the lookups header as well): both must give the same keys and matches.
            const old = { accountKeys, message, slot, lookups: null };
            const now = { accountKeys, message, slot, lookups: encodeLookupsHeader(fields.addressTableLookups) };

            const n = lt.keys.forRecord(old);
            const block = n < 0 ? null : Buffer.from(lt.keys.block.subarray(0, n));
            const want = block === null ? null : index.match(block, block.length).map((m) => [m.sub, m.mask]);
            const wantSplit = block === null ? null : index.matchSplit(block, accountKeys.length, block.length).map((m) => [m.sub, m.mask, m.staticMask]);
            if (!cut) {
              const nh = lt.keys.forRecord(now);
              assert.deepEqual(nh < 0 ? null : Buffer.from(lt.keys.block.subarray(0, nh)), block, `round ${round} tx ${t} (header)`);
            }
            for (const h of [hits, tiny, lazy]) {
              for (const r of cut ? [old] : [old, now]) {
                const got = lt.keys.matchRecord(index, h, r);
                assert.deepEqual(got === null ? null : got.map((m) => [m.sub, m.mask]), want, `round ${round} tx ${t}`);
                const gotSplit = lt.keys.matchSplitRecord(index, h, r);
                assert.deepEqual(gotSplit === null ? null : gotSplit.map((m) => [m.sub, m.mask, m.staticMask]), wantSplit, `round ${round} tx ${t} (split)`);
              }
            }
            compared++;
            if (block !== null && want !== null && block.length > accountKeys.length) {
              const stat = index.match(accountKeys).map((m) => [m.sub, m.mask]);
              if (JSON.stringify(stat) !== JSON.stringify(want)) withLoadedHits++;
            }
          }
          // Filters change (the epoch moves) every third round: replaced, removed, added back. The other rounds
          // change tables only, so a hit list kept past its table's change would show.
          // Many at once, so that keys stop being listed and others take their ids.
          if (round % 3 === 2) {
            for (let c = 0; c < 25; c++) index.remove(pick(45));
            for (let c = 0; c < 25; c++) index.replace(pick(45), randomFilters());
          }
          // Tables change as the stream shows: extend, deactivate, close (tables with an authority only).
          const k = tableKeys[2 * pick(3)]!;
          const r = rand();
          const ix = r < 0.6 ? { kind: 'extend' as const, addresses: addrs(1 + pick(4)) } : r < 0.8 ? { kind: 'deactivate' as const } : { kind: 'close' as const };
          const at = 10n + BigInt(round * 50);
          lt.cache.applyInstruction(tableId(k, 0), k, ix, at, null);
          // A closed table made again under the same key with other addresses at the same indexes.
          if (ix.kind === 'close' || rand() < 0.3) {
            const k2 = tableKeys[2 * pick(3)]!;
            lt.cache.applyInstruction(tableId(k2, 0), k2, { kind: 'close' }, at, null);
            lt.cache.applyInstruction(tableId(k2, 0), k2, { kind: 'create', recentSlot: at, bumpSeed: 255 }, at, authority);
            lt.cache.applyInstruction(tableId(k2, 0), k2, { kind: 'extend', addresses: addrs(5 + pick(20)) }, at, null);
          }
        }
        assert.equal(compared, 12 * 150);
        // The comparison is not vacuous: loaded addresses changed the answer for many transactions.
        assert.ok(withLoadedHits > 50, `only ${withLoadedHits} transactions matched differently with loaded addresses`);
        assert.ok(hits.counts.withHits > 0 && tiny.counts.resets > 0 && lazy.counts.withHits > 0, JSON.stringify({ hits: hits.counts, tiny: tiny.counts, lazy: lazy.counts }));
        assert.ok(tiny.bytes <= 300);
      } finally {
        lt.close();
      }
    });
  }

  it('moves the index epoch when the set of listed keys changes, and only then', () => {
    const index = new FilterIndex<number>();
    const key = (b: number): string => bs58.encode(Buffer.alloc(32, b));
    const e0 = index.epoch;
    index.replace(1, compile([{ include: [key(1)], exclude: [], required: [] }]));
    const e1 = index.epoch;
    assert.notEqual(e1, e0);
    index.remove(2); // not there
    index.replace(2, compile([{ include: [], exclude: [], required: [key(1)] }])); // a key already listed
    index.remove(2);
    assert.equal(index.epoch, e1);
    index.replace(2, compile([{ include: [key(2)], exclude: [], required: [] }]));
    const e2 = index.epoch;
    assert.notEqual(e2, e1);
    index.remove(2); // key(2) no longer listed
    assert.notEqual(index.epoch, e2);
    const e3 = index.epoch;
    index.remove(1); // the index empties (its postings are dropped): the epoch still moves on, never back
    assert.ok(index.epoch > e3);
    index.replace(1, compile([{ include: [key(1)], exclude: [], required: [] }]));
    assert.ok(index.epoch > e3 + 1);
  });
});
