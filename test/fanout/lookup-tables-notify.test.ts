import assert from 'node:assert/strict';
import net from 'node:net';
import {
  AddressLookupTableProgram, Keypair, PublicKey, TransactionMessage, VersionedTransaction,
  type Connection, type TransactionInstruction,
} from '@solana/web3.js';
import type { LoadedAddresses, TableLookup } from '../../fanout/filter/loaded-addresses';
import { openLookupTables, type LookupTables } from '../../fanout/lookup-tables/lookup-tables';
import { tableId } from '../../fanout/lookup-tables/table-resolver';
import { metrics } from '../../infra/base/metrics';
import type { LocalChain } from '../../infra/local/chain';
import { closeConnection, connect, payerOf, startNode } from '../infra/local/chain/support';
import { waitFor } from '../support/wait';
import { testConfig } from './support';

// The table cache kept current from the chain node's account notifications (table-notifier.ts), on the local
// chain's PubSub WebSocket, reached through a TCP relay the test can cut (a node dropping the connection). The
// cache's stream observer is never fed here and the confirmed re-read is set beyond the test's length, so a change
// made on the chain can reach the cache through a notification only.

const counter = (name: string): number => {
  const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(metrics.render());
  return m === null ? 0 : Number(m[1]);
};

/** A TCP relay to `target` that can drop every connection it carries (and keeps accepting new ones). */
async function relay(target: string): Promise<{ url: string; cut(): void; close(): Promise<void> }> {
  const t = new URL(target);
  const live = new Set<net.Socket>();
  const server = net.createServer((a) => {
    const b = net.connect(Number(t.port), t.hostname);
    live.add(a).add(b);
    a.pipe(b).pipe(a);
    const drop = (): void => {
      a.destroy();
      b.destroy();
      live.delete(a);
      live.delete(b);
    };
    a.on('error', drop).on('close', drop);
    b.on('error', drop).on('close', drop);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `ws://127.0.0.1:${port}`,
    cut: () => {
      for (const s of live) s.destroy();
      live.clear();
    },
    close: () => {
      for (const s of live) s.destroy();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

describe('lookup tables kept current from account notifications (local chain)', function () {
  this.timeout(120_000);
  let node: LocalChain;
  let conn: Connection;
  let payer: Keypair;
  let ws: Awaited<ReturnType<typeof relay>>;
  const opened: LookupTables[] = [];

  const tables = (over: Record<string, unknown> = {}): LookupTables => {
    const lt = openLookupTables(testConfig({ lookupTables: { rpcUrl: node.httpUrl, wsUrl: ws.url, waitMs: 10_000, confirmMs: 600_000, ...over } }).lookupTables);
    assert.ok(lt !== undefined);
    opened.push(lt);
    return lt;
  };

  before(async () => {
    ({ node } = await startNode({ slotMs: 50 }));
    conn = connect(node);
    payer = payerOf(node);
    ws = await relay(node.wsUrl);
  });

  after(async () => {
    for (const lt of opened) lt.close();
    await ws.close();
    closeConnection(conn);
    await node.close();
  });

  async function send(ixs: TransactionInstruction[]): Promise<number> {
    const { blockhash, lastValidBlockHeight } = await conn.getLatestBlockhash();
    const tx = new VersionedTransaction(new TransactionMessage({ payerKey: payer.publicKey, recentBlockhash: blockhash, instructions: ixs }).compileToV0Message());
    tx.sign([payer]);
    const sig = await conn.sendTransaction(tx);
    const r = await conn.confirmTransaction({ signature: sig, blockhash, lastValidBlockHeight }, 'confirmed');
    assert.equal(r.value.err, null);
    return r.context.slot;
  }

  async function makeTable(addresses: PublicKey[]): Promise<PublicKey> {
    const recentSlot = await conn.getSlot('finalized');
    const [create, table] = AddressLookupTableProgram.createLookupTable({ authority: payer.publicKey, payer: payer.publicKey, recentSlot });
    const extend = AddressLookupTableProgram.extendLookupTable({ lookupTable: table, authority: payer.publicKey, payer: payer.publicKey, addresses });
    const slot = await send([create, extend]);
    await waitFor(() => node.slot() > slot + 1, 10_000, 'a slot after the extension');
    return table;
  }

  const extend = (table: PublicKey, addresses: PublicKey[]): Promise<number> =>
    send([AddressLookupTableProgram.extendLookupTable({ lookupTable: table, authority: payer.publicKey, payer: payer.publicKey, addresses })]);

  /** Resolves one lookup of `table` at `indexes` (writable); `sync`: answered before resolve returned. */
  function resolve(lt: LookupTables, table: PublicKey, indexes: number[], slot: bigint): Promise<{ loaded: LoadedAddresses; sync: boolean }> {
    const l: TableLookup = { table: table.toBuffer(), writableIndexes: Buffer.from(indexes), readonlyIndexes: Buffer.alloc(0) };
    return new Promise((r) => {
      let sync = true;
      lt.resolver.resolve([l], slot, (loaded) => r({ loaded, sync }));
      sync = false;
    });
  }

  const held = (lt: LookupTables, table: PublicKey): number => {
    const e = lt.cache.peek(tableId(table.toBuffer(), 0));
    return e?.view === null || e === undefined ? -1 : e.view.addresses.length / 32;
  };
  const fresh = (): PublicKey => Keypair.generate().publicKey;
  const b58 = (l: Buffer[]): string[] => l.map((k) => new PublicKey(k).toBase58());

  it('an extension made on the chain reaches the cache by notification before a transaction uses it; a dropped WebSocket is reconnected and every table subscribed again', async () => {
    const lt = tables();
    const n = lt.cache.notifier!;
    const [a, b, c] = [fresh(), fresh(), fresh()];
    const table = await makeTable([a]);
    const first = await resolve(lt, table, [0], BigInt(node.slot()));
    assert.deepEqual(b58(first.loaded.writable), [a.toBase58()], 'taken in by a fetch');
    await waitFor(() => n.subscribed === 1, 10_000, 'the table subscribed');
    assert.equal(counter('meridian_fanout_lookup_subscriptions'), 1);

    const fetches = counter('meridian_fanout_lookup_fetches_total');
    const notes = counter('meridian_fanout_lookup_notifications_total');
    const slot = await extend(table, [b]);
    await waitFor(() => held(lt, table) === 2, 10_000, 'the extension notified');
    assert.ok(counter('meridian_fanout_lookup_notifications_total') > notes, 'counted as a notification');
    assert.equal(counter('meridian_fanout_lookup_fetches_total'), fetches, 'no fetch brought it');
    // A transaction of the next slot using the new address: resolved at once from the cache.
    const use = await resolve(lt, table, [1, 0], BigInt(slot + 1));
    assert.equal(use.sync, true);
    assert.deepEqual(b58(use.loaded.writable), [b.toBase58(), a.toBase58()]);
    assert.deepEqual(use.loaded.unresolvedTables, []);

    // The node's side of the WebSocket goes away.
    const reconnects = counter('meridian_fanout_lookup_notify_reconnects_total');
    ws.cut();
    await waitFor(() => n.connects >= 2 && n.subscribed === 1, 20_000, 'reconnected and subscribed again');
    assert.ok(counter('meridian_fanout_lookup_notify_reconnects_total') > reconnects, 'the reconnect counted');
    const notes2 = counter('meridian_fanout_lookup_notifications_total');
    await extend(table, [c]);
    await waitFor(() => held(lt, table) === 3, 10_000, 'the next extension notified on the new connection');
    assert.ok(counter('meridian_fanout_lookup_notifications_total') > notes2);
    assert.deepEqual(b58((await resolve(lt, table, [2], BigInt(node.slot() + 1))).loaded.writable), [c.toBase58()]);
  });

  it('fanout.lookupTables.wsUrl must be a ws:// or wss:// URL, and the error does not echo it', () => {
    assert.throws(() => testConfig({ lookupTables: { wsUrl: 'http://key-123@node.invalid' } }), (e: Error) => /wsUrl: expected a ws:\/\/ or wss:\/\/ URL/.test(e.message) && !e.message.includes('key-123'));
    assert.equal(testConfig({ lookupTables: { wsUrl: 'wss://node.invalid/abc' } }).lookupTables.wsUrl, 'wss://node.invalid/abc');
    assert.equal(testConfig().lookupTables.wsUrl, '', 'off by default');
  });

  it('bounded: at most maxSubscriptions tables watched; an evicted table is unsubscribed and the slot goes to the next', async () => {
    const t1 = await makeTable([fresh()]);
    const t2 = await makeTable([fresh()]);
    const t3 = await makeTable([fresh()]);
    const id = (t: PublicKey): string => tableId(t.toBuffer(), 0);

    // The cap: two tables held, one watched.
    const capped = tables({ maxSubscriptions: 1 });
    const skipped = counter('meridian_fanout_lookup_notify_skipped_total');
    await resolve(capped, t1, [0], BigInt(node.slot()));
    await resolve(capped, t2, [0], BigInt(node.slot()));
    await waitFor(() => capped.cache.notifier!.subscribed === 1, 10_000, 'one subscription');
    assert.equal(capped.cache.notifier!.watching, 1);
    assert.equal(capped.cache.size.tables, 2);
    assert.ok(capped.cache.notifier!.has(id(t1)) && !capped.cache.notifier!.has(id(t2)));
    assert.equal(counter('meridian_fanout_lookup_notify_skipped_total'), skipped + 1);

    // Eviction: one table held at most; the next one taken in pushes the first out and takes its subscription.
    const one = tables({ maxTables: 1, maxSubscriptions: 1 });
    await resolve(one, t3, [0], BigInt(node.slot()));
    await waitFor(() => one.cache.notifier!.subscribed === 1, 10_000, 'first table subscribed');
    await resolve(one, t2, [0], BigInt(node.slot()));
    assert.equal(one.cache.size.tables, 1);
    assert.ok(!one.cache.notifier!.has(id(t3)), 'the evicted table is no longer watched');
    await waitFor(() => one.cache.notifier!.subscribed === 1 && one.cache.notifier!.has(id(t2)), 10_000, 'the next table subscribed');
    // The table that took the slot is kept current.
    const before = one.cache.notifier!.notified;
    await extend(t2, [fresh()]);
    await waitFor(() => held(one, t2) === 2, 10_000, 'the watched table notified');
    assert.ok(one.cache.notifier!.notified > before);
  });
});
