import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import bs58 from 'bs58';
import { openLookupTables, type LookupTables } from '../../fanout/lookup-tables/lookup-tables';
import { tableId } from '../../fanout/lookup-tables/table-resolver';
import type { LoadedAddresses, TableLookup } from '../../fanout/filter/loaded-addresses';
import { encodeLookupTable } from '../../proto/lookup-table/account';
import { SLOT_MAX } from '../../proto/lookup-table/program';
import { waitFor } from '../support/wait';
import { testConfig } from './support';

// The cache's bounds with a node that answers from memory (what the node says is not under test here, the local
// chain tests cover that): batching and de-duplication of fetches, the in-flight cap, the table and address caps
// with eviction, and the cap on waiting transactions.

interface Node {
  calls: string[][];
  inFlight: number;
  maxInFlight: number;
  release: Array<() => void>;
  hold: boolean;
}

function memoryNode(tables: Map<string, Buffer>): { node: Node; call: <T>(m: string, p?: unknown[]) => Promise<T> } {
  const node: Node = { calls: [], inFlight: 0, maxInFlight: 0, release: [], hold: false };
  const call = async <T>(_m: string, p: unknown[] = []): Promise<T> => {
    const keys = p[0] as string[];
    node.calls.push(keys);
    node.inFlight++;
    node.maxInFlight = Math.max(node.maxInFlight, node.inFlight);
    if (node.hold) await new Promise<void>((r) => node.release.push(r));
    node.inFlight--;
    return { context: { slot: 10 }, value: keys.map((k) => (tables.has(k) ? { owner: 'AddressLookupTab1e1111111111111111111111111', data: [tables.get(k)!.toString('base64'), 'base64'] } : null)) } as T;
  };
  return { node, call };
}

function makeTables(n: number, len: number): { keys: Buffer[]; data: Map<string, Buffer> } {
  const keys = Array.from({ length: n }, () => crypto.randomBytes(32));
  return { keys, data: new Map(keys.map((k) => [bs58.encode(k), encodeLookupTable({ deactivationSlot: SLOT_MAX, lastExtendedSlot: 1n, lastExtendedSlotStartIndex: 0, authority: null, addresses: crypto.randomBytes(32 * len) })])) };
}

const lookup = (table: Buffer): TableLookup => ({ table, writableIndexes: Uint8Array.of(0), readonlyIndexes: Uint8Array.of() });
const resolve = (lt: LookupTables, ls: TableLookup[]): Promise<LoadedAddresses> => new Promise((r) => lt.resolver.resolve(ls, 100n, r));

describe('lookup-table cache bounds', () => {
  const open: LookupTables[] = [];
  afterEach(() => {
    for (const lt of open.splice(0)) lt.close();
  });
  const make = (call: <T>(m: string, p?: unknown[]) => Promise<T>, over: Record<string, unknown> = {}): LookupTables => {
    const lt = openLookupTables(testConfig({ lookupTables: { rpcUrl: 'http://memory.invalid', waitMs: 5_000, ...over } }).lookupTables, call)!;
    open.push(lt);
    return lt;
  };

  it('asks for the tables of one turn together, ≤ 100 per call, each once, with at most maxInFlight calls out', async () => {
    const { keys, data } = makeTables(250, 4);
    const { node, call } = memoryNode(data);
    node.hold = true;
    const lt = make(call, { maxInFlight: 2 });
    // Every table named twice, by different transactions, in one turn.
    const done = [...keys, ...keys].map((k) => resolve(lt, [lookup(k)]));
    await waitFor(() => node.calls.length === 2, 5_000, 'two calls out');
    assert.equal(node.inFlight, 2);
    while (node.release.length > 0 || node.calls.length < 3) {
      node.release.splice(0).forEach((r) => r());
      await new Promise((r) => setImmediate(r));
    }
    node.hold = false;
    node.release.splice(0).forEach((r) => r());
    const answers = await Promise.all(done);
    assert.ok(answers.every((a) => a.unresolvedTables.length === 0 && a.writable.length === 1));
    assert.equal(node.maxInFlight, 2);
    assert.deepEqual(node.calls.map((c) => c.length), [100, 100, 50]);
    assert.equal(new Set(node.calls.flat()).size, 250, 'each table asked once');
  });

  it('keeps within maxTables and maxAddresses by evicting tables not used since the last sweep', async () => {
    const { keys, data } = makeTables(40, 100);
    const { call } = memoryNode(data);
    const lt = make(call, { maxTables: 30, maxAddresses: 1_000 });
    for (const k of keys) {
      await resolve(lt, [lookup(k)]);
      const s = lt.cache.size;
      assert.ok(s.tables <= 30 && s.addresses <= 1_000, `tables ${s.tables}, addresses ${s.addresses}`);
    }
    assert.equal(lt.cache.size.addresses, 1_000, '10 tables of 100 addresses');
    // The last one asked is held; the first is gone and would be fetched again.
    assert.equal(lt.cache.peek(tableId(keys[39]!, 0))?.state, 'held');
    assert.equal(lt.cache.peek(tableId(keys[0]!, 0)), undefined);
  });

  it('past maxWaiting, a transaction with an unknown table resolves at once with the table flagged', async () => {
    const { keys, data } = makeTables(3, 2);
    const { node, call } = memoryNode(data);
    node.hold = true;
    const lt = make(call, { maxWaiting: 1 });
    let firstDone = false;
    const first = resolve(lt, [lookup(keys[0]!)]).then((a) => ((firstDone = true), a));
    let sync: LoadedAddresses | undefined;
    lt.resolver.resolve([lookup(keys[1]!)], 100n, (a) => (sync = a));
    assert.ok(sync !== undefined, 'answered synchronously');
    assert.deepEqual(sync.unresolvedTables.map((b) => bs58.encode(b)), [bs58.encode(keys[1]!)]);
    assert.equal(firstDone, false);
    await waitFor(() => node.release.length > 0, 5_000, 'the fetch');
    node.hold = false;
    node.release.splice(0).forEach((r) => r());
    assert.equal((await first).unresolvedTables.length, 0);
  });
});
